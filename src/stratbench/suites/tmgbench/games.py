"""The 144 strictly ordinal 2×2 games of the Robinson–Goforth topology, laid out as in TMGBench.

Why generate instead of typing a table: a hand-typed 144-row table is where transcription errors
hide, while the topology has a short exact description. Each player's payoffs are ranks 1..4
(4 best). Relabelling rows or columns does not change a game, so the 24 × 24 = 576 ordinal games
fall into 144 classes; we represent each class by its canonical orientation, in which A's 4 lies in
column B2 and B's 4 lies in row A1. There are 12 such matrices for each player, and they form
four sequences of six "patterns":

* A (row player, chooses A1/A2): α1..α6 have A's 4 at A2B2, β1..β6 at A1B2.
* B (column player, chooses B1/B2): γ1..γ6 have B's 4 at A1B1, δ1..δ6 at A1B2.

Each sequence is a 6-cycle: starting from its seed (α1, β1, γ1, δ1), step k swaps the ranks 1↔2
when k is odd and 2↔3 when k is even, and the sixth step returns to the seed. B's sequences are
A's seen from the other seat: γk = R(αk), δk = R(βk), where R(M) = Mᵀ with both rows and columns
reversed (the role swap followed by the relabelling back to canonical orientation).

TMGBench id "LRC": L is the layer, R the index of A's pattern and C the index of B's:
layer 1 = (αR, γC), 2 = (βR, γC), 3 = (βR, δC), 4 = (αR, δC); e.g. classic/111 = (α1, γ1), the
Prisoner's Dilemma. The 12×12 grid has rows (A's pattern) α2, α3, α4, α5, α6, α1, β2, …, β6, β1 and
columns (B's pattern) δ1, δ6, δ5, δ4, δ3, δ2, γ1, γ6, …, γ2, giving quadrants upper-left = layer 4,
upper-right = 1, lower-left = 3, lower-right = 2. This layout reproduces the paper's anchors:
(6,7) = 111 (its printed classic/111 matrix), (3,4) = 444 and (9,10) = 244 (the matrices printed in
its failure-case appendix, which also calls them a symmetric pair).

Known ambiguity: those anchors all have R = C and sit where rows and columns can be exchanged, so a
second layout — grid rows indexing B's pattern and columns A's, with the id's R and C exchanged
accordingly — fits them equally well. We implement the layout stated above. PAR/ID/BD do not depend
on the choice; heat-map placement and the significance degree (SD) do.

Sister games: swapping the players' roles maps grid (i, j) to (13 − j, 13 − i); the cell
o = 1..4 (A1B1, A1B2, A2B1, A2B2) maps to ref(o) = {1→4, 2→2, 3→3, 4→1}. Symmetric games (a game
equal to its own sister) lie exactly on the counter-diagonal i + j = 13.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from stratbench.games.normal_form import NormalFormGame
from stratbench.solvers.pure_nash import pure_nash_equilibria

Matrix = tuple[tuple[int, int], tuple[int, int]]
Cell = tuple[str, str]

ROW_LABELS: tuple[str, str] = ("A1", "A2")
COL_LABELS: tuple[str, str] = ("B1", "B2")
GRID_SIZE = 12

# Seeds of the four sequences; everything else is derived from them.
_SEEDS: dict[str, Matrix] = {
    "α": ((1, 3), (2, 4)),  # A's 4 at A2B2
    "β": ((2, 4), (1, 3)),  # A's 4 at A1B2
    "γ": ((4, 3), (2, 1)),  # B's 4 at A1B1
    "δ": ((3, 4), (1, 2)),  # B's 4 at A1B2
}
# (A's family, B's family) -> layer
_LAYER: dict[tuple[str, str], int] = {("α", "γ"): 1, ("β", "γ"): 2, ("β", "δ"): 3, ("α", "δ"): 4}
# Grid order of pattern indices within a family (see the module docstring).
_ROW_ORDER: tuple[tuple[str, int], ...] = tuple(
    (fam, k) for fam in ("α", "β") for k in (2, 3, 4, 5, 6, 1)
)
_COL_ORDER: tuple[tuple[str, int], ...] = tuple(
    (fam, k) for fam in ("δ", "γ") for k in (1, 6, 5, 4, 3, 2)
)
# Choice numbering used by TMGBench's heat maps: o = 1 + 2·row + col.
CHOICES: tuple[Cell, ...] = tuple((r, c) for r in ROW_LABELS for c in COL_LABELS)
REF: dict[int, int] = {1: 4, 2: 2, 3: 3, 4: 1}


def cell_to_choice(row: int, col: int) -> int:
    """Choice number 1..4 of the cell (row, col), with 0-based row/col indices."""
    return 1 + 2 * row + col


def choice_to_cell(o: int) -> Cell:
    """The label pair of choice number o (1 → ("A1","B1"), …, 4 → ("A2","B2"))."""
    if o not in (1, 2, 3, 4):
        raise ValueError(f"choice number must be 1..4, got {o!r}")
    return CHOICES[o - 1]


def swap_ranks(m: Matrix, a: int, b: int) -> Matrix:
    """m with ranks a and b exchanged: the elementary move between neighbouring games."""
    sw = {a: b, b: a}
    return tuple(tuple(sw.get(x, x) for x in row) for row in m)  # type: ignore[return-value]


def pattern_sequence(seed: Matrix) -> list[Matrix]:
    """The six patterns reached from `seed` by alternately swapping ranks 1↔2 and 2↔3."""
    out = [seed]
    for k in range(1, 6):
        out.append(swap_ranks(out[-1], 1, 2) if k % 2 == 1 else swap_ranks(out[-1], 2, 3))
    return out


@lru_cache(maxsize=1)
def patterns() -> dict[str, Matrix]:
    """All 24 named patterns, e.g. {"α1": ((1, 3), (2, 4)), …, "δ6": …}."""
    return {
        f"{fam}{k}": m
        for fam, seed in _SEEDS.items()
        for k, m in enumerate(pattern_sequence(seed), start=1)
    }


def role_swap(payoff_a: Matrix, payoff_b: Matrix) -> tuple[Matrix, Matrix]:
    """The same game with the players' seats exchanged, back in canonical orientation.

    The new row player is old B, so its matrix is Bᵀ; that puts its 4 in column B1 (B's 4 was in row
    A1) and the new column player's 4 in row A2, so both rows and columns are reversed. Net effect:
    A' = R(B), B' = R(A) with R(M)[r][c] = M[1 − c][1 − r]. Cell (r, c) of the old game becomes
    cell (1 − c, 1 − r) of the new one, i.e. choice o becomes ref(o).
    """

    def r(m: Matrix) -> Matrix:
        return tuple(tuple(m[1 - c][1 - rr] for c in range(2)) for rr in range(2))  # type: ignore[return-value]

    return r(payoff_b), r(payoff_a)


def _dominant(m: np.ndarray, player: str) -> str | None:
    """The strictly dominant strategy's label, or None (ordinal payoffs are strict, no ties)."""
    if player == "A":
        if np.all(m[0] > m[1]):
            return "A1"
        if np.all(m[1] > m[0]):
            return "A2"
        return None
    if np.all(m[:, 0] > m[:, 1]):
        return "B1"
    if np.all(m[:, 1] > m[:, 0]):
        return "B2"
    return None


def _classic_name(payoff_a: Matrix, payoff_b: Matrix) -> str:
    """Name of a symmetric game by the standard ordinal conditions, or "" when not one we can be
    sure of.

    In canonical orientation a symmetric game has A = R(B), so A's strategy A1 corresponds to B's B2
    and the symmetric payoff u(s, t) (s = own move, t = the other's, 0 ~ A1/B2, 1 ~ A2/B1) is
    A[s][1 − t]. With C/D being either move: R = u(C,C), S = u(C,D), T = u(D,C), P = u(D,D).
    Only orderings that every source agrees on are named: Prisoner's Dilemma T>R>P>S, Chicken
    T>R>S>P, Stag Hunt R>T>P>S, Deadlock T>P>R>S. Harmony, Battle of the Sexes, Hero and Leader have
    competing ordinal definitions and are left unnamed.
    """
    if role_swap(payoff_a, payoff_b) != (payoff_a, payoff_b):
        return ""

    def u(s: int, t: int) -> int:
        return payoff_a[s][1 - t]

    names = {
        "Prisoner's Dilemma": lambda R, S, T, P: T > R > P > S,
        "Chicken": lambda R, S, T, P: T > R > S > P,
        "Stag Hunt": lambda R, S, T, P: R > T > P > S,
        "Deadlock": lambda R, S, T, P: T > P > R > S,
    }
    for c in (0, 1):
        d = 1 - c
        R, S, T, P = u(c, c), u(c, d), u(d, c), u(d, d)
        for name, test in names.items():
            if test(R, S, T, P):
                return name
    return ""


@dataclass(frozen=True)
class RGGame:
    """One of the 144 Robinson–Goforth classes, as a concrete game at its TMGBench grid position.

    `payoff_A[r][c]` is A's rank when A plays row r (A1/A2) and B plays column c (B1/B2);
    `payoff_B` likewise for B. `pure_ne` lists the pure Nash equilibrium cells as label pairs, and
    `pure_ne_choices` the same cells as TMGBench choice numbers 1..4.
    """

    id: str
    row: int
    col: int
    layer: int
    a_pattern: str
    b_pattern: str
    payoff_A: Matrix
    payoff_B: Matrix
    pure_ne: tuple[Cell, ...]
    pure_ne_choices: tuple[int, ...]
    dominant_A: str | None
    dominant_B: str | None
    sister: tuple[int, int]
    symmetric: bool
    name: str
    game: NormalFormGame = field(compare=False, repr=False, hash=False)

    @property
    def n_ne(self) -> int:
        return len(self.pure_ne)

    @property
    def position(self) -> tuple[int, int]:
        return (self.row, self.col)


def _make(row: int, col: int) -> RGGame:
    pats = patterns()
    a_fam, a_k = _ROW_ORDER[row - 1]
    b_fam, b_k = _COL_ORDER[col - 1]
    a_name, b_name = f"{a_fam}{a_k}", f"{b_fam}{b_k}"
    pa, pb = pats[a_name], pats[b_name]
    layer = _LAYER[(a_fam, b_fam)]
    a_arr, b_arr = np.array(pa, dtype=float), np.array(pb, dtype=float)
    ne = sorted(pure_nash_equilibria(a_arr, b_arr))
    sister = (GRID_SIZE + 1 - col, GRID_SIZE + 1 - row)
    return RGGame(
        id=f"{layer}{a_k}{b_k}",
        row=row,
        col=col,
        layer=layer,
        a_pattern=a_name,
        b_pattern=b_name,
        payoff_A=pa,
        payoff_B=pb,
        pure_ne=tuple((ROW_LABELS[i], COL_LABELS[j]) for i, j in ne),
        pure_ne_choices=tuple(cell_to_choice(i, j) for i, j in ne),
        dominant_A=_dominant(a_arr, "A"),
        dominant_B=_dominant(b_arr, "B"),
        sister=sister,
        symmetric=sister == (row, col),
        name=_classic_name(pa, pb),
        game=NormalFormGame(a_arr, b_arr, ROW_LABELS, COL_LABELS, f"classic/{layer}{a_k}{b_k}"),
    )


@lru_cache(maxsize=1)
def _games() -> tuple[RGGame, ...]:
    return tuple(
        _make(r, c) for r, c in itertools.product(range(1, GRID_SIZE + 1), repeat=2)
    )


@lru_cache(maxsize=1)
def _by_id() -> dict[str, RGGame]:
    return {g.id: g for g in _games()}


def all_games() -> list[RGGame]:
    """The 144 games sorted by (row, col). Built once; the list is a fresh copy each call."""
    return list(_games())


def game_by_id(game_id: str) -> RGGame:
    """The game with TMGBench id `game_id` (e.g. "111"); KeyError if there is none."""
    try:
        return _by_id()[str(game_id).strip()]
    except KeyError:
        raise KeyError(f"no Robinson–Goforth game with id {game_id!r}") from None


def game_at(row: int, col: int) -> RGGame:
    """The game at grid position (row, col), both 1..12."""
    if not (1 <= row <= GRID_SIZE and 1 <= col <= GRID_SIZE):
        raise ValueError(f"grid position must be within 1..{GRID_SIZE}, got ({row}, {col})")
    return _games()[(row - 1) * GRID_SIZE + (col - 1)]


def sister_of(g: RGGame) -> RGGame:
    """The game with the players' roles swapped (itself for symmetric games)."""
    return game_at(*g.sister)


def standard_answer(g: RGGame) -> frozenset[int]:
    """TMGBench's standard answer: the choice numbers of the pure NE cells (may be empty)."""
    return frozenset(g.pure_ne_choices)


def to_json(g: RGGame) -> dict[str, Any]:
    """JSON-ready dict of every field except the NormalFormGame (which the matrices determine)."""
    return {
        "id": g.id,
        "row": g.row,
        "col": g.col,
        "layer": g.layer,
        "a_pattern": g.a_pattern,
        "b_pattern": g.b_pattern,
        "payoff_A": [list(r) for r in g.payoff_A],
        "payoff_B": [list(r) for r in g.payoff_B],
        "pure_ne": [list(c) for c in g.pure_ne],
        "pure_ne_choices": list(g.pure_ne_choices),
        "n_ne": g.n_ne,
        "dominant_A": g.dominant_A,
        "dominant_B": g.dominant_B,
        "sister": list(g.sister),
        "symmetric": g.symmetric,
        "name": g.name,
    }
