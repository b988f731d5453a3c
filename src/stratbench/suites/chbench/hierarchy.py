"""Level-K and Poisson cognitive-hierarchy level strategies, for both players of any bimatrix game.

Everything runs on a padded batch of games (`GameBatch`, shape [role, game, own, opp]) so that one
likelihood evaluation over all 15 catalogue games is a handful of numpy operations, which is what
makes 10-restart SLSQP fits of hundreds of (player, mechanism) cells take seconds. The one-game
functions are thin wrappers over the batched ones, so tests of the former check the latter.

Conventions (the paper, §2):
- level 0 plays uniformly;
- Level-K: level k best-responds to the opponent's level k−1 and errs with probability ε_k, the
  error mass spread uniformly over the non-best responses (uniform over all actions when every
  action is a best response); the opponent's chain uses the same ε (the modelled agent's belief);
- Poisson CH: level k best-responds to the opponent's levels 0..k−1 weighted by Poisson(λ)
  renormalised over 0..k−1, with the agent's own λ for both chains; no noise;
- ties: uniform over every action within `TIE_TOL` (relative) of the best expected payoff, so the
  result is deterministic and symmetric in tied actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import lgamma

import numpy as np

from stratbench.games.normal_form import NormalFormGame

TIE_TOL = 1e-9
ROW, COL = 0, 1


def _role(role: int | str) -> int:
    if role in (0, "row"):
        return ROW
    if role in (1, "col", "column"):
        return COL
    raise ValueError(f"role must be 'row' or 'col', got {role!r}")


@dataclass(frozen=True, eq=False)
class GameBatch:
    """Games padded to a common action count.

    `payoffs[r, g, i, j]` is role r's payoff in game g when it plays i and the opponent plays j
    (for the column role that is payoff_col transposed). `valid[r, g, i]` marks real actions;
    padded own actions can never be best responses and padded opponent actions get probability 0.
    """

    payoffs: np.ndarray  # (2, G, N, N)
    valid: np.ndarray  # (2, G, N) bool
    n_actions: np.ndarray  # (2, G) int

    @classmethod
    def from_games(cls, games: Sequence[NormalFormGame]) -> GameBatch:
        if not games:
            raise ValueError("GameBatch needs at least one game")
        n = max(max(g.shape) for g in games)
        gcount = len(games)
        pay = np.zeros((2, gcount, n, n))
        valid = np.zeros((2, gcount, n), dtype=bool)
        for g, game in enumerate(games):
            m, k = game.shape
            pay[ROW, g, :m, :k] = game.payoff_row
            pay[COL, g, :k, :m] = np.asarray(game.payoff_col).T
            valid[ROW, g, :m] = True
            valid[COL, g, :k] = True
        return cls(pay, valid, valid.sum(axis=2))

    @property
    def uniform(self) -> np.ndarray:
        """(2, G, N) level-0 strategies."""
        return self.valid / self.n_actions[..., None]


def _best_response_masks(batch: GameBatch, opp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(BR, non-BR) indicator masks (2, G, N) of each role against opponent strategies opp.

    `opp[r]` is the strategy role r faces, i.e. a strategy of role 1−r.
    """
    eu = np.einsum("rgij,rgj->rgi", batch.payoffs, opp)
    eu = np.where(batch.valid, eu, -np.inf)
    best = eu.max(axis=2, keepdims=True)
    br = eu >= best - TIE_TOL * (1.0 + np.abs(best))
    return br, batch.valid & ~br


def level_k_batch(
    batch: GameBatch, k_hat: int, eps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Level-K strategies of both roles: S, M, U each (2, k_hat, G, N).

    eps has length k_hat (eps[0] is ignored: level 0 has no best response). M[:, k] is the uniform
    distribution over BR_k and U[:, k] over the non-best responses (equal to M when every action is
    a best response), so S[:, k] = (1 − ε_k)·M[:, k] + ε_k·U[:, k]; fit.py differentiates through
    that identity with the BR sets held fixed.
    """
    uni = batch.uniform
    shape = (2, k_hat) + uni.shape[1:]
    s, m, u = np.empty(shape), np.empty(shape), np.empty(shape)
    s[:, 0] = m[:, 0] = u[:, 0] = uni
    for k in range(1, k_hat):
        br, nbr = _best_response_masks(batch, s[::-1, k - 1])
        nb = br.sum(axis=2, keepdims=True)
        nn = nbr.sum(axis=2, keepdims=True)
        mk = br / nb
        uk = np.where(nn > 0, nbr / np.maximum(nn, 1), mk)
        m[:, k], u[:, k] = mk, uk
        s[:, k] = (1.0 - eps[k]) * mk + eps[k] * uk
    return s, m, u


def poisson_weights(lam: float, k_hat: int) -> np.ndarray:
    """Poisson(λ) pmf over levels 0..k_hat−1, renormalised to sum to 1 (λ = 0 → all on level 0)."""
    k = np.arange(k_hat)
    if lam <= 0.0:
        w = (k == 0).astype(float)
    else:
        logp = k * np.log(lam) - np.array([lgamma(x + 1.0) for x in k])
        w = np.exp(logp - logp.max())
    return w / w.sum()


def poisson_batch(batch: GameBatch, k_hat: int, lam: float) -> np.ndarray:
    """Poisson-CH level strategies of both roles, (2, k_hat, G, N)."""
    w = poisson_weights(lam, k_hat)
    uni = batch.uniform
    s = np.empty((2, k_hat) + uni.shape[1:])
    s[:, 0] = uni
    for k in range(1, k_hat):
        wk = w[:k] / w[:k].sum()
        belief = np.einsum("l,rlgn->rgn", wk, s[::-1, :k])
        br, _ = _best_response_masks(batch, belief)
        s[:, k] = br / br.sum(axis=2, keepdims=True)
    return s


def _eps_vector(eps: float | Sequence[float], k_hat: int) -> np.ndarray:
    """Accept a scalar, k_hat−1 values (levels 1..k̂−1) or k_hat values (eps[0] ignored)."""
    e = np.atleast_1d(np.asarray(eps, dtype=float))
    if e.size == 1:
        e = np.full(k_hat, float(e[0]))
    elif e.size == k_hat - 1:
        e = np.concatenate([[0.0], e])
    elif e.size != k_hat:
        raise ValueError(f"eps needs 1, {k_hat - 1} or {k_hat} values, got {e.size}")
    if np.any(e < 0) or np.any(e > 1):
        raise ValueError("error rates must lie in [0, 1]")
    return e


def level_k_strategies(
    game: NormalFormGame, role: int | str, k_hat: int, eps: float | Sequence[float]
) -> np.ndarray:
    """(k_hat, n_actions) Level-K strategies of `role` ('row' or 'col') in one game."""
    r = _role(role)
    batch = GameBatch.from_games([game])
    s, _, _ = level_k_batch(batch, k_hat, _eps_vector(eps, k_hat))
    return s[r, :, 0, : batch.n_actions[r, 0]].copy()


def poisson_ch_strategies(
    game: NormalFormGame, role: int | str, k_hat: int, lam: float
) -> np.ndarray:
    """(k_hat, n_actions) Poisson-CH level strategies of `role` in one game."""
    r = _role(role)
    batch = GameBatch.from_games([game])
    s = poisson_batch(batch, k_hat, float(lam))
    return s[r, :, 0, : batch.n_actions[r, 0]].copy()


def predicted_strategy(level_strategies: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """The overall predicted strategy Σ_k w_k s^k (weights: α for Level-K, Poisson for CH)."""
    w = np.asarray(weights, dtype=float)
    return np.tensordot(w, np.asarray(level_strategies), axes=(0, 0))


def kl_consecutive(level_strategies: np.ndarray) -> np.ndarray:
    """KL(s^k ‖ s^{k+1}) for k = 0..k̂−2 (natural log; inf where s^{k+1} misses s^k's support)."""
    s = np.asarray(level_strategies, dtype=float)
    p, q = s[:-1], s[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return terms.sum(axis=-1)
