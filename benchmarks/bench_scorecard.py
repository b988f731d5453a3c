"""The scorecard's cost for the embedded model, per suite, next to the naive way (one run).

Ours: `stratbench.api.scorecard(["embedded"], budget=...)` runs once, with no response cache; its
cost.json gives, per suite, the model calls, the prompt tokens the backend actually evaluated
(after prefix reuse) and the wall time of the model's runs. While it runs, every request the
model receives is recorded (prompt and candidate answers), so the naive side is measured on the
scorecard's own prompts.

Naive: the same decisions read by sampling `--samples` answers per decision (generate requests at
temperature 1, `max_tokens` = the longest legal answer's tokens), with no prefix reuse: every
sample evaluates its whole prompt again. A *decision* is a distinct prompt the scorecard asked
the model about (repeated identical requests, e.g. a trial that repeats an order rotation, count
once). Calls and prompt tokens of the naive way are counted exactly over every decision (prompts
are tokenised); its time is measured on `--decisions-per-suite` decisions per suite (evenly spaced
through the suite's decisions), timing `--timed-samples` samples each and multiplying to
`--samples`, then extrapolated to the suite's number of decisions — labelled as such.

Ratios are naive ÷ ours: how many times more the naive way costs.

Run: .venv/bin/python benchmarks/bench_scorecard.py [--budget quick] [--samples 100]
     [--decisions-per-suite 3] [--timed-samples 10] [--results-dir benchmarks/results]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratbench.models.base import GenerateRequest, GenerateResult, ScoreRequest, ScoreResult
from stratbench.models.llama import LlamaCppModel, load_embedded

MODEL = "embedded"


@dataclass(frozen=True)
class Decision:
    """One distinct prompt the scorecard asked the model about."""

    prompt: str
    answer_tokens: int  # tokens of the longest legal answer (the naive generation's max_tokens)


@dataclass
class SuiteCapture:
    """What the model received during one suite's runs."""

    requests: int = 0
    decisions: dict[tuple[str, tuple[str, ...]], Decision] = field(default_factory=dict)


class Recorder:
    """Records every request `LlamaCppModel` serves (class-level wrappers), attributed to a suite
    when the scorecard reports that suite's run finished (runs are sequential)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[tuple[tuple[str, tuple[str, ...]], Decision]] = []
        self.suites: dict[str, SuiteCapture] = {}

    def _add(self, key: tuple[str, tuple[str, ...]], decision: Decision) -> None:
        with self._lock:
            self._pending.append((key, decision))

    def on_run(self, entry: dict[str, Any]) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        cap = self.suites.setdefault(str(entry.get("suite")), SuiteCapture())
        for key, d in pending:
            cap.requests += 1
            cap.decisions.setdefault(key, d)

    def install(self) -> Callable[[], None]:
        """Wrap the backend's batch methods; returns the function that unwraps them."""
        score0 = LlamaCppModel._score_batch
        gen0 = LlamaCppModel._generate_batch

        def score(model: LlamaCppModel, requests: list[ScoreRequest]) -> list[ScoreResult]:
            results = score0(model, requests)
            for q, r in zip(requests, results):
                if q.messages:  # chat scoring: the rendered text is what a sampler would see
                    prompt = r.rendered or q.prompt
                else:
                    prompt = q.prompt
                longest = max(r.n_tokens) if r.n_tokens else max(
                    (len(model.tokenize(c, bos=False)) for c in q.continuations), default=1)
                self._add((prompt, q.continuations), Decision(prompt, max(1, longest)))
            return results

        def generate(model: LlamaCppModel, requests: list[GenerateRequest]) -> list[GenerateResult]:
            results = gen0(model, requests)
            for q, r in zip(requests, results):
                prompt = r.rendered or q.prompt
                self._add((prompt, ("<generate>", str(q.max_tokens))), Decision(prompt, max(1, q.max_tokens)))
            return results

        setattr(LlamaCppModel, "_score_batch", score)
        setattr(LlamaCppModel, "_generate_batch", generate)

        def uninstall() -> None:
            setattr(LlamaCppModel, "_score_batch", score0)
            setattr(LlamaCppModel, "_generate_batch", gen0)

        return uninstall


def run_scorecard(budget: str, recorder: Recorder) -> tuple[list[dict[str, Any]], float]:
    """Run the scorecard once; its cost.json rows and the total wall time."""
    from stratbench.api import scorecard

    uninstall = recorder.install()
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="bench_scorecard_") as tmp:
            res = scorecard([MODEL], budget=budget, output_dir=tmp, no_cache=True, report=False,
                            on_run=recorder.on_run)
            cost = json.loads((res.folder / "cost.json").read_text())
    finally:
        uninstall()
    return list(cost), time.perf_counter() - t0


def spaced(items: Sequence[Decision], k: int) -> list[Decision]:
    """k items evenly spaced through the sequence (first and last included when k ≥ 2)."""
    n = len(items)
    if k >= n:
        return list(items)
    if k == 1:
        return [items[n // 2]]
    return [items[round(i * (n - 1) / (k - 1))] for i in range(k)]


async def measure_naive(model: LlamaCppModel, decisions: Sequence[Decision], timed: int,
                        seed: int) -> tuple[float, int, int]:
    """Seconds per decision (mean over the given decisions) for `timed` sampled answers each, and
    the generations' prompt tokens and illegal/empty count."""
    total_s, tokens, empty = 0.0, 0, 0
    for i, d in enumerate(decisions):
        reqs = [GenerateRequest(d.prompt, max_tokens=d.answer_tokens, temperature=1.0, seed=seed + i,
                                sample_index=k) for k in range(timed)]
        t0 = time.perf_counter()
        results = await model.generate(reqs)
        total_s += time.perf_counter() - t0
        for r in results:
            if not r.ok:
                raise RuntimeError(f"sampled generation failed: {r.error}")
            tokens += r.tokens_in
            empty += not (r.text or "").strip()
    return total_s / max(1, len(decisions)), tokens, empty


def ratio(naive: float, ours: float) -> float | None:
    return naive / ours if ours > 0 else None


async def naive_side(recorder: Recorder, samples: int, timed: int, per_suite: int) -> dict[str, dict[str, Any]]:
    model = load_embedded()
    try:
        await model.generate([GenerateRequest("warm-up", max_tokens=1, temperature=1.0)])
        out: dict[str, dict[str, Any]] = {}
        for suite, cap in recorder.suites.items():
            decisions = list(cap.decisions.values())
            prompt_tokens = [len(model.tokenize(d.prompt)) for d in decisions]
            sample = spaced(decisions, per_suite)
            s_per_sample, measured_tokens, empty = await measure_naive(model, sample, timed, seed=len(out))
            s_per_decision = s_per_sample / timed * samples
            out[suite] = {
                "decisions": len(decisions),
                "requests_seen": cap.requests,
                "calls": len(decisions) * samples,
                "prompt_tokens": sum(prompt_tokens) * samples,
                "seconds_extrapolated": s_per_decision * len(decisions),
                "measured": {"decisions": len(sample), "samples_timed_per_decision": timed,
                             "seconds_per_decision_for_all_samples": s_per_decision,
                             "prompt_tokens_evaluated": measured_tokens,
                             "empty_answers": empty,
                             "max_tokens": [d.answer_tokens for d in sample]},
            }
        return out
    finally:
        await model.aclose()


def fmt_ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:,.1f}×"


def build_rows(cost: list[dict[str, Any]], naive: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    ours = {c["suite"]: c for c in cost if c.get("player") == MODEL}
    rows = []
    for suite in [s for s in ours if s in naive] + [s for s in naive if s not in ours]:
        o, n = ours.get(suite), naive[suite]
        calls, tok, sec = (int(o["model_calls"]), int(o["tokens_in"]), float(o["seconds"])) if o else (0, 0, 0.0)
        rows.append({
            "suite": suite, "decisions": n["decisions"],
            "calls_ours": calls, "calls_naive": n["calls"], "calls_ratio": ratio(n["calls"], calls),
            "prompt_tokens_ours": tok, "prompt_tokens_naive": n["prompt_tokens"],
            "prompt_tokens_ratio": ratio(n["prompt_tokens"], tok),
            "seconds_ours": sec, "seconds_naive_extrapolated": n["seconds_extrapolated"],
            "seconds_ratio": ratio(n["seconds_extrapolated"], sec),
            "requests_seen": n["requests_seen"], "naive_measured": n["measured"],
        })
    if rows:
        tot: dict[str, Any] = {"suite": "total", "decisions": sum(r["decisions"] for r in rows)}
        for a, b in (("calls_ours", "calls_naive"), ("prompt_tokens_ours", "prompt_tokens_naive"),
                     ("seconds_ours", "seconds_naive_extrapolated")):
            tot[a], tot[b] = sum(r[a] for r in rows), sum(r[b] for r in rows)
        tot["calls_ratio"] = ratio(tot["calls_naive"], tot["calls_ours"])
        tot["prompt_tokens_ratio"] = ratio(tot["prompt_tokens_naive"], tot["prompt_tokens_ours"])
        tot["seconds_ratio"] = ratio(tot["seconds_naive_extrapolated"], tot["seconds_ours"])
        rows.append(tot)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| suite | decisions | calls ours | calls naive | calls × | prompt tokens ours | "
            "prompt tokens naive | tokens × | time ours (s) | time naive (s, extrapolated) | time × |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append(
            f"| {r['suite']} | {r['decisions']:,} | {r['calls_ours']:,} | {r['calls_naive']:,} | "
            f"{fmt_ratio(r['calls_ratio'])} | {r['prompt_tokens_ours']:,} | {r['prompt_tokens_naive']:,} | "
            f"{fmt_ratio(r['prompt_tokens_ratio'])} | {r['seconds_ours']:,.1f} | "
            f"{r['seconds_naive_extrapolated']:,.1f} | {fmt_ratio(r['seconds_ratio'])} |")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--budget", choices=("smoke", "quick"), default="quick")
    ap.add_argument("--samples", type=int, default=100, help="sampled answers per decision, naive way")
    ap.add_argument("--decisions-per-suite", type=int, default=3, help="decisions timed per suite, naive way")
    ap.add_argument("--timed-samples", type=int, default=10,
                    help="samples actually timed per decision (multiplied up to --samples)")
    ap.add_argument("--results-dir", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    for name in ("samples", "decisions_per_suite", "timed_samples"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be ≥ 1")
    timed = min(args.timed_samples, args.samples)

    recorder = Recorder()
    cost, scorecard_s = run_scorecard(args.budget, recorder)
    t0 = time.perf_counter()
    naive = asyncio.run(naive_side(recorder, args.samples, timed, args.decisions_per_suite))
    naive_s = time.perf_counter() - t0
    rows = build_rows(cost, naive)
    mismatch = [r["suite"] for r in rows if r["suite"] != "total" and r["requests_seen"] != r["calls_ours"]]

    when = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    mach = machine()
    notes = [
        f"Ours: one `stratbench scorecard --model {MODEL} --budget {args.budget}` run with no response cache "
        "(cost.json: model calls, prompt tokens evaluated after prefix reuse, wall time of the model's runs, "
        "model loading included).",
        "Naive: the same decisions (a decision = a distinct prompt the scorecard asked the model) read by "
        f"sampling {args.samples} answers each (temperature 1, max_tokens = the longest legal answer's tokens), "
        "no prefix reuse (every sample evaluates its whole prompt).",
        "Naive calls and prompt tokens: counted exactly over every decision (prompts tokenised).",
        f"Naive time: EXTRAPOLATED — {timed} samples timed on {args.decisions_per_suite} decision(s) per suite "
        f"(evenly spaced), multiplied by {args.samples}/{timed}, then by the suite's number of decisions.",
        "×: naive ÷ ours (how many times more the naive way costs).",
    ]
    if mismatch:
        notes.append(f"Warning: requests recorded ≠ cost.json model calls for {', '.join(mismatch)}.")
    argv = " ".join(["benchmarks/bench_scorecard.py", *sys.argv[1:]])
    md = "\n".join([
        f"# Scorecard cost: ours vs the naive way ({MODEL}, budget {args.budget})", "",
        f"- date: {when}",
        f"- machine: {mach['platform']}, {mach['cpu_count']} CPUs (usable: {mach['cpu_affinity']}), "
        f"Python {mach['python']}",
        f"- command: `{argv}`",
        f"- scorecard wall time (whole run, references included): {scorecard_s:,.1f} s; naive measurement: "
        f"{naive_s:,.1f} s", "",
        table(rows), "",
        *[f"- {n}" for n in notes], "",
    ])
    print(md)
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scorecard.md").write_text(md)
    data = {"date": when, "machine": mach, "command": argv, "model": MODEL, "budget": args.budget,
            "samples": args.samples, "timed_samples": timed, "decisions_per_suite": args.decisions_per_suite,
            "scorecard_seconds": scorecard_s, "naive_measurement_seconds": naive_s, "rows": rows,
            "cost_json": cost, "notes": notes}
    (out / "scorecard.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {out / 'scorecard.md'} and {out / 'scorecard.json'}")


if __name__ == "__main__":
    main()
