"""Pure-strategy Nash equilibria of general-sum bimatrix games, by vectorised enumeration."""

from __future__ import annotations

import numpy as np


def pure_nash_equilibria(payoff_row: np.ndarray, payoff_col: np.ndarray) -> list[tuple[int, int]]:
    """All cells (i, j) where i is a best response to j and j a best response to i.

    Ties count (weak equilibria), so games with indifferences report every equilibrium cell.
    """
    a = np.asarray(payoff_row, dtype=float)
    b = np.asarray(payoff_col, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError("payoff matrices must be 2-D and of the same shape")
    mask = (a == a.max(axis=0, keepdims=True)) & (b == b.max(axis=1, keepdims=True))
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(mask))]
