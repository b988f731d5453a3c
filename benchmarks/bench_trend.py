"""The trend's cost per checkpoint against one scorecard, at the same budget and seed (one run).

The checkpoints are the fake OpenAI-compatible server (tests/helpers/fake_openai_server.py) with a
skill planted in every suite (tests/helpers/planted_skill.py; the checkpoints of tests/workflows/
test_trend.py), served from a separate process as a real server would be. Measured, each through
`stratbench.api` with the HTML reports on (the commands' default) and the response cache on, in a
fresh cache folder of its own:

  (a) one scorecard of one checkpoint (`stratbench scorecard --model openai-compatible:ckpt-1000`);
  (b) a trend of `--checkpoints` N checkpoints (ckpt-100 …), divided by N;
  (c) `--add` of one more checkpoint (ckpt-1000000) to a copy of (b)'s folder;
  (d) (b) again in a new folder, answered by (b)'s response cache (0 model calls), divided by N.

Per row: wall time, model calls, cache hits and prompt / completion tokens (the model's rows of
every checkpoint scorecard's cost.json), and the wall time split into the model's runs, the
reference players' runs (chance, optimal and the scripted references every scorecard runs again),
planning (`plan_scorecard`, `check_job_models`, `scorecard_models`: the trend plans each checkpoint
once to check it before anything runs, then its scorecard plans it again), the checkpoints'
scorecard reports, the trend's analysis (compare of consecutive scorecards) and page, and the rest
(scoring, writing files). A cProfile of one more scorecard (`--no-profile` skips it) gives the time
spent building the prompt texts (the suites' prompts.py modules) — the part of planning a shared
plan could save.

Run: .venv/bin/python benchmarks/bench_trend.py [--checkpoints 4] [--budget smoke] [--seed 0]
     [--results-dir benchmarks/results] [--no-profile]
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import os
import platform
import pstats
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "tests" / "helpers"
sys.path.insert(0, str(HELPERS))

from planted_skill import WEIGHTS, planted_server  # noqa: E402

import stratbench.api as api  # noqa: E402
import stratbench.report.trend as report_trend  # noqa: E402
import stratbench.workflows.scorecard as wf_scorecard  # noqa: E402
import stratbench.workflows.trend as wf_trend  # noqa: E402

CKPTS = list(WEIGHTS)  # ckpt-100 … ckpt-1000000, in step order
ONE = "ckpt-1000"
STEP_FROM = r"ckpt-(\d+)"
PARTS = ("model runs", "reference runs", "planning", "scorecard reports", "trend analysis", "trend page", "other")

class Timers:
    """Seconds per part of a measured call: wrappers around the workflow functions (installed for
    the whole benchmark) and the runs' own seconds (on_run)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._depth = 0

    def reset(self) -> None:
        self.seconds.clear()

    def wrap(self, module: Any, name: str, part: str) -> None:
        """Time ``module.name`` as ``part``; a wrapped call inside another (the analysis and the
        reports plan the saved scorecards again to check them) counts to the outer one."""
        fn = getattr(module, name)

        def timed(*a: Any, **k: Any) -> Any:
            if self._depth:
                return fn(*a, **k)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds[part] += time.perf_counter() - t0
                self._depth -= 1

        setattr(module, name, timed)

    def on_run(self, entry: dict[str, Any]) -> None:
        part = "model runs" if entry.get("role") == "model" else "reference runs"
        self.seconds[part] += float(entry.get("seconds") or 0.0)


def install(timers: Timers) -> None:
    for module in (wf_scorecard, wf_trend):  # the names each module calls
        for name in ("plan_scorecard", "check_job_models", "scorecard_models"):
            timers.wrap(module, name, "planning")
    timers.wrap(wf_trend, "analyse", "trend analysis")
    timers.wrap(report_trend, "build_trend_report", "trend page")  # (api imports it at call time)
    timers.wrap(api, "_report_index", "scorecard reports")


def spec(name: str) -> str:
    return f"openai-compatible:{name}"


def costs(folders: list[Path], labels: list[str]) -> dict[str, int]:
    """The models' rows of the scorecards' cost.json, summed."""
    tot = {"model_calls": 0, "model_cache_hits": 0, "tokens_in": 0, "tokens_out": 0}
    for f, label in zip(folders, labels):
        for row in json.loads((f / "cost.json").read_text()):
            if row.get("player") == label:
                for k in tot:
                    tot[k] += int(row.get(k) or 0)
    return tot


def trend_folders(folder: Path, only: list[str] | None = None) -> tuple[list[Path], list[str]]:
    meta = json.loads((folder / "trend_metadata.json").read_text())
    cps = [c for c in meta["checkpoints"] if only is None or c["label"] in only]
    return [folder / c["scorecard"] for c in cps], [c["label"] for c in cps]


def measure(label: str, n: int, timers: Timers, call: Callable[[], tuple[list[Path], list[str]]]) -> dict[str, Any]:
    """One row: ``call`` runs the work and names the scorecards it made; totals divided by ``n``."""
    timers.reset()
    t0 = time.perf_counter()
    folders, labels = call()
    wall = time.perf_counter() - t0
    parts = {p: timers.seconds.get(p, 0.0) for p in PARTS if p != "other"}
    parts["other"] = max(0.0, wall - sum(parts.values()))
    c = costs(folders, labels)
    return {"row": label, "checkpoints": n, "seconds": wall / n, "seconds_total": wall,
            **{k: v / n for k, v in c.items()}, "parts": {k: v / n for k, v in parts.items()}}


def use_cache(folder: Path) -> None:
    os.environ["STRATBENCH_CACHE_DIR"] = str(folder)


def prompt_share(url: str, budget: str, seed: int, tmp: Path) -> dict[str, float]:
    """A cProfile of one scorecard (no cache): seconds spent in the suites' prompts.py modules (their
    functions' own time, summed) and in all (under the profiler)."""
    use_cache(tmp / "cache_profile")
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    api.scorecard([spec(ONE)], budget=budget, seed=seed, output_dir=tmp / "profile", base_url=url, no_cache=True)
    prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rx = re.compile(r"[/\\]stratbench[/\\]suites[/\\][^/\\]+[/\\]prompts\.py$")
    own = sum(v[2] for (file, _, _), v in stats.items() if rx.search(file))
    return {"prompt_texts_s": own, "total_s": total}


def fmt_row(r: dict[str, Any]) -> str:
    return (f"| {r['row']} | {r['checkpoints']} | {r['seconds']:,.1f} | {r['model_calls']:,.0f} | "
            f"{r['model_cache_hits']:,.0f} | {r['tokens_in']:,.0f} | {r['tokens_out']:,.0f} |")


def fmt_parts(r: dict[str, Any]) -> str:
    return f"| {r['row']} | " + " | ".join(f"{r['parts'][p]:,.3f}" if p == "planning" else f"{r['parts'][p]:,.2f}"
                                          for p in PARTS) + f" | {r['seconds']:,.1f} |"


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - no load average on this platform
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--checkpoints", type=int, default=4, help=f"checkpoints of the trend (b), 2 to {len(CKPTS) - 1}")
    ap.add_argument("--budget", choices=("smoke", "quick"), default="smoke")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results-dir", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--no-profile", action="store_true", help="skip the profiled scorecard (prompt texts' time)")
    args = ap.parse_args()
    if not 2 <= args.checkpoints <= len(CKPTS) - 1:
        ap.error(f"--checkpoints must be 2 to {len(CKPTS) - 1}")
    first, added = CKPTS[:args.checkpoints], CKPTS[args.checkpoints]
    budget, seed = args.budget, args.seed
    load_before = load()
    timers = Timers()
    install(timers)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_trend_") as tmpname, planted_server() as url:
        tmp = Path(tmpname)

        def one() -> tuple[list[Path], list[str]]:
            use_cache(tmp / "cache_a")
            res = api.scorecard([spec(ONE)], budget=budget, seed=seed, output_dir=tmp / "a", base_url=url,
                                on_run=timers.on_run)
            return [res.folder], [spec(ONE)]

        def series(out: str) -> Callable[[], tuple[list[Path], list[str]]]:
            def run() -> tuple[list[Path], list[str]]:
                use_cache(tmp / "cache_b")
                res = api.trend([spec(m) for m in first], step_from=STEP_FROM, budget=budget, seed=seed,
                                output_dir=tmp / out, base_url=url, on_run=timers.on_run)
                return trend_folders(res.folder)
            return run

        made: dict[str, Path] = {}

        def add() -> tuple[list[Path], list[str]]:
            use_cache(tmp / "cache_b")
            res = api.trend([spec(added)], step_from=STEP_FROM, add_to=made["copy"], base_url=url,
                            on_run=timers.on_run)
            return trend_folders(res.folder, only=[spec(added)])

        # first, so that the rows do not pay this process's first imports (suites, report, plots): the
        # profiled scorecard, or without it a plan and the report modules
        if args.no_profile:
            import stratbench.report.build  # noqa: F401

            wf_scorecard.plan_scorecard(wf_scorecard.scorecard_models([spec(ONE)], None, url), budget, seed)
            prof = None
        else:
            prof = prompt_share(url, budget, seed, tmp)
        rows.append(measure(f"(a) one scorecard ({ONE})", 1, timers, one))
        rows.append(measure(f"(b) trend of {len(first)} checkpoints, per checkpoint", len(first), timers,
                            series("b")))
        (b_folder,) = (tmp / "b").iterdir()
        made["copy"] = tmp / "c" / b_folder.name
        shutil.copytree(b_folder, made["copy"])
        rows.append(measure(f"(c) --add {added}", 1, timers, add))
        rows.append(measure("(d) (b) again, from the response cache, per checkpoint", len(first), timers,
                            series("d")))
    load_after = load()

    a, b = rows[0], rows[1]
    plan_pct = 100.0 * b["parts"]["planning"] / b["seconds"]
    ref_pct = 100.0 * b["parts"]["reference runs"] / b["seconds"]
    c = rows[2]
    an_b, an_c = 100.0 * b["parts"]["trend analysis"] / b["seconds"], 100.0 * c["parts"]["trend analysis"] / c["seconds"]
    when = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    argv = " ".join(["benchmarks/bench_trend.py", *sys.argv[1:]])
    notes = [
        f"Budget {budget}, seed {seed}; the fake OpenAI-compatible server (a skill planted in every suite) in its own "
        "process; stratbench.api with the HTML reports on and the response cache on (a fresh cache folder for (a) "
        "and for (b)–(d); (d) reads (b)'s).",
        "Calls, cache hits and tokens: the checkpoints' model rows of cost.json (the model's runs; the reference "
        "players make no model call). Time: wall time of the whole call; per checkpoint = ÷ checkpoints.",
        f"Per checkpoint the trend costs {b['seconds'] / a['seconds']:.2f}× one scorecard in time and "
        f"{b['model_calls'] / a['model_calls'] if a['model_calls'] else float('nan'):.2f}× its model calls: "
        "each checkpoint is an ordinary scorecard; the trend adds the consecutive comparisons and its page.",
        f"Prompts are planned per checkpoint, not once: planning is {plan_pct:.2f}% of a checkpoint's time in (b), "
        f"so sharing it would save at most {plan_pct:.2f}%.",
        f"The trend's analysis (compare of each consecutive pair, which checks both scorecards against their "
        f"records again) is {an_b:.0f}% of a checkpoint's time in (b); --add redoes every pair: {an_c:.0f}% of (c).",
        f"The reference players' runs, identical for every checkpoint at one budget and seed, are run again in "
        f"every checkpoint's scorecard: {ref_pct:.1f}% of a checkpoint's time in (b).",
    ]
    if prof is not None:
        notes.append(f"Profile of one more scorecard (under cProfile, {prof['total_s']:.1f} s): building the "
                     f"prompt texts took {prof['prompt_texts_s']:.3f} s "
                     f"({100 * prof['prompt_texts_s'] / prof['total_s']:.2f}%): the prompts are built inside the runs, "
                     "and ToM's and CHBench's later prompts hold the model's own earlier moves.")
    head = ("| | checkpoints | time per checkpoint (s) | model calls | cache hits | prompt tokens | "
            "completion tokens |")
    phead = "| | " + " | ".join(PARTS) + " | total (s) |"
    md = "\n".join([
        f"# Trend cost per checkpoint vs one scorecard (budget {budget}, seed {seed})", "",
        f"- date: {when}",
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"load average (1, 5, 15 min) {load_before} before, {load_after} after",
        f"- command: `{argv}`", "",
        head, "|" + "---|" * head.count(" | ") + "---|", *[fmt_row(r) for r in rows], "",
        "Wall time per checkpoint, by part (s):", "",
        phead, "|" + "---|" * phead.count(" | ") + "---|", *[fmt_parts(r) for r in rows], "",
        *[f"- {n}" for n in notes], "",
    ])
    print(md)
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "trend.md").write_text(md)
    data = {"date": when, "command": argv, "budget": budget, "seed": seed, "checkpoints": first, "added": added,
            "load_before": load_before, "load_after": load_after, "rows": rows, "profile": prof, "notes": notes}
    (out / "trend.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {out / 'trend.md'} and {out / 'trend.json'}")


if __name__ == "__main__":
    main()
