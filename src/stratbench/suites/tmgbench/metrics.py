"""TMGBench's metrics over the 12×12 Robinson–Goforth grid: PAR, ID, BD, their 0/1/2-NE
sub-metrics, AntiID/AntiBD and the significance degree SD. All headline numbers are in percent.

Every grid (i, j) is reduced to a probability distribution over what the model answered: one of
the 16 subsets of the four cells, or "unparseable". Two inputs produce it:

* sampled answers (`metrics_from_samples`): the empirical distribution of T answers per grid, so
  every formula's 1/T average is exactly an expectation under it;
* exact distributions (`metrics_from_distributions`), e.g. from a raw model's token probabilities.

From the distribution: Freq_{i,j,o} = P(cell o is in the answer) and the per-grid PAR =
P(answer == standard set). Then, averaging over grids as the paper's 1/144 Σ does:

* PAR = mean PAR_{i,j};
* ID  = mean (1/4) Σ_o (Freq_{i,j,o} − Std_{i,j,o})², Std the 0/1 indicator of the standard set;
* BD  = mean (1/4) Σ_o (Freq_{i,j,o} − Freq_{i',j',ref(o)})² with (i', j') = (13 − j, 13 − i), the
  sister grid, and ref = {1→4, 2→2, 3→3, 4→1}. The paper prints Freq_{j,i}, the main-diagonal
  mirror, but its axis of symmetry is the counter-diagonal and its own example pairs (3,4) with
  (9,10); only the sister reading makes BD = 0 for a perfect answerer.
* sub-metrics PAR_n, ID_n, BD_n average over the grids with n pure equilibria (18/108/18); a grid
  and its sister always have the same n.
* AntiID = 1 − √ID and AntiBD = 1 − √BD are computed on fractions and then reported ×100, so a
  perfect answerer scores 100 (on percents the formula would give 1 − √0 = 1, i.e. "1%").
* SD = (1/18) Σ_{0-NE grids} (1/4)(Freq₁ + Freq₄ − Freq₂ − Freq₃)·S(i,j), S = +1 on the green block
  and −1 on the yellow one. The paper does not list the blocks; we take yellow = rows 1–3 × cols
  4–6 and green = rows 7–9 × cols 10–12 (the paper's gpt-4o-mini case (3,4) answers cells 2 and 3,
  the "yellow" pattern, and its sister (9,10) cells 1 and 4, the "green" one). The paper calls SD
  "confined in [0, 1]", but as written it lies in [−0.5, 0.5]: positive when the model shows the
  pattern, negative for the mirrored one. We implement the formula as written. Under the alternative
  grid layout (rows and columns exchanged; see the games module) the blocks would move.

Unparseable answers (`unparseable=`):

* "wrong" (default): a miss for PAR, and no cell for Freq — Freq stays "share of all tests whose
  answer contains o", the paper's denominator. Note that on 0-NE grids a failure is therefore
  indistinguishable from an empty answer in ID (but never counts for PAR).
* "exclude": failures are dropped and each grid is renormalised over its parsed answers; a grid
  with none left is left out of every metric (and of `n_grids`).

Either way `parse_failure_rate` (a fraction, mean over grids of each grid's failure share) is
reported. Partial grids are allowed: means run over the grids given, BD over grids whose sister is
also given, SD over the given yellow/green grids. Bootstrap CIs resample grids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

from stratbench.stats import bootstrap_ci
from stratbench.suites.tmgbench.answers import AnswerSetParse
from stratbench.suites.tmgbench.games import (
    REF,
    RGGame,
    game_at,
    game_by_id,
    standard_answer,
)

GridKey = Union[str, tuple[int, int], RGGame]
Answer = Union[frozenset[int], set[int], Sequence[int], AnswerSetParse, None]
Outcome = Union[frozenset[int], None]

NE_COUNTS = (0, 1, 2)
YELLOW_BLOCK = frozenset((r, c) for r in range(1, 4) for c in range(4, 7))
GREEN_BLOCK = frozenset((r, c) for r in range(7, 10) for c in range(10, 13))
UNPARSEABLE_MODES = ("wrong", "exclude")
SUM_TOL = 1e-6


def _mask(cells: frozenset[int]) -> int:
    return sum(1 << (o - 1) for o in cells)


# _HAS[o - 1, m]: whether the subset with bitmask m contains cell o.
_HAS = np.array([[(m >> k) & 1 for m in range(16)] for k in range(4)], dtype=float)


def _resolve(key: GridKey) -> RGGame:
    if isinstance(key, RGGame):
        return key
    if isinstance(key, str):
        return game_by_id(key)
    if isinstance(key, tuple) and len(key) == 2:
        return game_at(int(key[0]), int(key[1]))
    raise TypeError(f"grid key must be an id string, a (row, col) pair or an RGGame, got {key!r}")


def _as_cells(answer: Any) -> Outcome:
    """An answer as a frozenset of choice numbers, or None for an unparseable one."""
    if isinstance(answer, AnswerSetParse):
        answer = answer.cells
    if answer is None:
        return None
    if isinstance(answer, (str, bytes)):
        raise TypeError(f"answer must be a set of choice numbers, got the string {answer!r}")
    cells = frozenset(answer)
    if not cells <= {1, 2, 3, 4} or any(isinstance(o, bool) for o in cells):
        raise ValueError(f"answer cells must be choice numbers 1..4, got {sorted(cells, key=str)}")
    return cells


def samples_to_distribution(answers: Iterable[Answer]) -> dict[Outcome, float]:
    """The empirical distribution of repeated answers (None = unparseable)."""
    counts: dict[Outcome, int] = {}
    n = 0
    for a in answers:
        c = _as_cells(a)
        counts[c] = counts.get(c, 0) + 1
        n += 1
    if n == 0:
        raise ValueError("no answers")
    return {k: v / n for k, v in counts.items()}


def _vector(dist: Mapping[Any, float]) -> tuple[np.ndarray, float]:
    """(probabilities over the 16 subsets by bitmask, failure probability), validated."""
    p = np.zeros(16)
    fail = 0.0
    for k, v in dist.items():
        x = float(v)
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"probability of {k!r} must be finite and non-negative, got {v!r}")
        c = _as_cells(k)
        if c is None:
            fail += x
        else:
            p[_mask(c)] += x
    total = p.sum() + fail
    if abs(total - 1.0) > SUM_TOL:
        raise ValueError(f"probabilities sum to {total}, not 1")
    return p / total, fail / total


@dataclass(frozen=True)
class GridStats:
    """One grid's answer summary; all values are fractions in [0, 1]."""

    game: RGGame
    n_answers: int | None  # T for sampled input, None for exact distributions
    failure_rate: float
    par: float
    freq: tuple[float, float, float, float]
    std: tuple[int, int, int, int]

    @property
    def id_term(self) -> float:
        return float(np.mean((np.array(self.freq) - np.array(self.std)) ** 2))


@dataclass(frozen=True)
class TMGBenchMetrics:
    """Headline metrics in percent (None where no grid qualifies); see the module docstring."""

    par_pct: float | None
    id_pct: float | None
    bd_pct: float | None
    par_by_n_pct: dict[int, float | None]
    id_by_n_pct: dict[int, float | None]
    bd_by_n_pct: dict[int, float | None]
    anti_id_pct: float | None
    anti_bd_pct: float | None
    anti_id_by_n_pct: dict[int, float | None]
    anti_bd_by_n_pct: dict[int, float | None]
    sd_pct: float | None
    parse_failure_rate: float
    par_pct_ci95: list[float] | None
    id_pct_ci95: list[float] | None
    bd_pct_ci95: list[float] | None
    n_grids: int
    n_grids_by_n: dict[int, int]
    unparseable: str
    grids: list[dict[str, Any]] = field(repr=False)


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def _anti(x: float | None) -> float | None:
    return None if x is None else 100.0 * (1.0 - math.sqrt(max(0.0, x)))


def _grid_stats(
    game: RGGame, p: np.ndarray, fail: float, n: int | None, unparseable: str
) -> GridStats | None:
    if unparseable == "exclude":
        parsed = 1.0 - fail
        if parsed <= 1e-12:
            return None
        p = p / parsed
    std_set = standard_answer(game)
    freq = _HAS @ p
    return GridStats(
        game=game,
        n_answers=n,
        failure_rate=float(fail),
        par=float(p[_mask(std_set)]),
        freq=tuple(float(f) for f in freq),  # type: ignore[arg-type]
        std=tuple(int(o in std_set) for o in (1, 2, 3, 4)),  # type: ignore[arg-type]
    )


def _compute(
    inputs: dict[RGGame, tuple[np.ndarray, float, int | None]], unparseable: str, seed: int
) -> TMGBenchMetrics:
    if unparseable not in UNPARSEABLE_MODES:
        raise ValueError(f"unparseable must be one of {UNPARSEABLE_MODES}, got {unparseable!r}")
    if not inputs:
        raise ValueError("no grids given")
    failure_rate = float(np.mean([fail for _, fail, _ in inputs.values()]))
    stats: dict[tuple[int, int], GridStats] = {}
    for g, (p, fail, n) in inputs.items():
        s = _grid_stats(g, p, fail, n, unparseable)
        if s is not None:
            stats[g.position] = s

    ordered = [stats[k] for k in sorted(stats)]
    par = {s.game.position: s.par for s in ordered}
    idt = {s.game.position: s.id_term for s in ordered}
    bdt: dict[tuple[int, int], float] = {}
    for s in ordered:
        sis = stats.get(s.game.sister)
        if sis is not None:
            bdt[s.game.position] = float(
                np.mean([(s.freq[o - 1] - sis.freq[REF[o] - 1]) ** 2 for o in (1, 2, 3, 4)])
            )

    def by_n(values: dict[tuple[int, int], float], n: int) -> float | None:
        return _mean([v for pos, v in values.items() if stats[pos].game.n_ne == n])

    sd_terms = []
    for s in ordered:
        pos = s.game.position
        if s.game.n_ne == 0 and (pos in YELLOW_BLOCK or pos in GREEN_BLOCK):
            sign = 1.0 if pos in GREEN_BLOCK else -1.0
            f1, f2, f3, f4 = s.freq
            sd_terms.append(sign * (f1 + f4 - f2 - f3) / 4.0)

    id_all, bd_all = _mean(list(idt.values())), _mean(list(bdt.values()))
    id_n = {n: by_n(idt, n) for n in NE_COUNTS}
    bd_n = {n: by_n(bdt, n) for n in NE_COUNTS}
    table = [
        {
            "id": s.game.id,
            "row": s.game.row,
            "col": s.game.col,
            "n_ne": s.game.n_ne,
            "n_answers": s.n_answers,
            "failure_rate": s.failure_rate,
            "par": s.par,
            "freq": list(s.freq),
            "std": list(s.std),
            "id_term": idt[s.game.position],
            "bd_term": bdt.get(s.game.position),
            "sister": s.game.sister,
        }
        for s in ordered
    ]
    return TMGBenchMetrics(
        par_pct=_pct(_mean(list(par.values()))),
        id_pct=_pct(id_all),
        bd_pct=_pct(bd_all),
        par_by_n_pct={n: _pct(by_n(par, n)) for n in NE_COUNTS},
        id_by_n_pct={n: _pct(v) for n, v in id_n.items()},
        bd_by_n_pct={n: _pct(v) for n, v in bd_n.items()},
        anti_id_pct=_anti(id_all),
        anti_bd_pct=_anti(bd_all),
        anti_id_by_n_pct={n: _anti(v) for n, v in id_n.items()},
        anti_bd_by_n_pct={n: _anti(v) for n, v in bd_n.items()},
        sd_pct=_pct(_mean(sd_terms)),
        parse_failure_rate=failure_rate,
        par_pct_ci95=bootstrap_ci([100.0 * v for v in par.values()], seed=seed),
        id_pct_ci95=bootstrap_ci([100.0 * v for v in idt.values()], seed=seed),
        bd_pct_ci95=bootstrap_ci([100.0 * v for v in bdt.values()], seed=seed),
        n_grids=len(ordered),
        n_grids_by_n={n: sum(s.game.n_ne == n for s in ordered) for n in NE_COUNTS},
        unparseable=unparseable,
        grids=table,
    )


def _collect(keys: Iterable[GridKey]) -> list[RGGame]:
    games = [_resolve(k) for k in keys]
    seen: set[str] = set()
    for g in games:
        if g.id in seen:
            raise ValueError(f"grid {g.id} at {g.position} is given more than once")
        seen.add(g.id)
    return games


def metrics_from_samples(
    samples: Mapping[GridKey, Sequence[Answer]], *, unparseable: str = "wrong", seed: int = 0
) -> TMGBenchMetrics:
    """Metrics from T repeated answers per grid.

    `samples` maps a grid (TMGBench id such as "111", a (row, col) pair, or an RGGame) to its
    answers: sets of choice numbers 1..4 (empty = "no equilibrium"), `AnswerSetParse` results, or
    None for an unparseable answer. T may differ between grids; each grid weighs the same.
    """
    games = _collect(samples.keys())
    inputs: dict[RGGame, tuple[np.ndarray, float, int | None]] = {}
    for g, answers in zip(games, samples.values()):
        answers = list(answers)
        if not answers:
            raise ValueError(f"grid {g.id} at {g.position} has no answers")
        p, fail = _vector(samples_to_distribution(answers))
        inputs[g] = (p, fail, len(answers))
    return _compute(inputs, unparseable, seed)


def metrics_from_distributions(
    distributions: Mapping[GridKey, Mapping[Outcome, float]],
    *,
    unparseable: str = "wrong",
    seed: int = 0,
) -> TMGBenchMetrics:
    """Metrics from an exact answer distribution per grid.

    Each distribution maps an answer (a set of choice numbers 1..4; the 16 subsets, empty
    included) or None (unparseable) to its probability; missing subsets have probability 0 and
    the probabilities must sum to 1 (within 1e-6).
    """
    games = _collect(distributions.keys())
    inputs: dict[RGGame, tuple[np.ndarray, float, int | None]] = {}
    for g, dist in zip(games, distributions.values()):
        try:
            p, fail = _vector(dist)
        except ValueError as e:
            raise ValueError(f"grid {g.id} at {g.position}: {e}") from None
        inputs[g] = (p, fail, None)
    return _compute(inputs, unparseable, seed)


def summary_keys(m: TMGBenchMetrics) -> dict[str, Any]:
    """Flat snake_case summary: `par_pct`, `id_pct`, `bd_pct` (+ `_ci95`), `par_0_pct` …
    `bd_2_pct`, `anti_id_pct`, `anti_bd_pct` (+ per-n), `sd_pct`, `parse_failure_rate`,
    `n_grids`."""
    out: dict[str, Any] = {
        "par_pct": m.par_pct,
        "id_pct": m.id_pct,
        "bd_pct": m.bd_pct,
        "par_pct_ci95": m.par_pct_ci95,
        "id_pct_ci95": m.id_pct_ci95,
        "bd_pct_ci95": m.bd_pct_ci95,
    }
    for n in NE_COUNTS:
        out[f"par_{n}_pct"] = m.par_by_n_pct[n]
        out[f"id_{n}_pct"] = m.id_by_n_pct[n]
        out[f"bd_{n}_pct"] = m.bd_by_n_pct[n]
    out["anti_id_pct"] = m.anti_id_pct
    out["anti_bd_pct"] = m.anti_bd_pct
    for n in NE_COUNTS:
        out[f"anti_id_{n}_pct"] = m.anti_id_by_n_pct[n]
        out[f"anti_bd_{n}_pct"] = m.anti_bd_by_n_pct[n]
    out["sd_pct"] = m.sd_pct
    out["parse_failure_rate"] = m.parse_failure_rate
    out["n_grids"] = m.n_grids
    return out
