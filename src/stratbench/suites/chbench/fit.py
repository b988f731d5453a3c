"""Maximum-likelihood fits of Level-K and Poisson-CH models to one player's recorded actions.

Loss (paper §3.2): L = −Σ_t log s(a_t), summed over every action the player took, in either role,
in every game given (the paper does not say whether its fits pool games; pooling is the default
here, and a per-game fit is just `PlayerObservations.subset([gid])`). Optimiser: SLSQP from
`restarts` random starts drawn from a seeded generator, lowest loss kept, as in the paper.

Speed: the best-response sets are piecewise constant in the parameters, so within a piece the
predicted strategy is linear in α and ε (Level-K) or a smooth function of λ (Poisson). The gradient
is computed analytically with the BR sets held fixed (exact almost everywhere), which lets SLSQP
take few, cheap steps; one evaluation over all games is a handful of batched numpy operations.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize

from stratbench.errors import InputError
from stratbench.files import display, read_csv, show
from stratbench.games.normal_form import NormalFormGame
from stratbench.seeding import derive_seed
from stratbench.stats import bootstrap_statistic
from stratbench.suites.chbench.catalogue import CHGame
from stratbench.suites.chbench.hierarchy import (
    GameBatch,
    kl_consecutive,
    level_k_batch,
    poisson_batch,
    poisson_weights,
)

K_HAT = 4
RESTARTS = 10
EPS_MAX = 1.0 - 1e-6


def epsilon_cap(observations: "PlayerObservations") -> float:
    """Largest error rate that is still an *error*: with n actions, ε = (n−1)/n makes a level
    play uniformly, and anything above it plays its best response *less* often than each other
    action — an anti-best-response that the Level-K reading cannot mean. Unbounded ε lets a fit
    explain a model that always picks one label as "level 3 with ε ≈ 1" in 2×2 games (seen with the
    embedded model), so ε is capped at the smallest (n−1)/n over the games played (1/2 with any
    2×2 game)."""
    n = observations.batch.n_actions[observations.counts.sum(axis=2) > 0]
    if n.size == 0:
        return EPS_MAX
    return float(min(EPS_MAX, (n.min() - 1) / n.min()))
LAMBDA_MAX = 20.0
PROB_FLOOR = 1e-12  # log(0) guard: a zero-probability observed action costs −log(1e-12) ≈ 27.6
CSV_COLUMNS = ("game_id", "round", "row_player", "col_player", "row_action", "col_action")

Model = Literal["level_k", "poisson"]


# ----------------------------------------------------------------------------- observations


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


# ----------------------------------------------------------------------------- likelihoods


def _nll_from_strategy(counts: np.ndarray, s: np.ndarray) -> tuple[float, np.ndarray]:
    """NLL and ∂NLL/∂s (zero where nothing was observed)."""
    sc = np.maximum(s, PROB_FLOOR)
    nll = -float(np.sum(counts * np.log(sc)))
    return nll, np.where(counts > 0, -counts / sc, 0.0)


def _split_level_k(x: np.ndarray, k_hat: int) -> tuple[np.ndarray, np.ndarray]:
    alpha = x[:k_hat]
    eps = np.concatenate([[0.0], x[k_hat:]])
    return alpha, eps


def level_k_nll(
    obs: PlayerObservations, alpha: Sequence[float], eps: Sequence[float]
) -> float:
    """NLL of the observations under Level-K with weights alpha (k̂) and eps (k̂−1 values)."""
    x = np.concatenate([np.asarray(alpha, float), np.asarray(eps, float)])
    return _level_k_objective(x, obs, len(alpha))[0]


def _level_k_objective(
    x: np.ndarray, obs: PlayerObservations, k_hat: int
) -> tuple[float, np.ndarray]:
    alpha, eps = _split_level_k(x, k_hat)
    s_lv, m, u = level_k_batch(obs.batch, k_hat, eps)  # (2, K, G, N)
    s = np.einsum("k,rkgn->rgn", alpha, s_lv)
    nll, ds = _nll_from_strategy(obs.counts, s)
    g_alpha = np.einsum("rgn,rkgn->k", ds, s_lv)
    g_eps = alpha[1:] * np.einsum("rgn,rkgn->k", ds, (u - m)[:, 1:])
    return nll, np.concatenate([g_alpha, g_eps])


def poisson_nll(obs: PlayerObservations, lam: float, k_hat: int = K_HAT) -> float:
    return _poisson_objective(np.array([lam]), obs, k_hat)[0]


def _poisson_objective(
    x: np.ndarray, obs: PlayerObservations, k_hat: int
) -> tuple[float, np.ndarray]:
    lam = max(float(x[0]), 0.0)
    s_lv = poisson_batch(obs.batch, k_hat, lam)
    w = poisson_weights(lam, k_hat)
    s = np.einsum("k,rkgn->rgn", w, s_lv)
    nll, ds = _nll_from_strategy(obs.counts, s)
    k = np.arange(k_hat)
    dw = w * (k - w @ k) / max(lam, 1e-9)  # ∂w_k/∂λ with the BR sets held fixed
    grad = float(np.einsum("rgn,k,rkgn->", ds, dw, s_lv))
    return nll, np.array([grad])


# ----------------------------------------------------------------------------- results


def _mean_level(dist: np.ndarray) -> float:
    return float(np.arange(dist.size) @ dist)


@dataclass(frozen=True)
class LevelKFit:
    """Fitted Level-K parameters for one player (alpha = level distribution)."""

    player: str
    k_hat: int
    alpha: tuple[float, ...]
    epsilon: tuple[float, ...]  # error rates of levels 1..k̂−1
    neg_log_likelihood: float
    n_obs: int
    restarts: int

    @property
    def level_distribution(self) -> tuple[float, ...]:
        return self.alpha

    @property
    def mean_level(self) -> float:
        return _mean_level(np.asarray(self.alpha))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": "level_k",
            "player": self.player,
            "alpha": list(self.alpha),
            "epsilon": list(self.epsilon),
            "level_distribution": list(self.level_distribution),
            "mean_level": self.mean_level,
            "neg_log_likelihood": self.neg_log_likelihood,
            "k_hat": self.k_hat,
            "n_obs": self.n_obs,
        }


@dataclass(frozen=True)
class PoissonFit:
    """Fitted Poisson-CH rate for one player; the level distribution is Poisson(λ) on 0..k̂−1."""

    player: str
    k_hat: int
    lam: float
    neg_log_likelihood: float
    n_obs: int
    restarts: int

    @property
    def level_distribution(self) -> tuple[float, ...]:
        return tuple(float(v) for v in poisson_weights(self.lam, self.k_hat))

    @property
    def mean_level(self) -> float:
        return _mean_level(np.asarray(self.level_distribution))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": "poisson",
            "player": self.player,
            "lambda": self.lam,
            "level_distribution": list(self.level_distribution),
            "mean_level": self.mean_level,
            "neg_log_likelihood": self.neg_log_likelihood,
            "k_hat": self.k_hat,
            "n_obs": self.n_obs,
        }


# ----------------------------------------------------------------------------- fitting


def _check(obs: PlayerObservations, k_hat: int, restarts: int) -> None:
    if k_hat < 1:
        raise InputError(f"k_hat must be >= 1, got {k_hat}")
    if restarts < 1:
        raise InputError(f"restarts must be >= 1, got {restarts}")
    if obs.n_actions_observed == 0:
        raise InputError(f"player {obs.player!r} has no observed actions")


def fit_level_k(
    observations: PlayerObservations,
    k_hat: int = K_HAT,
    restarts: int = RESTARTS,
    seed: int = 0,
) -> LevelKFit:
    """MLE of α (on the simplex) and ε_1..ε_{k̂−1} ∈ [0, cap] (see `epsilon_cap`) by SLSQP from
    seeded random starts."""
    _check(observations, k_hat, restarts)
    rng = np.random.default_rng(seed)
    cap = epsilon_cap(observations)
    bounds = [(0.0, 1.0)] * k_hat + [(0.0, cap)] * (k_hat - 1)
    cons = [
        {
            "type": "eq",
            "fun": lambda x: np.sum(x[:k_hat]) - 1.0,
            "jac": lambda x: np.concatenate([np.ones(k_hat), np.zeros(k_hat - 1)]),
        }
    ]
    best: tuple[float, np.ndarray] | None = None
    for _ in range(restarts):
        x0 = np.concatenate([rng.dirichlet(np.ones(k_hat)), rng.uniform(0.0, min(0.5, cap), k_hat - 1)])
        res = minimize(
            _level_k_objective,
            x0,
            args=(observations, k_hat),
            jac=True,
            method="SLSQP",
            bounds=bounds,
            constraints=cons,
            options={"maxiter": 200, "ftol": 1e-10},
        )
        x = np.clip(res.x, [b[0] for b in bounds], [b[1] for b in bounds])
        x[:k_hat] /= x[:k_hat].sum()
        val = _level_k_objective(x, observations, k_hat)[0]
        if best is None or val < best[0] - 1e-12:
            best = (val, x)
    assert best is not None
    alpha, eps = _split_level_k(best[1], k_hat)
    return LevelKFit(
        observations.player,
        k_hat,
        tuple(float(a) for a in alpha),
        tuple(float(e) for e in eps[1:]),
        float(best[0]),
        observations.n_actions_observed,
        restarts,
    )


def fit_poisson_ch(
    observations: PlayerObservations,
    k_hat: int = K_HAT,
    restarts: int = RESTARTS,
    seed: int = 0,
) -> PoissonFit:
    """MLE of λ ≥ 0 (capped at LAMBDA_MAX) by SLSQP from seeded random starts in [0, 5)."""
    _check(observations, k_hat, restarts)
    rng = np.random.default_rng(seed)
    best: tuple[float, float] | None = None
    for _ in range(restarts):
        x0 = np.array([rng.uniform(0.0, 5.0)])
        res = minimize(
            _poisson_objective,
            x0,
            args=(observations, k_hat),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, LAMBDA_MAX)],
            options={"maxiter": 200, "ftol": 1e-10},
        )
        lam = float(np.clip(res.x[0], 0.0, LAMBDA_MAX))
        val = _poisson_objective(np.array([lam]), observations, k_hat)[0]
        if best is None or val < best[0] - 1e-12:
            best = (val, lam)
    assert best is not None
    return PoissonFit(
        observations.player,
        k_hat,
        best[1],
        float(best[0]),
        observations.n_actions_observed,
        restarts,
    )


def fit(
    observations: PlayerObservations, model: Model, k_hat: int = K_HAT,
    restarts: int = RESTARTS, seed: int = 0,
) -> LevelKFit | PoissonFit:
    if model == "level_k":
        return fit_level_k(observations, k_hat, restarts, seed)
    if model == "poisson":
        return fit_poisson_ch(observations, k_hat, restarts, seed)
    raise InputError(f"unknown CH model {model!r} (level_k or poisson)")


def likelihood_improvement_ratios(
    observations: PlayerObservations,
    model: Model,
    restarts: int = RESTARTS,
    seed: int = 0,
    k_hats: Sequence[int] = (3, 4, 5),
) -> dict[str, float]:
    """Relative NLL reduction (NLL_k − NLL_{k+1}) / NLL_k for consecutive k̂ (keys "3->4", "4->5").

    The paper plots a "likelihood improvement ratio" (after Wright & Leyton-Brown) in percent
    without a formula; the relative loss reduction is the reading used here.
    """
    nll = {k: fit(observations, model, k, restarts, seed).neg_log_likelihood for k in k_hats}
    ks = sorted(k_hats)
    return {
        f"{a}->{b}": (nll[a] - nll[b]) / nll[a] if nll[a] > 0 else 0.0
        for a, b in zip(ks, ks[1:])
    }


def level_strategies(
    observations: PlayerObservations, result: LevelKFit | PoissonFit
) -> np.ndarray:
    """(2, k̂, G, N) fitted level strategies of both roles in every observed game."""
    if isinstance(result, LevelKFit):
        eps = np.concatenate([[0.0], result.epsilon])
        return level_k_batch(observations.batch, result.k_hat, eps)[0]
    return poisson_batch(observations.batch, result.k_hat, result.lam)


def level_kl(observations: PlayerObservations, result: LevelKFit | PoissonFit) -> np.ndarray:
    """KL(s^k ‖ s^{k+1}) per role and game, shape (2, G, k̂−1) (inf where supports differ)."""
    s = level_strategies(observations, result)  # (2, K, G, N)
    kl = np.stack([kl_consecutive(s[r]) for r in range(2)])  # (2, K-1, G)
    return np.swapaxes(kl, 1, 2)


def mean_level_ci(obs: PlayerObservations, model: Model, k_hat: int, restarts: int, n_boot: int,
                  seed: int) -> list[float] | None:
    """95% CI of the fitted mean level, games resampled with replacement and the model refitted
    to each resample (Level-K refits use at most 3 restarts). None without replicates, without
    observations, or with fewer than two games."""
    if not n_boot or not obs.n_actions_observed or len(obs.game_ids) < 2:
        return None
    refit_restarts = min(3, restarts) if model == "level_k" else restarts

    def mean_level_of(games: list[int], b: int) -> float | None:
        resample = obs.subset(games)
        if resample.n_actions_observed == 0:
            return None
        return float(fit(resample, model, k_hat, refit_restarts, derive_seed(seed, b)).mean_level)

    return bootstrap_statistic(list(obs.game_ids), mean_level_of, n_boot, np.random.default_rng(seed))


def mean_kl_between_levels(obs: PlayerObservations, result: LevelKFit | PoissonFit) -> list[float | None]:
    """Mean KL(s^k ‖ s^{k+1}) per consecutive pair of levels, over the roles and games the player
    played (infinite values left out; None where none is finite)."""
    per = level_kl(obs, result)  # (2, G, k̂−1)
    played = obs.counts.sum(axis=2) > 0
    means: list[float | None] = []
    for k in range(per.shape[2]):
        finite = [float(x) for x in per[:, :, k][played] if np.isfinite(x)]
        means.append(float(np.mean(finite)) if finite else None)
    return means


def improvement_ratio(fewer: LevelKFit | PoissonFit | None, more: LevelKFit | PoissonFit | None) -> float | None:
    """Relative NLL reduction from ``fewer`` levels to ``more`` (None when either is missing or the
    first NLL is not positive)."""
    if fewer is None or more is None or not fewer.neg_log_likelihood > 0:
        return None
    return float((fewer.neg_log_likelihood - more.neg_log_likelihood) / fewer.neg_log_likelihood)


def fit_report(obs: PlayerObservations, model: Model, k_hat: int, restarts: int, seed: int,
               n_boot: int, boot_seed: int | None = None) -> dict[str, Any]:
    """A fit's ``to_dict()`` with what CHBench reports beside it: ``mean_level_ci95`` (bootstrap
    over games, ``n_boot`` replicates, seeded by ``boot_seed``, by default ``derive_seed(seed, 1)``),
    ``likelihood_improvement_ratio`` (k̂−1 → k̂ and k̂ → k̂+1, fitted with the same seed) and
    ``kl_consecutive_levels``."""
    res = fit(obs, model, k_hat, restarts, seed)
    out = res.to_dict()
    out["mean_level_ci95"] = mean_level_ci(obs, model, k_hat, restarts, n_boot,
                                           derive_seed(seed, 1) if boot_seed is None else boot_seed)
    fewer = fit(obs, model, k_hat - 1, restarts, seed) if k_hat > 1 else None
    more = fit(obs, model, k_hat + 1, restarts, seed)
    out["likelihood_improvement_ratio"] = {f"{k_hat - 1}->{k_hat}": improvement_ratio(fewer, res),
                                           f"{k_hat}->{k_hat + 1}": improvement_ratio(res, more)}
    out["kl_consecutive_levels"] = mean_kl_between_levels(obs, res)
    return out


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
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in CSV_COLUMNS})
