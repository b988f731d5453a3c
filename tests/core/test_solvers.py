"""Tests for stratbench.solvers: the zero-sum LP solver, best responses, exploitability and
pure Nash enumeration. Known equilibria are pinned, and properties are re-checked independently
of the solver's own verification."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stratbench.solvers import (
    best_response_value,
    exploitability_col,
    exploitability_row,
    has_saddle_point,
    is_pure,
    pure_nash_equilibria,
    saddle_points,
    solve_zero_sum,
)

TOL = 1e-9
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def assert_equilibrium(a, sol, tol=TOL):
    """Independent check that (p, q) is a Nash equilibrium of the zero-sum game `a`."""
    a = np.asarray(a, dtype=float)
    p, q, v = sol.row_strategy, sol.col_strategy, sol.value
    m, n = a.shape
    assert p.shape == (m,) and q.shape == (n,)
    assert np.all(p >= 0) and np.all(q >= 0)
    assert abs(p.sum() - 1.0) <= 1e-12
    assert abs(q.sum() - 1.0) <= 1e-12
    assert 0.0 <= sol.duality_gap <= tol
    assert abs(v - float(p @ a @ q)) <= tol
    # no profitable pure deviation for either player
    assert float((a @ q).max()) - v <= tol
    assert v - float((p @ a).min()) <= tol


# --------------------------------------------------------------------------------------------
# Pinned zero-sum equilibria
# --------------------------------------------------------------------------------------------

def test_matching_pennies():
    a = np.array([[1.0, -1.0], [-1.0, 1.0]])
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [0.5, 0.5], atol=1e-12)
    assert sol.value == pytest.approx(0.0, abs=1e-12)
    assert_equilibrium(a, sol)
    assert not has_saddle_point(a)
    assert saddle_points(a) == []


def test_rock_paper_scissors():
    a = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [1 / 3] * 3, atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [1 / 3] * 3, atol=1e-12)
    assert sol.value == pytest.approx(0.0, abs=1e-12)
    assert_equilibrium(a, sol)


def test_scaled_rps_value():
    # RPS where rock beating scissors pays 2: p = (1/4, 1/2, 1/4) makes every column pay 0
    a = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=float)
    sol = solve_zero_sum(a)
    assert_equilibrium(a, sol)
    # symmetric game (A = -A^T): value 0
    assert sol.value == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(sol.row_strategy, [0.25, 0.5, 0.25], atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [0.25, 0.5, 0.25], atol=1e-12)


def test_saddle_point_game():
    a = np.array([[4, 2, 5], [3, 1, 0], [6, 2.5, 7]], dtype=float)
    # row 2's min is 2.5 = column 1's max -> saddle at (2, 1)
    assert has_saddle_point(a)
    assert saddle_points(a) == [(2, 1)]
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [0, 1, 0], atol=1e-12)
    assert sol.value == pytest.approx(2.5, abs=1e-12)
    assert is_pure(sol.row_strategy) and is_pure(sol.col_strategy)
    assert_equilibrium(a, sol)


def test_hand_computed_mixed_2x2():
    a = np.array([[3.0, -1.0], [-2.0, 1.0]])
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [3 / 7, 4 / 7], atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [2 / 7, 5 / 7], atol=1e-12)
    assert sol.value == pytest.approx(1 / 7, abs=1e-12)
    assert_equilibrium(a, sol)
    assert not is_pure(sol.row_strategy)


def test_dominated_strategy_game():
    # Row 2 is strictly dominated by row 0; column 2 is strictly dominated (for the minimiser)
    # by column 0. What remains is the 2x2 [[3, -1], [-2, 1]] game above.
    a = np.array([[3.0, -1.0, 5.0], [-2.0, 1.0, 4.0], [2.0, -3.0, 4.0]])
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [3 / 7, 4 / 7, 0.0], atol=1e-12)
    np.testing.assert_allclose(sol.col_strategy, [2 / 7, 5 / 7, 0.0], atol=1e-12)
    assert sol.value == pytest.approx(1 / 7, abs=1e-12)
    assert_equilibrium(a, sol)


def test_one_by_n():
    a = np.array([[4.0, -2.0, 7.0, -2.5, 0.0]])
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.row_strategy, [1.0])
    np.testing.assert_allclose(sol.col_strategy, [0, 0, 0, 1, 0], atol=1e-12)
    assert sol.value == pytest.approx(-2.5, abs=1e-12)
    assert_equilibrium(a, sol)


def test_m_by_one():
    a = np.array([[4.0], [-2.0], [7.5], [0.0]])
    sol = solve_zero_sum(a)
    np.testing.assert_allclose(sol.col_strategy, [1.0])
    np.testing.assert_allclose(sol.row_strategy, [0, 0, 1, 0], atol=1e-12)
    assert sol.value == pytest.approx(7.5, abs=1e-12)
    assert_equilibrium(a, sol)


def test_one_by_one():
    sol = solve_zero_sum([[-3.25]])
    assert sol.value == -3.25
    assert sol.row_strategy.tolist() == [1.0] and sol.col_strategy.tolist() == [1.0]


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 5), (6, 2)])
def test_all_zero_matrix(shape):
    a = np.zeros(shape)
    sol = solve_zero_sum(a)
    assert sol.value == 0.0
    assert_equilibrium(a, sol)
    assert has_saddle_point(a)
    assert len(saddle_points(a)) == a.size


def test_constant_matrix_and_ties():
    a = np.full((3, 4), 2.5)
    sol = solve_zero_sum(a)
    assert sol.value == pytest.approx(2.5, abs=1e-12)
    assert_equilibrium(a, sol)
    b = np.array([[1.0, 1.0], [1.0, 0.0]])  # weakly dominated strategies, several equilibria
    sol_b = solve_zero_sum(b)
    assert sol_b.value == pytest.approx(1.0, abs=1e-12)
    assert_equilibrium(b, sol_b)


def test_solver_rejects_bad_input():
    for bad in ([[1.0, np.nan]], [[np.inf]], np.zeros((0, 2)), [1.0, 2.0], [[[1.0]]]):
        with pytest.raises(ValueError):
            solve_zero_sum(bad)


def test_best_response_and_exploitability_pinned():
    a = np.array([[3.0, -1.0], [-2.0, 1.0]])
    q = np.array([0.5, 0.5])
    # A q = (1, -0.5) -> best response value 1
    assert best_response_value(a, q) == pytest.approx(1.0)
    assert exploitability_col(a, q, 1 / 7) == pytest.approx(1 - 1 / 7)
    p = np.array([1.0, 0.0])
    # p A = (3, -1): column best-responds with col 1 -> -1
    assert exploitability_row(a, p, 1 / 7) == pytest.approx(1 / 7 + 1)


def test_is_pure():
    assert is_pure(np.array([0.0, 1.0, 0.0]))
    assert not is_pure(np.array([0.5, 0.5]))
    assert not is_pure(np.array([1e-6, 1 - 1e-6]))
    assert is_pure(np.array([1e-6, 1 - 1e-6]), tol=1e-5)


# --------------------------------------------------------------------------------------------
# Hypothesis properties
# --------------------------------------------------------------------------------------------

shapes = st.tuples(st.integers(1, 8), st.integers(1, 8))
float_matrices = shapes.flatmap(
    lambda s: arrays(np.float64, s, elements=st.floats(-100, 100, allow_nan=False,
                                                       allow_infinity=False))
)
int_matrices = shapes.flatmap(
    lambda s: arrays(np.float64, s, elements=st.integers(-3, 3).map(float))
)
rounded_matrices = shapes.flatmap(
    lambda s: arrays(np.float64, s, elements=st.integers(-10000, 10000).map(lambda x: x / 100))
)
matrices = st.one_of(float_matrices, int_matrices, rounded_matrices)


def _random_strategy(rng, k):
    x = rng.exponential(size=k)
    if rng.random() < 0.3:
        x[rng.integers(k)] += 10.0
    return x / x.sum()


@SETTINGS
@given(a=matrices, seed=st.integers(0, 2**32 - 1))
def test_solution_is_equilibrium(a, seed):
    sol = solve_zero_sum(a)
    assert_equilibrium(a, sol)
    p, q, v = sol.row_strategy, sol.col_strategy, sol.value

    # value lies between the pure maximin and minimax
    assert a.min(axis=1).max() - TOL <= v <= a.max(axis=0).min() + TOL

    # exploitability of equilibrium strategies is ~0
    assert abs(exploitability_row(a, p, v)) <= TOL
    assert abs(exploitability_col(a, q, v)) <= TOL
    assert best_response_value(a, q) == pytest.approx(v, abs=TOL)

    # any other strategy is at least as exploitable (never negative)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        p2 = _random_strategy(rng, a.shape[0])
        q2 = _random_strategy(rng, a.shape[1])
        assert exploitability_row(a, p2, v) >= -TOL
        assert exploitability_col(a, q2, v) >= -TOL
        assert best_response_value(a, q2) >= v - TOL
    for i in range(a.shape[0]):
        assert exploitability_row(a, np.eye(a.shape[0])[i], v) >= -TOL
    for j in range(a.shape[1]):
        assert exploitability_col(a, np.eye(a.shape[1])[j], v) >= -TOL

    # a saddle point exists iff the game has a pure equilibrium value
    if has_saddle_point(a):
        i, j = saddle_points(a)[0]
        assert v == pytest.approx(a[i, j], abs=TOL)
        assert a[i, j] == a[i].min() == a[:, j].max()


@SETTINGS
@given(a=matrices, c=st.floats(-50, 50), k=st.floats(0.01, 20))
@example(a=np.array([[5.96046448e-08, 0.0]]), c=0.0, k=0.015625)  # found by a run: see the tolerance below
def test_value_invariances(a, c, k):
    sol = solve_zero_sum(a)
    v = sol.value
    scale = max(1.0, float(np.abs(a).max()))
    assert solve_zero_sum(a + c).value == pytest.approx(v + c, abs=1e-9 * (scale + abs(c)))
    # each value is certified within its duality gap (payoffs below HiGHS's tolerances, e.g.
    # [[6e-8, 0]] / 64, may leave one of the size of an entry): the scaled values agree within both
    scaled = solve_zero_sum(k * a)
    assert scaled.value == pytest.approx(k * v, abs=1e-9 * k * scale + scaled.duality_gap + k * sol.duality_gap)
    # the column player's view: row payoffs -A^T
    sol_t = solve_zero_sum(-a.T)
    assert sol_t.value == pytest.approx(-v, abs=1e-9 * scale)
    assert_equilibrium(-a.T, sol_t)


@SETTINGS
@given(a=matrices)
def test_saddle_points_brute_force(a):
    expected = [
        (i, j)
        for i in range(a.shape[0])
        for j in range(a.shape[1])
        if a[i, j] == a[i].min() and a[i, j] == a[:, j].max()
    ]
    assert saddle_points(a) == expected
    assert has_saddle_point(a) == bool(expected)


# --------------------------------------------------------------------------------------------
# Pure Nash equilibria of bimatrix games
# --------------------------------------------------------------------------------------------

def test_prisoners_dilemma():
    a = [[3, 0], [5, 1]]
    b = [[3, 5], [0, 1]]
    assert pure_nash_equilibria(a, b) == [(1, 1)]


def test_coordination_game():
    a = [[2, 0], [0, 1]]
    assert pure_nash_equilibria(a, a) == [(0, 0), (1, 1)]


def test_battle_of_sexes():
    assert pure_nash_equilibria([[3, 0], [0, 2]], [[2, 0], [0, 3]]) == [(0, 0), (1, 1)]


def test_matching_pennies_has_no_pure_equilibrium():
    a = np.array([[1, -1], [-1, 1]])
    assert pure_nash_equilibria(a, -a) == []


def test_three_by_three():
    a = np.array([[4, 0, 1], [3, 2, 2], [1, 3, 0]])
    b = np.array([[1, 3, 0], [0, 2, 1], [5, 0, 4]])
    # column player's best responses (row maxima of b): (0,1), (1,1), (2,0);
    # row player's best responses (column maxima of a): (0,0), (2,1), (1,2)  -> no overlap
    assert pure_nash_equilibria(a, b) == []
    b2 = np.array([[1, 3, 0], [0, 2, 1], [0, 5, 4]])
    # now the column player's best response to row 2 is column 1, and a[2,1]=3 is column 1's
    # maximum -> (2,1) is the only equilibrium
    assert pure_nash_equilibria(a, b2) == [(2, 1)]


def test_pure_nash_with_ties_counts_weak_equilibria():
    z = np.zeros((2, 3))
    assert pure_nash_equilibria(z, z) == [(i, j) for i in range(2) for j in range(3)]


def test_pure_nash_zero_sum_matches_saddle_points():
    a = np.array([[4, 2, 5], [3, 1, 0], [6, 2.5, 7]])
    assert pure_nash_equilibria(a, -a) == saddle_points(a) == [(2, 1)]


def test_pure_nash_shape_mismatch():
    with pytest.raises(ValueError):
        pure_nash_equilibria(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError):
        pure_nash_equilibria(np.zeros(3), np.zeros(3))


bimatrices = shapes.flatmap(
    lambda s: st.tuples(
        arrays(np.float64, s, elements=st.integers(-2, 2).map(float)),
        arrays(np.float64, s, elements=st.one_of(
            st.integers(-2, 2).map(float),
            st.floats(-100, 100, allow_nan=False, allow_infinity=False),
        )),
    )
)


@settings(max_examples=200, deadline=None)
@given(ab=bimatrices)
def test_pure_nash_brute_force(ab):
    a, b = ab
    m, n = a.shape
    expected = []
    for i, j in itertools.product(range(m), range(n)):
        row_br = all(a[i, j] >= a[k, j] for k in range(m))
        col_br = all(b[i, j] >= b[i, l] for l in range(n))
        if row_br and col_br:
            expected.append((i, j))
    got = pure_nash_equilibria(a, b)
    assert got == expected
    assert len(set(got)) == len(got)
    # zero-sum special case agrees with saddle points
    assert pure_nash_equilibria(a, -a) == saddle_points(a)
