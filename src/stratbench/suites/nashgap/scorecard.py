"""The Nash-gap suite on the scorecard: the six difficulty buckets, pure actions.

Raw models are read by log-probabilities under 3 row-order rotations (the rotation-averaged policy
is the debiased one); chat models by exact choice scoring (local) or sampled answers (HTTP). The
metric is the *debiased exploitability* per game — the exploitability of the player's average
policy over its decisions in that game, divided by the game's payoff range so that buckets of
different scales weigh alike. References on the same games: `nash` (a run of the equilibrium
player: 0) and `uniform` (exact: the uniform strategy's exploitability, from the games).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from stratbench.runner.jsonl import read_jsonl
from stratbench.scoring import Role, ScoreCell, UnitScores
from stratbench.suites.base import Job, SuiteModel
from stratbench.suites.nashgap.games import BUCKETS
from stratbench.suites.nashgap.metrics import zero_sum_metrics
from stratbench.suites.scorecards import (
    ScorecardModel,
    ScorecardPart,
    ScorecardRun,
    cell,
    exact_cell,
    runs_of,
    status_counts,
)

SIZES = {
    "smoke": {"games_per_bucket": 1, "trials": 1},
    "quick": {"games_per_bucket": 5, "trials": 5},
    "standard": {"games_per_bucket": 20, "trials": 20},
    "paper": {"games_per_bucket": 100, "trials": 100},  # the original benchmark's 100 games × 100 trials
}
ROTATIONS = 3


class NashgapPart(ScorecardPart):
    suite = "nashgap"
    title = "Nash gap"
    metric = "debiased_exploitability"
    metric_label = "debiased exploitability (÷ payoff range)"
    lower_is_better = True
    unit = "games"
    chance = "uniform"
    optimal = "nash"
    formula = "100 × (1 − debiased exploitability / the uniform strategy's), over the same games"
    references = (("nash", "optimal"), ("uniform", "chance"))

    def budget(self, name: str) -> dict[str, Any]:
        s = SIZES[name]
        return {"buckets": list(BUCKETS), "games_per_bucket": s["games_per_bucket"], "mode": "pure",
                "order_rotations": ROTATIONS, "trials_when_sampled": s["trials"]}

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        from stratbench.suites import SUITES

        suite = SUITES.get(self.suite)
        size = SIZES[budget]
        players: list[tuple[SuiteModel, Role, dict[str, Any]]] = [
            (m.suite_model(), "model", {"num_trials": size["trials"], "order_rotations": ROTATIONS}) for m in models]
        # the Nash player states its exact strategy: one decision per game says everything
        players.append((SuiteModel("nash", "nash"), "optimal", {"num_trials": 1, "order_rotations": 1}))
        out: list[tuple[Job, str, Role]] = []
        for sm, role, extra in players:
            for bucket in BUCKETS:
                params = {"bucket": bucket, "num_games": size["games_per_bucket"], **extra}
                for job in suite.jobs("scorecard", params, [sm], [seed]):
                    job.config.folder_tag = bucket
                    job.setting = bucket
                    out.append((job, sm.label, role))
        return out

    def units(self, runs: Sequence[ScorecardRun], player: str) -> UnitScores | None:
        rows = []
        for r in runs_of(runs, player):
            games = {g["game_id"]: g for g in json.loads((r.folder / "games.json").read_text())}
            by_game: dict[int, list[list[float]]] = {}
            for rec in _records(r):
                if rec["status"] in ("ok", "parsed") and rec.get("policy") is not None:
                    by_game.setdefault(rec["game_id"], []).append(rec["policy"])
            for gid in sorted(by_game):
                g = games[gid]
                value = _expl(g, np.mean(by_game[gid], axis=0))
                chance = _expl(g, np.full(len(g["payoff_matrix"]), 1.0 / len(g["payoff_matrix"])))
                rows.append(((r.job.setting, gid), value, chance, 0.0))
        return UnitScores.of(rows)

    def cells(self, runs: Sequence[ScorecardRun], models: Sequence[ScorecardModel], seed: int) -> list[ScoreCell]:
        out = []
        players: list[tuple[str, Role]] = [(m.label, "model") for m in models] + [("nash", "optimal")]
        for player, role in players:
            mine = runs_of(runs, player)
            counts = status_counts(rec for r in mine for rec in _records(r))
            out.append(cell(player, role, self.suite, self.units(runs, player), counts, [r.rel for r in mine], seed))
        # the uniform strategy, exactly, on the Nash player's games (every player's games are the same)
        ref = self.units(runs, "nash")
        if ref is not None and len(ref):
            out.append(exact_cell("uniform", "chance", self.suite, float(ref.chance.mean()), 0.0))
        return out


def _records(r: ScorecardRun) -> list[dict[str, Any]]:
    return [rec for f in sorted(r.folder.glob("trials*.jsonl")) for rec in read_jsonl(f)]


def _expl(game: dict[str, Any], policy: np.ndarray) -> float:
    """The exploitability of `policy` in a games.json entry, divided by the payoff range."""
    m = zero_sum_metrics(np.asarray(game["payoff_matrix"], dtype=float), policy,
                         np.asarray(game["nash_equilibrium_col"], dtype=float), float(game["value"]))
    return m.exploitability_normalized


PART = NashgapPart()
