"""One player's observed actions in CH games: counts per role, game and action, read from a CSV of
play collected anywhere or simulated from scripted CH agents (for recovery tests and baselines).

CSV columns: game_id, round, row_player, col_player, row_action, col_action. Actions are the games'
labels; numbers only with an explicit ``action_base`` (0 or 1), since "1" is the first action to one
exporter and the second to another.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from stratbench.errors import InputError
from stratbench.files import display, read_csv, show
from stratbench.games.normal_form import NormalFormGame
from stratbench.render.csv_cells import csv_cell
from stratbench.runner.jsonl import write_csv_atomic
from stratbench.suites.chbench.catalogue import CHGame
from stratbench.suites.chbench.hierarchy import GameBatch, level_k_batch, poisson_batch, poisson_weights

K_HAT = 4
CSV_COLUMNS = ("game_id", "round", "row_player", "col_player", "row_action", "col_action")
Model = Literal["level_k", "poisson"]


@dataclass(frozen=True, eq=False)
class PlayerObservations:
    """One player's action counts: `counts[r, g, a]` = times it played a in role r of game g."""

    player: str
    game_ids: tuple[int, ...]
    games: tuple[NormalFormGame, ...]
    counts: np.ndarray  # (2, G, N), N = largest action count; padded entries are 0
    batch: GameBatch = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch", GameBatch.from_games(self.games))
        c = np.asarray(self.counts, dtype=float)
        if c.shape != self.batch.valid.shape:
            raise ValueError(f"counts shape {c.shape} != {self.batch.valid.shape}")
        if np.any(c[~self.batch.valid] != 0):
            raise ValueError("counts on actions that do not exist")
        object.__setattr__(self, "counts", c)

    @property
    def n_actions_observed(self) -> int:
        return int(self.counts.sum())

    def subset(self, game_ids: Iterable[int]) -> PlayerObservations:
        idx = [self.game_ids.index(g) for g in game_ids]
        games = tuple(self.games[i] for i in idx)
        n = max(max(g.shape) for g in games)
        return PlayerObservations(
            self.player,
            tuple(self.game_ids[i] for i in idx),
            games,
            self.counts[:, idx, :n],
        )

    def played(self) -> PlayerObservations:
        """Only the games the player played (a game with no action carries no information)."""
        ids = [g for i, g in enumerate(self.game_ids) if self.counts[:, i].sum() > 0]
        return self if len(ids) == len(self.game_ids) else self.subset(ids)


ACTION_BASES = (0, 1)


def _action_index(value: str, labels: tuple[str, ...], where: str, action_base: int | None = None) -> int:
    """The index of an action written as a label of its game (``A``) or, with ``action_base``, as a
    number counted from 0 or 1. Numbers without a base are refused: "1" means the first action to
    someone who counts from 1 and the second to someone who counts from 0."""
    v = value.strip()
    if v in labels:
        return labels.index(v)
    if v.isascii() and v.isdigit():
        if action_base is None:
            raise InputError(f"{where}: action {show(v)} is a number; say how actions are numbered with "
                             f"--action-base 0 or --action-base 1 (first action), or write labels {list(labels)}")
        k = int(v) - action_base if len(v) <= 6 else -1
        if not 0 <= k < len(labels):
            raise InputError(f"{where}: action {show(v)} is out of range: with --action-base {action_base} the actions "
                             f"are {action_base}..{action_base + len(labels) - 1}")
        return k
    if any(ch.isdigit() or ch.isnumeric() for ch in v):
        raise InputError(f"{where}: action {show(value)} is not a number written with ASCII digits 0-9 nor one of "
                         f"{list(labels)}")
    raise InputError(f"{where}: action {show(value)} is not one of {list(labels)} (or a number, with --action-base)")


def _csv_game_id(text: str, where: str) -> int:
    t = text.strip()
    if not (t.isascii() and t.isdigit() and len(t) <= 6):
        raise InputError(f"{where}: game_id {show(text)} is not an integer")
    return int(t)


def observations_from_csv(
    path: str | Path, catalogue: Sequence[CHGame], action_base: int | None = None,
    allow_uncertain: bool = False, label: str = "",
) -> dict[str, PlayerObservations]:
    """Per-player counts from a UTF-8 CSV with columns game_id, round, row_player, col_player,
    row_action, col_action. Actions are the game's labels ("A", "B", ...) or, when ``action_base``
    says how they are counted (0 or 1), numbers; numbers without it are refused.

    A game flagged uncertain in ``catalogue`` (a placeholder column matrix; see
    `CHGame.uncertain`) is refused unless ``allow_uncertain``: apply a corrections file to the
    catalogue first. Every player gets every catalogue game that appears in the file (zero counts
    where it never played), so the per-player fits share one game batch. Bad rows raise a one-line
    InputError naming the file and line.
    """
    if action_base is not None and action_base not in ACTION_BASES:
        raise InputError(f"--action-base {action_base}: use 0 (the first action is 0) or 1 (it is 1)")
    p = Path(path)
    name = display(p, label)
    by_id = {g.id: g for g in catalogue}
    table = read_csv(p, label, required=CSV_COLUMNS)
    rows: list[tuple[int, str, str, int, int]] = []
    for ln, rec in table.rows:
        where = f"{name}: line {ln}"
        gid = _csv_game_id(rec["game_id"], where)
        if gid not in by_id:
            raise InputError(f"{where}: game_id {gid} is not in the catalogue")
        uncertain = by_id[gid].uncertain
        if uncertain and not allow_uncertain:
            why = uncertain.split(":")[0].split(";")[0]
            raise InputError(f"{where}: game {gid}'s payoffs are uncertain in the catalogue ({why}); give "
                             "--corrections FILE with its payoffs, or --allow-uncertain to fit the catalogue's matrices")
        g = by_id[gid].game
        rp, cp = rec["row_player"].strip(), rec["col_player"].strip()
        if not rp or not cp:
            raise InputError(f"{where}: empty player name")
        ra = _action_index(rec["row_action"], g.row_labels, where, action_base)
        ca = _action_index(rec["col_action"], g.col_labels, where, action_base)
        rows.append((gid, rp, cp, ra, ca))
    if not rows:
        raise InputError(f"{name}: no observations")
    gids = tuple(sorted({r[0] for r in rows}))
    games = tuple(by_id[g].game for g in gids)
    gpos = {g: i for i, g in enumerate(gids)}
    n = max(max(g.shape) for g in games)
    players = sorted({r[1] for r in rows} | {r[2] for r in rows})
    counts = {pl: np.zeros((2, len(gids), n)) for pl in players}
    for gid, rp, cp, ra, ca in rows:
        counts[rp][0, gpos[gid], ra] += 1
        counts[cp][1, gpos[gid], ca] += 1
    return {pl: PlayerObservations(pl, gids, games, counts[pl]) for pl in players}


# ----------------------------------------------------------------------------- scripted agents


@dataclass(frozen=True)
class CHAgent:
    """A scripted agent that plays a known CH model, for parameter-recovery experiments."""

    name: str
    model: Model
    alpha: tuple[float, ...] = ()
    epsilon: tuple[float, ...] = ()
    lam: float = 0.0
    k_hat: int = K_HAT

    def strategies(self, batch: GameBatch) -> np.ndarray:
        """(2, G, N) overall predicted strategy of each role in each game of the batch."""
        if self.model == "level_k":
            eps = np.concatenate([[0.0], self.epsilon])
            s_lv = level_k_batch(batch, self.k_hat, eps)[0]
            w = np.asarray(self.alpha, float)
        else:
            s_lv = poisson_batch(batch, self.k_hat, self.lam)
            w = poisson_weights(self.lam, self.k_hat)
        s = np.einsum("k,rkgn->rgn", w, s_lv)
        return s / s.sum(axis=2, keepdims=True)


def simulate_counts(
    agent: CHAgent,
    games: Mapping[int, NormalFormGame] | Sequence[CHGame],
    n_per_role: int,
    seed: int = 0,
) -> PlayerObservations:
    """Draw n_per_role actions per game and role from the agent's predicted strategy."""
    if isinstance(games, Mapping):
        ids, gs = tuple(games), tuple(games.values())
    else:
        ids, gs = tuple(g.id for g in games), tuple(g.game for g in games)
    batch = GameBatch.from_games(gs)
    s = agent.strategies(batch)
    rng = np.random.default_rng(seed)
    counts = np.zeros_like(s)
    for r in range(2):
        for g in range(len(gs)):
            counts[r, g] = rng.multinomial(n_per_role, s[r, g])
    return PlayerObservations(agent.name, ids, gs, counts)


def simulate_rounds(
    catalogue: Sequence[CHGame],
    row_agent: CHAgent,
    col_agent: CHAgent,
    rounds: int,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """CSV-ready rows (CSV_COLUMNS) of `rounds` rounds of every game between two scripted agents."""
    rng = np.random.default_rng(seed)
    games = [g.game for g in catalogue]
    batch = GameBatch.from_games(games)
    s_row = row_agent.strategies(batch)[0]
    s_col = col_agent.strategies(batch)[1]
    out: list[dict[str, Any]] = []
    for gi, g in enumerate(catalogue):
        m, n = g.game.shape
        ra = rng.choice(m, size=rounds, p=s_row[gi, :m])
        ca = rng.choice(n, size=rounds, p=s_col[gi, :n])
        for t in range(rounds):
            out.append(
                {
                    "game_id": g.id,
                    "round": t + 1,
                    "row_player": row_agent.name,
                    "col_player": col_agent.name,
                    "row_action": g.game.row_labels[ra[t]],
                    "col_action": g.game.col_labels[ca[t]],
                }
            )
    return out


def write_observations_csv(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    def write(fh: Any) -> None:
        w = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: csv_cell(r[k]) for k in CSV_COLUMNS})  # names never run as formulas
    write_csv_atomic(path, write)
