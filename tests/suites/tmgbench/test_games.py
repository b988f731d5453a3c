"""Tests for stratbench.suites.tmgbench.games: the 144 TMGBench games built from their patterns.

The reference data here (the pattern list and the anchor matrices) is typed from the project notes
and the paper, independently of the generator, so a mistake in either shows up as a mismatch.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.tmgbench.games import (
    CHOICES,
    REF,
    RGGame,
    all_games,
    game_at,
    game_by_id,
    patterns,
    role_swap,
    sister_of,
    standard_answer,
    to_json,
)

# The pattern list exactly as written in the notes (M[r][c], r = A1/A2, c = B1/B2).
NOTES_PATTERNS = {
    "α": [[[1, 3], [2, 4]], [[2, 3], [1, 4]], [[3, 2], [1, 4]], [[3, 1], [2, 4]], [[2, 1], [3, 4]], [[1, 2], [3, 4]]],
    "β": [[[2, 4], [1, 3]], [[1, 4], [2, 3]], [[1, 4], [3, 2]], [[2, 4], [3, 1]], [[3, 4], [2, 1]], [[3, 4], [1, 2]]],
    "γ": [[[4, 3], [2, 1]], [[4, 3], [1, 2]], [[4, 2], [1, 3]], [[4, 1], [2, 3]], [[4, 1], [3, 2]], [[4, 2], [3, 1]]],
    "δ": [[[3, 4], [1, 2]], [[3, 4], [2, 1]], [[2, 4], [3, 1]], [[1, 4], [3, 2]], [[1, 4], [2, 3]], [[2, 4], [1, 3]]],
}


def as_list(m) -> list[list[int]]:
    return [list(r) for r in m]


def block(rows: range, cols: range) -> set[tuple[int, int]]:
    return {(r, c) for r in rows for c in cols}


def relabelings(a: np.ndarray, b: np.ndarray):
    """The four row/column relabelings of a 2×2 bimatrix game."""
    for flip_r, flip_c in itertools.product((False, True), repeat=2):
        aa, bb = a, b
        if flip_r:
            aa, bb = aa[::-1, :], bb[::-1, :]
        if flip_c:
            aa, bb = aa[:, ::-1], bb[:, ::-1]
        yield aa, bb


def canonical_key(a: np.ndarray, b: np.ndarray) -> tuple:
    return min((tuple(aa.ravel()), tuple(bb.ravel())) for aa, bb in relabelings(a, b))


# --------------------------------------------------------------------------------------------
# Patterns


def test_patterns_match_the_notes() -> None:
    pats = patterns()
    assert len(pats) == 24
    for fam, mats in NOTES_PATTERNS.items():
        for k, m in enumerate(mats, start=1):
            assert as_list(pats[f"{fam}{k}"]) == m, f"{fam}{k}"


@pytest.mark.parametrize("fam", ["α", "β", "γ", "δ"])
def test_each_sequence_is_a_six_cycle_of_adjacent_rank_swaps(fam: str) -> None:
    seq = [np.array(patterns()[f"{fam}{k}"]) for k in range(1, 7)]
    assert len({tuple(m.ravel()) for m in seq}) == 6
    for k in range(6):
        m, n = seq[k], seq[(k + 1) % 6]  # includes the closing step 6 → 1
        diff = m != n
        assert diff.sum() == 2, (fam, k)
        vals = sorted(m[diff].tolist())
        assert vals[1] - vals[0] == 1, (fam, k)  # the two swapped ranks are adjacent
        assert sorted(n[diff].tolist()) == vals


def test_pattern_positions_of_the_best_rank() -> None:
    pats = patterns()
    where = {"α": (1, 1), "β": (0, 1), "γ": (0, 0), "δ": (0, 1)}
    for name, m in pats.items():
        arr = np.array(m)
        assert sorted(arr.ravel().tolist()) == [1, 2, 3, 4]
        assert tuple(int(x) for x in np.argwhere(arr == 4)[0]) == where[name[0]], name


def test_b_patterns_are_a_patterns_from_the_other_seat() -> None:
    """γk = R(αk) and δk = R(βk), R(M) = Mᵀ with rows and columns reversed; so (αk, γk) and
    (βk, δk) are the symmetric games."""
    pats = patterns()

    def r(m) -> list[list[int]]:
        return np.array(m).T[::-1, ::-1].tolist()

    for k in range(1, 7):
        assert r(pats[f"α{k}"]) == as_list(pats[f"γ{k}"])
        assert r(pats[f"β{k}"]) == as_list(pats[f"δ{k}"])
        assert role_swap(pats[f"α{k}"], pats[f"γ{k}"]) == (pats[f"α{k}"], pats[f"γ{k}"])
        assert role_swap(pats[f"β{k}"], pats[f"δ{k}"]) == (pats[f"β{k}"], pats[f"δ{k}"])


# --------------------------------------------------------------------------------------------
# The grid


def test_144_distinct_games_each_position_once() -> None:
    games = all_games()
    assert len(games) == 144
    assert len({g.id for g in games}) == 144
    assert {g.position for g in games} == block(range(1, 13), range(1, 13))
    assert [g.position for g in games] == sorted(g.position for g in games)
    assert len({(g.payoff_A, g.payoff_B) for g in games}) == 144
    for g in games:
        assert g is game_at(g.row, g.col)
        assert g is game_by_id(g.id)
        assert len(g.id) == 3 and g.id[0] == str(g.layer)
        assert g.id[1] == g.a_pattern[1] and g.id[2] == g.b_pattern[1]
        assert isinstance(g.game, NormalFormGame)
        assert g.game.row_labels == ("A1", "A2") and g.game.col_labels == ("B1", "B2")
        assert g.game.payoff_row.tolist() == as_list(g.payoff_A)
        assert g.game.payoff_col.tolist() == as_list(g.payoff_B)


def test_all_games_returns_a_copy() -> None:
    a = all_games()
    a.clear()
    assert len(all_games()) == 144


def test_lookup_errors() -> None:
    with pytest.raises(KeyError):
        game_by_id("999")
    with pytest.raises(ValueError):
        game_at(0, 5)
    with pytest.raises(ValueError):
        game_at(3, 13)


def test_layers_form_the_quadrants() -> None:
    expect = {(True, True): 4, (True, False): 1, (False, True): 3, (False, False): 2}
    for g in all_games():
        assert g.layer == expect[(g.row <= 6, g.col <= 6)], g.position
        fam = {1: ("α", "γ"), 2: ("β", "γ"), 3: ("β", "δ"), 4: ("α", "δ")}[g.layer]
        assert (g.a_pattern[0], g.b_pattern[0]) == fam


def test_grid_order_of_patterns() -> None:
    rows = ["α2", "α3", "α4", "α5", "α6", "α1", "β2", "β3", "β4", "β5", "β6", "β1"]
    cols = ["δ1", "δ6", "δ5", "δ4", "δ3", "δ2", "γ1", "γ6", "γ5", "γ4", "γ3", "γ2"]
    for g in all_games():
        assert g.a_pattern == rows[g.row - 1] and g.b_pattern == cols[g.col - 1]


# --------------------------------------------------------------------------------------------
# Anchors from the paper


def test_anchor_prisoners_dilemma_at_6_7() -> None:
    g = game_at(6, 7)
    assert g.id == "111" and g.name == "Prisoner's Dilemma" and g.symmetric
    # classic/111 as printed in the paper: A1: 1\4, 3\3; A2: 2\2, 4\1.
    assert as_list(g.payoff_A) == [[1, 3], [2, 4]]
    assert as_list(g.payoff_B) == [[4, 3], [2, 1]]
    # Check the PD structure for each player separately. A cooperates with A1, B with B2.
    a, b = np.array(g.payoff_A), np.array(g.payoff_B)
    ta, ra, pa, sa = a[1, 1], a[0, 1], a[1, 0], a[0, 0]  # temptation, reward, punishment, sucker
    tb, rb, pb, sb = b[0, 0], b[0, 1], b[1, 0], b[1, 1]
    assert ta > ra > pa > sa
    assert tb > rb > pb > sb
    assert (ta, ra, pa, sa) == (tb, rb, pb, sb)  # symmetric
    # Defection is dominant, the only NE is mutual defection, which both rank below cooperation.
    assert g.dominant_A == "A2" and g.dominant_B == "B1"
    assert g.pure_ne == (("A2", "B1"),) and standard_answer(g) == frozenset({3})
    assert a[0, 1] > a[1, 0] and b[0, 1] > b[1, 0]


def test_anchor_444_at_3_4() -> None:
    g = game_at(3, 4)
    assert g.id == "444" and game_by_id("444") is g
    assert as_list(g.payoff_A) == [[3, 1], [2, 4]]
    assert as_list(g.payoff_B) == [[1, 4], [3, 2]]
    assert g.pure_ne == () and standard_answer(g) == frozenset()


def test_anchor_244_at_9_10() -> None:
    g = game_at(9, 10)
    assert g.id == "244"
    # The paper's second failure case ("row 9 column 10").
    assert as_list(g.payoff_A) == [[2, 4], [3, 1]]
    assert as_list(g.payoff_B) == [[4, 1], [2, 3]]
    assert g.pure_ne == ()
    assert sister_of(g) is game_at(3, 4) and sister_of(game_at(3, 4)) is g


def test_other_classic_names_have_the_right_structure() -> None:
    named = {g.name: g for g in all_games() if g.name}
    assert set(named) == {"Prisoner's Dilemma", "Chicken", "Stag Hunt", "Deadlock"}
    for g in named.values():
        assert g.symmetric
    assert named["Chicken"].n_ne == 2 and named["Chicken"].dominant_A is None
    assert named["Stag Hunt"].n_ne == 2
    assert named["Deadlock"].n_ne == 1
    # Stag Hunt: the payoff-dominant NE gives both players 4.
    sh = named["Stag Hunt"]
    best = [c for c in sh.pure_ne if sh.payoff_A[int(c[0][1]) - 1][int(c[1][1]) - 1] == 4]
    assert len(best) == 1
    r, c = int(best[0][0][1]) - 1, int(best[0][1][1]) - 1
    assert sh.payoff_B[r][c] == 4
    # Chicken (T=4 > R=3 > S=2 > P=1): the two NE are (T, S) and (S, T), an anti-coordination game.
    ch = named["Chicken"]
    ne_payoffs = set()
    for cell in ch.pure_ne:
        r, c = int(cell[0][1]) - 1, int(cell[1][1]) - 1
        ne_payoffs.add((ch.payoff_A[r][c], ch.payoff_B[r][c]))
    assert ne_payoffs == {(4, 2), (2, 4)}
    # Deadlock: the NE is each player's second best, and mutual "cooperation" is worse.
    dl = named["Deadlock"]
    (cell,) = dl.pure_ne
    r, c = int(cell[0][1]) - 1, int(cell[1][1]) - 1
    assert dl.payoff_A[r][c] == 3 and dl.payoff_B[r][c] == 3


# --------------------------------------------------------------------------------------------
# Equilibria


def test_ne_split_and_blocks() -> None:
    games = all_games()
    by_n = {n: {g.position for g in games if g.n_ne == n} for n in (0, 1, 2)}
    assert [len(by_n[n]) for n in (0, 1, 2)] == [18, 108, 18]
    assert by_n[0] == block(range(1, 4), range(4, 7)) | block(range(7, 10), range(10, 13))
    assert by_n[2] == block(range(1, 4), range(10, 13)) | block(range(7, 10), range(4, 7))


def test_one_ne_iff_some_player_has_a_dominant_strategy() -> None:
    for g in all_games():
        has_dom = g.dominant_A is not None or g.dominant_B is not None
        assert (g.n_ne == 1) == has_dom, g.id


def test_pure_ne_by_brute_force() -> None:
    for g in all_games():
        a, b = np.array(g.payoff_A), np.array(g.payoff_B)
        cells = []
        for r, c in itertools.product(range(2), repeat=2):
            if a[r, c] > a[1 - r, c] and b[r, c] > b[r, 1 - c]:
                cells.append((f"A{r + 1}", f"B{c + 1}"))
        assert list(g.pure_ne) == cells
        assert standard_answer(g) == frozenset(CHOICES.index(x) + 1 for x in cells)
        assert list(g.pure_ne_choices) == [CHOICES.index(x) + 1 for x in cells]


def test_dominant_strategies_by_brute_force() -> None:
    for g in all_games():
        a, b = np.array(g.payoff_A), np.array(g.payoff_B)
        dom_a = "A1" if (a[0] > a[1]).all() else "A2" if (a[1] > a[0]).all() else None
        dom_b = "B1" if (b[:, 0] > b[:, 1]).all() else "B2" if (b[:, 1] > b[:, 0]).all() else None
        assert (g.dominant_A, g.dominant_B) == (dom_a, dom_b)


# --------------------------------------------------------------------------------------------
# Sisters and symmetry


def swap_roles_and_canonicalise(g: RGGame) -> tuple[list[list[int]], list[list[int]]]:
    """What the sister must be, computed from first principles, not with the module's helpers.

    1. Swap roles: the new row player is old B, choosing rows by old B's move, so A' = Bᵀ; the new
       column player is old A, so B' = Aᵀ.
    2. Relabel to canonical orientation (A's 4 in column B2, B's 4 in row A1) by whichever row and
       column flips achieve it.
    """
    a2, b2 = np.array(g.payoff_B).T, np.array(g.payoff_A).T
    for aa, bb in relabelings(a2, b2):
        if aa[:, 1].max() == 4 and bb[0].max() == 4:
            return aa.tolist(), bb.tolist()
    raise AssertionError("no canonical orientation")


def test_sister_is_the_role_swapped_game() -> None:
    for g in all_games():
        s = sister_of(g)
        assert s.position == (13 - g.col, 13 - g.row)
        assert (as_list(s.payoff_A), as_list(s.payoff_B)) == swap_roles_and_canonicalise(g)
        # Layers pair up 1↔1, 3↔3, 2↔4, and the id's pattern indices exchange.
        assert s.layer == {1: 1, 2: 4, 3: 3, 4: 2}[g.layer]
        assert s.id[1:] == g.id[2] + g.id[1]
        # Equilibrium cells map through ref: o ↦ ref(o).
        assert standard_answer(s) == frozenset(REF[o] for o in standard_answer(g))


def test_sisters_are_involutive_and_symmetric_games_on_counter_diagonal() -> None:
    games = all_games()
    for g in games:
        assert sister_of(sister_of(g)) is g
        assert g.symmetric == (sister_of(g) is g) == (g.row + g.col == 13)
    assert sum(g.symmetric for g in games) == 12


def test_ne_counts_symmetric_across_counter_diagonal() -> None:
    for g in all_games():
        assert sister_of(g).n_ne == g.n_ne


# --------------------------------------------------------------------------------------------
# Completeness: the 144 games are exactly the classes of the 576 ordinal games


def test_games_are_all_classes_of_the_576_ordinal_games() -> None:
    perms = [np.array(p).reshape(2, 2) for p in itertools.permutations([1, 2, 3, 4])]
    classes: dict[tuple, int] = {}
    for a in perms:
        for b in perms:
            key = canonical_key(a, b)
            classes[key] = classes.get(key, 0) + 1
    assert len(perms) ** 2 == 576
    assert len(classes) == 144
    assert set(classes.values()) == {4}  # no ordinal game is fixed by a relabelling
    ours = [canonical_key(np.array(g.payoff_A), np.array(g.payoff_B)) for g in all_games()]
    assert len(set(ours)) == 144  # pairwise non-equivalent
    assert set(ours) == set(classes)  # and each class holds exactly one of them


# --------------------------------------------------------------------------------------------
# JSON


def test_to_json_round_trips_through_json() -> None:
    for g in all_games():
        d = json.loads(json.dumps(to_json(g)))
        assert d["id"] == g.id and (d["row"], d["col"]) == g.position
        assert d["payoff_A"] == as_list(g.payoff_A) and d["payoff_B"] == as_list(g.payoff_B)
        assert d["pure_ne"] == [list(c) for c in g.pure_ne]
        assert d["pure_ne_choices"] == list(g.pure_ne_choices)
        assert d["sister"] == list(g.sister) and d["symmetric"] == g.symmetric
        assert {"layer", "a_pattern", "b_pattern", "dominant_A", "dominant_B", "name"} <= set(d)
    assert to_json(game_at(3, 4))["pure_ne"] == []
    assert to_json(game_at(6, 7))["pure_ne"] == [["A2", "B1"]]
