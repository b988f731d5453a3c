"""Local scoring against the physical limit: llama.cpp (or transformers) evaluating the same tokens.

For a local model the least a scoring call can cost is the backend evaluating the tokens it needs
and computing the logits rows it reads. This measures, in one run and on the same prompts, each
local scoring path of stratbench against that raw evaluation, interleaved call by call (ours, raw,
ours, raw, ...) so that other load on the machine hits both sides alike:

* Nash gap: completion prompts (`nashgap_prompt`, pure, completion style) of generated 3×3 games,
  3 single-token labels, fresh evaluation. Raw: llama.cpp decoding the prompt's tokens, logits on
  the last row.
* TMGBench DA: `build_completion_prompt` of all 144 games (`--tmgbench-games N` for N of them,
  spread evenly; the total for all 144 is then extrapolated and labelled so), the 16 answer sets of
  `completion_candidates` (3–35 tokens each), fresh evaluation. Raw: llama.cpp decoding, in one
  batch, the prompt plus every distinct continuation prefix once (a prefix tree over sequences),
  with logits on the prompt's last row and on each of those prefixes' rows (exactly the rows whose
  logits a score needs). Also given, on every 12th game, with the raw batch padded to a multiple
  of 16 rows.
* CHBench (memory mechanism, 3×3 game 11) and functional ToM (RPS, action and ToM queries) rounds
  with a growing history, fresh and with prefix reuse. Raw: the prompt's tokens and each distinct
  continuation prefix once (fresh), or only the tokens after the longest prefix shared with the
  previous prompt plus the continuation prefixes, on top of its own cache (reuse).
* hf backend (`HFModel`, its default batch size) on a tiny random Llama built in a temporary folder
  (no downloads), against a plain transformers forward per request (single-token labels: the
  prompt, logits of the last position) or per continuation (multi-token: prompt + continuation,
  logits of the continuation's positions).
* One multi-sequence decode of several prompts vs one decode each (the exact layout), the
  normaliser in float64 vs float32, and the solver benchmark (`bench_solver.py`).

Timings are medians per call unless said otherwise; "ratio" = the median of the per-call ratios
ours / raw. Prints the table and writes it as markdown with the date and machine (default
benchmarks/results/local.md); `--update-readme` puts it in docs/benchmarks.md between the `bench_local`
marker comments, and `--readme-from FILE` does so from an earlier run's markdown without measuring.

Run: .venv/bin/python benchmarks/bench_local.py [--quick] [--update-readme] [--tmgbench-run]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from stratbench.models.base import ScoreRequest  # noqa: E402
from stratbench.models.llama import LlamaCppModel, fill_batch, load_embedded  # noqa: E402

BEGIN = "<!-- bench_local:begin -->"
END = "<!-- bench_local:end -->"
BLOCK = 16


# ------------------------------------------------------------------------------------------------
# llama.cpp on its own
# ------------------------------------------------------------------------------------------------


class Raw:
    """A llama.cpp context on the model's weights with the scorer's parameters (threads, batch and
    ubatch sizes, unified KV cache, 64 sequences), decoding exactly the rows it is given. Only the
    `llama_decode` call is timed."""

    def __init__(self, model: LlamaCppModel) -> None:
        from llama_cpp import _internals

        lib = model._lib
        llm = model._llm
        params = lib.llama_context_default_params()
        for name, _ in lib.llama_context_params._fields_:
            setattr(params, name, getattr(llm.context_params, name))
        params.n_seq_max = 64
        params.kv_unified = True
        self.lib = lib
        self.n_vocab = llm.n_vocab()
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.batch = _internals.LlamaBatch(n_tokens=int(params.n_batch), embd=0, n_seq_max=64, verbose=False)
        self.cached: list[int] = []  # prefix reuse: what the cache holds on sequence 0

    def clear(self) -> None:
        self.lib.llama_memory_clear(self.ctx.memory, True)
        self.cached = []

    def decode(self, rows: list[tuple[int, int, list[int], bool]]) -> float:
        b = fill_batch(self.batch.batch, rows)
        t0 = time.perf_counter()
        rc = self.lib.llama_decode(self.ctx.ctx, b)
        dt_ = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        return dt_

    def logits(self, i: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx.ctx, i), shape=(self.n_vocab,))

    # -- the rows a call needs -------------------------------------------------------------------
    @staticmethod
    def prompt_rows(p: list[int], pad: bool = False) -> list[tuple[int, int, list[int], bool]]:
        rows = [(t, i, [0], i == len(p) - 1) for i, t in enumerate(p)]
        if pad:
            rows += [(0, i, [63], False) for i in range(-len(rows) % BLOCK)]
        return rows

    @staticmethod
    def tree_rows(p: list[int], conts: list[list[int]], pad: bool = False) -> list[tuple[int, int, list[int], bool]]:
        """The prompt (on every sequence) and each distinct continuation prefix once, on the
        sequences of the candidates that share it; logits on the prompt's last row and on every
        prefix row (the next token of some candidate is scored there)."""
        every = list(range(len(conts) + 1))
        rows = [(t, i, every, i == len(p) - 1) for i, t in enumerate(p)]
        nodes: dict[tuple[int, ...], tuple[int, int, set[int]]] = {}
        for k, c in enumerate(conts):
            for j in range(len(c) - 1):
                key = tuple(c[: j + 1])
                nodes.setdefault(key, (c[j], len(p) + j, set()))[2].add(k + 1)
        rows += [(tok, pos, sorted(seqs), True) for tok, pos, seqs in nodes.values()]
        if pad:
            rows += [(0, i, [63], False) for i in range(-len(rows) % BLOCK)]
        return rows

    def fresh(self, p: list[int], pad: bool = False) -> float:
        self.clear()
        return self.decode(self.prompt_rows(p, pad))

    def tree(self, p: list[int], conts: list[list[int]], pad: bool = False) -> tuple[float, int, int]:
        self.clear()
        rows = self.tree_rows(p, conts, pad)
        return self.decode(rows), len(rows), sum(1 for r in rows if r[3])

    def reuse(self, p: list[int], conts: list[list[int]]) -> tuple[float, int]:
        """Evaluate only what p adds to the cached tokens (at least its last token), as the
        prefix-reusing backend does, and in the same decode each distinct continuation prefix
        once (logits on the prompt's last row and on those rows); the continuations' cells are
        then dropped, the prompt's kept."""
        k, limit = 0, min(len(self.cached), len(p) - 1)
        while k < limit and self.cached[k] == p[k]:
            k += 1
        mem = self.ctx.memory
        self.lib.llama_memory_seq_rm(mem, 0, k, -1)
        tree = self.tree_rows(p, conts)[len(p):]
        every = sorted({0} | {s for row in tree for s in row[2]})
        for s in every[1:]:
            self.lib.llama_memory_seq_cp(mem, 0, s, 0, k)
        new = p[k:]
        rows = [(t, k + i, every, i == len(new) - 1) for i, t in enumerate(new)] + tree
        secs = self.decode(rows)
        for s in every[1:]:
            self.lib.llama_memory_seq_rm(mem, s, -1, -1)
        self.cached = list(p)
        return secs, len(rows)

    def close(self) -> None:
        self.batch.close()
        self.ctx.close()


# ------------------------------------------------------------------------------------------------
# measuring
# ------------------------------------------------------------------------------------------------


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


class Row:
    """One line of the table: per-call times of ours and of the raw evaluation (same calls)."""

    def __init__(self, path: str, ours: list[float], raw: list[float], raw_pad: list[float] | None = None,
                 note: str = "", ours_pad: list[float] | None = None) -> None:
        self.path, self.ours, self.raw, self.raw_pad, self.note = path, ours, raw, raw_pad, note
        self.ours_pad = ours_pad or ours  # ours on the calls that raw_pad measured

    @property
    def ratio(self) -> float:
        return paired_ratio(self.ours, self.raw)

    @property
    def ratio_pad(self) -> float | None:
        return paired_ratio(self.ours_pad, self.raw_pad) if self.raw_pad else None


def paired_ratio(ours: list[float], raw: list[float]) -> float:
    """The median of the per-call ratios ours/raw (the calls are paired: the same prompt, timed
    back to back): prompts of different lengths make a ratio of the two medians compare different
    calls."""
    if len(ours) != len(raw):
        return med(ours) / med(raw)
    return med([a / b for a, b in zip(ours, raw)])


def fmt_s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


async def score(model: Any, prompt: str, conts: tuple[str, ...]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    (res,) = await model.score([ScoreRequest(prompt, conts)])
    secs = time.perf_counter() - t0
    if not res.ok:
        raise RuntimeError(res.error)
    return secs, res


def tokens(model: LlamaCppModel, prompt: str, conts: tuple[str, ...]) -> tuple[list[int], list[list[int]]]:
    p = model.tokenize(prompt)
    return p, [model.continuation_tokens(p, prompt, c) for c in conts]


class Counter:
    """Counts the rows and logits rows the exact scorer decodes (all its llama_decode calls), and
    the time those calls take: the rest of a scoring call is our own code (layout, normalisers,
    tokenising)."""

    def __init__(self, model: LlamaCppModel) -> None:
        self.rows = self.outputs = self.decodes = 0
        self.decode_s = 0.0
        sc = model._scorer
        orig = sc._decode_rows

        def counting(items: list[list[Any]]) -> None:
            self.rows += len(items)
            self.outputs += sum(1 for it in items if it[3])
            self.decodes += 1
            t0 = time.perf_counter()
            orig(items)
            self.decode_s += time.perf_counter() - t0

        sc._decode_rows = counting

    def take(self) -> tuple[int, int, int]:
        out = (self.rows, self.outputs, self.decodes)
        self.rows = self.outputs = self.decodes = 0
        return out


# ------------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------------


async def bench_nashgap(model: LlamaCppModel, raw: Raw, n_games: int, out: dict[str, Any]) -> Row:
    from stratbench.suites.nashgap.games import generate_games
    from stratbench.suites.nashgap.prompts import nashgap_prompt

    labels = ("0", "1", "2")
    ours, r, r16, lens = [], [], [], []
    for i, g in enumerate(generate_games(42, n_games)):
        prompt = nashgap_prompt(g, "pure", style="completion")
        p, _ = tokens(model, prompt, labels)
        lens.append(len(p))
        for side in ((0, 1, 2) if i % 2 == 0 else (2, 1, 0)):
            if side == 0:
                ours.append((await score(model, prompt, labels))[0])
            elif side == 1:
                r.append(raw.fresh(p))
            else:
                r16.append(raw.fresh(p, pad=True))
    out["nashgap_tokens"] = (min(lens), max(lens))
    return Row(f"Nash gap, 3×3, 3 single-token labels ({min(lens)}–{max(lens)}-token prompts)", ours, r, r16,
               "raw: the prompt's tokens, logits on the last row")


async def bench_tmgbench(model: LlamaCppModel, raw: Raw, n_games: int, out: dict[str, Any]) -> Row:
    from stratbench.suites.tmgbench.games import all_games
    from stratbench.suites.tmgbench.prompts import build_completion_prompt, completion_candidates

    cands = tuple(t for _, t in completion_candidates())
    counter = Counter(model)
    ours, r, r16, ours16 = [], [], [], []
    stats: dict[str, float] = {"ours_rows": 0, "ours_outputs": 0, "ours_decodes": 0, "raw_rows": 0,
                               "raw_outputs": 0, "raw_pad_rows": 0, "prompt_tokens": 0}
    every = all_games()
    games = every[:: max(1, len(every) // n_games)][:n_games]  # spread over the 144 games
    for i, g in enumerate(games):
        prompt = build_completion_prompt(g.payoff_A, g.payoff_B, "DA")
        p, conts = tokens(model, prompt, cands)
        stats["prompt_tokens"] += len(p)
        # the raw batch padded to 16 rows on every 12th game only (its ratio is for reference)
        sides = (0, 1, 2) if i % 12 == 0 else (0, 1)
        for side in (sides if i % 2 == 0 else sides[::-1]):
            if side == 0:
                counter.take()
                ours.append((await score(model, prompt, cands))[0])
                rows, outs, decs = counter.take()
                stats["ours_rows"] += rows
                stats["ours_outputs"] += outs
                stats["ours_decodes"] += decs
                if len(sides) == 3:
                    ours16.append(ours[-1])
            elif side == 1:
                secs, rows, outs = raw.tree(p, conts)
                r.append(secs)
                stats["raw_rows"] += rows
                stats["raw_outputs"] += outs
            else:
                secs, rows, _ = raw.tree(p, conts, pad=True)
                r16.append(secs)
                stats["raw_pad_rows"] += rows
    n = len(games)
    stats["ours_decode_s"] = counter.decode_s
    out["tmgbench"] = {k: v / (len(r16) if k == "raw_pad_rows" else n) for k, v in stats.items()} | {
        "games": n, "padded_games": len(r16), "ours_pad_total": sum(ours16), "of_games": len(every), "ours_total": sum(ours), "raw_total": sum(r), "raw_pad_total": sum(r16),
        # extrapolated to all games: the mean per game of the measured subset times their number
        "ours_all_estimate": sum(ours) / n * len(every), "raw_all_estimate": sum(r) / n * len(every)}
    # the normaliser, float64 (as scored) vs float32, on the raw tree's logits rows of the last game
    rows_idx = [i for i, row in enumerate(raw.tree_rows(p, conts)) if row[3]]
    raw.tree(p, conts)
    t64 = t32 = 0.0
    worst = 0.0
    for i in rows_idx:
        x = raw.logits(i)
        t0 = time.perf_counter()
        m = float(x.max())
        a = m + float(np.log(np.exp(x - m, dtype=np.float64).sum()))
        t64 += time.perf_counter() - t0
        t0 = time.perf_counter()
        m32 = x.max()
        b = float(m32) + float(np.log(np.exp(x - m32).sum(dtype=np.float64)))
        t32 += time.perf_counter() - t0
        worst = max(worst, abs(a - b))
    out["normaliser"] = {"rows": len(rows_idx), "f64_ms": 1000 * t64 / len(rows_idx),
                         "f32_ms": 1000 * t32 / len(rows_idx), "max_diff": worst}
    s = out["tmgbench"]
    return Row(f"TMGBench DA, 16 answer sets ({s['prompt_tokens']:.0f}-token prompts on average)", ours, r, r16,
               ours_pad=ours16, note=
               f"raw: prompt + {s['raw_rows'] - s['prompt_tokens']:.0f} distinct continuation tokens in one "
               f"batch, {s['raw_outputs']:.0f} logits rows; ours decodes {s['ours_rows']:.0f} rows, "
               f"{s['ours_outputs']:.0f} logits rows")


def chbench_prompts(rounds: int) -> list[str]:
    from stratbench.suites.chbench.catalogue import build_catalogue
    from stratbench.suites.chbench.prompts import decision_prompt
    from stratbench.suites.chbench.repeated import PastRound

    game = next(g for g in build_catalogue() if g.id == 11).game
    own, opp = game.payoff_row, game.payoff_col
    rng = np.random.default_rng(0)
    history: list[PastRound] = []
    out = []
    for t in range(1, rounds + 1):
        out.append(decision_prompt(own, opp, rounds, t, "memory", history))
        a, b = (int(x) for x in rng.integers(0, 3, 2))
        history.append(PastRound(t, a, b, float(own[a, b]), float(opp[a, b])))
    return out


def tom_prompts(rounds: int) -> tuple[list[str], tuple[str, ...]]:
    from stratbench.suites.tom.games import get_game
    from stratbench.suites.tom.prompts import LMPrompts, PromptHistory

    tpl = LMPrompts(get_game("rps"))
    hist = PromptHistory(tpl)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(rounds):
        a, b = (int(x) for x in rng.integers(0, 3, 2))
        out += [hist.action_prompt(), hist.tom_prompt(a)]
        hist.add_round(a, b)
    return out, tpl.continuations


async def bench_rounds(name: str, model: LlamaCppModel, reuse_model: LlamaCppModel, raw: Raw,
                       prompts: list[str], conts: tuple[str, ...], fresh_every: int,
                       out: dict[str, Any]) -> list[Row]:
    """Fresh evaluation of every `fresh_every`-th prompt, and the whole stream with prefix reuse."""
    ours, r, r16, fresh_tokens = [], [], [], 0
    picked = prompts[fresh_every - 1 :: fresh_every]
    for i, prompt in enumerate(picked):
        p, conts_tok = tokens(model, prompt, conts)
        fresh_tokens += len(p)
        for side in ((0, 1, 2) if i % 2 == 0 else (2, 1, 0)):
            if side == 0:
                ours.append((await score(model, prompt, conts))[0])
            elif side == 1:
                r.append(raw.tree(p, conts_tok)[0])
            else:
                r16.append(raw.tree(p, conts_tok, pad=True)[0])
    # prefix reuse: the model and the raw context each keep their own cache across the stream
    reuse_ours, reuse_raw, ours_tokens, raw_tokens = [], [], 0, 0
    raw.clear()
    for prompt in prompts:
        secs, res = await score(reuse_model, prompt, conts)
        reuse_ours.append(secs)
        ours_tokens += res.tokens_in
        p, conts_tok = tokens(reuse_model, prompt, conts)
        secs, n_new = raw.reuse(p, conts_tok)
        reuse_raw.append(secs)
        raw_tokens += n_new
    raw.clear()
    all_tokens = sum(len(tokens(model, q, conts)[0]) for q in prompts)
    out[name] = {"prompts": len(prompts), "fresh_calls": len(picked), "fresh_tokens": fresh_tokens,
                 "all_tokens": all_tokens, "reuse_tokens": ours_tokens, "raw_reuse_tokens": raw_tokens,
                 "reuse_total": sum(reuse_ours), "fresh_median": med(ours),
                 "fresh_total_estimate": sum(med(ours) / med(r) * raw_s for raw_s in r) if r else 0.0}
    lens = [len(tokens(model, q, conts)[0]) for q in prompts]
    return [
        Row(f"{name}, fresh ({min(lens)}–{max(lens)}-token prompts, 1 in {fresh_every} of {len(prompts)})",
            ours, r, r16, "raw: the prompt's tokens and each distinct continuation prefix once, in one decode, "
            "logits on the rows a score reads"),
        Row(f"{name}, prefix reuse ({len(prompts)} prompts in a row)", reuse_ours, reuse_raw, None,
            f"raw: the {raw_tokens} new tokens (prompt suffix + continuation prefixes) on top of the cache ({ours_tokens} evaluated by ours, "
            f"of {all_tokens} in the prompts)"),
    ]


def bench_batching(model: LlamaCppModel, raw: Raw, k: int, repeats: int, out: dict[str, Any]) -> None:
    """k Nash-gap prompts, each padded to 16 rows: one decode each vs one multi-sequence decode
    (prompt i on sequence i, cells aligned), same logits rows; times and bitwise equality."""
    from stratbench.suites.nashgap.games import generate_games
    from stratbench.suites.nashgap.prompts import nashgap_prompt

    ps = [model.tokenize(nashgap_prompt(g, "pure", style="completion")) for g in generate_games(7, k)]
    rows: list[tuple[int, int, list[int], bool]] = []
    idx, n_pad = [], 0
    for s, p in enumerate(ps):
        idx.append(len(rows) + len(p) - 1)
        rows += [(t, i, [s], i == len(p) - 1) for i, t in enumerate(p)]
        rows += [(0, n_pad + i, [63], False) for i in range(-len(p) % BLOCK)]
        n_pad += -len(p) % BLOCK
    one, together = [], []
    same = True
    for rep in range(repeats):
        for side in ((0, 1) if rep % 2 == 0 else (1, 0)):
            if side == 0:
                t, lasts = 0.0, []
                for p in ps:
                    raw.clear()
                    t += raw.decode(Raw.prompt_rows(p, pad=True))
                    lasts.append(raw.logits(len(p) - 1).copy())
                one.append(t)
            else:
                raw.clear()
                together.append(raw.decode(rows))
                got = [raw.logits(i).copy() for i in idx]
        same = same and all(np.array_equal(x, y) for x, y in zip(got, lasts))
    raw.clear()
    out["batching"] = {"k": k, "one_at_a_time": med(one), "together": med(together),
                       "speedup": med(one) / med(together), "identical": same}


def bench_hf(requests: int, repeats: int) -> list[Row]:
    import torch
    import transformers
    from bench_hf import LABELS, MULTI, TEXT, build

    from stratbench.models.hf import HFModel

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        build(folder, 32768, 256, 4)
        model = HFModel(folder)
        net = model._model
        prompts = [" ".join(TEXT[(i + k) % 4] for k in range(2 + i % 7)) + "\nAnswer:" for i in range(requests)]

        def plain(reqs: list[ScoreRequest]) -> list[list[float]]:
            res = []
            with torch.inference_mode():
                for rq in reqs:
                    p, conts = model._score_tokens(rq)[:2]
                    if all(len(c) == 1 for c in conts):
                        lg = net(torch.tensor([p]), logits_to_keep=1).logits[0, -1].float()
                        lp = torch.log_softmax(lg, -1)
                        res.append([float(lp[c[0]]) for c in conts])
                        continue
                    vals = []
                    for c in conts:
                        lg = net(torch.tensor([p + c[:-1]]), logits_to_keep=len(c)).logits[0].float()
                        lp = torch.log_softmax(lg, -1)
                        vals.append(float(sum(lp[j, t] for j, t in enumerate(c))))
                    res.append(vals)
            return res

        for name, conts in (("single-token labels", LABELS), ("multi-token continuations", MULTI)):
            reqs = [ScoreRequest(p, conts) for p in prompts]
            plain(reqs[:1])
            asyncio.run(model.score(reqs[:1]))
            ours, base = [], []
            diff = 0.0
            for rep in range(repeats):
                for side in ((0, 1) if rep % 2 == 0 else (1, 0)):
                    t0 = time.perf_counter()
                    if side == 0:
                        got = asyncio.run(model.score(reqs))
                        ours.append(time.perf_counter() - t0)
                    else:
                        want = plain(reqs)
                        base.append(time.perf_counter() - t0)
            diff = max(abs(x - y) for g, w in zip(got, want) for x, y in zip(g.logprobs, w))
            rows.append(Row(f"hf (tiny random Llama built offline): {requests} requests × {len(conts)} {name} "
                            f"(batch {model.batch_size})",
                            ours, base, None,
                            f"raw: a plain forward per request (per continuation when multi-token), "
                            f"logits of the needed positions only; max |Δ log-prob| {diff:.1e}"))
        asyncio.run(model.aclose())
        del transformers
    return rows


def bench_solver() -> list[tuple[str, float, float, float, float]]:
    import bench_solver

    return bench_solver.measure()


def tmgbench_run_time() -> float:
    """The command in docs/suites/tmgbench.md, `stratbench tmgbench run` (embedded model, DA, all 144 games), no cache."""
    from stratbench.suites.tmgbench.config import TmgbenchConfig
    from stratbench.suites.tmgbench.run import run_tmgbench

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_tmgbench(TmgbenchConfig(output_dir=tmp, no_cache=True))
        return time.perf_counter() - t0


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------


def machine() -> str:
    from importlib import metadata

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        llama = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        llama = "?"
    return f"{cpu}, {os.cpu_count()} cores, llama-cpp-python {llama}, Python {platform.python_version()}"


def markdown(rows: list[Row], info: dict[str, Any]) -> str:
    lines = [
        f"`make bench` (`benchmarks/bench_local.py`), {info['date']}, {info['machine']}; load average "
        f"{info['load_before']} before, {info['load_after']} after (this benchmark's own threads included). "
        "Medians per call, ours and the raw evaluation interleaved call by call; ratio = the median of the "
        "per-call ratios ours / raw (paired: the same prompt, timed back to back).",
        "",
        "| local scoring path | calls | ours | raw | ratio | raw padded to 16 rows | ratio |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        pad = (f"{fmt_s(med(r.raw_pad))} | {r.ratio_pad:.2f}×" if r.raw_pad else "– | –")
        lines.append(f"| {r.path} | {len(r.ours)} | {fmt_s(med(r.ours))} | {fmt_s(med(r.raw))} | "
                     f"{r.ratio:.2f}× | {pad} |")
    lines.append("")
    notes = [f"- {r.path.split(' (')[0]}: {r.note}." for r in rows if r.note]
    tm = info.get("tmgbench")
    if tm:
        if tm["games"] == tm["of_games"]:
            which = f"all {tm['of_games']} games"
            extra = ""
        else:
            which = f"{tm['games']} of the {tm['of_games']} games (spread evenly)"
            extra = (f"; *extrapolated* to all {tm['of_games']} games: ~{tm['ours_all_estimate']:.0f} s "
                     f"of scoring (raw ~{tm['raw_all_estimate']:.0f} s)")
        notes.append(
            f"- TMGBench, {which}: {tm['ours_total']:.1f} s of scoring calls in all, raw llama.cpp "
            f"{tm['raw_total']:.1f} s: {tm['ours_total'] / tm['raw_total']:.2f}× in total{extra}. Of ours, "
            f"{tm['ours_decode_s'] * tm['games']:.1f} s are llama.cpp decoding the exact layout's rows "
            f"({tm['ours_decode_s'] * tm['games'] / tm['raw_total']:.2f}× the raw tree: the rows that bit-exact "
            f"scores cost) and {tm['ours_total'] - tm['ours_decode_s'] * tm['games']:.1f} s our own code "
            f"(normalisers, layout, tokenising: {tm['ours_total'] / (tm['ours_decode_s'] * tm['games']):.2f}× "
            f"the decoding). On the "
            f"{tm['padded_games']} games also measured padded: ours {tm['ours_pad_total']:.1f} s, raw padded "
            f"{tm['raw_pad_total']:.1f} s. Per game {tm['ours_decodes']:.0f} decodes of {tm['ours_rows']:.0f} rows "
            f"(the prompt up to its last multiple of 16, then the continuation chunks) vs {tm['raw_rows']:.0f} "
            f"({tm['raw_pad_rows']:.0f} padded).")
    if "hf_skipped" in info:
        notes.append(f"- hf backend: not measured ({info['hf_skipped']}).")
    if "tmgbench_run" in info:
        notes.append(f"- `stratbench tmgbench run` (embedded, DA, all 144 games, no cache): "
                     f"{info['tmgbench_run']:.0f} s for the whole command.")
    for name in ("CHBench", "ToM"):
        s = info.get(name)
        if s:
            notes.append(
                f"- {name}, {s['prompts']} prompts in a row: prefix reuse evaluates {s['reuse_tokens']:,} tokens "
                f"of {s['all_tokens']:,} and takes {s['reuse_total']:.1f} s in all; fresh evaluation takes "
                f"{s['fresh_median']:.2f} s per prompt (median of {s['fresh_calls']}).")
    b = info.get("batching")
    if b:
        verdict = ("≥ 1.2×: worth batching concurrent prompts (not implemented: prompts are scored one at a time)"
                   if b["speedup"] >= 1.2 else "< 1.2×: not worth it, prompts are scored one at a time")
        notes.append(f"- {b['k']} Nash-gap prompts waiting at once: one multi-sequence decode "
                     f"{fmt_s(b['together'])} vs one decode each {fmt_s(b['one_at_a_time'])} "
                     f"({b['speedup']:.2f}×, logits {'identical' if b['identical'] else 'different'}) — {verdict}.")
    nm = info.get("normaliser")
    if nm:
        notes.append(f"- Normaliser (log-sum-exp over the 262,144-token vocabulary, once per logits row): float64 "
                     f"{nm['f64_ms']:.2f} ms/row (used: scores unchanged), float32 {nm['f32_ms']:.2f} ms/row, "
                     f"max |Δ| {nm['max_diff']:.1e} nat over {nm['rows']} rows.")
    solver = info.get("solver")
    if solver:
        notes += ["", "Solver (`bench_solver.py`): one-LP solver vs the original's two-LP formulation.", "",
                  "| size | one-LP | two-LP | ratio | duality gap one-LP / two-LP |", "| --- | --- | --- | --- | --- |"]
        for size, t1, t2, g1, g2 in solver:
            notes.append(f"| {size} | {t1 * 1e3:.1f} ms | {t2 * 1e3:.1f} ms | {t2 / t1:.2f}× | {g1:.0e} / {g2:.0e} |")
    return "\n".join(lines + notes) + "\n"


def update_readme(text: str) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    readme = path.read_text(encoding="utf-8")
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}{END}{tail}", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few calls per section (a smoke test)")
    ap.add_argument("--nashgap-games", type=int, default=20)
    ap.add_argument("--tmgbench-games", type=int, default=144, help="of the 144, spread evenly")
    ap.add_argument("--rounds", type=int, default=30, help="CHBench and ToM rounds")
    ap.add_argument("--fresh-every", type=int, default=3, help="fresh evaluation of every n-th round prompt")
    ap.add_argument("--hf-requests", type=int, default=16)
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--tmgbench-run", action="store_true",
                    help="also time the whole `stratbench tmgbench run` command (all 144 games)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "local.md"))
    ap.add_argument("--update-readme", action="store_true")
    ap.add_argument("--readme-from", metavar="FILE", help="put FILE (an earlier run's markdown) in docs/benchmarks.md and stop")
    a = ap.parse_args()
    if a.readme_from:
        update_readme(Path(a.readme_from).read_text(encoding="utf-8"))
        print(f"docs/benchmarks.md updated from {a.readme_from}")
        return
    if a.quick:
        a.nashgap_games, a.tmgbench_games, a.rounds, a.hf_requests = 4, 3, 6, 4
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t_all = time.perf_counter()
    info: dict[str, Any] = {"date": dt.date.today().isoformat(), "machine": machine(), "load_before": loadavg()}
    print(info["machine"], "| load", info["load_before"], flush=True)
    model = load_embedded()
    reuse_model = load_embedded(prefix_reuse=True)
    raw = Raw(model)
    rows: list[Row] = []

    async def llama_sections() -> None:
        await score(model, "warm-up", ("0",))
        await score(model, "warm-up", ("0 1", "0 2"))
        raw.fresh(model.tokenize("warm-up"))
        sections: list[tuple[str, Callable[[], Any]]] = [
            ("nashgap", lambda: bench_nashgap(model, raw, a.nashgap_games, info)),
            ("tmgbench", lambda: bench_tmgbench(model, raw, a.tmgbench_games, info)),
        ]
        for name, fn in sections:
            t0 = time.perf_counter()
            row = await fn()
            rows.append(row)
            print(f"{name}: {time.perf_counter() - t0:.0f} s, ratio {row.ratio:.2f} (load {loadavg()})", flush=True)
        ch = chbench_prompts(a.rounds)
        tp, tconts = tom_prompts(a.rounds)
        for name, ps, conts in (("CHBench", ch, (" 1", " 2", " 3")), ("ToM", tp, tconts)):
            t0 = time.perf_counter()
            new = await bench_rounds(name, model, reuse_model, raw, ps, conts, a.fresh_every, info)
            rows.extend(new)
            print(f"{name}: {time.perf_counter() - t0:.0f} s, ratios {[round(r.ratio, 2) for r in new]} "
                  f"(load {loadavg()})", flush=True)

    asyncio.run(llama_sections())
    bench_batching(model, raw, 4, 3 if a.quick else 7, info)
    raw.close()
    asyncio.run(model.aclose())
    asyncio.run(reuse_model.aclose())
    if a.tmgbench_run:
        info["tmgbench_run"] = tmgbench_run_time()
    if a.no_hf:
        info["hf_skipped"] = "--no-hf"
    else:
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            info["hf_skipped"] = f"torch/transformers not installed ({e.name})"
        else:
            t0 = time.perf_counter()
            new = bench_hf(a.hf_requests, 3 if a.quick else 5)
            rows.extend(new)
            print(f"hf: {time.perf_counter() - t0:.0f} s, ratios {[round(r.ratio, 2) for r in new]}", flush=True)
    info["solver"] = bench_solver()
    info["load_after"] = loadavg()
    text = markdown(rows, info)
    print()
    print(text)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    info["total_s"] = time.perf_counter() - t_all
    info["rows"] = [{"path": r.path, "calls": len(r.ours), "ours_median_s": med(r.ours), "raw_median_s": med(r.raw),
                     "ratio": r.ratio, "raw_pad_median_s": med(r.raw_pad) if r.raw_pad else None,
                     "ratio_pad": r.ratio_pad, "ours_s": r.ours, "raw_s": r.raw, "note": r.note} for r in rows]
    out.with_suffix(".json").write_text(json.dumps(info, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"written to {out} and {out.with_suffix('.json').name} ({info['total_s']:.0f} s in all)")
    if a.update_readme:
        update_readme(text)
        print("docs/benchmarks.md updated")


if __name__ == "__main__":
    main()
