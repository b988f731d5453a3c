"""The repeated-game engine: two players act simultaneously in a general-sum matrix game for T
rounds, and every round is recorded.

Why a separate engine: CHBench (model vs model, mechanisms with memory and advisors) and other
repeated-play suites need the same loop — each player sees the game *from its own side* (its own
payoffs as the row of a matrix), the round number and the history; both act at once; the round is
recorded whatever happened. A player that fails (an API error, an unparseable answer) gets
``action=None`` with its status: no action is substituted, the opponent's action still counts, the
round has no payoffs, and the match goes on (its rounds without both actions are shown to later
prompts as rounds with no valid choice).

Seeds: each match has a seed; round t of seat s draws from ``derive_seed(match_seed, t, s)``, so a
match is reproducible whatever else runs concurrently.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from stratbench.games.normal_form import NormalFormGame
from stratbench.seeding import derive_seed

ROW, COL = 0, 1
SEATS = ("row", "col")


def perspective(game: NormalFormGame, seat: int) -> NormalFormGame:
    """The game as seen by `seat`: its own payoffs in ``payoff_row`` and its own actions as rows."""
    if seat == ROW:
        return game
    return NormalFormGame(game.payoff_col.T, game.payoff_row.T, game.col_labels, game.row_labels,
                          name=game.name)


@dataclass(frozen=True)
class PastRound:
    """One earlier round from a player's side (None where an action was missing)."""

    round: int
    own_action: int | None
    opp_action: int | None
    own_payoff: float | None
    opp_payoff: float | None


@dataclass(frozen=True)
class RoundView:
    """What a player knows when it acts: its side of the game, the round (1-based) and history."""

    game: NormalFormGame
    seat: int
    round: int
    rounds: int
    history: tuple[PastRound, ...]
    seed: int


@dataclass
class Move:
    """A player's act in one round. `status`: ok (scripted), parsed, parse_failed or error."""

    action: int | None
    status: str = "ok"
    policy: list[float] | None = None
    raw: str | None = None
    prompt: str | None = None
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class RepeatedPlayer(Protocol):
    """A player for one match (it may keep state across rounds, e.g. advisor conversations)."""

    name: str

    async def act(self, view: RoundView) -> Move: ...


def _past(seat: int, rec: dict[str, Any]) -> PastRound:
    me, op = SEATS[seat], SEATS[1 - seat]
    return PastRound(rec["round"], rec[f"{me}_action"], rec[f"{op}_action"],
                     rec[f"{me}_payoff"], rec[f"{op}_payoff"])


def _move_fields(seat: int, m: Move, keep_prompts: bool) -> dict[str, Any]:
    s = SEATS[seat]
    out = {
        f"{s}_action": m.action, f"{s}_status": m.status, f"{s}_policy": m.policy,
        f"{s}_raw": m.raw, f"{s}_error": m.error, f"{s}_tokens_in": m.tokens_in,
        f"{s}_tokens_out": m.tokens_out, f"{s}_latency_s": m.latency_s,
    }
    if keep_prompts:
        out[f"{s}_prompt"] = m.prompt
    for k, v in m.extra.items():
        out[f"{s}_{k}"] = v
    return out


async def play_match(
    game: NormalFormGame,
    row: RepeatedPlayer,
    col: RepeatedPlayer,
    rounds: int,
    seed: int,
    keep_prompts: bool = True,
) -> list[dict[str, Any]]:
    """Play `rounds` rounds; one record per round with both moves, actions, payoffs and status.

    A round's ``status`` is "complete" when both players produced an action, else the worse of
    the two players' statuses ("error" before "parse_failed").
    """
    views = (perspective(game, ROW), perspective(game, COL))
    players = (row, col)
    records: list[dict[str, Any]] = []
    for t in range(1, rounds + 1):
        moves = await asyncio.gather(*(
            players[s].act(RoundView(views[s], s, t, rounds,
                                     tuple(_past(s, r) for r in records), derive_seed(seed, t, s)))
            for s in (ROW, COL)
        ))
        rec: dict[str, Any] = {"round": t}
        for s in (ROW, COL):
            rec.update(_move_fields(s, moves[s], keep_prompts))
        a, b = moves[ROW].action, moves[COL].action
        if a is not None and b is not None:
            rec.update(row_payoff=float(game.payoff_row[a, b]), col_payoff=float(game.payoff_col[a, b]),
                       status="complete")
        else:
            sts = {moves[ROW].status, moves[COL].status}
            rec.update(row_payoff=None, col_payoff=None,
                       status="error" if "error" in sts else "parse_failed")
        records.append(rec)
    return records
