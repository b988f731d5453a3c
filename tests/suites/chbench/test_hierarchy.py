"""CHBench level strategies (Level-K, Poisson CH), hand-checked on a small asymmetric game."""

from __future__ import annotations

import numpy as np

from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.chbench.hierarchy import (
    kl_consecutive,
    level_k_strategies,
    poisson_ch_strategies,
    poisson_weights,
    predicted_strategy,
)

# Asymmetric 2×3 test game, hand-checked.
# Row payoffs A (rows U, D; cols L, M, R) and column payoffs B.
HAND = NormalFormGame(
    np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 1.0]]),
    np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 3.0]]),
)


def test_level_k_hand_checked() -> None:
    # level 1 row vs uniform col: U = 4/3, D = 1 → U. level 1 col vs uniform row: L 1, M 1, R 1.5 → R.
    # level 2 row vs col level 1 (R w.p. 1−ε, L/M ε/2): U = 1.5ε+1−ε, D = ε+1−ε → U iff ε>0.
    # with ε = 0 ties U=D=1 → uniform. level 2 col vs row level 1 (U): L → L.
    s_row = level_k_strategies(HAND, "row", 3, 0.0)
    s_col = level_k_strategies(HAND, "col", 3, 0.0)
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [1, 0], [0.5, 0.5]])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0, 0, 1], [1, 0, 0]])
    s_row = level_k_strategies(HAND, "row", 3, [0.2, 0.2])
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [0.8, 0.2], [0.8, 0.2]])
    s_col = level_k_strategies(HAND, "col", 3, [0.2, 0.2])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    mix = predicted_strategy(s_col, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(mix, [1 / 6 + 0.025 + 0.2, 1 / 6 + 0.025 + 0.025, 1 / 6 + 0.2 + 0.025])


def test_poisson_hand_checked() -> None:
    # λ = 1, k̂ = 3: level 2 col faces row mix of levels 0, 1 weighted 1:1 → row (0.75, 0.25):
    # L 1.5, M 1.0, R 0.75 → L. level 2 row faces col (1/6, 1/6, 2/3): U 0.5+0.667, D 0.333+0.667 → U.
    np.testing.assert_allclose(poisson_weights(1.0, 3), np.array([1, 1, 0.5]) / 2.5)
    s_row = poisson_ch_strategies(HAND, "row", 3, 1.0)
    s_col = poisson_ch_strategies(HAND, "col", 3, 1.0)
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [1, 0], [1, 0]])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0, 0, 1], [1, 0, 0]])
    kl = kl_consecutive(s_row)
    assert kl[1] == 0.0 and kl[0] == np.inf  # uniform vs pure: support mismatch
