"""Two-player zero-sum games solved by one linear program.

The row player's maximin LP (maximise v s.t. Aᵀp ≥ v·1, Σp = 1, p ≥ 0) is solved with HiGHS; the
column player's minimax strategy is the dual of the `Aᵀp ≥ v` constraints, so one LP gives both
strategies and the value (the original benchmark solved two LPs). An LP solution is only accurate
to the solver's tolerances, so it is then *polished*: on the supports the LP found, the indifference
equations are solved directly, which gives an equilibrium exact to rounding error in non-degenerate
games. Whatever is returned is re-verified; strategies are non-negative and sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

_SUPPORT_TOL = 1e-9
_EXACT_GAP = 1e-10
_TIGHT_HIGHS_OPTIONS = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}


@dataclass(frozen=True)
class ZeroSumSolution:
    """A Nash equilibrium (p, q) of the zero-sum game A (row maximises pᵀAq) and its value."""

    row_strategy: np.ndarray
    col_strategy: np.ndarray
    value: float
    duality_gap: float  # max_i (Aq)_i − min_j (pᵀA)_j ≥ 0; 0 for an exact equilibrium


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.clip(np.asarray(x, dtype=float), 0.0, None)
    s = x.sum()
    if not np.isfinite(s) or s <= 0:
        raise ValueError("cannot normalise a strategy with no positive mass")
    return x / s


def _gap(a: np.ndarray, p: np.ndarray, q: np.ndarray) -> float:
    return float((a @ q).max() - (p @ a).min())


def _solve_indifference(a_sub: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Solve pᵀA_sub = v·1, Σp = 1 for a square support block; None if singular or infeasible."""
    k = a_sub.shape[0]
    m = np.zeros((k + 1, k + 1))
    m[:k, :k] = a_sub.T
    m[:k, k] = -1.0
    m[k, :k] = 1.0
    rhs = np.zeros(k + 1)
    rhs[k] = 1.0
    try:
        sol = np.linalg.solve(m, rhs)
    except np.linalg.LinAlgError:
        return None
    p = sol[:k]
    if not np.all(np.isfinite(sol)) or p.min() < -1e-12:
        return None
    return p, float(sol[k])


def _polish(a: np.ndarray, p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    rows = np.flatnonzero(p > _SUPPORT_TOL)
    cols = np.flatnonzero(q > _SUPPORT_TOL)
    if len(rows) != len(cols):
        return None
    block = a[np.ix_(rows, cols)]
    row_part = _solve_indifference(block)
    col_part = _solve_indifference(-block.T)
    if row_part is None or col_part is None:
        return None
    p_new = np.zeros_like(p)
    q_new = np.zeros_like(q)
    p_new[rows] = row_part[0]
    q_new[cols] = col_part[0]
    return _normalise(p_new), _normalise(q_new)


def solve_zero_sum(payoff: np.ndarray) -> ZeroSumSolution:
    """Nash equilibrium of the zero-sum game with row payoffs `payoff` (row maximises)."""
    a = np.asarray(payoff, dtype=float)
    if a.ndim != 2 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError("payoff must be a non-empty finite 2-D matrix")
    # Default HiGHS tolerances first: polishing usually makes the answer exact anyway. Only when
    # it cannot (degenerate supports) is the LP re-solved with tight tolerances.
    p, q, gap = _solve_lp(a, {})
    if gap > _EXACT_GAP:
        p2, q2, gap2 = _solve_lp(a, _TIGHT_HIGHS_OPTIONS)
        if gap2 < gap:
            p, q, gap = p2, q2, gap2
    return ZeroSumSolution(p, q, float(p @ a @ q), max(gap, 0.0))


def _solve_lp(a: np.ndarray, options: dict) -> tuple[np.ndarray, np.ndarray, float]:
    m, n = a.shape
    # Variables x = (p_1..p_m, v); minimise −v.
    c = np.zeros(m + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-a.T, np.ones((n, 1))])  # v − (Aᵀp)_j ≤ 0
    b_ub = np.zeros(n)
    a_eq = np.zeros((1, m + 1))
    a_eq[0, :m] = 1.0
    bounds = [(0, None)] * m + [(None, None)]
    res = linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds,
        method="highs", options=options,
    )
    if res.status != 0:  # pragma: no cover - a finite matrix game always has a solution
        raise RuntimeError(f"HiGHS failed on a matrix game: {res.message}")
    p = _normalise(res.x[:m])
    q = _normalise(-res.ineqlin.marginals)
    best = (p, q, _gap(a, p, q))
    polished = _polish(a, p, q)
    if polished is not None:
        g = _gap(a, *polished)
        if g <= best[2]:
            best = (polished[0], polished[1], g)
    return best


def best_response_value(payoff: np.ndarray, col_strategy: np.ndarray) -> float:
    """The row player's best payoff against a fixed column strategy: max_i (Aσ_c)_i."""
    return float((np.asarray(payoff) @ np.asarray(col_strategy)).max())


def exploitability_row(payoff: np.ndarray, row_strategy: np.ndarray, value: float) -> float:
    """How much a best-responding column player pushes a row strategy below the game value:
    v* − min_j (πᵀA)_j ≥ 0, zero exactly for equilibrium strategies."""
    return float(value - (np.asarray(row_strategy) @ np.asarray(payoff)).min())


def exploitability_col(payoff: np.ndarray, col_strategy: np.ndarray, value: float) -> float:
    """The column player's counterpart: max_i (Aσ)_i − v* ≥ 0."""
    return float((np.asarray(payoff) @ np.asarray(col_strategy)).max() - value)


def saddle_points(payoff: np.ndarray) -> list[tuple[int, int]]:
    """Cells that are the minimum of their row and the maximum of their column (pure equilibria)."""
    a = np.asarray(payoff, dtype=float)
    mask = (a == a.min(axis=1, keepdims=True)) & (a == a.max(axis=0, keepdims=True))
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(mask))]


def has_saddle_point(payoff: np.ndarray) -> bool:
    a = np.asarray(payoff, dtype=float)
    return bool(a.min(axis=1).max() == a.max(axis=0).min())


def is_pure(strategy: np.ndarray, tol: float = 1e-12) -> bool:
    s = np.asarray(strategy)
    return bool(s.max() >= 1.0 - tol)
