"""The TMGBench suite: the 144 Robinson–Goforth 2×2 games, classic and story settings, atomic form.

Three ways to play:
- `logprob` (raw models): the prompt is a plain completion ending where the answer list starts;
  the 16 possible answer sets (subsets of the 4 cells) are scored as continuations, so the model's
  answer *distribution* is exact — Freq_{i,j,o} is the probability that cell o is in the answer and
  PAR the probability of the exact standard set. Only direct answers (DA) can be scored this way.
  Over HTTP only with the top-k walk (the model's `describe()["multi_token_scoring"]` is
  "topk-walk": an HTTP model given its GGUF with `--chat-template`), which scores the 16
  multi-token answer lines with one cheap next-token request per node of their prefix tree; it is
  refused otherwise, before anything is sent or written, since each line would need its own echo
  request (one took 266 s on a 262k-vocabulary server) and a run would never finish in practice.
- `choice` (chat models, DA only; its chat twin): the paper's system + user messages rendered with
  the model's chat template up to the assistant's turn, then the same fixed stem as the raw prompt
  (`COMPLETION_ANSWER_START`, the opened ```python block), and the same 16 answer lines scored as
  continuations: the exact answer distribution of the chat model, no sampling, no parsing.
- `sample`: T generations per game (the paper's repetitions, default 4), parsed without executing
  anything; unparseable answers are counted, not guessed. Each parsed answer is `strict` (written
  in the requested ```python block, not cut by the token budget) or `flexible` (read from free
  text by the lenient reader); the summary reports both rates and the metrics with flexible
  answers counted as failures (`strict_par_pct`, `strict_id_pct`, `strict_bd_pct`). With `--chat`
  the paper's system + user messages are sent as a conversation rendered with the model's own
  chat template, and the record keeps the rendered prompt (`rendered_prompt`).
Scripted players (`oracle`, `empty`, `uniform`) give exact reference distributions. Without
`--policy`, a raw model that can score the answer lines (local, or HTTP with the top-k walk) uses
`logprob` and every other model (`--chat`, HTTP without the walk, no log-probabilities) `sample`.

A run is an :class:`AtomicPlan` executed by the shared lifecycle (:func:`run_tmgbench`): work units
are (game, story variant, repetition); each record is appended to `answers.jsonl` as it completes
and a run resumes from its folder. :func:`merge_atomic` puts the shards of one run back together.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import numpy as np

from stratbench.checks import check_config
from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, LanguageModel
from stratbench.models.labels import choice_request
from stratbench.players import exact_policy, no_answer, scored_policy
from stratbench.players.runtime import WHEN_SET
from stratbench.runner.folders import read_run_json, read_summary
from stratbench.runner.jsonl import read_jsonl, write_json_atomic, write_jsonl_atomic
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    Progress,
    RunPlan,
    RunResult,
    Stream,
    check_meta,
    execute,
    merge_streams,
    rebuild_config,
)
from stratbench.runner.schema import Record, RunMeta
from stratbench.runner.shard import shard_tag
from stratbench.runner.validation import ABSENT, scripted_problem
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.suites.tmgbench.answers import AnswerSetParse, parse_answer_set
from stratbench.suites.tmgbench.config import (
    METHODS,
    SCRIPTED,
    SUITE,
    TmgbenchConfig,
    check_resume_shard,
    refuse_repeated_units,
    selected_games,
    shard_units,
)
from stratbench.suites.tmgbench.games import RGGame, standard_answer
from stratbench.suites.tmgbench.metrics import (
    Answer,
    GridKey,
    TMGBenchMetrics,
    metrics_from_distributions,
    metrics_from_samples,
    summary_keys,
)
from stratbench.suites.tmgbench.prompts import (
    COMPLETION_ANSWER_START,
    build_completion_prompt,
    build_messages,
    completion_candidates,
)
from stratbench.suites.tmgbench.records import AnswerRecord
from stratbench.suites.tmgbench.stories import Story, load_story_dir, verify_story

__all__ = ["METHODS", "SCRIPTED", "AtomicPlan", "TmgbenchConfig", "merge_atomic", "run_tmgbench", "subset_key"]

ALL_SUBSETS: tuple[frozenset[int], ...] = tuple(
    frozenset(c) for k in range(5) for c in combinations((1, 2, 3, 4), k)
)
ANSWERS = "answers.jsonl"

Item = tuple[RGGame, int, "Story | None"]  # (game, story variant, story): one per game or story file
Unit = tuple[RGGame, int, "Story | None", int]  # an item and a repetition


def subset_key(s: frozenset[int]) -> str:
    """'' for the empty set, else the sorted choice numbers: '14'."""
    return "".join(str(o) for o in sorted(s))


def load_units(config: TmgbenchConfig, games: list[RGGame]) -> list[Item]:
    """(game, variant, story) work items: one per game in the classic setting (variant 0), one per
    story file in the story setting. Every story is verified against its classic game first: a
    story whose payoff matrix is not the game's would measure something else."""
    if config.setting == "classic":
        return [(g, 0, None) for g in games]
    wanted = {g.id: g for g in games}
    units: list[Item] = []
    for story in load_story_dir(config.stories_dir):  # type: ignore[arg-type]
        g = wanted.get(story.game_id)
        if g is None:
            continue
        problems = verify_story(story, g.payoff_A, g.payoff_B)
        if problems:
            raise InputError(f"{story.path}: story does not match game {g.id}: {problems[0]}")
        units.append((g, story.variant, story))
    if not units:
        raise InputError(f"--stories-dir {config.stories_dir}: no story files for the selected games")
    return units


def _scripted_distribution(name: str, std: frozenset[int]) -> dict[str, float]:
    if name == "oracle":
        return {subset_key(std): 1.0}
    if name == "empty":
        return {"": 1.0}
    return {subset_key(s): 1.0 / len(ALL_SUBSETS) for s in ALL_SUBSETS}


HTTP_LOGPROB_REFUSED = (
    "--policy logprob over HTTP needs the top-k walk (give the model's GGUF with --chat-template); without it "
    "each answer line is one echo request (16 per game; minutes per game on a large-vocabulary server, so a run "
    "never finishes): use --policy sample, or a local model (embedded, gguf:PATH, hf:PATH)")


def is_http(model: LanguageModel) -> bool:
    """Whether the model answers over HTTP (an OpenAI-compatible endpoint)."""
    return model.describe().get("backend") == "openai-compatible"


def http_walks(model: LanguageModel) -> bool:
    """Whether an HTTP model scores multi-token continuations by the top-k walk (its
    `describe()["multi_token_scoring"]` is "topk-walk"); False when it says anything else or
    nothing."""
    return model.describe().get("multi_token_scoring") == "topk-walk"


class _Player:
    """What answers a TMGBench task: a scripted reference, or a model under a policy."""

    def __init__(self, config: TmgbenchConfig) -> None:
        self.spec = config.player
        self.model: LanguageModel | None = None
        if self.spec in SCRIPTED:
            self.policy = "scripted"
            return

        self.model = config.open_model(self.spec, chat=config.chat or None)
        http = is_http(self.model)
        scorable = self.model.supports_logprobs and (not http or http_walks(self.model))
        self.policy = config.policy or ("logprob" if scorable and not config.chat else "sample")
        if self.policy in ("logprob", "choice") and config.prompting != "DA":
            raise InputError(f"--policy {self.policy} scores direct answers only: use --prompting DA "
                             "(or --policy sample for reasoning prompts)")
        if self.policy == "logprob" and http and not http_walks(self.model):
            raise InputError(HTTP_LOGPROB_REFUSED)
        if self.policy == "choice":
            self.model.check_chat(scoring=True)  # one line for a model without chat scoring
        elif config.chat:
            self.model.check_chat()

    @property
    def exact(self) -> bool:
        return self.policy in ("scripted", "logprob", "choice")

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.spec, "policy": self.policy}
        if self.model is not None:
            d["model"] = self.model.describe()
        return d


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _conversation(msgs: list[dict[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((m["role"], m["content"]) for m in msgs)


def parse_kind(strict: bool, finish_reason: str | None) -> str:
    """"strict" for an answer in the requested format that the token budget did not cut, else
    "flexible"."""
    return "strict" if strict and finish_reason != "length" else "flexible"


async def _answer(player: _Player, config: TmgbenchConfig, game: RGGame, repeat: int,
                  variant: int = 0, story: Story | None = None) -> AnswerRecord:
    """One task → one record (never raises for model failures)."""
    std = standard_answer(game)
    rec: dict[str, Any] = {"game_id": game.id, "row": game.row, "col": game.col, "variant": variant,
                           "setting": config.setting, "repeat": repeat,
                           "player": player.spec, "policy": player.policy,
                           "prompting": config.prompting, "standard": sorted(std)}
    t0 = time.perf_counter()
    if player.policy == "scripted":
        rec.update(status="ok", distribution=_scripted_distribution(player.spec, std), prompt_sha256=None)
    elif player.policy in ("logprob", "choice"):
        cands = completion_candidates()
        if player.policy == "logprob":
            prompt = build_completion_prompt(game.payoff_A, game.payoff_B, config.prompting, story)
            req = choice_request(prompt, [t for _, t in cands])
        else:  # the conversation up to the assistant's turn, then the raw prompt's stem
            msgs = build_messages(game.payoff_A, game.payoff_B, config.prompting, story)
            prompt = msgs[1]["content"]
            req = choice_request(COMPLETION_ANSWER_START, [t for _, t in cands], messages=_conversation(msgs))
        (res,) = await player.model.score([req])  # type: ignore[union-attr]
        rec["prompt_sha256"] = _sha256(prompt)
        if res.rendered is not None:
            rec["rendered_prompt"] = res.rendered
        rec["usage"] = {"tokens_in": res.tokens_in, "cached": res.cached, "n_tokens": res.n_tokens}
        if res.usage_unknown:  # (its 0 is no count: run.json's model_usage_unknown counts it)
            rec["usage"]["usage_unknown"] = True
        pol = scored_policy(res)
        if isinstance(pol, str):  # the call failed, or its numbers are no probabilities
            rec.update(status="error", error=pol)
        else:
            rec.update(status="parsed", label_mass=pol.mass,
                       logprobs={subset_key(s): float(x) for (s, _), x in zip(cands, res.logprobs or ())},
                       distribution={subset_key(s): float(x) for (s, _), x in zip(cands, pol.probs)})
    else:
        seed = derive_seed(config.seed or 0, int(game.id), variant, repeat)
        if config.chat:
            msgs = build_messages(game.payoff_A, game.payoff_B, config.prompting, story)
            system, prompt = msgs[0]["content"], msgs[1]["content"]
        else:
            system = None
            prompt = build_completion_prompt(game.payoff_A, game.payoff_B, config.prompting, story)
        (res,) = await player.model.generate([GenerateRequest(  # type: ignore[union-attr]
            prompt, max_tokens=config.max_tokens, temperature=config.temperature, seed=seed,
            sample_index=repeat, chat=config.chat, system=system)])
        rec["prompt_sha256"] = _sha256(prompt)
        if res.rendered is not None:
            rec["rendered_prompt"] = res.rendered
        rec["usage"] = {"tokens_in": res.tokens_in, "tokens_out": res.tokens_out, "cached": res.cached}
        if res.usage_unknown:  # (its 0s are no counts: run.json's model_usage_unknown counts it)
            rec["usage"]["usage_unknown"] = True
        if res.tokens_reasoning is not None:
            rec["usage"]["tokens_reasoning"] = res.tokens_reasoning
        rec["raw_response"] = res.text
        if res.reasoning is not None:  # a reasoning model's thinking: never parsed
            rec["reasoning"] = res.reasoning
        rec["finish_reason"] = res.finish_reason
        if not res.ok:
            rec.update(status="error", error=res.error)
        else:
            p = read_reply(res.text, config.chat)
            if p.ok:
                kind = parse_kind(p.strict, res.finish_reason)
                rec.update(status="parsed", answer=sorted(p.cells), parse=kind)  # type: ignore[arg-type]
                if kind == "flexible":
                    cut = ["cut at the token limit"] if res.finish_reason == "length" else []
                    rec["parse_note"] = "; ".join([*([p.note] if p.note else []), *cut])
            else:
                rec.update(status="parse_failed", error=no_answer(res) or p.error)
    rec["latency_s"] = time.perf_counter() - t0
    return cast(AnswerRecord, rec)


def read_reply(raw: str | None, chat: bool) -> AnswerSetParse:
    """A generated reply read as the run reads it (and as a record read back is read again): a raw
    model continues the prompt's opened ```python block, so its reply is read with it."""
    text = raw if chat else COMPLETION_ANSWER_START + (raw or "")
    return parse_answer_set(text) if (raw or "").strip() else parse_answer_set(None)


def _distribution(rec: Record) -> dict[Any, float] | None:
    if rec.get("distribution") is not None:
        return {frozenset(int(c) for c in k): v for k, v in rec["distribution"].items()}
    return None


def _samples(records: Sequence[Record], strict: bool = False) -> dict[GridKey, list[Answer]]:
    """The answers per grid (None: unparseable; with `strict`, flexible answers too)."""
    samples: dict[GridKey, list[Answer]] = {}
    for r in records:
        ok = r["status"] == "parsed" and (not strict or r.get("parse") == "strict")
        samples.setdefault(r["game_id"], []).append(frozenset(r["answer"]) if ok else None)
    return samples


STRICT_KEYS = ("par_pct", "id_pct", "bd_pct", "par_pct_ci95", "id_pct_ci95", "bd_pct_ci95")


def _strict_keys(usable: Sequence[Record], seed: int) -> dict[str, Any]:
    """Sampled answers: `strict_parse_rate` and `flexible_parse_rate` (shares of the answers
    that are not errors) and the headline metrics with flexible answers counted as failures
    (`strict_par_pct`, `strict_id_pct`, `strict_bd_pct` and their `_ci95`). Nothing for exact
    players, or for records written before answers said how they were parsed."""
    sampled = [r for r in usable if r.get("policy") == "sample"]
    if not sampled or any(r["status"] == "parsed" and r.get("parse") not in ("strict", "flexible") for r in sampled):
        return {}
    n = len(sampled)
    out: dict[str, Any] = {
        "strict_parse_rate": sum(r.get("parse") == "strict" for r in sampled) / n,
        "flexible_parse_rate": sum(r.get("parse") == "flexible" for r in sampled) / n,
    }
    strict = summary_keys(metrics_from_samples(_samples(sampled, strict=True), seed=seed))
    out.update({f"strict_{k}": strict[k] for k in STRICT_KEYS})
    return out


def summarise(records: Sequence[Record], seed: int) -> tuple[dict[str, Any], TMGBenchMetrics | None]:
    """Paper metrics (percent) from the records: exact distributions where the player gave them,
    else the T sampled answers per grid (parse failures count as wrong answers)."""
    errors = sum(r["status"] == "error" for r in records)
    usable = [r for r in records if r["status"] != "error"]
    status_counts = {k: sum(r["status"] == k for r in records) for k in ("ok", "parsed", "parse_failed", "error")}
    if not usable:  # no metric, but the errors are counted (run.json totals and the exit code use them)
        return {"n_grids": 0, "error_rate": 1.0 if records else 0.0, "n_records": len(records),
                "status_counts": status_counts}, None
    dists = {r["game_id"]: _distribution(r) for r in usable if _distribution(r) is not None}
    if dists and len(dists) == len({r["game_id"] for r in usable}):
        # exact players: average the distributions of a grid's records (rotations / repeats)
        by: dict[str, list[dict[Any, float]]] = {}
        for r in usable:
            by.setdefault(r["game_id"], []).append(_distribution(r))  # type: ignore[arg-type]
        avg: dict[GridKey, dict[Any, float]] = {}
        for gid, ds in by.items():
            keys = set().union(*ds)
            avg[gid] = {k: sum(d.get(k, 0.0) for d in ds) / len(ds) for k in keys}
        m = metrics_from_distributions(avg, seed=seed)
    else:
        m = metrics_from_samples(_samples(usable), seed=seed)
    s = summary_keys(m)
    s.update(_strict_keys(usable, seed))
    masses = [r["label_mass"] for r in usable if r.get("label_mass") is not None]
    s["mean_label_mass"] = float(np.mean(masses)) if masses else None
    s["error_rate"] = errors / len(records)
    s["n_records"] = len(records)
    s["status_counts"] = status_counts
    return s, m


_SPREAD_KEYS = ("par_pct", "id_pct", "bd_pct", "par_0_pct", "par_1_pct", "par_2_pct", "id_0_pct",
                "id_1_pct", "id_2_pct", "bd_0_pct", "bd_1_pct", "bd_2_pct")


def summarise_variants(records: Sequence[Record], seed: int) -> tuple[dict[str, Any], TMGBenchMetrics | None]:
    """Story setting: metrics per story variant, then mean ± std over variants (the paper's
    report for the story setting). Classic runs have one variant and no spread."""
    variants = sorted({r.get("variant", 0) for r in records})
    if len(variants) <= 1:
        return summarise(records, seed)
    per: dict[Any, dict[str, Any]] = {}
    for v in variants:
        per[v], _ = summarise([r for r in records if r.get("variant", 0) == v], seed)
    s: dict[str, Any] = {}
    for k in _SPREAD_KEYS:
        vals = [p[k] for p in per.values() if p.get(k) is not None]
        s[k] = float(np.mean(vals)) if vals else None
        s[f"{k}_std"] = float(np.std(vals)) if vals else None
    for k in ("strict_par_pct", "strict_id_pct", "strict_bd_pct", "strict_parse_rate", "flexible_parse_rate"):
        vals = [p[k] for p in per.values() if p.get(k) is not None]
        if vals:  # sampled answers only
            s[k] = float(np.mean(vals))
            if k.endswith("_pct"):
                s[f"{k}_std"] = float(np.std(vals))
    s["n_variants"] = len(variants)
    s["n_records"] = len(records)
    s["error_rate"] = sum(r["status"] == "error" for r in records) / len(records)
    fails = [p["parse_failure_rate"] for p in per.values() if p.get("parse_failure_rate") is not None]
    s["parse_failure_rate"] = float(np.mean(fails)) if fails else 0.0
    s["status_counts"] = {k: sum(r["status"] == k for r in records)
                          for k in ("ok", "parsed", "parse_failed", "error")}
    s["variants"] = {str(v): p for v, p in per.items()}
    return s, None


def _record_order(r: Record) -> tuple[Any, ...]:
    """The canonical order of answers.jsonl (records arrive in completion order)."""
    return (r.get("variant", 0), r["row"], r["col"], r["repeat"])


_SUBSET = re.compile(r"1?2?3?4?")  # an answer subset's key: its choice numbers in order ("" = none)


#: what a reference player's answer holds of the keys a model's answer fills (see scripted_problem)
_SCRIPTED_FIELDS: dict[str, tuple[Any, ...]] = {
    **dict.fromkeys(("answer", "parse", "parse_note", "raw_response", "reasoning", "finish_reason", "rendered_prompt",
                     "usage", "logprobs", "label_mass", "error"), ABSENT),
    "prompt_sha256": (None,),
}


def record_problem(rec: Record, games: Mapping[str, RGGame], config: TmgbenchConfig, player: str,
                   scripted: bool = False, policy: str | None = None) -> str | None:
    """Why an answer read back cannot be one this run wrote (its records are summarised as they
    stand, so an edited one would be a result): another player's, setting's or prompting's answer;
    a game the run does not play, or not at its grid cell; a standard answer that is not the
    game's; an exact distribution that is not one over answer subsets; a sampled answer outside
    the choices."""
    if rec.get("player") != player:
        return f"player {rec.get('player')!r}, but this run's player is {player!r}"
    g = games.get(rec.get("game_id"))  # type: ignore[arg-type]
    if g is None:
        return f"game {rec.get('game_id')!r}, which this run does not play"
    if (rec.get("row"), rec.get("col")) != (g.row, g.col):
        return f"game {g.id} at row {rec.get('row')!r}, col {rec.get('col')!r}; it is at row {g.row}, col {g.col}"
    if policy is not None and "policy" in rec and rec["policy"] != policy:  # (it decides which metrics count it)
        return f"policy {rec['policy']!r}, but this run's is {policy!r}"
    for key, want in (("setting", config.setting), ("prompting", config.prompting)):
        if key in rec and rec[key] != want:
            return f"{key} {rec[key]!r}, but this run's is {want!r}"
    if "standard" in rec and rec["standard"] != sorted(standard_answer(g)):
        return f"standard {rec['standard']!r}, but game {g.id}'s standard answer is {sorted(standard_answer(g))}"
    dist = rec.get("distribution")
    if dist is not None:
        if not isinstance(dist, dict) or not dist or not all(
                isinstance(k, str) and _SUBSET.fullmatch(k) and isinstance(v, (int, float))
                and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for k, v in dist.items()):
            return f"distribution {dist!r} is no distribution over answer subsets"
        if abs(sum(dist.values()) - 1.0) > 1e-6:
            return f"distribution {dist!r} sums to {sum(dist.values())!r}, not 1"
    why = _scored_problem(rec, scripted)
    if why is not None:
        return why
    if scripted and rec.get("status") != "error":  # a reference player's answer is fixed by the game
        why = scripted_problem(rec, _SCRIPTED_FIELDS, player)
        if why is not None:
            return why
        fixed = _scripted_distribution(player, standard_answer(g))
        if rec.get("status") != "ok" or not isinstance(dist, dict) or set(dist) != set(fixed) or any(
                abs(dist[k] - v) > 1e-9 for k, v in fixed.items()):
            return f"status {rec.get('status')!r}, distribution {dist!r}: {player} answers {fixed} in game {g.id}"
    answer = rec.get("answer")
    if answer is not None and not (isinstance(answer, list) and all(
            isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= 4 for c in answer)):
        return f"answer {answer!r} names no choices 1-4"
    if rec.get("status") in ("ok", "parsed") and dist is None and answer is None:
        return f"status {rec.get('status')!r} with neither an answer nor a distribution"
    return _reply_problem(rec, config)


def _scored_problem(rec: Record, scripted: bool = False) -> str | None:
    """A scored answer's distribution and label mass are what its log-probabilities give (the same
    arithmetic, `players.exact_policy`) over every answer line: an edited one would be summarised
    as a result (fuzz 17 A D3: two entries swapped moved ID% and BD%, a deleted label_mass the mean
    label mass; fuzz 18 A D1: the log-probabilities deleted with it, or a subset dropped). A model's
    distribution is always a scored one (a scripted player's is checked as its own)."""
    lps = rec.get("logprobs")
    if lps is None:
        if rec.get("label_mass") is not None:
            return f"label_mass {rec['label_mass']!r} without the log-probabilities it comes from"
        if not scripted and rec.get("distribution") is not None:
            return "a model's distribution without the log-probabilities it comes from"
        return None
    lines = {subset_key(s) for s, _ in completion_candidates()}
    if isinstance(lps, dict) and set(lps) != lines:
        return f"logprobs over {len(lps)} answer subsets, not the {len(lines)} every scored answer has"
    if not isinstance(lps, dict) or not lps or not all(
            isinstance(k, str) and _SUBSET.fullmatch(k) and (v is None or (isinstance(v, (int, float))
                                                                          and not isinstance(v, bool)))
            for k, v in lps.items()):
        return f"logprobs {json.dumps(lps)[:80]} are no log-probabilities of answer subsets"
    if rec.get("status") != "parsed":
        return f"status {rec.get('status')!r} with log-probabilities (a scored answer is parsed)"
    pol = exact_policy([float("-inf") if v is None else float(v) for v in lps.values()])
    if isinstance(pol, str):
        return f"logprobs {json.dumps(lps)[:80]} give no distribution ({pol})"
    dist, mass = rec.get("distribution"), rec.get("label_mass")
    if not isinstance(dist, dict) or set(dist) != set(lps) or any(
            abs(dist[k] - float(p)) > 1e-9 for k, p in zip(lps, pol.probs)):
        return f"distribution {json.dumps(dist)[:80]} is not what its log-probabilities give"
    if not isinstance(mass, (int, float)) or isinstance(mass, bool) or abs(mass - pol.mass) > 1e-9 * max(1.0, pol.mass):
        return f"label_mass {mass!r}, but its log-probabilities give {pol.mass!r}"
    return None


def _reply_problem(rec: Record, config: TmgbenchConfig) -> str | None:
    """A sampled answer's status, answer and kind are what its raw text says when read again."""
    status = rec.get("status")
    if rec.get("distribution") is not None or status not in ("parsed", "parse_failed"):
        return None
    raw = rec.get("raw_response")
    if not isinstance(raw, str):
        return f"a {status} answer without the raw_response it was read from" if status == "parsed" else None
    p = read_reply(raw, bool(config.chat))
    said = "parsed" if p.ok else "parse_failed"
    if said != status:
        return f"status {status!r}, but its raw_response reads as {said} when read again"
    if p.ok:
        if rec.get("answer") != sorted(p.cells):  # type: ignore[arg-type]
            return f"answer {rec.get('answer')!r}, but its raw_response says {sorted(p.cells)}"  # type: ignore[arg-type]
        kind = parse_kind(p.strict, rec.get("finish_reason"))
        if rec.get("parse") != kind:
            return f"parse {rec.get('parse')!r}, but its raw_response is a {kind} answer"
    return None


def _record_unit(r: Record) -> Hashable:
    return (r["game_id"], r.get("variant", 0), r["repeat"])


def _write_outputs(folder: Path, records: list[Record], config: TmgbenchConfig, player: str,
                   policy: str, repeats: int) -> dict[str, Any]:
    """summary.json, grids.json and (all 144 games) the heat maps from an atomic run's records;
    shared by a run and by merging its shards, so both compute the same thing."""
    summary, metrics = summarise_variants(records, derive_seed(config.seed or 0, 4))
    summary.update(player=player, policy=policy, prompting=config.prompting,
                   setting=config.setting, form=config.form, repeats=repeats)
    if not config.shard_spec.whole:
        summary["shard"] = str(config.shard_spec)
    write_json_atomic(folder / "summary.json", summary)
    if metrics is not None:
        write_json_atomic(folder / "grids.json", metrics.grids)
        if len(metrics.grids) == 144:
            from stratbench.suites.tmgbench.heatmaps import write_all_heatmaps  # matplotlib: only when drawn

            write_all_heatmaps(metrics.grids, folder)
    return summary


class AtomicPlan(RunPlan):
    """One atomic TMGBench run (or shard) for one player, as the lifecycle runs it."""

    suite = SUITE
    kind = "atomic"

    def __init__(self, config: TmgbenchConfig) -> None:
        self.config = config
        self.items: list[Item] = []
        self.player: _Player | None = None
        # who answered and how: set by `open` (a run) or from the shards' summaries (a merge)
        self.spec = config.player
        self.policy = ""
        self.repeats = config.repeats

    # -- before any folder exists -----------------------------------------------------------------
    def prepare(self) -> None:
        c = self.config
        c.validate()
        if c.seed is None:
            c.seed = fresh_seed()
        self.items = shard_units(c.shard_spec, load_units(c, selected_games(c.games)), "games")
        c.shard = c.shard_spec.to_json()

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_meta(meta, folder, SUITE, (self.kind,))
        given = self.config
        check_config(given, only=("max_concurrency",))
        given.check_runtime()
        # the saved config, with this command's concurrency; it keeps its shard
        self.config = rebuild_config(TmgbenchConfig, meta["config"], given=given)
        check_resume_shard(given.shard, self.config.shard_spec, str(folder))
        check_atomic(self.config, folder)
        c = self.config
        self.items = shard_units(c.shard_spec, load_units(c, selected_games(c.games)), "games")

    def open(self) -> None:
        self.player = _Player(self.config)
        self.spec, self.policy = self.player.spec, self.player.policy
        self.repeats = 1 if self.player.exact else self.config.repeats

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "tmgbench", tag=shard_tag(self.config.shard_spec))

    def config_json(self) -> dict[str, Any]:
        # (every field, chat_template even when None, as run.json always held it; the later optional
        # fields only when set: players.runtime.WHEN_SET)
        return {**{k: v for k, v in asdict(self.config).items() if k == "chat_template" or k not in WHEN_SET
                   or v is not None}, "player": self.config.player}

    # -- writing ----------------------------------------------------------------------------------
    def update_meta(self, meta: RunMeta, new: bool) -> None:
        if new and self.player is not None:
            meta["agent"] = self.player.describe()

    def streams(self) -> list[Stream[Any]]:
        player, config = self.player, self.config

        async def work(unit: Unit) -> Record:
            g, v, story, t = unit
            try:
                assert player is not None
                return dict(await _answer(player, config, g, t, v, story))
            except Exception as exc:  # recorded, never hidden
                return {"game_id": g.id, "row": g.row, "col": g.col, "variant": v, "repeat": t,
                        "player": self.spec, "status": "error", "error": f"{type(exc).__name__}: {exc}"}

        units: list[Unit] = [(g, v, st, t) for g, v, st in self.items for t in range(self.repeats)]
        games = {g.id: g for g, _, _ in self.items}
        return [Stream(ANSWERS, units, work, unit_key=lambda u: (u[0].id, u[1], u[3]), record_unit=_record_unit,
                       sort_key=_record_order, concurrency=config.max_concurrency, label="tmgbench",
                       unit_name="answers", record_key=_record_unit, record_schema=AnswerRecord,
                       record_problem=lambda r: record_problem(r, games, config, self.spec,
                                                               scripted=self.policy == "scripted",
                                                               policy=self.policy))]

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        summary = _write_outputs(folder, records[ANSWERS], self.config, self.spec, self.policy, self.repeats)
        return Outcome({"": summary}, summary.get("status_counts", {}).get("error", 0))

    def usage(self) -> dict[str, Any]:
        model = self.player.model if self.player is not None else None
        return model.usage.as_dict() if model is not None else {"calls": 0}

    async def aclose(self) -> None:
        if self.player is not None and self.player.model is not None:
            await self.player.model.aclose()

    # -- merging ----------------------------------------------------------------------------------
    @classmethod
    def for_merge(cls, folders: Sequence[Path]) -> AtomicPlan:
        """The unsharded run whose finished shards are ``folders``: its config from run.json, its
        player, policy and repetitions from the shards' summaries (which must agree). No model is
        opened."""
        config = rebuild_config(TmgbenchConfig, read_run_json(folders[0])["config"], shard=None)
        check_atomic(config, folders[0])
        summaries = []
        for f in folders:
            if not (f / "summary.json").is_file():
                raise InputError(f"{f}: no summary.json; finish it with --resume {f}")
            summaries.append(read_summary(f / "summary.json", {"player": str, "policy": str, "repeats": int}))
        first = summaries[0]
        for f, sm in zip(folders, summaries):
            for k in ("player", "policy", "repeats"):
                if sm.get(k) != first.get(k):
                    raise InputError(f"{f}: summary.json has {k}={sm.get(k)!r}, {folders[0]} has {first.get(k)!r}")
        plan = cls(config)
        plan.spec, plan.policy, plan.repeats = first["player"], first["policy"], int(first["repeats"])
        if config.setting == "classic":
            plan.items = load_units(config, selected_games(config.games))
        return plan


def check_atomic(config: TmgbenchConfig, folder: Path) -> None:
    """InputError naming run.json when an atomic run's saved config names a complex form: a resume
    would write a summary of that form over atomic answers."""
    if config.form != "atomic":
        raise InputError(f"{folder}/run.json: config.form is {config.form!r}, but the folder is an atomic run (its "
                         "kind, and its answers): run.json was edited; the folder is left as it is")


def atomic_plan(folder: Path) -> AtomicPlan | None:
    """The atomic run (or shard) in ``folder`` as its run.json plans it, no model opened: its
    streams check the answers read back (compare, the report). Who answered, under which policy
    and how often come from run.json's "agent" (written before the first answer), so an unfinished
    run is read too. None for a story run whose stories this machine does not have (its units are
    its story files)."""
    meta = read_run_json(folder)
    plan = AtomicPlan(rebuild_config(TmgbenchConfig, meta["config"]))
    c = plan.config
    check_atomic(c, folder)
    try:
        plan.items = shard_units(c.shard_spec, load_units(c, selected_games(c.games)), "games")
    except InputError:
        if c.setting == "classic":
            raise
        return None
    agent = meta.get("agent")
    name, policy = (agent.get("name"), agent.get("policy")) if isinstance(agent, dict) else (None, None)
    if isinstance(name, str) and name != c.player:  # (a resume names the same edit: the player its records name)
        raise InputError(f"{folder}: run.json's config plays {c.player!r} but the run's records were made by "
                         f"{name!r} (its \"agent\"): run.json was edited")
    if isinstance(policy, str) and c.policy is not None and policy not in ("scripted", c.policy):
        raise InputError(f"{folder}: run.json's config asks for --policy {c.policy} but the run's records were "
                         f"answered by {policy!r} (its \"agent\"): run.json was edited")
    plan.spec = name if isinstance(name, str) else c.player
    plan.policy = policy if isinstance(policy, str) else "scripted"
    plan.repeats = 1 if plan.policy in ("scripted", "logprob", "choice") else c.repeats
    summary = folder / "summary.json"
    if meta.get("status") == "finished" and summary.is_file():
        # (a summary's repeats are what was played: a config raised after the run finished is a
        # run that holds fewer answers than it says; a summary without them is named by its own check)
        try:
            played = json.loads(summary.read_text(encoding="utf-8")).get("repeats")
        except (OSError, ValueError, AttributeError, RecursionError):
            played = None
        if isinstance(played, int) and not isinstance(played, bool) and played != plan.repeats:
            raise InputError(f"{folder}: run.json's config asks for {plan.repeats} repeats of each game but the "
                             f"finished run played {played} (summary.json): run.json was edited")
    return plan


def run_tmgbench(config: TmgbenchConfig, progress: Progress | None = None,
                 resume_dir: str | Path | None = None) -> RunResult:
    """Run (or finish) TMGBench for one player; writes answers.jsonl, summary.json, grids.json
    and the heat maps. Bad input fails before any folder is created."""
    return execute(AtomicPlan(config), progress, resume_dir)


def merge_atomic(folders: list[Path], out: Path) -> Outcome:
    """Combine the finished shards of one atomic run into `out` (see `stratbench merge`): the
    shards' records in the unsharded order, then the summary, grids and heat maps computed from all
    of them exactly as an unsharded run computes them.

    Classic runs are checked to hold every (game, repetition) of the run exactly once. A story run's
    units are its story files, which the merging machine may not have: its shards are checked to
    hold no answer twice."""
    plan = AtomicPlan.for_merge(folders)
    if plan.config.setting == "classic":
        refuse_repeated_units(folders, ANSWERS, _record_unit, "answers")
        return merge_streams(plan, folders, out)
    records = sorted((r for f in folders for r in read_jsonl(f / ANSWERS)), key=_record_order)
    keys = [_record_unit(r) for r in records]
    if len(set(keys)) != len(keys):
        raise InputError(f"the shards hold {len(keys) - len(set(keys))} answers twice; "
                         "merge each shard of one run once")
    write_jsonl_atomic(out / ANSWERS, records)
    return plan.summarise(out, {ANSWERS: records})
