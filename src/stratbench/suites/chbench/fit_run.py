"""`stratbench chbench fit --data FILE`: cognitive-hierarchy fits of observed play collected
anywhere (CSV: game_id, round, row_player, col_player, row_action, col_action), written as
`fit.json` (per player and CH model) and `summary.json`.

Actions in the CSV are the games' labels (A, B, C); numbers are read only with ``action_base``
(``--action-base 0|1``), since "1" is the first action to one exporter and the second to another.
Rows of games whose payoffs are uncertain in the catalogue are refused unless ``corrections``
supplies them (or ``allow_uncertain`` accepts the placeholders, e.g. for play recorded by
``chbench run`` on those very matrices).

Each fit carries what ``chbench run`` reports: a bootstrap CI over games of the mean level
(``bootstrap`` replicates), the likelihood-improvement ratios k̂−1 → k̂ → k̂+1 and the KL between
consecutive levels (:func:`stratbench.suites.chbench.fit.fit_report`).

The run goes through the shared lifecycle with no records file: the CSV is read and checked in
``prepare`` (before any folder exists), and the fits are the run's summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from stratbench.checks import Rule, check_config
from stratbench.errors import InputError
from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.lifecycle import FolderSpec, Outcome, Progress, RunPlan, RunResult, Stream, execute
from stratbench.runner.schema import Record
from stratbench.seeding import derive_seed
from stratbench.suites.chbench.run import K_HAT_RULE

SUITE = "chbench"
KIND = "fit"
CH_MODELS: tuple[Literal["level_k", "poisson"], ...] = ("level_k", "poisson")


@dataclass
class FitConfig:
    """`chbench fit`: observed play (CSV) and the fit's settings."""

    FIELD_RULES: ClassVar[dict[str, Rule]] = {"k_hat": K_HAT_RULE}

    data: str
    k_hat: int = 4
    restarts: int = 10
    seed: int = 0
    output_dir: str = "results"
    corrections: str | None = None
    action_base: int | None = None  # numbers in the CSV's action columns count from 0 or 1
    bootstrap: int = 100  # replicates over games for the mean-level CIs (0: none)
    allow_uncertain: bool = False  # fit uncertain games' placeholder matrices


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
        check_config(c)  # k_hat, restarts, bootstrap, seed: the shared rules
        if c.action_base is not None and (isinstance(c.action_base, bool) or c.action_base not in (0, 1)):
            raise InputError(f"--action-base {c.action_base!r}: use 0 (the first action is 0) or 1 (it is 1)")
        cat = build_catalogue()
        if c.corrections:
            cat = load_corrections(c.corrections, cat)
        self.observations = observations_from_csv(c.data, cat, c.action_base, c.allow_uncertain, label="--data")

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "chbench_fit")

    def config_json(self) -> dict[str, Any]:
        c = self.config
        return {"data": c.data, "k_hat": c.k_hat, "restarts": c.restarts, "seed": c.seed, "corrections": c.corrections,
                "action_base": c.action_base, "bootstrap": c.bootstrap, "allow_uncertain": c.allow_uncertain}

    def streams(self) -> list[Stream[Any]]:
        return []

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        from stratbench.suites.chbench.fit import fit_report

        c = self.config
        fits: dict[str, dict[str, Any]] = {}
        for pi, (player, o) in enumerate(sorted(self.observations.items())):
            # the fits are exhaustive (no seed); each bootstrap has its own seed
            fits[player] = {m: fit_report(o, m, c.k_hat, c.bootstrap, derive_seed(c.seed, pi, mi))
                            for mi, m in enumerate(CH_MODELS)}
        write_json_atomic(folder / "fit.json", fits)
        players = {p: {"poisson_lambda": f["poisson"].get("lambda"),
                       "poisson_mean_level": f["poisson"]["mean_level"],
                       "poisson_mean_level_ci95": f["poisson"]["mean_level_ci95"],
                       "poisson_identified": f["poisson"]["identified"],
                       "poisson_mean_level_range": f["poisson"]["mean_level_range"],
                       "level_k_mean_level": f["level_k"]["mean_level"],
                       "level_k_mean_level_ci95": f["level_k"]["mean_level_ci95"],
                       "level_k_identified": f["level_k"]["identified"],
                       "level_k_mean_level_range": f["level_k"]["mean_level_range"],
                       "n_obs": f["level_k"]["n_obs"]} for p, f in fits.items()}
        summary = {"players": players, "k_hat": c.k_hat, "bootstrap": c.bootstrap}
        write_json_atomic(folder / "summary.json", summary)
        return Outcome({"": summary, "fits": fits}, 0, {"players": len(fits)})

    def totals(self, records: dict[str, list[Record]], outcome: Outcome) -> dict[str, Any]:
        return dict(outcome.totals)  # no records file and no model: only the players fitted


def run_fit(config: FitConfig, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
    """Fit Level-K and Poisson CH to the observed play in ``config.data``; the result's summaries
    are the summary ("") and every player's fits ("fits": player → CH model → fit)."""
    return execute(FitPlan(config), progress, resume_dir)


__all__ = ["FitConfig", "FitPlan", "run_fit"]
