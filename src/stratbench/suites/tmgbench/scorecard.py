"""TMGBench on the scorecard: all 144 classic games, direct answers (DA).

Local raw models give their exact distribution over the 16 answer sets (log-probabilities), local
chat models the same by exact choice scoring; HTTP models are read from sampled answers (the
paper's repeats), since scoring 16 answer lines over HTTP takes one echo request each. The metric
is PAR (% of answers that are the standard answer), per game. References run on the same games:
`oracle` (the standard answer: 100), `uniform` (every answer set alike: the chance level), `empty`
(always "no equilibrium").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratbench.runner.jsonl import read_jsonl
from stratbench.scoring import Role, ScoreCell, UnitScores
from stratbench.suites.base import Job, SuiteModel
from stratbench.suites.scorecards import ScorecardModel, ScorecardPart, ScorecardRun, cell, runs_of, status_counts

REPEATS = {"smoke": 1, "quick": 1, "standard": 2, "paper": 4}  # sampled answers per game (the paper: 4)
SMOKE_GAMES = 12  # the smoke budget plays every 12th game (one per row of the grid), not all 144
REFERENCES: tuple[tuple[str, Role], ...] = (("oracle", "optimal"), ("uniform", "chance"), ("empty", "reference"))


class TmgbenchPart(ScorecardPart):
    suite = "tmgbench"
    title = "TMGBench"
    metric = "par_pct"
    metric_label = "PAR %"
    lower_is_better = False
    unit = "games"
    chance = "uniform"
    optimal = "oracle"
    formula = "100 × (PAR − uniform's PAR) / (oracle's PAR − uniform's PAR), over the same games"
    references = REFERENCES

    def budget(self, name: str) -> dict[str, Any]:
        return {"games": SMOKE_GAMES if name == "smoke" else 144, "setting": "classic", "prompting": "DA",
                "repeats_when_sampled": REPEATS[name]}

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        from stratbench.suites import SUITES

        suite = SUITES.get(self.suite)
        params: dict[str, Any] = {"prompting": "DA", "setting": "classic", "form": "atomic",
                                  "repeats": REPEATS[budget]}
        if budget == "smoke":
            from stratbench.suites.tmgbench.games import all_games

            params["games"] = ",".join(g.id for g in all_games()[::144 // SMOKE_GAMES])
        out: list[tuple[Job, str, Role]] = []
        # scoring 16 answer lines over HTTP takes one echo request each: HTTP models sample instead
        players: list[tuple[SuiteModel, Role]] = [
            (m.suite_model(policy=m.policy if m.local else "sample"), "model") for m in models]
        players += [(SuiteModel(name, name), role) for name, role in REFERENCES]
        for sm, role in players:
            for job in suite.jobs("scorecard", params, [sm], [seed]):
                out.append((job, sm.label, role))
        return out

    def _par(self, runs: Sequence[ScorecardRun], player: str) -> dict[str, float]:
        """game id → PAR % of the player's answers (games without a scored answer left out)."""
        out: dict[str, float] = {}
        for r in runs_of(runs, player):
            for g in _grids(r.folder):
                if isinstance(g.get("par"), (int, float)):
                    out[str(g["id"])] = 100.0 * float(g["par"])
        return out

    def units(self, runs: Sequence[ScorecardRun], player: str) -> UnitScores | None:
        mine, chance, best = self._par(runs, player), self._par(runs, "uniform"), self._par(runs, "oracle")
        return UnitScores.of([(g, v, chance[g], best[g]) for g, v in mine.items() if g in chance and g in best])

    def cells(self, runs: Sequence[ScorecardRun], models: Sequence[ScorecardModel], seed: int) -> list[ScoreCell]:
        out = []
        players: list[tuple[str, Role]] = [(m.label, "model") for m in models] + list(REFERENCES)
        for player, role in players:
            mine = runs_of(runs, player)
            counts = status_counts(rec for r in mine for rec in read_jsonl(r.folder / "answers.jsonl"))
            out.append(cell(player, role, self.suite, self.units(runs, player), counts, [r.rel for r in mine], seed))
        return out


def _grids(folder: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads((folder / "grids.json").read_text())
    except (OSError, ValueError):
        return []
    return [g for g in data if isinstance(g, dict)] if isinstance(data, list) else []


PART = TmgbenchPart()
