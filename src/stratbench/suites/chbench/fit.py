"""Maximum-likelihood fits of Level-K and Poisson-CH models to one player's recorded actions, and
what the data identify.

Loss (paper §3.2): L = −Σ_t log s(a_t), summed over every action the player took, in either role,
in every game given (the paper does not say whether its fits pool games; pooling is the default
here, and a per-game fit is just `PlayerObservations.subset([gid])`).

**A global, deterministic search instead of random restarts.** The paper fits by SLSQP from 10
random starts. Both likelihoods are piecewise — a level's best responses jump where two actions'
payoffs cross as ε or λ moves — so a local optimiser stops in whichever piece it started near, and
which one depended on the machine's floating-point path (1.00 on one CPU, 2.73 on another, same
data). Here the pieces are enumerated exactly (`pieces.py`):

- Level-K: in each piece the prediction is a mixture of the piece's vertex strategies, a convex
  problem (`mixture.py`); pieces that cannot beat the best one are dropped by a duality bound, the
  rest solved to rounding precision. The global optimum is the same from any start.
- Poisson CH: λ is one number; in each piece the derivative of the loss is bracketed on a grid and
  its zeros found by Brent's method to rounding precision.

**Identification.** Several parameter values can reach the same maximum: two levels that choose
the same actions on the observed games (a scripted level-1 player's play fits levels 1 and 3
equally well on games 1, 2, 8), level 0 against a level played with error rate (n−1)/n, a λ pushed
against its upper limit. Every maximiser within ``tie_tolerance`` (1e-6 nat, 1e-10 relative above
10^4) is found: the fit reports the interval of mean levels over all of them
(``mean_level_range``), ``identified`` (the interval is one point to 1e-6), and one canonical
maximiser — the *lowest* mean level (the least sophistication the data require), then the least
error (Level-K: Σ α_k·ε_k), then the most weight on lower levels. An error rate of a level with no
weight is not identified: ``epsilon`` holds null there in fit.json.

**The same numbers on every machine.** Nothing depends on a random start; BLAS runs on one thread
inside a fit (threadpoolctl); solutions are polished to rounding precision (~1e-12) and every
reported number is rounded to ``DIGITS`` = 6 decimals, so a different BLAS kernel or thread count
changes no printed digit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import factorial
from typing import Any, TypeVar

import numpy as np
from scipy.optimize import brentq
from threadpoolctl import threadpool_limits

from stratbench.errors import InputError
from stratbench.stats import bootstrap_range
from stratbench.suites.chbench.hierarchy import kl_consecutive, level_k_batch, poisson_batch, poisson_weights
from stratbench.suites.chbench.mixture import em_bounds, fibre, solve
from stratbench.suites.chbench.observations import (  # noqa: F401  (the names fit.py always exported)
    ACTION_BASES,
    CSV_COLUMNS,
    K_HAT,
    CHAgent,
    Model,
    PlayerObservations,
    observations_from_csv,
    simulate_counts,
    simulate_rounds,
    write_observations_csv,
)
from stratbench.suites.chbench.pieces import LevelKPiece, PoissonPiece, level_k_pieces, level_k_vertices, poisson_pieces

EPS_MAX = 1.0 - 1e-6
LAMBDA_MAX = 20.0
DIGITS = 6
IDENTIFIED_WIDTH = 1e-6  # a mean-level interval narrower than this is one point
#: the largest k̂ a fit takes: Level-K's pieces multiply with every level (the catalogue: 21 pieces
#: at k̂ = 4, 93 at 5, 405 at 6; one fit 0.03 s, 0.12 s, 0.8 s, and 11 s at k̂ = 7)
K_HAT_MAX = 6
RESTARTS = 10  # kept for the callers of the former multi-start fit; the search no longer uses it

T = TypeVar("T")


def tie_tolerance(best: float) -> float:
    """Two losses within this are the same maximum likelihood: 1e-6 nat, or 1e-10 relative for
    losses above 10^4 (solutions are exact to ~1e-12 relative)."""
    return max(1e-6, 1e-10 * abs(best))


def epsilon_cap(observations: PlayerObservations) -> float:
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


def _r(x: float) -> float:
    return float(round(float(x), DIGITS)) + 0.0  # + 0.0: no "-0.0" in a file


_PINNED = threading.local()


def _pinned(fn: Callable[[], T]) -> T:
    """Run with BLAS on one thread: the fits' numbers must not depend on the thread count (once
    for a whole report: entering the limit costs a millisecond)."""
    if getattr(_PINNED, "on", False):
        return fn()
    _PINNED.on = True
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            return fn()
    finally:
        _PINNED.on = False


# ----------------------------------------------------------------------------- likelihoods


def level_k_nll(obs: PlayerObservations, alpha: Sequence[float], eps: Sequence[float]) -> float:
    """NLL of the observations under Level-K with weights alpha (k̂) and eps (k̂−1 values)."""
    k_hat = len(alpha)
    s = level_k_batch(obs.batch, k_hat, np.concatenate([[0.0], np.asarray(eps, float)]))[0]
    return _nll_of(obs, np.einsum("k,rkgn->rgn", np.asarray(alpha, float), s))


def poisson_nll(obs: PlayerObservations, lam: float, k_hat: int = K_HAT) -> float:
    s = poisson_batch(obs.batch, k_hat, float(lam))
    return _nll_of(obs, np.einsum("k,rkgn->rgn", poisson_weights(float(lam), k_hat), s))


def _nll_of(obs: PlayerObservations, s: np.ndarray) -> float:
    seen = obs.counts > 0
    return -float(np.sum(obs.counts[seen] * np.log(np.maximum(s[seen], 1e-300))))


# ----------------------------------------------------------------------------- results


def _mean_level(dist: Sequence[float] | np.ndarray) -> float:
    return float(sum(k * w for k, w in enumerate(dist)))


@dataclass(frozen=True)
class LevelKFit:
    """Fitted Level-K parameters for one player (alpha = level distribution). When the data do not
    identify the mean level, alpha and epsilon are the canonical maximiser (module docstring) and
    ``mean_level_range`` holds every maximiser's mean level."""

    player: str
    k_hat: int
    alpha: tuple[float, ...]
    epsilon: tuple[float, ...]  # error rates of levels 1..k̂−1 (see epsilon_identified)
    neg_log_likelihood: float
    n_obs: int
    identified: bool = True
    mean_level_range: tuple[float, float] = (0.0, 0.0)
    epsilon_identified: tuple[bool, ...] = ()  # False: the level has no weight, any ε in its piece fits

    @property
    def level_distribution(self) -> tuple[float, ...]:
        return self.alpha

    @property
    def mean_level(self) -> float:
        return _r(_mean_level(self.alpha))

    def to_dict(self) -> dict[str, Any]:
        known = self.epsilon_identified or (True,) * len(self.epsilon)
        return {
            "model": "level_k",
            "player": self.player,
            "alpha": list(self.alpha),
            "epsilon": [e if ok else None for e, ok in zip(self.epsilon, known)],
            "level_distribution": list(self.level_distribution),
            "mean_level": self.mean_level,
            "identified": self.identified,
            "mean_level_range": list(self.mean_level_range),
            "neg_log_likelihood": self.neg_log_likelihood,
            "k_hat": self.k_hat,
            "n_obs": self.n_obs,
        }


@dataclass(frozen=True)
class PoissonFit:
    """Fitted Poisson-CH rate for one player; the level distribution is Poisson(λ) on 0..k̂−1.
    ``at_limit``: λ̂ is LAMBDA_MAX and the likelihood still rises there, so the data only bound the
    mean level from below (``mean_level_range`` reaches k̂ − 1)."""

    player: str
    k_hat: int
    lam: float
    neg_log_likelihood: float
    n_obs: int
    identified: bool = True
    mean_level_range: tuple[float, float] = (0.0, 0.0)
    at_limit: bool = False

    @property
    def level_distribution(self) -> tuple[float, ...]:
        return tuple(_r(v) for v in poisson_weights(self.lam, self.k_hat))

    @property
    def mean_level(self) -> float:
        return _r(_mean_level(poisson_weights(self.lam, self.k_hat)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": "poisson",
            "player": self.player,
            "lambda": self.lam,
            "level_distribution": list(self.level_distribution),
            "mean_level": self.mean_level,
            "identified": self.identified,
            "mean_level_range": list(self.mean_level_range),
            "lambda_at_limit": self.at_limit,
            "neg_log_likelihood": self.neg_log_likelihood,
            "k_hat": self.k_hat,
            "n_obs": self.n_obs,
        }


# ----------------------------------------------------------------------------- fitting


def _check(obs: PlayerObservations, k_hat: int) -> None:
    if not 1 <= k_hat <= K_HAT_MAX:
        raise InputError(f"k_hat must be between 1 and {K_HAT_MAX}, got {k_hat}")
    if obs.n_actions_observed == 0:
        raise InputError(f"player {obs.player!r} has no observed actions")


@dataclass(frozen=True)
class _Candidate:
    """One piece's optimum: the loss and the weights on the piece's vertices."""

    index: int
    loss: float
    weights: np.ndarray


def _level_k_candidates(obs: PlayerObservations, k_hat: int) -> tuple[list[LevelKPiece], list[np.ndarray],
                                                                         list[tuple[np.ndarray, np.ndarray]],
                                                                         list[_Candidate], float]:
    """Every piece's vertices on the observed cells, and the optimal pieces (within the tie
    tolerance of the best) with their optimal weights."""
    seen = obs.counts > 0
    c = obs.counts[seen]
    pieces = level_k_pieces(obs.batch, k_hat, epsilon_cap(obs))
    verts: list[np.ndarray] = []
    meta: list[tuple[np.ndarray, np.ndarray]] = []
    keep: list[int] = []
    known: set[bytes] = set()
    for i, pc in enumerate(pieces):
        v_all, levels, eps = level_k_vertices(pc)
        v = np.stack([x[seen] for x in v_all], axis=1)  # (cells, vertices)
        key = v.tobytes() + levels.tobytes() + eps.tobytes()
        if key in known:  # the same problem as an earlier piece
            continue
        known.add(key)
        keep.append(i)
        verts.append(v)
        meta.append((levels, eps))
    pieces = [pieces[i] for i in keep]
    width = max(v.shape[1] for v in verts)
    tensor = np.zeros((len(verts), c.size, width))
    mask = np.zeros((len(verts), width), dtype=bool)
    for i, v in enumerate(verts):
        tensor[i, :, : v.shape[1]] = v
        mask[i, : v.shape[1]] = True
    # EM steps on every piece at once give each an upper and a lower bound on its optimum; the
    # most promising piece is solved exactly, every piece whose lower bound cannot reach the best
    # solved loss is dropped, and the rest get more EM steps, until each piece is solved or dropped
    w, upper, lower = em_bounds(tensor, mask, c, 30)
    solved: dict[int, _Candidate] = {}
    best = np.inf
    alive = np.arange(len(verts))
    while True:
        if np.isfinite(best):
            alive = alive[lower[alive] <= best + tie_tolerance(best)]
        todo = [int(i) for i in alive if i not in solved]
        if not todo:
            break
        i = min(todo, key=lambda j: (float(upper[j]), j))
        n = verts[i].shape[1]
        wi, loss = solve(verts[i], c, w[i, :n])
        solved[int(i)] = _Candidate(int(i), loss, wi)
        best = min(best, loss)
        rest = np.array([j for j in alive if j not in solved and lower[j] <= best + tie_tolerance(best)], dtype=int)
        if rest.size:
            w[rest], upper[rest], lower[rest] = em_bounds(tensor[rest], mask[rest], c, 100, w[rest])
    optimal = [s for s in solved.values() if s.loss <= best + tie_tolerance(best)]
    optimal.sort(key=lambda s: s.index)
    return pieces, verts, meta, optimal, float(best)


def _level_k_set(obs: PlayerObservations, k_hat: int) -> tuple[float, float, float]:
    """(lowest, highest mean level over the maximisers, best loss): what a bootstrap replicate needs."""
    _, verts, meta, optimal, best = _level_k_candidates(obs, k_hat)
    ranges = [fibre(verts[o.index], o.weights).range(meta[o.index][0].astype(float)) for o in optimal]
    return min(r[0] for r in ranges), max(r[1] for r in ranges), best


def fit_level_k(observations: PlayerObservations, k_hat: int = K_HAT) -> LevelKFit:
    """The maximum-likelihood Level-K fit: α on the simplex, ε_1..ε_{k̂−1} ∈ [0, cap] (see
    `epsilon_cap`), found by an exhaustive search over best-response pieces (module docstring)."""
    _check(observations, k_hat)
    obs = observations.played()
    return _pinned(lambda: _fit_level_k(obs, k_hat))


def _fit_level_k(obs: PlayerObservations, k_hat: int) -> LevelKFit:
    pieces, verts, meta, optimal, best = _level_k_candidates(obs, k_hat)
    choices = []
    for o in optimal:
        levels, eps = meta[o.index]
        fb = fibre(verts[o.index], o.weights)
        lo, hi = fb.range(levels.astype(float))
        choices.append((lo, hi, o, fb))
    mu_lo = min(x[0] for x in choices)
    mu_hi = max(x[1] for x in choices)
    # the canonical maximiser: the lowest mean level, then the least error, then lower vertices
    lo, _, o, fb = min(choices, key=lambda x: (x[0] > mu_lo + 1e-12, x[2].index))
    levels, eps = meta[o.index]
    order = [levels.astype(float), eps] + [-np.eye(levels.size)[v] for v in range(levels.size)]
    g = fb.lexmin(order)
    alpha = np.array([g[levels == k].sum() for k in range(k_hat)])
    piece = pieces[o.index]
    epsilon, eps_known = [], []
    for k in range(1, k_hat):
        if piece.lo[k] == piece.hi[k]:  # a crossing: exactly there, not rounded off it
            epsilon.append(piece.lo[k])
            eps_known.append(alpha[k] > 1e-12)
        elif alpha[k] > 1e-12:
            epsilon.append(_r(float(g[levels == k] @ eps[levels == k] / alpha[k])))
            eps_known.append(True)
        else:  # no weight: any ε of the piece fits; its middle keeps the piece's best responses
            epsilon.append(_r(0.5 * (piece.lo[k] + piece.hi[k])))
            eps_known.append(False)
    alpha_r = tuple(_r(a) for a in alpha)
    point = _r(_mean_level(alpha_r))  # the canonical maximiser is the lowest: the range starts there
    identified = mu_hi - mu_lo < IDENTIFIED_WIDTH
    return LevelKFit(obs.player, k_hat, alpha_r, tuple(epsilon), _r(best), obs.n_actions_observed,
                     identified=identified, mean_level_range=(point, point if identified else max(point, _r(mu_hi))),
                     epsilon_identified=tuple(eps_known))


# -- Poisson


def _poisson_loss(piece: PoissonPiece, counts: np.ndarray, seen: np.ndarray) -> Callable[[float], tuple[float, float]]:
    """λ ↦ (loss, d loss/dλ) with the piece's level strategies held fixed."""
    k_hat = piece.s.shape[1]
    sk = np.stack([piece.s[:, k][seen] for k in range(k_hat)])  # (k̂, cells)
    c = counts[seen]
    ks = np.arange(k_hat, dtype=float)
    logfact = np.array([np.log(float(factorial(k))) for k in range(k_hat)])

    def f(lam: float) -> tuple[float, float]:
        if lam <= 0.0:
            w = np.zeros(k_hat)
            w[0] = 1.0
            dw = np.zeros(k_hat)
            dw[:2] = (-1.0, 1.0) if k_hat > 1 else (0.0,)
        else:
            logw = ks * np.log(lam) - logfact
            w = np.exp(logw - logw.max())
            w /= w.sum()
            dw = w * (ks - w @ ks) / lam
        p = np.maximum(w @ sk, 1e-300)
        return -float(np.sum(c * np.log(p))), -float(np.sum(c * (dw @ sk) / p))

    return f


def _poisson_piece_best(piece: PoissonPiece, f: Callable[[float], tuple[float, float]]) -> list[float]:
    """The λ of the piece where the loss may be least: the ends and every zero of the derivative
    bracketed on a grid."""
    if piece.point:
        return [piece.lo]
    grid = np.linspace(piece.lo, piece.hi, 65)
    vals = [f(float(x)) for x in grid]
    out = [piece.lo, piece.hi]
    for i in range(len(grid) - 1):
        (_, d0), (_, d1) = vals[i], vals[i + 1]
        if d0 < 0.0 < d1:
            out.append(brentq(lambda x: f(x)[1], float(grid[i]), float(grid[i + 1]), xtol=1e-15))
        elif d0 == 0.0:
            out.append(float(grid[i]))
    return out


def fit_poisson_ch(observations: PlayerObservations, k_hat: int = K_HAT) -> PoissonFit:
    """The maximum-likelihood λ ∈ [0, LAMBDA_MAX], found piece by piece (module docstring)."""
    _check(observations, k_hat)
    obs = observations.played()
    return _pinned(lambda: _fit_poisson(obs, k_hat))


Winner = tuple[float, float, float, bool]  # λ low, λ high, loss, λ is a crossing (reported unrounded)


def _poisson_set(obs: PlayerObservations, k_hat: int) -> tuple[list[Winner], float, bool]:
    """The maximisers as (λ_low, λ_high, loss) intervals, the best loss, and whether the best λ
    sits at LAMBDA_MAX."""
    seen = obs.counts > 0
    found: list[Winner] = []
    for piece in poisson_pieces(obs.batch, k_hat, LAMBDA_MAX):
        f = _poisson_loss(piece, obs.counts, seen)
        flat = all(np.array_equal(piece.s[:, k][seen], piece.s[:, 0][seen]) for k in range(k_hat))
        if flat:  # every level predicts the same on the observed cells: λ moves nothing
            found.append((piece.lo, piece.hi, f(piece.lo)[0], piece.point))
            continue
        for lam in _poisson_piece_best(piece, f):
            found.append((lam, lam, f(lam)[0], piece.point))
    best = min(x[2] for x in found)
    tol = tie_tolerance(best)
    winners = sorted((x for x in found if x[2] <= best + tol), key=lambda x: (x[0], x[1]))
    return winners, best, any(x[1] >= LAMBDA_MAX for x in winners)


def _shown(lam: float, exact: bool) -> float:
    return lam if exact else _r(lam)


def _mu(lam: float, k_hat: int) -> float:
    return _mean_level(poisson_weights(lam, k_hat))


def _poisson_range(winners: list[Winner], at_limit: bool, k_hat: int) -> tuple[float, float]:
    """The mean levels of the lowest and highest maximiser (the mean level grows with λ), from the
    reported λ; up to k̂ − 1 when λ̂ is held at LAMBDA_MAX."""
    lo = _mu(_shown(winners[0][0], winners[0][3]), k_hat)
    hi = float(k_hat - 1) if at_limit else max(_mu(_shown(x[1], x[3]), k_hat) for x in winners)
    return _r(lo), _r(max(lo, hi))


def _fit_poisson(obs: PlayerObservations, k_hat: int) -> PoissonFit:
    winners, best, at_limit = _poisson_set(obs, k_hat)
    lo, hi = _poisson_range(winners, at_limit, k_hat)
    lam = _shown(winners[0][0], winners[0][3])  # the smallest maximiser: the lowest mean level
    return PoissonFit(obs.player, k_hat, lam, _r(best), obs.n_actions_observed,
                      identified=hi - lo < IDENTIFIED_WIDTH, mean_level_range=(lo, hi), at_limit=at_limit)


def fit(observations: PlayerObservations, model: Model, k_hat: int = K_HAT) -> LevelKFit | PoissonFit:
    if model == "level_k":
        return fit_level_k(observations, k_hat)
    if model == "poisson":
        return fit_poisson_ch(observations, k_hat)
    raise InputError(f"unknown CH model {model!r} (level_k or poisson)")


def mean_level_set(observations: PlayerObservations, model: Model, k_hat: int = K_HAT) -> tuple[float, float]:
    """(lowest, highest) mean level over every maximum-likelihood fit, without the canonical point
    (what each bootstrap replicate needs)."""
    _check(observations, k_hat)
    obs = observations.played()
    if model == "level_k":
        lo, hi, _ = _pinned(lambda: _level_k_set(obs, k_hat))
        return _r(lo), _r(hi)
    if model == "poisson":
        winners, _, at_limit = _pinned(lambda: _poisson_set(obs, k_hat))
        return _poisson_range(winners, at_limit, k_hat)
    raise InputError(f"unknown CH model {model!r} (level_k or poisson)")


def likelihood_improvement_ratios(
    observations: PlayerObservations,
    model: Model,
    k_hats: Sequence[int] = (3, 4, 5),
) -> dict[str, float]:
    """Relative NLL reduction (NLL_k − NLL_{k+1}) / NLL_k for consecutive k̂ (keys "3->4", "4->5").

    The paper plots a "likelihood improvement ratio" (after Wright & Leyton-Brown) in percent
    without a formula; the relative loss reduction is the reading used here.
    """
    nll_k = {k: fit(observations, model, k).neg_log_likelihood for k in k_hats}
    ks = sorted(k_hats)
    return {
        f"{a}->{b}": (nll_k[a] - nll_k[b]) / nll_k[a] if nll_k[a] > 0 else 0.0
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


def mean_level_ci(obs: PlayerObservations, model: Model, k_hat: int, n_boot: int, seed: int,
                  point: tuple[float, float] | None = None) -> list[float] | None:
    """95% CI of the mean level, games resampled with replacement and the model refitted to each
    resample. Where a resample's maximisers span an interval of mean levels, its low end feeds the
    CI's low quantile and its high end the high one, and the CI always covers the fit's own interval
    ``point``: a CI never hides a level the data could not rule out. None without replicates,
    without observations, or with fewer than two games."""
    if not n_boot or not obs.n_actions_observed or len(obs.game_ids) < 2:
        return None

    def set_of(games: list[int], b: int) -> tuple[float, float] | None:
        resample = obs.subset(games)
        if resample.n_actions_observed == 0:
            return None
        return mean_level_set(resample, model, k_hat)

    ci = bootstrap_range(list(obs.game_ids), set_of, n_boot, np.random.default_rng(seed))
    if ci is not None and point is not None:
        ci = [min(ci[0], point[0]), max(ci[1], point[1])]
    return None if ci is None else [_r(ci[0]), _r(ci[1])]


def uniform_null_level(obs: PlayerObservations, model: Model, k_hat: int, n_sim: int, seed: int,
                       q: float = 0.95) -> float | None:
    """The ``q`` quantile of the mean level fitted to *uniform random* play with the same number of
    actions in each role of each game as ``obs`` (``n_sim`` simulated players, drawn from ``seed``):
    the chance reference of a fitted level. Level 0 is the model's floor, so the level fitted to
    uniform play is ≥ 0 and above 0 about half the time, and a bootstrap CI of it can lie above 0
    (a boundary bias): "CI above 0" is no test of play better than chance, "fitted level above
    this quantile" is (a one-sided test at level 1 − q). Each simulated fit counts at the high end of
    its maximiser set, so the reference is never below a level uniform play could be given. None
    without observations."""
    if not obs.n_actions_observed or n_sim < 1:
        return None
    played = obs.played()
    valid = played.batch.valid
    totals = played.counts.sum(axis=2).astype(int)
    # (a trend's checkpoints play the same games as often: one simulation serves them all)
    key = (played.batch.payoffs.tobytes(), played.batch.payoffs.shape, totals.tobytes(), model, k_hat, n_sim,
           seed, q)
    if key in _NULL_LEVELS:
        return _NULL_LEVELS[key]
    rng = np.random.default_rng(seed)

    def fits() -> list[float]:
        out = []
        for _ in range(n_sim):
            counts = np.zeros_like(played.counts)
            for r in range(counts.shape[0]):
                for g in range(counts.shape[1]):
                    n_actions = int(valid[r, g].sum())
                    if totals[r, g]:
                        counts[r, g, :n_actions] = rng.multinomial(totals[r, g], np.full(n_actions, 1.0 / n_actions))
            sim = PlayerObservations(played.player, played.game_ids, played.games, counts)
            out.append(mean_level_set(sim, model, k_hat)[1])
        return out

    levels = _pinned(fits)
    _NULL_LEVELS[key] = level = _r(float(np.quantile(levels, q, method="higher")))
    return level


_NULL_LEVELS: dict[tuple[Any, ...], float] = {}


def mean_kl_between_levels(obs: PlayerObservations, result: LevelKFit | PoissonFit) -> list[float | None]:
    """Mean KL(s^k ‖ s^{k+1}) per consecutive pair of levels, over the roles and games the player
    played (infinite values left out; None where none is finite)."""
    per = level_kl(obs, result)  # (2, G, k̂−1)
    played = obs.counts.sum(axis=2) > 0
    means: list[float | None] = []
    for k in range(per.shape[2]):
        finite = [float(x) for x in per[:, :, k][played] if np.isfinite(x)]
        means.append(_r(float(np.mean(finite))) if finite else None)
    return means


def improvement_ratio(fewer: LevelKFit | PoissonFit | None, more: LevelKFit | PoissonFit | None) -> float | None:
    """Relative NLL reduction from ``fewer`` levels to ``more`` (None when either is missing or the
    first NLL is not positive)."""
    if fewer is None or more is None or not fewer.neg_log_likelihood > 0:
        return None
    return _r((fewer.neg_log_likelihood - more.neg_log_likelihood) / fewer.neg_log_likelihood)


def fit_report(obs: PlayerObservations, model: Model, k_hat: int, n_boot: int, seed: int) -> dict[str, Any]:
    """A fit's ``to_dict()`` with what CHBench reports beside it: ``mean_level_ci95`` (bootstrap
    over games, ``n_boot`` replicates seeded by ``seed``; it covers ``mean_level_range``),
    ``likelihood_improvement_ratio`` (k̂−1 → k̂ and k̂ → k̂+1) and ``kl_consecutive_levels``."""
    def report() -> dict[str, Any]:
        res = fit(obs, model, k_hat)
        out = res.to_dict()
        out["mean_level_ci95"] = mean_level_ci(obs, model, k_hat, n_boot, seed, res.mean_level_range)
        fewer = fit(obs, model, k_hat - 1) if k_hat > 1 else None
        more = fit(obs, model, k_hat + 1) if k_hat < K_HAT_MAX else None
        out["likelihood_improvement_ratio"] = {f"{k_hat - 1}->{k_hat}": improvement_ratio(fewer, res),
                                               f"{k_hat}->{k_hat + 1}": improvement_ratio(res, more)}
        out["kl_consecutive_levels"] = mean_kl_between_levels(obs, res)
        return out

    return _pinned(report)


__all__ = ["CHAgent", "LevelKFit", "PlayerObservations", "PoissonFit", "epsilon_cap", "fit", "fit_level_k",
           "fit_poisson_ch", "fit_report", "improvement_ratio", "level_k_nll", "level_kl", "level_strategies",
           "likelihood_improvement_ratios", "mean_kl_between_levels", "mean_level_ci", "mean_level_set",
           "observations_from_csv", "poisson_nll", "simulate_counts", "simulate_rounds", "tie_tolerance",
           "uniform_null_level", "write_observations_csv"]
