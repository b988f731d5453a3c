"""Normalised scores: the one place where a suite's raw metric becomes a 0-100 score.

Every scorecard number is placed between two references computed on the *same units* (games,
grids, episodes) as the player's: 0 is the chance reference (a uniform / random player) and 100
the optimal one (a Nash player, the oracle answer, zero regret, the top level a CH fit can
express). One formula serves metrics where lower is better (exploitability, regret) and where
higher is better (PAR, CH level)::

    score = 100 × (mean(x) − mean(chance)) / (mean(optimal) − mean(chance))

Means are taken over the units first (a ratio of means, not a mean of per-unit ratios: a unit
where chance happens to be nearly optimal would otherwise dominate). Scores below 0 (worse than
chance) and above 100 are kept as they are. The 95% CI resamples the units jointly (player and
references together), so a game's difficulty moves all three at once; a paired difference of two
scorecards resamples their shared units jointly too.

The file formats of a scorecard folder (`scorecard.json`, `cost.json`) are defined here as well,
so that the workflow writing them and the report reading them share one schema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

import numpy as np

from stratbench.errors import InputError
from stratbench.stats import N_BOOT, TAILS_95, percentile_interval

__all__ = [
    "BUDGETS", "SCORECARD_VERSION", "CostRow", "PlayerEntry", "ScoreCell", "Scorecard", "SuiteEntry",
    "UnitScores", "normalized", "normalized_score", "paired_difference", "read_scorecard",
]

SCORECARD_VERSION = 1
# smoke: a check that a model and every suite run end to end (a few units each; not a measurement)
BUDGETS = ("smoke", "quick", "standard", "paper")

Role = Literal["model", "chance", "optimal", "reference"]
CellStatus = Literal["ok", "errors", "failed"]


def normalized(x: float, chance: float, optimal: float) -> float | None:
    """100 × (x − chance) / (optimal − chance); None when the references coincide (the units
    cannot tell chance from optimal, e.g. every game is solved by any answer)."""
    span = optimal - chance
    if not np.isfinite(span) or abs(span) < 1e-12:
        return None
    return float(100.0 * (x - chance) / span)


@dataclass(frozen=True)
class UnitScores:
    """A player's raw metric per unit, with the chance and optimal references on the same units."""

    units: tuple[Hashable, ...]
    value: np.ndarray
    chance: np.ndarray
    optimal: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[tuple[Hashable, float, float, float]]) -> UnitScores:
        """From (unit, value, chance, optimal) rows."""
        units = tuple(r[0] for r in rows)
        arr = np.asarray([r[1:] for r in rows], dtype=float).reshape(len(rows), 3)
        return cls(units, arr[:, 0], arr[:, 1], arr[:, 2])

    def __len__(self) -> int:
        return len(self.units)

    def take(self, idx: np.ndarray) -> UnitScores:
        return UnitScores(tuple(self.units[i] for i in idx), self.value[idx], self.chance[idx], self.optimal[idx])


def _score_of_means(v: np.ndarray, c: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The normalised score of each bootstrap row (NaN where the references coincide)."""
    span = o - c
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(span) < 1e-12, np.nan, 100.0 * (v - c) / span)


def _resampled(t: UnitScores, idx: np.ndarray) -> np.ndarray:
    return _score_of_means(t.value[idx].mean(axis=1), t.chance[idx].mean(axis=1), t.optimal[idx].mean(axis=1))


def _interval(samples: np.ndarray) -> list[float] | None:
    s = samples[np.isfinite(samples)]
    return percentile_interval(s, tails=TAILS_95) if s.size else None


def normalized_score(t: UnitScores, seed: int = 0, n_boot: int = N_BOOT) -> tuple[float | None, list[float] | None]:
    """(score, its 95% bootstrap CI over the units); (None, None) without units."""
    n = len(t)
    if n == 0:
        return None, None
    score = normalized(float(t.value.mean()), float(t.chance.mean()), float(t.optimal.mean()))
    if score is None:
        return None, None
    if n == 1:
        return score, [score, score]
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    return score, _interval(_resampled(t, idx))


def raw_mean(t: UnitScores, seed: int = 0, n_boot: int = N_BOOT) -> tuple[float | None, list[float] | None]:
    """(mean raw metric, its 95% bootstrap CI over the units), resampled as the score is."""
    n = len(t)
    if n == 0:
        return None, None
    if n == 1:
        return float(t.value[0]), [float(t.value[0])] * 2
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    return float(t.value.mean()), _interval(t.value[idx].mean(axis=1))


def paired_difference(a: UnitScores, b: UnitScores, seed: int = 0,
                      n_boot: int = N_BOOT) -> tuple[float | None, list[float] | None, int]:
    """(score B − score A, its 95% CI, shared units): both scores on the units they share,
    resampled jointly (the same games drawn for both), as two checkpoints on one seed are."""
    pos_a = {u: i for i, u in enumerate(a.units)}
    shared = [(pos_a[u], j) for j, u in enumerate(b.units) if u in pos_a]
    if not shared:
        return None, None, 0
    ia = np.asarray([i for i, _ in shared])
    ib = np.asarray([j for _, j in shared])
    sa, sb = a.take(ia), b.take(ib)
    va, vb = normalized_score(sa, seed, n_boot=1)[0], normalized_score(sb, seed, n_boot=1)[0]
    if va is None or vb is None:
        return None, None, len(shared)
    n = len(shared)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    return vb - va, _interval(_resampled(sb, idx) - _resampled(sa, idx)), n


# -- the files of a scorecard folder ------------------------------------------------------------


class SuiteEntry(TypedDict):
    """How one suite is scored (scorecard.json "suites")."""

    suite: str  # registry name of the suite's runs ("nashgap", "tmgbench", "chbench", "tom")
    title: str  # shown in tables ("Nash gap")
    metric: str  # the raw headline metric ("debiased_exploitability")
    metric_label: str
    lower_is_better: bool
    unit: str  # what the CI resamples ("games", "grids", "episodes")
    chance: str  # the chance reference's name ("uniform")
    optimal: str  # the optimal reference's name ("nash")
    formula: str  # the normalisation in words
    budget: dict[str, Any]  # the sizes this scorecard ran the suite with


class ScoreCell(TypedDict):
    """One player on one suite (scorecard.json "cells"; one row of scorecard.csv)."""

    player: str  # a model's label, "chance", "optimal", or another reference's name
    reference: str | None  # the reference player behind a chance / optimal cell ("uniform", "nash")
    suite: str
    status: CellStatus  # ok; errors: scored, but some records failed; failed: nothing scored
    value: float | None  # the raw metric
    ci95: list[float] | None
    normalized: float | None  # 0 = chance, 100 = optimal
    normalized_ci95: list[float] | None
    n_units: int  # units scored
    counts: dict[str, int]  # records by status: scored, parse_failed, error
    exact: bool  # an analytic reference (no run: computed from the games)
    runs: list[str]  # the run folders (relative to the scorecard folder) the cell reads


class PlayerEntry(TypedDict):
    """A row of the scorecard table: a model, or a reference player."""

    player: str
    role: Role  # model; chance / optimal: the references a score is normalised by; reference: others
    spec: str | None  # the model spec (models only)
    policy: dict[str, str]  # suite → how its answers were read (logprob, choice, sample, scripted)


class Scorecard(TypedDict):
    """scorecard.json: what was measured. It holds no timings, folder times or token counts (those
    are in cost.json), so an interrupted and resumed scorecard writes the same file as an
    uninterrupted one."""

    version: int
    budget: str
    seed: int
    suites: list[SuiteEntry]
    players: list[PlayerEntry]
    cells: list[ScoreCell]


class CostRow(TypedDict):
    """cost.json rows: what one player's runs of one suite cost in this folder (every session)."""

    player: str
    suite: str
    model_calls: int
    model_cache_hits: int
    tokens_in: int
    tokens_out: int
    seconds: float


def _is_number(x: Any) -> bool:
    """A finite int or float (not a bool, not NaN or an infinity, not an int beyond any float)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _cell_problem(c: dict[str, Any]) -> str | None:
    """What is wrong with one cell of scorecard.json (None: nothing): every field there, of its
    type; numbers finite (NaN and infinities are no scores); a failed cell holds no numbers."""
    missing = [k for k in ScoreCell.__annotations__ if k not in c]
    if missing:
        return f"has no {missing[0]!r}"
    for k in ("player", "suite"):
        if not isinstance(c[k], str) or not c[k]:
            return f"{k} is not a name"
    if c["reference"] is not None and not isinstance(c["reference"], str):
        return "reference is not a name"
    if c["status"] not in ("ok", "errors", "failed"):
        return f"status {c['status']!r} is not ok, errors or failed"
    for k in ("value", "normalized"):
        if c[k] is not None and not _is_number(c[k]):
            return f"{k} {c[k]!r} is not a finite number"
    for k in ("ci95", "normalized_ci95"):
        ci = c[k]
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(_is_number(x) for x in ci)):
            return f"{k} {ci!r} is not two finite numbers"
    if not (isinstance(c["n_units"], int) and not isinstance(c["n_units"], bool) and c["n_units"] >= 0):
        return f"n_units {c['n_units']!r} is not a count"
    counts = c["counts"]
    if not (isinstance(counts, dict) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                             for v in counts.values())):
        return "counts are not counts"
    if not isinstance(c["exact"], bool):
        return "exact is not true or false"
    if not (isinstance(c["runs"], list) and all(isinstance(r, str) for r in c["runs"])):
        return "runs is not a list of folders"
    if c["status"] == "failed" and (c["value"] is not None or c["normalized"] is not None):
        return "a failed cell holds a score"
    if c["status"] != "failed" and (c["value"] is None and c["normalized"] is None):
        return f"status {c['status']} but no score"
    return None


def read_scorecard(folder: str | Path, flag: str = "") -> Scorecard:
    """A finished scorecard folder's scorecard.json (one InputError line when it is not one, or
    when a cell is not a cell: a missing field, a string or NaN where a number goes)."""
    p = Path(folder)
    try:
        data = json.loads((p / "scorecard.json").read_text(encoding="utf-8"))
        if not (isinstance(data, dict) and data.get("version") == SCORECARD_VERSION
                and isinstance(data.get("cells"), list) and isinstance(data.get("suites"), list)
                and isinstance(data.get("players"), list)
                and all(isinstance(c, dict) for c in data["cells"] + data["suites"] + data["players"])):
            raise ValueError
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        raise InputError(f"{flag}{p}: no readable scorecard.json (an unfinished scorecard? finish it with "
                         "stratbench scorecard --resume)") from None
    for i, c in enumerate(data["cells"]):
        problem = _cell_problem(c)
        if problem is not None:
            who = f" ({c.get('player')!r}, {c.get('suite')!r})" if isinstance(c.get("player"), str) else ""
            raise InputError(f"{flag}{p / 'scorecard.json'}: cells[{i}]{who}: {problem}")
    return cast(Scorecard, data)
