"""Equilibrium solvers: exact zero-sum LP, best responses, exploitability, pure Nash equilibria.
Core: imports only numpy/scipy and the game type."""

from stratbench.solvers.pure_nash import pure_nash_equilibria
from stratbench.solvers.zerosum import (
    ZeroSumSolution,
    best_response_value,
    exploitability_col,
    exploitability_row,
    has_saddle_point,
    is_pure,
    saddle_points,
    solve_zero_sum,
)

__all__ = [
    "ZeroSumSolution",
    "best_response_value",
    "exploitability_col",
    "exploitability_row",
    "has_saddle_point",
    "is_pure",
    "saddle_points",
    "solve_zero_sum",
    "pure_nash_equilibria",
]
