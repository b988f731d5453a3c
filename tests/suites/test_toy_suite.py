"""Adding a suite touches only its package, one registry line, its CLI module and its tests: a
matching-pennies suite written here in a few lines runs through `suite run`, `merge`, `report` and
`compare` with no change to any workflow, report or runner module."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratbench.players.scripted import ScriptedRoster
from stratbench.report.build import build_report
from stratbench.runner.jsonl import read_jsonl, write_json_atomic
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    RunPlan,
    Stream,
    check_meta,
    execute,
    merge_streams,
    rebuild_config,
)
from stratbench.runner.shard import as_shard, shard_tag
from stratbench.seeding import derive_seed
from stratbench.stats import bootstrap_ci
from stratbench.suites import SUITES
from stratbench.suites.base import Job, Leaderboard, SuiteBase, build_section_config, headline_rows, read_summary
from stratbench.workflows.compare import compare_runs
from stratbench.workflows.merge import merge_runs
from stratbench.workflows.suite_file import run_suite_file

# ---------------------------------------------------------------------------------- the toy suite


@dataclass
class PenniesConfig:
    model: str = "heads"  # "heads" always matches heads; "random" flips a coin
    rounds: int = 20
    seed: int = 0
    output_dir: str = "results"
    shard: Any = None


class PenniesPlan(RunPlan):
    """Matching pennies against a coin: +1 when the coins match, −1 otherwise."""

    suite, kind = "pennies", "run"

    def __init__(self, config: PenniesConfig) -> None:
        self.config = config

    def prepare(self) -> None:
        self.config.shard = as_shard(self.config.shard).to_json()

    def resume_from(self, meta: Any, folder: Path) -> None:
        check_meta(meta, folder, "pennies", ("run",))
        self.config = rebuild_config(PenniesConfig, meta["config"])

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "pennies", shard_tag(as_shard(self.config.shard)))

    def config_json(self) -> dict[str, Any]:
        return asdict(self.config)

    def streams(self) -> list[Stream[Any]]:
        c = self.config

        async def work(t: int) -> dict[str, Any]:
            rng = np.random.default_rng(derive_seed(c.seed, t))
            coin, mine = int(rng.integers(2)), int(rng.integers(2))
            mine = 0 if c.model == "heads" else mine
            return {"round": t, "status": "ok", "mine": mine, "coin": coin, "payoff": 1 if mine == coin else -1}

        units = as_shard(c.shard).select(list(range(c.rounds)))
        return [Stream("rounds.jsonl", units, work, unit_key=lambda t: t, record_unit=lambda r: r["round"],
                       sort_key=lambda r: r["round"], unit_name="rounds")]

    def summarise(self, folder: Path, records: dict[str, list[dict[str, Any]]]) -> Outcome:
        pay = [r["payoff"] for r in records["rounds.jsonl"]]
        s = {"player": self.config.model, "mean_payoff": float(np.mean(pay)),
             "mean_payoff_ci95": bootstrap_ci(pay, seed=self.config.seed), "n_rounds": len(pay)}
        write_json_atomic(folder / "summary.json", s)
        return Outcome({"": s}, 0)


class PenniesSuite(SuiteBase):
    name = family = "pennies"
    in_suite_files = True
    headline_keys = ("mean_payoff",)
    leaderboard = Leaderboard((("mean_payoff", "payoff"),), lower_is_better=False)
    compare_metrics = ("payoff",)
    scripted = ScriptedRoster(("heads", "random"))  # its reference players: no model to open

    def run(self, config: Any, progress: Any = None, resume_dir: Any = None) -> Any:
        return execute(PenniesPlan(config), progress, resume_dir)

    def merge(self, folders: list[Path], out: Path) -> Any:
        saved = json.loads((folders[0] / "run.json").read_text())["config"]
        return merge_streams(PenniesPlan(rebuild_config(PenniesConfig, saved, shard=None)), folders, out)

    def jobs(self, where: str, params: Any, models: Any, seeds: Any) -> list[Job]:
        return [Job(self.name, m.label, s, build_section_config(PenniesConfig, where, self.name, params,
                                                                 model=m.spec, seed=s)) for m in models for s in seeds]

    def headline(self, folder: Path) -> Any:
        return headline_rows(read_summary(folder), ("mean_payoff",))

    def compare_units(self, folder: Path) -> Any:
        return {"pennies": {r["round"]: {"payoff": float(r["payoff"])} for r in read_jsonl(folder / "rounds.jsonl")}}


# ---------------------------------------------------------------------------------- the test


@pytest.fixture
def pennies():
    SUITES.register("pennies", PenniesSuite())  # the one registry line (a test registers at run time)
    yield SUITES.get("pennies")
    SUITES.unregister("pennies")


def test_a_toy_suite_runs_through_suite_run_merge_report_and_compare(pennies, tmp_path):
    # suite run: a suite file with a [pennies] section, two players, two seeds
    (tmp_path / "s.toml").write_text('seeds = [1, 2]\nmodels = ["heads", "random"]\n[pennies]\nrounds = 30\n')
    res = run_suite_file(tmp_path / "s.toml", output_dir=str(tmp_path / "out"))
    assert [(r["suite"], r["model"], r["seed"]) for r in res.runs] == [
        ("pennies", "heads", 1), ("pennies", "heads", 2), ("pennies", "random", 1), ("pennies", "random", 2)]
    assert "pennies,heads,1,,,mean_payoff," in (res.folder / "runs.csv").read_text()

    # merge: two shards of one run equal the unsharded run, record for record
    cfg = PenniesConfig(model="random", rounds=25, seed=7, output_dir=str(tmp_path / "runs"))
    whole = pennies.run(replace(cfg))
    shards = [pennies.run(replace(cfg, shard=f"{i}/2", output_dir=str(tmp_path / "shards"))) for i in (1, 2)]
    merged = merge_runs([s.folder for s in shards], tmp_path / "merged")
    assert read_jsonl(merged / "rounds.jsonl") == read_jsonl(whole.folder / "rounds.jsonl")
    assert json.loads((merged / "summary.json").read_text()) == whole.summary
    assert json.loads((merged / "run.json").read_text())["suite"] == "pennies"

    # compare: paired over rounds (same seed → same coins)
    heads = pennies.run(replace(cfg, model="heads", output_dir=str(tmp_path / "heads")))
    cmp = compare_runs(whole.folder, heads.folder)
    (row,) = cmp["rows"]
    assert cmp["suite"] == "pennies" and row["paired"] and row["n_units"] == 25

    # report: the suite's headline and a leaderboard of the comparable runs
    page = build_report(tmp_path / "out").index.read_text()
    assert "mean_payoff" in page and "pennies" in page and "Ranked by payoff" in page
