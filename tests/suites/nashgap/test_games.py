"""The Nash-gap suite's games: generators, buckets and their rejection sampling, reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.games import (
    MAX_ACTIONS,
    NormalFormGame,
    load_games,
    save_games,
)
from stratbench.solvers import has_saddle_point, is_pure, solve_zero_sum
from stratbench.suites.nashgap.games import BUCKETS, generate_games, payoff_decimals, rounded_game, shown_decimals

# --------------------------------------------------------------------------------------------
# NormalFormGame validation
# --------------------------------------------------------------------------------------------

def test_round_trip_generated_games(tmp_path):
    games = generate_games(seed=11, num_games=20, rows=3, cols=5)
    p = tmp_path / "g.json"
    save_games(games, p)
    assert load_games(p) == games


def test_generate_games_deterministic():
    a = generate_games(seed=123, num_games=10, rows=3, cols=4, low=-5, high=5)
    b = generate_games(seed=123, num_games=10, rows=3, cols=4, low=-5, high=5)
    assert a == b
    assert len(a) == 10
    assert all(g.shape == (3, 4) and g.is_zero_sum for g in a)
    # games within a run differ
    assert len({g.payoff_row.tobytes() for g in a}) == 10


def test_game_k_independent_of_count():
    few = generate_games(seed=7, num_games=5)
    many = generate_games(seed=7, num_games=50)
    assert few == many[:5]


def test_game_k_independent_of_count_buckets():
    few = generate_games(seed=7, num_games=3, bucket="3x3_midVar_mixed")
    many = generate_games(seed=7, num_games=12, bucket="3x3_midVar_mixed")
    assert few == many[:3]


def test_different_seed_differs():
    a = generate_games(seed=1, num_games=5)
    b = generate_games(seed=2, num_games=5)
    assert all(x != y for x, y in zip(a, b))


@pytest.mark.parametrize("decimals", [0, 1, 2, 3])
def test_payoffs_rounded_and_in_range(decimals):
    games = generate_games(seed=5, num_games=200, rows=4, cols=3, low=-7.5, high=12.0,
                           decimals=decimals)
    a = np.stack([g.payoff_row for g in games])
    np.testing.assert_array_equal(np.round(a, decimals), a)
    assert a.min() >= -7.5 and a.max() <= 12.0
    # spread over the range, not stuck in a corner
    assert a.min() < -6 and a.max() > 11
    # no negative zero anywhere
    assert not np.any(np.signbit(a) & (a == 0))


def test_default_generation_two_decimals_in_the_originals_range():
    """The original benchmark's generator draws payoffs from U(-100, 100); so does ours by default."""
    games = generate_games(seed=0, num_games=100)
    a = np.stack([g.payoff_row for g in games])
    assert a.shape == (100, 3, 3)
    np.testing.assert_array_equal(np.round(a, 2), a)
    assert a.min() >= -100 and a.max() <= 100
    assert a.min() < -90 and a.max() > 90  # the whole range, not the old (-10, 10)


@pytest.mark.parametrize("payoff, decimals", [
    ([[1, -1], [-1, 1]], 0),
    ([[0.5, -0.25], [-0.75, 1.5]], 2),
    ([[1.125, 0], [0, 2]], 3),
    ([[0.1, 0.2], [0.3, 1e6]], 1),
    ([[1e-10, 0], [0, 1]], 10),
])
def test_payoff_decimals_is_the_precision_the_payoffs_have(payoff, decimals):
    assert payoff_decimals(np.array(payoff, dtype=float)) == decimals


def test_shown_decimals_refuses_more_than_ten_and_rounded_game_rounds():
    third = NormalFormGame.zero_sum([[1 / 3, 0], [0, 1]])
    assert payoff_decimals(third.payoff_row) is None
    with pytest.raises(InputError, match=r"g\.json: game 0: payoff 0\.333.*more than 10 decimals.*--decimals N"):
        shown_decimals(third, None, "g.json: game 0")
    assert shown_decimals(third, 4) == 4  # the precision asked for wins
    r = rounded_game(third, 4)
    assert r.payoff_row.tolist() == [[0.3333, 0.0], [0.0, 1.0]] and r.is_zero_sum
    assert payoff_decimals(r.payoff_row) == 4  # what is shown is what is scored
    neg = rounded_game(NormalFormGame.zero_sum([[-0.001, 1], [2, 3]]), 2)
    assert not np.any(np.signbit(neg.payoff_row) & (neg.payoff_row == 0))  # no "-0.00"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_games=0),
        dict(num_games=1, bucket="5x5_nope"),
        dict(num_games=1, rows=0),
        dict(num_games=1, cols=MAX_ACTIONS + 1),
        dict(num_games=1, low=1.0, high=1.0),
        dict(num_games=1, low=2.0, high=1.0),
        dict(num_games=1, low=-math.inf, high=1.0),
        dict(num_games=1, low=0.0, high=math.nan),
    ],
)
def test_generate_games_bad_arguments(kwargs):
    with pytest.raises(InputError):
        generate_games(seed=0, **kwargs)


def test_buckets_table():
    assert set(BUCKETS) == {
        "2x2_lowVar_pure", "2x2_lowVar_mixed",
        "3x3_midVar_pure", "3x3_midVar_mixed",
        "4x4_highVar_pure", "4x4_highVar_mixed",
    }
    assert [(b.rows, b.high) for b in BUCKETS.values()] == [
        (2, 10), (2, 10), (3, 50), (3, 50), (4, 100), (4, 100)
    ]


@pytest.mark.parametrize("bucket_id", list(BUCKETS))
def test_bucket_games_have_right_shape_range_and_kind(bucket_id):
    b = BUCKETS[bucket_id]
    games = generate_games(seed=99, num_games=40, bucket=bucket_id)
    assert len(games) == 40
    for g in games:
        a = g.payoff_row
        assert g.shape == (b.rows, b.cols)
        assert g.is_zero_sum
        assert a.min() >= b.low and a.max() <= b.high
        np.testing.assert_array_equal(np.round(a, 2), a)
        sol = solve_zero_sum(a)
        if b.kind == "pure":
            assert has_saddle_point(a)
            assert is_pure(sol.row_strategy) and is_pure(sol.col_strategy)
            # the pure value is the saddle entry: maximin == minimax
            assert sol.value == pytest.approx(a.min(axis=1).max(), abs=1e-9)
        else:
            assert b.kind == "mixed"
            assert not has_saddle_point(a)
            assert not is_pure(sol.row_strategy, tol=1e-6)
            assert not is_pure(sol.col_strategy, tol=1e-6)
    # range is actually used
    all_a = np.stack([g.payoff_row for g in games])
    assert all_a.max() - all_a.min() > (b.high - b.low) / 2


@pytest.mark.parametrize("n, expected", [(2, 2 / 3), (3, 0.300), (4, 576 / 5040)])
def test_saddle_point_frequency_iid_uniform(n, expected):
    # For i.i.d. continuous payoffs, P(saddle point) = m! n! / (m + n - 1)!
    assert expected == pytest.approx(
        math.factorial(n) ** 2 / math.factorial(2 * n - 1), abs=1e-12
    )
    games = generate_games(seed=2024, num_games=3000, rows=n, cols=n)
    freq = np.mean([has_saddle_point(g.payoff_row) for g in games])
    assert abs(freq - expected) < 0.03, freq
