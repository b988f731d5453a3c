"""The Nash-gap suite and the tiered research suite, as registered suites."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stratbench.players.scripted import ScriptedRoster
from stratbench.runner.jsonl import read_jsonl
from stratbench.runner.lifecycle import Progress, RunResult
from stratbench.suites.base import (
    CompareUnits,
    HeadlineRow,
    Job,
    SuiteBase,
    SuiteModel,
    build_section_config,
    headline_rows,
    model_overrides,
)
from stratbench.suites.nashgap.report import HEADLINE_KEYS, LEADERBOARD

#: the scripted players (`players.SCRIPTED_AGENTS`, which the contract test holds to this list)
SCRIPTED = ScriptedRoster(("random", "dummy", "nash", "maximin-pure", "first-action"))

#: per-game metrics `stratbench compare` pairs over games
COMPARE_METRICS = ("exploitability", "exploitability_normalized", "nash_gap", "llm_value")

if TYPE_CHECKING:
    from stratbench.suites.nashgap.config import NashgapConfig
    from stratbench.suites.nashgap.tiered import TieredConfig



class NashgapSuite(SuiteBase["NashgapConfig"]):
    in_suite_files = True
    name = "nashgap"
    family = "nashgap"
    kinds = ("run",)
    description = "random zero-sum matrix games against a Nash-equilibrium opponent"
    cli = "stratbench.cli.nashgap"
    scorecard = "stratbench.suites.nashgap.scorecard"
    scripted = SCRIPTED
    headline_keys = HEADLINE_KEYS
    leaderboard = LEADERBOARD
    compare_metrics = COMPARE_METRICS

    def detect(self, names: set[str]) -> bool:
        return "games.json" in names and any(n.startswith("trials") for n in names)

    def run(self, config: NashgapConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.nashgap.run import run_nashgap

        return run_nashgap(config, progress=progress, resume_dir=resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.nashgap.run import merge_shards

        return merge_shards(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.suites.nashgap.run import NashgapPlan

        return NashgapPlan.for_folder(folder)

    def jobs(self, where: str, params: Mapping[str, Any], models: Sequence[SuiteModel],
             seeds: Sequence[int]) -> list[Job["NashgapConfig"]]:
        from stratbench.suites.nashgap.config import NashgapConfig

        self.check_players(where, [m.spec for m in models])  # before any folder exists
        jobs = []
        for m in models:
            for s in seeds:
                cfg = build_section_config(NashgapConfig, where, self.name, {**model_overrides(m), **params},
                                           model=m.spec, seed=s)
                cfg.validate()
                jobs.append(Job(self.name, m.label, s, cfg))
        if jobs and jobs[0].config.games_file is not None:  # read before any folder exists
            from stratbench.errors import InputError
            from stratbench.suites.nashgap.run import build_games

            try:
                build_games(jobs[0].config)
            except InputError as e:
                raise InputError(f"games_file {e}") from None
        if jobs:  # read before any folder exists (its errors name --price-table: said as the key)
            from stratbench.suites.nashgap.config import load_price_table

            load_price_table(jobs[0].config.price_table)
        return jobs

    def headline(self, folder: Path) -> list[HeadlineRow]:
        rows: list[HeadlineRow] = []
        for f in sorted(folder.glob("summary*.json")):
            s = json.loads(f.read_text())
            mode = "mixed" if "mixed" in f.name else ("pure" if "pure" in f.name else s.get("mode", ""))
            rows += headline_rows(s, ("mean_exploitability", "mean_nash_gap"), mode)
        return rows

    def compare_units(self, folder: Path) -> CompareUnits:
        """mode → game (by its payoff matrix) → per-game mean of each metric (scored trials)."""
        games = {g["game_id"]: json.dumps(g["payoff_matrix"]) for g in json.loads((folder / "games.json").read_text())}
        out: CompareUnits = {}
        from stratbench.errors import InputError
        from stratbench.suites.nashgap.records import record_problem

        for f in sorted(folder.glob("trials*.jsonl")):
            recs = [r for r in read_jsonl(f) if r["status"] in ("ok", "parsed")]
            for r in recs:
                why = record_problem(r)
                if why is not None:
                    raise InputError(f"{f}: game {r.get('game_id')} trial {r.get('trial_id')}: {why} (edited by hand)")
            if not recs:
                continue
            by: dict[Any, list[dict[str, Any]]] = {}
            for r in recs:
                by.setdefault(games[r["game_id"]], []).append(r)
            out[recs[0]["mode"]] = {k: {m: float(np.mean([r[m] for r in rs])) for m in COMPARE_METRICS}
                                    for k, rs in by.items()}
        return out

    def report_view(self, ctx: Any, run: Any, anchor: str) -> Any:
        from stratbench.suites.nashgap.report import nashgap_view

        return nashgap_view(ctx, run, anchor, self.name)


class TieredSuite(SuiteBase["TieredConfig"]):
    """The original project's tiered research suite: a collection of Nash-gap runs (providers ×
    model tiers × buckets × seeds) with its own tables, in a folder described by
    suite_metadata.json."""

    name = "tiered"
    family = "tiered"
    kinds = ("suite",)
    description = "providers × model tiers × difficulty buckets × seeds of Nash-gap runs"
    scripted = SCRIPTED
    cli = None  # mounted by the `suite` command group

    def run(self, config: TieredConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.nashgap.tiered import run_tiered_suite

        res = run_tiered_suite(config, progress=progress, resume_dir=resume_dir)
        return RunResult(res.folder, {"": {"aggregated": res.aggregated}}, res.n_errors)

    def merge_collection(self, folders: list[Path], output_dir: str | Path) -> Path:
        from stratbench.suites.nashgap.tiered_merge import merge_suite_shards

        return merge_suite_shards(folders, output_dir)


NASHGAP = NashgapSuite()
TIERED = TieredSuite()
