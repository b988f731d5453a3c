"""CHBench on the scorecard: the recoverable games, the baseline mechanism, each model in self-play and
against two scripted cognitive-hierarchy opponents (`level-k:1`, `poisson:1.5`); its reasoning
level is the Poisson-CH mean level fitted to all its play.

One run per model (it never meets the other models of the scorecard), so a model's level does not
depend on who else is on the card and two scorecards' levels compare. Raw models are read by
log-probabilities, chat models by exact choice scoring (local) or sampled answers (HTTP).

Normalised: 0 = level 0 (uniform random play, the hierarchy's floor), 100 = level k̂ − 1 (the top
level the fit has); a mean level is a one-number summary of a fitted distribution, so the CI is
the fit's own bootstrap over games, carried through the same linear map. The scripted opponents'
fitted levels are shown as references (from the first model's run), as a check of the fit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratbench.runner.jsonl import read_jsonl
from stratbench.scoring import Role, ScoreCell, normalized
from stratbench.suites.base import Job
from stratbench.suites.scorecards import (
    ScorecardModel,
    ScorecardPart,
    ScorecardRun,
    cell_status,
    exact_cell,
    runs_of,
)

OPPONENTS = ("level-k:1", "poisson:1.5")
SIZES = {
    "smoke": {"rounds": 2, "restarts": 1, "bootstrap": 10},
    "quick": {"rounds": 5, "restarts": 5, "bootstrap": 50},
    "standard": {"rounds": 10, "restarts": 10, "bootstrap": 100},
    "paper": {"rounds": 30, "restarts": 10, "bootstrap": 100},  # the paper: 30 rounds, 10 restarts
}
K_HAT = 4  # levels 0..3, as the paper
SMOKE_GAMES = 3  # the smoke budget plays the first recoverable games only


def _games(budget: str) -> str:
    """The games of a budget: the recoverable ones (the first few for a smoke test)."""
    if budget != "smoke":
        return "recoverable"
    from stratbench.suites.chbench.catalogue import recoverable

    return ",".join(str(g.id) for g in recoverable()[:SMOKE_GAMES])
MECHANISM = "baseline"


class ChbenchPart(ScorecardPart):
    suite = "chbench"
    title = "CHBench"
    metric = "poisson_mean_level"
    metric_label = "Poisson-CH mean level"
    lower_is_better = False
    unit = "games"
    chance = "level 0 (random)"
    optimal = f"level {K_HAT - 1}"
    formula = f"100 × mean level / {K_HAT - 1} (level 0 = uniform random play, level {K_HAT - 1} = the top level)"
    references = ((f"level {K_HAT - 1}", "optimal"), ("level 0 (random)", "chance"),
                  *((o, "reference") for o in OPPONENTS))

    def budget(self, name: str) -> dict[str, Any]:
        s = SIZES[name]
        return {"games": _games(name), "mechanism": MECHANISM, "opponents": list(OPPONENTS), "self_play": True,
                "rounds": s["rounds"], "k_hat": K_HAT, "restarts": s["restarts"], "bootstrap": s["bootstrap"]}

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        from stratbench.suites import SUITES

        suite = SUITES.get(self.suite)
        s = SIZES[budget]
        out: list[tuple[Job, str, Role]] = []
        for m in models:
            params = {"opponents": list(OPPONENTS), "mechanisms": [MECHANISM], "games": _games(budget),
                      "self_play": True, "rounds": s["rounds"], "k_hat": K_HAT, "restarts": s["restarts"],
                      "bootstrap": s["bootstrap"], "policy": m.policy, "chat": m.chat, "base_url": m.base_url}
            if m.local:
                params["prefix_reuse"] = False  # baseline prompts do not grow: nothing to reuse
            for job in suite.jobs("scorecard", params, [m.suite_model()], [seed]):
                job.label = m.label  # one run per model (suite files put every model in one run)
                out.append((job, m.label, "model"))
        return out

    def cells(self, runs: Sequence[ScorecardRun], models: Sequence[ScorecardModel], seed: int) -> list[ScoreCell]:
        out: list[ScoreCell] = []
        refs: list[ScoreCell] = []
        for m in models:
            mine = runs_of(runs, m.label)
            if not mine:
                continue
            r = mine[0]
            out.append(_cell(m.label, m.spec, r))
            if not refs:
                refs = [_cell(o, o, r) for o in OPPONENTS]
        top = float(K_HAT - 1)
        return out + refs + [exact_cell("level 0 (random)", "chance", self.suite, 0.0, 0.0),
                             exact_cell(f"level {K_HAT - 1}", "optimal", self.suite, top, 100.0)]


def _fitted(folder: Path, spec: str) -> dict[str, Any]:
    try:
        summary = json.loads((folder / "summary.json").read_text())
        got = summary["mechanisms"][MECHANISM][spec]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return got if isinstance(got, dict) else {}


def _cell(player: str, spec: str, r: ScorecardRun) -> ScoreCell:
    counts = {"scored": 0, "parse_failed": 0, "error": 0}
    games: set[Any] = set()
    for rec in read_jsonl(r.folder / "rounds.jsonl"):
        for seat in ("row", "col"):
            if rec.get(f"{seat}_player") != spec:
                continue
            st = rec.get(f"{seat}_status")
            key = "scored" if st in ("ok", "parsed") else st
            if key in counts:
                counts[key] += 1
            if key == "scored":
                games.add(rec.get("game_id"))
    fit = _fitted(r.folder, spec)
    level = fit.get("poisson_mean_level")
    ci = fit.get("poisson_mean_level_ci95")
    top = float(K_HAT - 1)
    value = float(level) if isinstance(level, (int, float)) and counts["scored"] > 0 else None
    ok = value is not None
    level_ci = [float(x) for x in ci] if ok and isinstance(ci, list) and len(ci) == 2 else None
    score = normalized(value, 0.0, top) if value is not None else None
    score_ci = [100.0 * x / top for x in level_ci] if level_ci else None
    return ScoreCell(player=player, reference=None, suite="chbench", status=cell_status(counts, len(games) if ok else 0),
                     value=value, ci95=level_ci,
                     normalized=score, normalized_ci95=score_ci, n_units=len(games) if ok else 0, counts=counts,
                     exact=False, runs=[r.rel])


PART = ChbenchPart()
