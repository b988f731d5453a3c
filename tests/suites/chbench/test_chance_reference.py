"""The chance reference of a fitted level (`fit.uniform_null_level`): uniform random play is fitted a
Poisson-CH mean level ≥ 0 — above 0 about half the time, its bootstrap CI sometimes above 0 — so
"better than chance" is a level above the 95th percentile of the levels fitted to simulated
uniform players with the same numbers of actions. Checked here: its false-alarm rate on fresh
uniform players is about 5%, level-2 play is far above it, and it is the same for the same seed."""

from __future__ import annotations

import numpy as np

from stratbench.suites.chbench.catalogue import recoverable
from stratbench.suites.chbench.fit import CHAgent, mean_level_set, simulate_counts, uniform_null_level

GAMES = recoverable()
N = 2  # actions per role and game: the smoke budget's scale (9 games, a few matchups, 1 round)


def _uniform(seed: int):
    return simulate_counts(CHAgent("u", "level_k", alpha=(1.0, 0.0, 0.0, 0.0), epsilon=(1.0, 1.0, 1.0)), GAMES, N,
                           seed=seed)


def test_uniform_players_pass_the_reference_about_one_time_in_twenty():
    ref = uniform_null_level(_uniform(0), "poisson", 4, 200, seed=7)
    assert ref is not None and ref > 0  # (uniform play is fitted a level above 0 often enough)
    above = [mean_level_set(_uniform(1000 + i), "poisson", 4)[1] > ref for i in range(100)]
    assert 0 <= sum(above) <= 12  # 5% expected; 12 of 100 has probability < 0.5% at 5%


def test_level_two_play_is_above_the_reference_and_the_reference_is_seeded():
    level2 = simulate_counts(CHAgent("l2", "level_k", alpha=(0.0, 0.0, 1.0, 0.0), epsilon=(0.0, 0.0, 0.0)), GAMES, N,
                             seed=3)
    ref = uniform_null_level(level2, "poisson", 4, 100, seed=5)
    assert ref is not None and mean_level_set(level2, "poisson", 4)[0] > ref
    again = uniform_null_level(level2, "poisson", 4, 100, seed=5)
    assert again == ref
    empty = simulate_counts(CHAgent("u", "poisson", lam=1.0), GAMES, 0, seed=1)
    assert uniform_null_level(empty, "poisson", 4, 100, seed=5) is None
    assert np.isfinite(ref)
