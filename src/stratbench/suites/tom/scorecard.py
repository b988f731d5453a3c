"""Functional theory of mind on the scorecard: RPS, Battle of the Sexes and the Prisoner's Dilemma,
each against a single-action and a tit-for-tat partner, LM prompting.

Raw local models read the action from the log-probabilities of the option labels with prefix reuse
(the episode's growing prompt is evaluated once); chat models are prompted through their chat
template. The metric is regret per step (Δ_Functional/T) per episode. References on the same
settings and horizon: the optimal policy (regret 0, exact), the uniformly random agent (its exact
expected regret, by dynamic programming) and the paper's tabular R-max learner (a run: its own
episodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stratbench.runner.jsonl import read_jsonl
from stratbench.scoring import Role, ScoreCell, UnitScores
from stratbench.suites.base import Job
from stratbench.suites.scorecards import (
    ScorecardModel,
    ScorecardPart,
    ScorecardRun,
    cell,
    exact_cell,
    runs_of,
    status_counts,
)

GAMES = ("rps", "ibs", "ipd")
PARTNERS = ("single_action", "tit_for_tat")
SIZES = {
    "smoke": {"rounds": 4, "episodes": 1, "baseline_episodes": 3},
    "quick": {"rounds": 20, "episodes": 1, "baseline_episodes": 100},
    "standard": {"rounds": 50, "episodes": 3, "baseline_episodes": 300},
    "paper": {"rounds": 100, "episodes": 30, "baseline_episodes": 300},  # T = 100; ≥ 30 episodes; 300 tabular
}
TABULAR = "tabular R-max"


class TomPart(ScorecardPart):
    suite = "tom"
    title = "Theory of mind"
    metric = "regret_per_step"
    metric_label = "regret per step (Δ_F/T)"
    lower_is_better = True
    unit = "episodes"
    chance = "random"
    optimal = "optimal policy"
    formula = "100 × (1 − regret per step / the random agent's expected regret), on the same settings"
    references = (("optimal policy", "optimal"), ("random", "chance"), (TABULAR, "reference"))

    def budget(self, name: str) -> dict[str, Any]:
        s = SIZES[name]
        return {"games": list(GAMES), "partners": list(PARTNERS), "prompting": "LM", "rounds": s["rounds"],
                "episodes": s["episodes"], "tabular_episodes": s["baseline_episodes"]}

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        from stratbench.suites import SUITES
        from stratbench.suites.tom.baseline_run import BaselineConfig

        s = SIZES[budget]
        params = {"games": list(GAMES), "partners": list(PARTNERS), "prompting": "LM", "rounds": s["rounds"],
                  "episodes": s["episodes"]}
        out: list[tuple[Job, str, Role]] = []
        for m in models:
            for job in SUITES.get(self.suite).jobs("scorecard", params, [m.suite_model()], [seed]):
                out.append((job, m.label, "model"))
        base = BaselineConfig(games=list(GAMES), partners=list(PARTNERS), episodes=s["baseline_episodes"],
                              rounds=s["rounds"], seed=seed)
        base.validate()
        out.append((Job("tom-baseline", TABULAR, seed, base), TABULAR, "reference"))
        return out

    def _chance(self, setting: str, rounds: int) -> float:
        from stratbench.suites.tom.partners import make_partner
        from stratbench.suites.tom.regret import random_agent_expected_regret

        game, partner = setting.split("/")[:2]
        return float(random_agent_expected_regret(game, make_partner(partner, game), rounds))

    def units(self, runs: Sequence[ScorecardRun], player: str) -> UnitScores | None:
        from stratbench.suites import SUITES

        rows = []
        for r in runs_of(runs, player):
            rounds = int(r.job.config.rounds)
            for part, episodes in SUITES.get(r.job.suite).compare_units(r.folder).items():
                setting = "/".join(part.split("/")[:2])
                chance = self._chance(setting, rounds)
                for e in sorted(episodes, key=str):
                    rows.append(((setting, e), episodes[e]["regret_per_step"], chance, 0.0))
        return UnitScores.of(rows)

    def cells(self, runs: Sequence[ScorecardRun], models: Sequence[ScorecardModel], seed: int) -> list[ScoreCell]:
        out = []
        players: list[tuple[str, Role]] = [(m.label, "model") for m in models] + [(TABULAR, "reference")]
        for player, role in players:
            mine = runs_of(runs, player)
            counts = status_counts(rec for r in mine for rec in _records(r))
            out.append(cell(player, role, self.suite, self.units(runs, player), counts,
                            [r.rel for r in mine], seed))
        tab = runs_of(runs, TABULAR)
        if tab:
            rounds = int(tab[0].job.config.rounds)
            chance = [self._chance(f"{g}/{p}", rounds) for g in GAMES for p in PARTNERS]
            out.append(exact_cell("random", "chance", self.suite, sum(chance) / len(chance), 0.0))
            out.append(exact_cell("optimal policy", "optimal", self.suite, 0.0, 100.0))
        return out


def _records(r: ScorecardRun) -> list[dict[str, Any]]:
    """A model run's rounds; a baseline's episodes (scripted: every one scored)."""
    if (r.folder / "episodes.jsonl").exists():
        return [{"status": "ok"} for _ in read_jsonl(r.folder / "episodes.jsonl")]
    return list(read_jsonl(r.folder / "rounds.jsonl"))


PART = TomPart()
