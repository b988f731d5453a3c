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

A fitted level is bounded below by chance (level 0): uniform play is fitted a level ≥ 0, above 0
about half the time, and its bootstrap CI can exclude 0. So "above chance" (the trend's question)
is asked of `ChbenchPart.chance_threshold` — the 95th percentile of the level fitted to simulated
uniform play with the model's own numbers of actions — not of the CI.
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
    "smoke": {"rounds": 1, "restarts": 1, "bootstrap": 10},  # all 9 games (GAMES), 1 round
    "quick": {"rounds": 5, "restarts": 5, "bootstrap": 50},
    "standard": {"rounds": 10, "restarts": 10, "bootstrap": 100},
    "paper": {"rounds": 30, "restarts": 10, "bootstrap": 100},  # the paper: 30 rounds, 10 restarts
}
K_HAT = 4  # levels 0..3, as the paper
N_NULL = 200  # simulated uniform players behind the chance reference of a fitted level (chance_threshold)
#: every budget plays the 9 recoverable games: fewer (smoke once played 3) leave the fit's bootstrap
#: CI the whole [0, 3], and a trend could then decide nothing; smoke plays 1 round instead
GAMES = "recoverable"
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
        return {"games": GAMES, "mechanism": MECHANISM, "opponents": list(OPPONENTS), "self_play": True,
                "rounds": s["rounds"], "k_hat": K_HAT, "restarts": s["restarts"], "bootstrap": s["bootstrap"]}

    def jobs(self, models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
        from stratbench.suites import SUITES

        suite = SUITES.get(self.suite)
        s = SIZES[budget]
        out: list[tuple[Job, str, Role]] = []
        for m in models:
            params = {"opponents": list(OPPONENTS), "mechanisms": [MECHANISM], "games": GAMES,
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


    def chance_threshold(self, run_folder: Path, spec: str, seed: int) -> float | None:
        """The 95th percentile of the Poisson-CH mean level fitted to uniform random play with the
        model's own numbers of actions per game and role (`fit.uniform_null_level`), normalised:
        uniform play's fitted level is ≥ 0 and its bootstrap CI can exclude 0, so only a level
        above this reference is play better than chance."""
        from stratbench.runner.folders import read_run_json
        from stratbench.seeding import derive_seed
        from stratbench.suites.chbench.catalogue import select_games
        from stratbench.suites.chbench.fit import uniform_null_level
        from stratbench.suites.chbench.tables import player_observations

        cfg = read_run_json(run_folder)["config"]
        recs = [r for r in read_jsonl(run_folder / "rounds.jsonl") if r.get("mechanism") == MECHANISM]
        played = {r.get("game_id") for r in recs}
        games = [g for g in select_games(str(cfg.get("games")), cfg.get("corrections")) if g.id in played]
        if not games:
            return None
        obs = player_observations(recs, games, [spec])[spec]
        level = uniform_null_level(obs, "poisson", int(cfg.get("k_hat", K_HAT)), N_NULL, derive_seed(seed, 4001))
        top = float(K_HAT - 1)
        return None if level is None else 100.0 * level / top


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
