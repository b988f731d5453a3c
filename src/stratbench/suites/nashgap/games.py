"""The Nash-gap suite's games: random zero-sum games, the original benchmark's six difficulty
buckets, games files, and each game with its solved equilibrium (`GameEntry`, what games.json
holds).

Every game's randomness comes from its own generator, seeded by (run seed, game index), so a game
is the same whatever order or thread generates it. Payoffs are drawn at the precision the prompt
shows (2 decimals by default) from the original benchmark's range U(-100, 100); a games file's
games are shown at the precision their payoffs have (:func:`shown_decimals`) or rounded to the
precision asked for (:func:`rounded_game`): the game the model sees *is* the game that is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.games.normal_form import MAX_ACTIONS, NormalFormGame
from stratbench.solvers.zerosum import ZeroSumSolution, has_saddle_point, is_pure, solve_zero_sum

DEFAULT_DECIMALS = 2
#: the original benchmark's generator: payoffs uniform on (-100, 100)
DEFAULT_PAYOFF_MIN = -100.0
DEFAULT_PAYOFF_MAX = 100.0
#: the most decimals a prompt shows; a games file with more needs --decimals N (it rounds the game)
MAX_DECIMALS = 10
MAX_REJECTIONS = 100_000


@dataclass(frozen=True)
class Bucket:
    """A difficulty bucket: size, payoff range, and whether the equilibrium is pure or mixed."""

    id: str
    rows: int
    cols: int
    low: float
    high: float
    kind: str  # "pure" (saddle point: both equilibrium strategies pure) or "mixed"


BUCKETS: dict[str, Bucket] = {
    b.id: b
    for b in (
        Bucket("2x2_lowVar_pure", 2, 2, -10, 10, "pure"),
        Bucket("2x2_lowVar_mixed", 2, 2, -10, 10, "mixed"),
        Bucket("3x3_midVar_pure", 3, 3, -50, 50, "pure"),
        Bucket("3x3_midVar_mixed", 3, 3, -50, 50, "mixed"),
        Bucket("4x4_highVar_pure", 4, 4, -100, 100, "pure"),
        Bucket("4x4_highVar_mixed", 4, 4, -100, 100, "mixed"),
    )
}


def game_rng(seed: int, index: int) -> np.random.Generator:
    """The generator for game `index` of a run with `seed`: independent of every other game."""
    return np.random.default_rng([int(seed), int(index)])


def random_payoffs(
    rng: np.random.Generator, rows: int, cols: int, low: float, high: float,
    decimals: int = DEFAULT_DECIMALS,
) -> np.ndarray:
    a = np.round(rng.uniform(low, high, size=(rows, cols)), decimals)
    return a + 0.0  # turn −0.0 into 0.0 so files and prompts never show "-0.00"


def random_zero_sum(
    rng: np.random.Generator, rows: int, cols: int, low: float = DEFAULT_PAYOFF_MIN,
    high: float = DEFAULT_PAYOFF_MAX,
    decimals: int = DEFAULT_DECIMALS,
) -> NormalFormGame:
    """A zero-sum game with i.i.d. uniform row payoffs on [low, high], rounded to `decimals`."""
    return NormalFormGame.zero_sum(random_payoffs(rng, rows, cols, low, high, decimals))


def bucket_matches(payoff: np.ndarray, kind: str) -> bool:
    """"pure": a saddle point exists *and* the solver's equilibrium is pure for both players
    (degenerate games with ties can have a saddle point and also mixed equilibria; they are
    rejected from both buckets). "mixed": no saddle point."""
    if kind == "mixed":
        return not has_saddle_point(payoff)
    if not has_saddle_point(payoff):
        return False
    sol = solve_zero_sum(payoff)
    return is_pure(sol.row_strategy) and is_pure(sol.col_strategy)


def generate_bucket_game(
    rng: np.random.Generator, bucket: Bucket, decimals: int = DEFAULT_DECIMALS
) -> NormalFormGame:
    """Rejection-sample a game of the bucket's size and range until it has the bucket's kind."""
    for _ in range(MAX_REJECTIONS):
        a = random_payoffs(rng, bucket.rows, bucket.cols, bucket.low, bucket.high, decimals)
        if bucket_matches(a, bucket.kind):
            return NormalFormGame.zero_sum(a)
    raise RuntimeError(f"no {bucket.id} game after {MAX_REJECTIONS} draws")  # pragma: no cover


def generate_games(
    seed: int,
    num_games: int,
    rows: int = 3,
    cols: int = 3,
    low: float = DEFAULT_PAYOFF_MIN,
    high: float = DEFAULT_PAYOFF_MAX,
    bucket: str | None = None,
    decimals: int = DEFAULT_DECIMALS,
) -> list[NormalFormGame]:
    """`num_games` games for a run; game k depends only on (seed, k)."""
    if num_games < 1:
        raise InputError(f"number of games must be at least 1 (got {num_games})")
    if bucket is not None:
        if bucket not in BUCKETS:
            raise InputError(f"unknown bucket {bucket!r}; known: {', '.join(BUCKETS)}")
        b = BUCKETS[bucket]
        return [generate_bucket_game(game_rng(seed, k), b, decimals) for k in range(num_games)]
    if not (1 <= rows <= MAX_ACTIONS and 1 <= cols <= MAX_ACTIONS):
        raise InputError(f"game size must be 1..{MAX_ACTIONS} actions per player (got {rows}x{cols})")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise InputError(f"payoff range must be finite with min < max (got {low}, {high})")
    return [random_zero_sum(game_rng(seed, k), rows, cols, low, high, decimals) for k in range(num_games)]


def payoff_decimals(payoff: Any) -> int | None:
    """The fewest decimals (0..MAX_DECIMALS) that write every payoff exactly, or None when more are
    needed (0.125 needs 3; 1/3 more than any)."""
    values = [float(x) for x in np.asarray(payoff, dtype=float).ravel()]
    for d in range(MAX_DECIMALS + 1):
        if all(round(x, d) == x for x in values):
            return d
    return None


def shown_decimals(game: NormalFormGame, decimals: int | None, where: str = "game") -> int:
    """The decimals a prompt shows ``game`` with: ``decimals`` when given (the game was generated
    or rounded at that precision), else the precision its payoffs have (InputError beyond
    MAX_DECIMALS: the prompt could not show the game that is scored)."""
    if decimals is not None:
        return decimals
    d = payoff_decimals(game.payoff_row)
    if d is None:
        x = next(float(v) for v in game.payoff_row.ravel() if round(float(v), MAX_DECIMALS) != float(v))
        raise InputError(f"{where}: payoff {x!r} has more than {MAX_DECIMALS} decimals; "
                         f"--decimals N rounds the game itself to N decimals")
    return d


def rounded_game(game: NormalFormGame, decimals: int) -> NormalFormGame:
    """``game`` with its payoffs rounded to ``decimals`` (the game shown and scored)."""
    return NormalFormGame.zero_sum(np.round(game.payoff_row, decimals) + 0.0, game.row_labels,
                                   game.col_labels, game.name)


@dataclass
class GameEntry:
    game_id: int
    game: NormalFormGame
    solution: ZeroSumSolution
    bucket: str | None
    seed: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "payoff_matrix": self.game.payoff_row.tolist(),
            "nash_equilibrium_row": self.solution.row_strategy.tolist(),
            "nash_equilibrium_col": self.solution.col_strategy.tolist(),
            "value": self.solution.value,
            "bucket": self.bucket,
            "seed": self.seed,
            "num_rows": self.game.shape[0],
            "num_cols": self.game.shape[1],
            "payoff_range": self.game.payoff_range,
            "saddle_point": has_saddle_point(self.game.payoff_row),
            "row_labels": list(self.game.row_labels),
            "col_labels": list(self.game.col_labels),
        }


def entries_from_json(items: list[dict[str, Any]]) -> list[GameEntry]:
    out = []
    for d in items:
        g = NormalFormGame.zero_sum(d["payoff_matrix"], d.get("row_labels"), d.get("col_labels"))
        sol = ZeroSumSolution(
            np.array(d["nash_equilibrium_row"]), np.array(d["nash_equilibrium_col"]),
            float(d["value"]), 0.0,
        )
        out.append(GameEntry(int(d["game_id"]), g, sol, d.get("bucket"), d.get("seed")))
    return out


def rotation_order(m: int, r: int) -> list[int]:
    """Presented row k is original row order[k]: rows move cyclically, labels stay in place."""
    return [(k + r) % m for k in range(m)]


def rotate_game(game: NormalFormGame, order: list[int]) -> NormalFormGame:
    return NormalFormGame(game.payoff_row[order], game.payoff_col[order], game.row_labels,
                          game.col_labels, game.name)
