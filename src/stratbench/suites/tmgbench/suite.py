"""TMGBench as registered suites: atomic games (classic and story settings), complex forms
(sequential, parallel, nested) and story generation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from stratbench.errors import InputError
from stratbench.players.scripted import ScriptedRoster
from stratbench.render.html import el, fmt_num, table
from stratbench.runner.lifecycle import Progress, RunResult
from stratbench.suites.base import (
    CompareUnits,
    HeadlineRow,
    Job,
    Leaderboard,
    SuiteBase,
    SuiteModel,
    build_section_config,
    headline_rows,
    model_overrides,
    read_summary,
)

HEADLINE_KEYS = (
    "par_pct", "id_pct", "bd_pct", "sd_pct", "accuracy_pct", "anti_id_pct", "anti_bd_pct",
    "mean_label_mass", "parse_failure_rate", "error_rate", "n_grids", "n_tasks", "n_records",
)
LEADERBOARD = Leaderboard((("par_pct", "PAR %"), ("id_pct", "ID %"), ("bd_pct", "BD %"),
                           ("accuracy_pct", "accuracy %"), ("parse_failure_rate", "parse failures"),
                           ("error_rate", "errors")), lower_is_better=False)

if TYPE_CHECKING:
    from stratbench.suites.tmgbench.config import TmgbenchConfig
    from stratbench.suites.tmgbench.stories_gen import StoryGenConfig



class TmgbenchSuite(SuiteBase["TmgbenchConfig"]):
    in_suite_files = True
    name = "tmgbench"
    family = "tmgbench"
    scripted = ScriptedRoster(("oracle", "empty", "uniform"))  # config.SCRIPTED (the contract test holds them equal)
    kinds = ("atomic",)
    description = "the 144 Robinson–Goforth 2×2 games: PAR, ID, BD"
    cli: ClassVar[str | None] = "stratbench.cli.tmgbench"
    scorecard: ClassVar[str | None] = "stratbench.suites.tmgbench.scorecard"
    headline_keys = HEADLINE_KEYS
    leaderboard = LEADERBOARD
    compare_metrics = ("par", "id_term")

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return config.get("form", "atomic") == "atomic"

    def detect(self, names: set[str]) -> bool:
        return "grids.json" in names or any(n.endswith("_heatmap.png") for n in names)

    def run(self, config: TmgbenchConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.tmgbench.run import run_tmgbench

        return run_tmgbench(config, progress=progress, resume_dir=resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.tmgbench.run import merge_atomic

        return merge_atomic(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.suites.tmgbench.run import atomic_plan

        return atomic_plan(folder)

    def jobs(self, where: str, params: Mapping[str, Any], models: Sequence[SuiteModel],
             seeds: Sequence[int]) -> list[Job["TmgbenchConfig"]]:
        from stratbench.suites.tmgbench.config import TmgbenchConfig

        self.check_players(where, [m.spec for m in models])  # before any folder exists
        jobs: list[Job[TmgbenchConfig]] = []  # (a complex form's: Job[ComplexConfig], a subclass)
        for m in models:
            for s in seeds:
                params = dict(params)
                extra = {k: params.pop(k) for k in ("k", "num_tasks") if k in params}
                cfg = build_section_config(TmgbenchConfig, where, self.name, {**model_overrides(m), **params},
                                           model=m.spec, seed=s)
                cfg.validate()
                if cfg.form != "atomic":  # complex forms are their own kind of run
                    from stratbench.suites.tmgbench.complex_run import ComplexConfig

                    jobs.append(Job[TmgbenchConfig](COMPLEX.name, m.label, s, ComplexConfig(**asdict(cfg), **extra)))
                elif extra:
                    raise InputError(f"{where}: [{self.name}] {', '.join(extra)} apply to complex forms only")
                else:
                    jobs.append(Job(self.name, m.label, s, cfg))
        if jobs and getattr(jobs[0].config, "games", None) is not None:  # (named as the file's key, not a flag)
            from stratbench.suites.tmgbench.run import selected_games

            try:
                selected_games(jobs[0].config.games)
            except InputError as e:
                raise InputError(f"{where}: [{self.name}] games{str(e).removeprefix('--games')}") from None
        if jobs and jobs[0].config.setting == "story":  # the stories are read before any folder exists
            from stratbench.suites.tmgbench.run import load_units, selected_games

            cfg = jobs[0].config
            try:
                load_units(cfg, selected_games(cfg.games))
            except InputError as e:
                said = str(e)  # the folder itself named (not found, unreadable): said as the key
                raise InputError(f"stories_dir {said}" if said.startswith(f"{cfg.stories_dir}:") else said) from None
        return jobs

    def headline(self, folder: Path) -> list[HeadlineRow]:
        return headline_rows(read_summary(folder), ("par_pct", "id_pct", "bd_pct"))

    def compare_units(self, folder: Path) -> CompareUnits:
        path = folder / "grids.json"
        if not path.exists():
            if read_summary(folder).get("form", "atomic") == "atomic":
                return {"atomic": {}}  # no answer scored, so no grid: compare says there is nothing to compare
            raise InputError(f"{folder}: no grids.json (complex-form runs are not compared yet)")
        grids = json.loads(path.read_text())
        return {"atomic": {g["id"]: {"par": 100.0 * g["par"], "id_term": 100.0 * g["id_term"]} for g in grids}}

    def summary_extras(self, summary: Mapping[str, Any]) -> list[Any]:
        rows = []
        for n in (0, 1, 2):
            if any(f"{m}_{n}_pct" in summary for m in ("par", "id", "bd")):
                rows.append((f"{n}-NE games", *(fmt_num(summary.get(f"{m}_{n}_pct"), "x_pct")
                                                for m in ("par", "id", "bd", "anti_id", "anti_bd"))))
        if not rows:
            return []
        return [el("h4", "By number of pure Nash equilibria (percent)"),
                table(("games", "PAR", "ID", "BD", "anti-ID", "anti-BD"), rows)]

    def leaderboard_group(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        parts = [summary.get(k) or config.get(k) for k in ("setting", "form", "prompting")]
        if config.get("games"):
            parts.append(f"games {config['games']}")
        return "tmgbench · " + " · ".join(str(p) for p in parts if p)


class TmgbenchComplexSuite(TmgbenchSuite):
    in_suite_files = False
    name = "tmgbench-complex"
    kinds = ("complex",)
    description = "TMGBench complex forms: sequential, parallel and nested tasks"
    scripted = ScriptedRoster(("oracle", "empty"))  # complex_run.COMPLEX_SCRIPTED (held equal by the contract test)
    cli = None  # the tmgbench command group runs both kinds
    scorecard = None  # the scorecard part belongs to the suite's main entry

    def legacy_owns(self, config: Mapping[str, Any]) -> bool:
        return config.get("form", "atomic") != "atomic"

    def detect(self, names: set[str]) -> bool:
        return "tasks.jsonl" in names

    def run(self, config: TmgbenchConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.tmgbench.complex_run import run_complex

        return run_complex(config, progress=progress, resume_dir=resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        from stratbench.suites.tmgbench.complex_run import merge_complex

        return merge_complex(folders, out)

    def folder_plan(self, folder: Path) -> Any:
        from stratbench.suites.tmgbench.complex_run import complex_plan

        return complex_plan(folder)

    def headline(self, folder: Path) -> list[HeadlineRow]:
        return headline_rows(read_summary(folder), ("accuracy_pct",))


class StoriesSuite(SuiteBase["StoryGenConfig"]):
    """Story generation for the story setting: a result folder of generated, verified stories."""

    name = "tmgbench-stories"
    family = "tmgbench-stories"
    kinds = ("stories",)
    description = "TMGBench story files generated by a model, accepted only when they match their game"
    marker_files = ("generation.jsonl",)

    def run(self, config: StoryGenConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
        from stratbench.suites.tmgbench.stories_gen import generate_stories

        return generate_stories(config, progress, resume_dir)


ATOMIC = TmgbenchSuite()
COMPLEX = TmgbenchComplexSuite()
STORIES = StoriesSuite()
