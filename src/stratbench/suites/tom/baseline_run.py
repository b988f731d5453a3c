"""`stratbench tom baseline`: the tabular R-max baseline as a result folder.

Files: ``episodes.jsonl`` (one record per episode: its trajectory - actions, predictions, the
partner's initial state - and its metrics), ``summary.json`` (``settings``: one row per game ×
partner with the suite's keys and 95% CIs over episodes), ``curves.json`` and
``regret_curve.png`` (per-step regret). The summary and curves are computed from the records
(:func:`results.summarize_baseline`), which is what makes a merge of shards equal to the unsharded
run. ``--shard i/n`` keeps every n-th episode of each setting (round-robin over the episode index);
episode e always plays with its own seed ``derive_seed(seed, e)``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import JsonlWriter, write_json_atomic
from stratbench.runner.shard import as_shard, shard_tag


def write_baseline_outputs(folder: Path, records: list[dict[str, Any]], config: dict[str, Any],
                           shard: str | None = None) -> list[dict[str, Any]]:
    """summary.json, curves.json and the plot, from the records (used by the run and the merge)."""
    from stratbench.suites.tom.results import plot_curves, summarize_baseline

    rows, curves = summarize_baseline(records, config)
    summary: dict[str, Any] = {"settings": rows}
    if shard:
        summary["shard"] = shard
    write_json_atomic(folder / "summary.json", summary)
    write_json_atomic(folder / "curves.json", curves)
    plot_curves(curves, folder / "regret_curve.png", "Tabular R-max baseline: regret per step")
    return rows


def run_tom_baseline(games: list[str], partners: list[str], episodes: int, rounds: int, seed: int,
                     output_dir: str, shard: str | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run the tabular agent on every game × partner; returns the folder and the summary rows."""
    from stratbench.suites.tom.games import GAMES
    from stratbench.suites.tom.results import baseline_episode_records
    from stratbench.suites.tom.tabular import simulate_rmax

    for g in games:
        if g not in GAMES:
            raise InputError(f"unknown --game {g!r}; known: {', '.join(GAMES)}")
    from stratbench.suites.tom.partners import make_partner

    for p in partners:
        make_partner(p, games[0])  # raises InputError naming the known partners
    if episodes < 1 or rounds < 1:
        raise InputError("--episodes and --rounds must be at least 1")
    sh = as_shard(shard)
    ids = sh.select(list(range(episodes)))
    if sh.count > episodes:
        raise InputError(f"--shard {sh}: more shards than episodes ({episodes})")
    folder = create_run_folder(output_dir, "tom_baseline", tag=shard_tag(sh)).path
    config = {"games": games, "partners": partners, "episodes": episodes, "rounds": rounds,
              "seed": seed, "agent": "tabular-rmax", "m": 1, "shard": sh.to_json(),
              "output_dir": str(output_dir)}
    meta = run_metadata("tom", config, kind="baseline")
    write_json_atomic(folder / "run.json", meta)
    t0 = time.perf_counter()
    records: list[dict[str, Any]] = []
    with JsonlWriter(folder / "episodes.jsonl") as writer:
        for g in games:
            for p in partners:
                sim = simulate_rmax(GAMES[g], make_partner(p, g), ids, rounds, seed, m=1)
                for rec in baseline_episode_records(g, p, ids, sim):
                    writer.write(rec)
                    records.append(rec)
    rows = write_baseline_outputs(folder, records, config, None if sh.whole else str(sh))
    meta.update(end_time=now_iso(), status="finished",
                totals={"settings": len(rows), "records": len(records), "errors": 0,
                        "seconds": time.perf_counter() - t0})
    write_json_atomic(folder / "run.json", meta)
    return folder, rows
