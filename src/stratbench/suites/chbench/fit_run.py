"""`stratbench chbench fit --data FILE`: cognitive-hierarchy fits of observed play collected
anywhere (CSV: game_id, round, row_player, col_player, row_action, col_action), written as
`fit.json` (per player and CH model) and `summary.json`.

The run goes through the shared lifecycle with no records file: the CSV is read and checked in
``prepare`` (before any folder exists), and the fits are the run's summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from stratbench.errors import InputError
from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.lifecycle import FolderSpec, Outcome, Progress, RunPlan, RunResult, Stream, execute
from stratbench.runner.schema import Record

SUITE = "chbench"
KIND = "fit"
CH_MODELS: tuple[Literal["level_k", "poisson"], ...] = ("level_k", "poisson")


@dataclass
class FitConfig:
    """`chbench fit`: observed play (CSV) and the fit's settings."""

    data: str
    k_hat: int = 4
    restarts: int = 10
    seed: int = 0
    output_dir: str = "results"
    corrections: str | None = None


class FitPlan(RunPlan):
    """One `chbench fit` for :func:`~stratbench.runner.lifecycle.execute` (not resumable: it has
    no units of work to keep)."""

    suite = SUITE
    kind = KIND

    def __init__(self, config: FitConfig) -> None:
        self.config = config
        self.observations: dict[str, Any] = {}  # player → PlayerObservations

    def prepare(self) -> None:
        from stratbench.suites.chbench.catalogue import build_catalogue, load_corrections
        from stratbench.suites.chbench.fit import observations_from_csv

        c = self.config
        if c.k_hat < 1 or c.restarts < 1:
            raise InputError("--k-hat and --restarts must be at least 1")
        if not Path(c.data).is_file():
            raise InputError(f"--data {c.data}: file not found")
        cat = build_catalogue()
        if c.corrections:
            cat = load_corrections(c.corrections, cat)
        self.observations = observations_from_csv(c.data, cat)

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "chbench_fit")

    def config_json(self) -> dict[str, Any]:
        c = self.config
        return {"data": c.data, "k_hat": c.k_hat, "restarts": c.restarts, "seed": c.seed, "corrections": c.corrections}

    def streams(self) -> list[Stream[Any]]:
        return []

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        from stratbench.suites.chbench.fit import fit

        c = self.config
        fits: dict[str, dict[str, Any]] = {}
        for player, o in sorted(self.observations.items()):
            fits[player] = {m: fit(o, m, c.k_hat, c.restarts, c.seed).to_dict() for m in CH_MODELS}
        write_json_atomic(folder / "fit.json", fits)
        players = {p: {"poisson_lambda": f["poisson"].get("lambda"),
                       "poisson_mean_level": f["poisson"]["mean_level"],
                       "level_k_mean_level": f["level_k"]["mean_level"],
                       "n_obs": f["level_k"]["n_obs"]} for p, f in fits.items()}
        summary = {"players": players, "k_hat": c.k_hat}
        write_json_atomic(folder / "summary.json", summary)
        return Outcome({"": summary, "fits": fits}, 0, {"players": len(fits)})

    def totals(self, records: dict[str, list[Record]], outcome: Outcome) -> dict[str, Any]:
        return dict(outcome.totals)  # no records file and no model: only the players fitted


def run_fit(config: FitConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
    """Fit Level-K and Poisson CH to the observed play in ``config.data``; the result's summaries
    are the summary ("") and every player's fits ("fits": player → CH model → fit)."""
    return execute(FitPlan(config), progress, resume_dir)


__all__ = ["FitConfig", "FitPlan", "run_fit"]
