"""The two-player normal-form game type and its JSON representation.

A game holds *both* players' payoffs so that later suites (general-sum games) use the same type;
a zero-sum game is simply one whose column payoffs are the negated row payoffs. Validation happens
once, at construction, so every solver and prompt downstream can trust the numbers it gets.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from stratbench.errors import GameFormatError
from stratbench.files import Text, display, read_json, validate

MAX_ACTIONS = 1000
#: largest payoff magnitude: beyond it LP solvers fail ("Model error") and gaps overflow
MAX_PAYOFF = 1e12


def _as_matrix(value: Any, what: str) -> np.ndarray:
    """Turn nested lists into a finite 2-D float array, or raise a one-line `GameFormatError`."""
    if isinstance(value, np.ndarray):
        rows = value.tolist()
    else:
        rows = value
    if not isinstance(rows, (list, tuple)):
        raise GameFormatError(f"{what} must be a list of rows, got {type(rows).__name__}")
    if len(rows) == 0:
        raise GameFormatError(f"{what} has zero rows (each player needs 1..{MAX_ACTIONS} actions)")
    first = rows[0]
    n0 = len(first) if isinstance(first, (list, tuple)) else 0
    if len(rows) > MAX_ACTIONS or n0 > MAX_ACTIONS:  # before reading a million cells
        raise GameFormatError(
            f"{what} is {len(rows)}x{n0}: each player may have at most {MAX_ACTIONS} actions"
        )
    width = None
    out: list[list[float]] = []
    for i, row in enumerate(rows):
        if not isinstance(row, (list, tuple)):
            raise GameFormatError(f"{what} row {i} is not a list")
        if width is None:
            width = len(row)
            if width == 0:
                raise GameFormatError(
                    f"{what} has zero columns (each player needs 1..{MAX_ACTIONS} actions)"
                )
        elif len(row) != width:
            raise GameFormatError(
                f"{what} is ragged: row 0 has {width} entries but row {i} has {len(row)}"
            )
        vals = []
        for j, x in enumerate(row):
            # bool is an int subclass; a payoff of `true` is almost certainly a mistake.
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise GameFormatError(f"{what}[{i}][{j}] is not a number: {x!r}")
            try:
                fx = float(x)
            except OverflowError:
                raise GameFormatError(f"{what}[{i}][{j}] is too large for a float") from None
            if not math.isfinite(fx):
                raise GameFormatError(f"{what}[{i}][{j}] is not finite: {x!r}")
            if abs(fx) > MAX_PAYOFF:
                raise GameFormatError(f"{what}[{i}][{j}] = {fx:g} is too large: payoffs must lie within "
                                      f"±{MAX_PAYOFF:g}")
            vals.append(fx)
        out.append(vals)
    m, n = len(out), width or 0
    if m > MAX_ACTIONS or n > MAX_ACTIONS:
        raise GameFormatError(
            f"{what} is {m}x{n}: each player may have at most {MAX_ACTIONS} actions"
        )
    return np.array(out, dtype=float)


def _check_labels(labels: Sequence[Any] | None, k: int, who: str) -> tuple[str, ...]:
    if labels is None:
        return tuple(str(i) for i in range(k))
    if not isinstance(labels, (list, tuple)) or not all(isinstance(s, str) for s in labels):
        raise GameFormatError(f"{who} labels must be a list of strings")
    if len(labels) != k:
        raise GameFormatError(f"{who} has {k} actions but {len(labels)} labels")
    if any(not s.strip() for s in labels):
        raise GameFormatError(f"{who} labels must be non-empty")
    if len(set(labels)) != len(labels):
        dup = sorted({s for s in labels if list(labels).count(s) > 1})
        raise GameFormatError(f"{who} labels are not unique: {dup}")
    return tuple(labels)


@dataclass(frozen=True, eq=False)
class NormalFormGame:
    """A finite two-player game in normal form.

    `payoff_row[i, j]` is the row player's payoff when row plays i and column plays j;
    `payoff_col[i, j]` the column player's. Both are validated: rectangular, same shape, finite,
    1..1000 actions per player; labels unique.
    """

    payoff_row: np.ndarray
    payoff_col: np.ndarray
    row_labels: tuple[str, ...] = field(default=())
    col_labels: tuple[str, ...] = field(default=())
    name: str = ""

    def __post_init__(self) -> None:
        a = _as_matrix(self.payoff_row, "payoff_row")
        b = _as_matrix(self.payoff_col, "payoff_col")
        if a.shape != b.shape:
            raise GameFormatError(
                f"payoff_row is {a.shape[0]}x{a.shape[1]} but payoff_col is {b.shape[0]}x{b.shape[1]}"
            )
        a.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "payoff_row", a)
        object.__setattr__(self, "payoff_col", b)
        object.__setattr__(
            self, "row_labels", _check_labels(self.row_labels or None, a.shape[0], "row player")
        )
        object.__setattr__(
            self, "col_labels", _check_labels(self.col_labels or None, a.shape[1], "column player")
        )

    @classmethod
    def zero_sum(
        cls,
        payoff_row: Any,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
        name: str = "",
    ) -> "NormalFormGame":
        a = _as_matrix(payoff_row, "payoff_matrix")
        return cls(a, -a, tuple(row_labels or ()), tuple(col_labels or ()), name)

    @property
    def shape(self) -> tuple[int, int]:
        return self.payoff_row.shape  # type: ignore[return-value]

    @property
    def is_zero_sum(self) -> bool:
        return bool(np.array_equal(self.payoff_col, -self.payoff_row))

    @property
    def payoff_range(self) -> float:
        """max − min of the row payoffs: the scale used to normalise gaps across games."""
        return float(self.payoff_row.max() - self.payoff_row.min())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NormalFormGame):
            return NotImplemented
        return (
            np.array_equal(self.payoff_row, other.payoff_row)
            and np.array_equal(self.payoff_col, other.payoff_col)
            and self.row_labels == other.row_labels
            and self.col_labels == other.col_labels
        )

    __hash__ = None  # type: ignore[assignment]


def game_to_dict(game: NormalFormGame) -> dict[str, Any]:
    """JSON-ready dict. Zero-sum games store one matrix, under the original's `payoff_matrix` key."""
    d: dict[str, Any] = {}
    if game.name:
        d["name"] = game.name
    d["payoff_matrix"] = game.payoff_row.tolist()
    if not game.is_zero_sum:
        d["payoff_col"] = game.payoff_col.tolist()
    d["row_labels"] = list(game.row_labels)
    d["col_labels"] = list(game.col_labels)
    return d


class GameSpec(BaseModel):
    """One game of a games file. Matrices are checked by `NormalFormGame` (ragged rows, cells that
    are not numbers, sizes); this schema checks the rest. Other keys are ignored, so a run's
    ``games.json`` (with solutions and ids) is a games file too."""

    model_config = ConfigDict(extra="ignore", strict=True)

    name: Text = ""
    payoff_matrix: Any = None
    payoff_row: Any = None
    payoff_col: Any = None
    row_labels: list[Text] | None = None
    col_labels: list[Text] | None = None


def game_from_dict(d: Any, where: str = "game") -> NormalFormGame:
    """Build a game from a dict; `payoff_matrix` (or `payoff_row`) is required, `payoff_col`
    optional (zero-sum when absent). Labels must be strings, the name a string."""
    if not isinstance(d, dict):
        raise GameFormatError(f"{where}: expected an object, got {type(d).__name__}")
    spec: GameSpec = validate(GameSpec, d, where, error=GameFormatError)
    a = spec.payoff_matrix if spec.payoff_matrix is not None else spec.payoff_row
    if a is None:
        raise GameFormatError(f"{where}: missing 'payoff_matrix'")
    try:
        a_m = _as_matrix(a, "payoff_matrix")
        b_m = -a_m if spec.payoff_col is None else _as_matrix(spec.payoff_col, "payoff_col")
        return NormalFormGame(a_m, b_m, tuple(spec.row_labels or ()), tuple(spec.col_labels or ()), spec.name)
    except GameFormatError as e:
        raise GameFormatError(f"{where}: {e}") from None


def load_games(path: str | Path, label: str = "") -> list[NormalFormGame]:
    """Load one game or a list of games from JSON. Errors name the file and the problem (and the
    flag the file came from, when ``label`` is given, e.g. ``--games-file``).

    Accepted shapes: a single game object, a list of game objects (e.g. a `games.json` written by a
    run), or `{"games": [...]}`.
    """
    p = Path(path)
    name = display(p, label)
    data = read_json(p, label, error=GameFormatError)
    if isinstance(data, dict) and "games" in data:
        data = data["games"]
        if not isinstance(data, list):
            raise GameFormatError(f"{name}: 'games' must be a list of game objects")
    items = data if isinstance(data, list) else [data]
    if not items:
        raise GameFormatError(f"{name}: contains no games")
    return [game_from_dict(item, f"{name}: game {k}") for k, item in enumerate(items)]


def save_games(games: Sequence[NormalFormGame], path: str | Path) -> None:
    Path(path).write_text(json.dumps([game_to_dict(g) for g in games], indent=2) + "\n")
