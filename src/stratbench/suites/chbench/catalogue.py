"""The 15 CHBench games, built from the matrices the paper prints.

The appendix (Table 6) prints ONE matrix D per game. Read literally as "row player's payoffs" it
does not reproduce the paper's own intro example nor the named classic games; the reading that does
is A = Dᵀ (row player's payoffs, A[i, j] with i the row action) and, for symmetric games,
B[i, j] = A[j, i], i.e. B = D. Only the printed numbers are typed in here; A and B are derived in
code so the reading is one auditable line (`_from_printed`).

What cannot be recovered is shipped but flagged (`CHGame.uncertain`), never silently trusted:
#8, #9, #10, #14 are asymmetric with only one player's payoffs printed (the column player's
matrix below is a symmetric *placeholder*, B = D, until a corrections file supplies it); #12 is
printed identical to #11 (a copy error in the paper); #15's two printings disagree in two cells,
and the Table-2 pair (which prints both players) is used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from stratbench.errors import GameFormatError, InputError
from stratbench.files import display, read_json, show, validate
from stratbench.games.normal_form import NormalFormGame
from stratbench.solvers import best_response_value, pure_nash_equilibria

LABELS_2 = ("A", "B")
LABELS_3 = ("A", "B", "C")

MISSING_PLAYER = (
    "asymmetric game with only one payoff matrix printed: the column player's payoffs are not "
    "recoverable; payoff_col is a symmetric placeholder (B = D) until corrected"
)


@dataclass(frozen=True)
class CHGame:
    """One catalogue game. `uncertain` is None when the payoffs are trusted, else the reason."""

    id: int
    name: str
    game: NormalFormGame
    symmetric: bool
    uncertain: str | None = None

    @property
    def n_actions(self) -> tuple[int, int]:
        return self.game.shape


# Printed D matrices (Table 6), exactly as printed, row by row.
_PRINTED: dict[int, list[list[float]]] = {
    1: [[3, 5], [0, 1]],
    2: [[4, 2], [1, 3]],
    3: [[2, 3], [1, 0]],
    4: [[0, -3], [3, 0]],
    5: [[5, 4], [3, 2]],
    6: [[-2, 0], [3, 1]],
    7: [[1, 2], [0, 3]],
    8: [[2, 4], [1, 3]],
    9: [[4, 5], [3, 2]],
    10: [[-3, 5], [1, 0]],
    11: [[3, 5, 1], [0, 0, 4], [2, 1, 4]],
    12: [[3, 5, 1], [0, 0, 4], [2, 1, 4]],
    13: [[3, 5, 4], [0, 2, 3], [2, 1, 3]],
    14: [[2, 1, 0], [1, 0, -1], [1, 2, 2]],
    15: [[3, 4, 5], [4, 4, 5], [5, 5, 3]],
}
# Table 2 prints #15 with both players' payoffs as (row, col) pairs.
_TABLE2_15_ROW = [[3, 4, 2], [4, 4, 1], [5, 5, 3]]
_TABLE2_15_COL = [[5, 4, 2], [3, 4, 1], [2, 1, 3]]

_NAMES = {
    1: "prisoners_dilemma",
    2: "coordination",
    3: "snowdrift",
    4: "random_4",
    5: "random_5",
    6: "hawk_dove",
    7: "random_7",
    8: "random_8",
    9: "random_9",
    10: "random_10",
    11: "random_11",
    12: "random_12",
    13: "random_13",
    14: "random_14",
    15: "random_15",
}
_ASYMMETRIC = {8, 9, 10, 14, 15}


def _labels(n: int) -> tuple[str, ...]:
    return LABELS_2 if n == 2 else LABELS_3


def _from_printed(d: Any, name: str = "") -> NormalFormGame:
    """The transpose reading: A = Dᵀ, B = D (so B[i, j] = A[j, i], a symmetric game)."""
    dm = np.asarray(d, dtype=float)
    n = dm.shape[0]
    return NormalFormGame(dm.T, dm, _labels(n), _labels(n), name)


def build_catalogue() -> tuple[CHGame, ...]:
    """All 15 games in id order, uncertain ones flagged (see the module docstring)."""
    out: list[CHGame] = []
    for gid, d in _PRINTED.items():
        name = _NAMES[gid]
        uncertain: str | None = None
        if gid == 15:
            game = NormalFormGame(
                np.array(_TABLE2_15_ROW, float),
                np.array(_TABLE2_15_COL, float),
                LABELS_3,
                LABELS_3,
                name,
            )
            uncertain = (
                "appendix and Table 2 printings disagree in two cells; the Table-2 (row, col) "
                "pairs are used"
            )
        else:
            game = _from_printed(d, name)
            if gid in _ASYMMETRIC:
                uncertain = MISSING_PLAYER
            elif gid == 12:
                uncertain = "printed identical to #11 (copy error in the paper); shipped as a copy"
        out.append(CHGame(gid, name, game, gid not in _ASYMMETRIC, uncertain))
    return tuple(out)


def recoverable(catalogue: tuple[CHGame, ...] | None = None) -> tuple[CHGame, ...]:
    """Games whose payoffs are trusted (no `uncertain` flag)."""
    cat = build_catalogue() if catalogue is None else catalogue
    return tuple(g for g in cat if g.uncertain is None)


class Correction(BaseModel):
    """One entry of a corrections file: both players' payoffs of one catalogue game (the matrices
    themselves are checked by `NormalFormGame`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    payoff_row: Any
    payoff_col: Any


def _game_id(text: str) -> int | None:
    """An id written with ASCII digits only (``int`` would also take " 8", "+8" and "٨")."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


def load_corrections(
    path: str | Path, catalogue: tuple[CHGame, ...] | None = None, label: str = "--corrections"
) -> tuple[CHGame, ...]:
    """Apply a JSON file `{id: {"payoff_row": [[..]], "payoff_col": [[..]]}}` to the catalogue.

    Corrected games lose their `uncertain` flag (the user vouches for them). Shapes must match the
    catalogue game (the action sets are fixed by the recorded data). Any problem raises a one-line
    `InputError` naming the file and the entry.
    """
    p = Path(path)
    name = display(p, label)
    cat = build_catalogue() if catalogue is None else catalogue
    raw = read_json(p, label)
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"{name}: expected a non-empty object mapping game id to matrices")
    by_id = {g.id: g for g in cat}
    fixed: dict[int, CHGame] = {}
    for key, entry in raw.items():
        gid = _game_id(key)
        if gid is None:
            raise InputError(f"{name}: game id {show(key)} is not an integer")
        if gid not in by_id:
            raise InputError(f"{name}: game id {gid} is not in the catalogue (1..{len(cat)})")
        if gid in fixed:
            raise InputError(f"{name}: game {gid} is corrected twice")
        if not isinstance(entry, dict):
            raise InputError(f"{name}: game {gid}: expected an object with payoff_row and payoff_col")
        extra = set(entry) - set(Correction.model_fields)
        if extra:
            raise InputError(f"{name}: game {gid}: unknown keys {show(sorted(extra)[0])}{' ...' if len(extra) > 1 else ''}")
        if "payoff_row" not in entry or "payoff_col" not in entry:
            raise InputError(f"{name}: game {gid}: both payoff_row and payoff_col are required")
        corr: Correction = validate(Correction, entry, f"{name}: game {gid}")
        old = by_id[gid]
        try:
            game = NormalFormGame(corr.payoff_row, corr.payoff_col, name=old.name)
        except GameFormatError as e:
            raise InputError(f"{name}: game {gid}: {e}") from None
        if game.shape != old.game.shape:
            raise InputError(
                f"{name}: game {gid}: shape {game.shape[0]}x{game.shape[1]} does not match the "
                f"catalogue's {old.game.shape[0]}x{old.game.shape[1]}"
            )
        game = NormalFormGame(game.payoff_row, game.payoff_col, old.game.row_labels, old.game.col_labels, old.name)
        sym = bool(np.array_equal(game.payoff_col, game.payoff_row.T))
        fixed[gid] = replace(old, game=game, symmetric=sym, uncertain=None)
    return tuple(fixed.get(g.id, g) for g in cat)


def select_games(games: str, corrections: str | None = None) -> list[CHGame]:
    """The games a run plays: ``all``, ``recoverable`` or ids like ``1,2,11`` (in the given order,
    each once), from the catalogue with ``corrections`` applied. Bad selections are one InputError
    line."""
    if not isinstance(games, str):
        raise InputError(f"--games: expected all, recoverable or ids like 1,2,11 (text), got {show(games)}")
    cat = build_catalogue()
    if corrections:
        cat = load_corrections(corrections, cat)
    key = games.strip().lower()
    if key == "all":
        return list(cat)
    if key == "recoverable":
        return list(recoverable(cat))
    by_id = {g.id: g for g in cat}
    out: list[CHGame] = []
    for part in key.split(","):
        gid = _game_id(part.strip())
        if gid is None:
            raise InputError(f"--games {show(games)}: expected all, recoverable or ids like 1,2,11")
        if gid not in by_id:
            raise InputError(f"--games: no game {gid} (the catalogue has 1..{len(cat)})")
        if any(g.id == gid for g in out):
            raise InputError(f"--games {show(games)}: game {gid} is listed twice")
        out.append(by_id[gid])
    return out


# ----------------------------------------------------------------------------- classic structure


def symmetric_2x2_type(game: NormalFormGame) -> str | None:
    """Classify a symmetric 2×2 game by payoff ordering, trying both action orderings.

    With R (mutual first action), S (sucker), T (temptation), P (mutual second action) for the
    "cooperative" action first: PD T>R>P>S; chicken (snowdrift/hawk-dove) T>R>S>P; coordination:
    both diagonal cells strict pure equilibria. Returns "prisoners_dilemma", "chicken",
    "coordination" or None.
    """
    a = np.asarray(game.payoff_row, float)
    if a.shape != (2, 2) or not np.array_equal(game.payoff_col, a.T):
        return None
    for perm in ((0, 1), (1, 0)):
        m = a[np.ix_(perm, perm)]
        r, s, t, p = m[0, 0], m[0, 1], m[1, 0], m[1, 1]
        if t > r > p > s:
            return "prisoners_dilemma"
        if t > r > s > p:
            return "chicken"
    if a[0, 0] > a[1, 0] and a[1, 1] > a[0, 1]:
        return "coordination"
    return None


# ----------------------------------------------------------------------------- intro example

INTRO_PRINTED = [[-8, 0], [5, 1]]  # Table 1 of the paper, as printed


@dataclass(frozen=True)
class IntroExample:
    """The paper's Example 1: a mixed NE and the four utilities it quotes."""

    game: NormalFormGame
    ne_row: np.ndarray
    ne_col: np.ndarray
    pure_equilibria: list[tuple[int, int]]
    u_row_uniform_vs_ne: float  # paper: 2/3
    u_col_uniform_vs_ne: float  # paper: -1/6
    u_row_uniform_vs_br: float  # paper: 3
    u_col_uniform_vs_br: float  # paper: 0.5


def mixed_equilibrium_2x2(game: NormalFormGame) -> tuple[np.ndarray, np.ndarray]:
    """The fully mixed NE of a 2×2 game by the indifference equations, verified with the library.

    Each player's mix makes the *opponent* indifferent (one linear equation each). The library's
    zero-sum LP cannot be used directly on general-sum games (minimising the opponent's best payoff
    is not the indifference point when both of the opponent's payoffs move the same way, as in the
    intro game), so the result is instead checked with `best_response_value`: no pure deviation
    gains. Raises ValueError when the game has no fully mixed equilibrium.
    """
    a, b = np.asarray(game.payoff_row, float), np.asarray(game.payoff_col, float)
    if a.shape != (2, 2):
        raise ValueError("mixed_equilibrium_2x2 needs a 2x2 game")
    db = b[:, 0] - b[:, 1]  # column's payoff gain of A over B, per row action
    da = a[0, :] - a[1, :]  # row's payoff gain of A over B, per column action
    if db[0] == db[1] or da[0] == da[1]:
        raise ValueError("the game has no fully mixed Nash equilibrium")
    p0 = db[1] / (db[1] - db[0])
    q0 = da[1] / (da[1] - da[0])
    if not (0.0 < p0 < 1.0 and 0.0 < q0 < 1.0):
        raise ValueError("the game has no fully mixed Nash equilibrium")
    p, q = np.array([p0, 1.0 - p0]), np.array([q0, 1.0 - q0])
    # Equilibrium check with the library: each side's value equals its best-response value.
    if not (
        np.isclose(best_response_value(a, q), p @ a @ q)
        and np.isclose(best_response_value(b.T, p), p @ b @ q)
    ):
        raise ValueError("indifference solution is not an equilibrium")
    return p, q


def intro_example() -> IntroExample:
    """Reproduce Example 1 with the transpose reading and the library's own solvers."""
    game = _from_printed(INTRO_PRINTED, "intro_example")
    a, b = game.payoff_row, game.payoff_col
    p, q = mixed_equilibrium_2x2(game)
    uniform = np.full(2, 0.5)
    br = np.zeros(2)
    col_payoffs = uniform @ b
    br[np.flatnonzero(col_payoffs == col_payoffs.max())] = 1.0
    br /= br.sum()
    return IntroExample(
        game=game,
        ne_row=p,
        ne_col=q,
        pure_equilibria=pure_nash_equilibria(a, b),
        u_row_uniform_vs_ne=float(uniform @ a @ q),
        u_col_uniform_vs_ne=float(uniform @ b @ q),
        u_row_uniform_vs_br=float(uniform @ a @ br),
        u_col_uniform_vs_br=float(uniform @ b @ br),
    )
