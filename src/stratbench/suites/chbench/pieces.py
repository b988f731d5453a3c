"""The pieces of a CH model's parameter space on which every level's best responses stay fixed.

Why: both CH likelihoods are *piecewise* in their parameters. A level's best-response set depends
on the strategy it responds to, which moves with the error rates (Level-K) or with λ (Poisson);
where two actions' expected payoffs cross, the set jumps and so does the likelihood. A local
optimiser started at random stops in whichever piece it started near, so the fitted level depended
on the start and on floating-point rounding (measured: 1.00 on one machine, 2.73 on another for the
same data). Enumerating the pieces exactly makes the fit a finite, deterministic search.

- **Level-K**: level k+1 best-responds to the opponent's level k, which plays
  (1 − ε_k)·M_k + ε_k·U_k. Against it each action's expected payoff is affine in ε_k, so the
  crossings are closed-form; the pieces form a tree over ε_1 … ε_{k̂−2} (ε_{k̂−1}, the top level's,
  moves no best response). Within a piece the predicted strategy is linear in (α, α·ε), so the
  likelihood is a mixture over the piece's *vertex strategies* (:func:`level_k_vertices`): a
  convex problem.
- **Poisson CH**: level k best-responds to Σ_{l<k} w_l(λ)·s_l, and sign-wise the weights are the
  polynomial terms λ^l / l!, so the crossings are roots of polynomials in λ of degree k − 1.

Each open interval between crossings is a piece, and each crossing is a piece of its own (there the
tied actions share the best response) unless it responds like an interval next to it (`_cells`).
Where a piece ends at a crossing with other responses, the likelihood there is a limit the model
never reaches: the piece stops 1e-5 short of it, so a fitted parameter always reproduces the
fitted likelihood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import factorial

import numpy as np

from stratbench.suites.chbench.hierarchy import GameBatch, _best_response_masks

#: crossings closer than this (relative) are one crossing
_SAME_POINT = 1e-12
#: how far inside an open piece end its parameters stay (module docstring: `_cells`)
EDGE = 1e-5


def _br_and_rest(batch: GameBatch, opp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(M, U): uniform over the best responses to ``opp`` and over the other actions (M where
    every action is a best response)."""
    br, nbr = _best_response_masks(batch, opp)
    nb = br.sum(axis=2, keepdims=True)
    nn = nbr.sum(axis=2, keepdims=True)
    m = br / nb
    return m, np.where(nn > 0, nbr / np.maximum(nn, 1), m)


def _crossings(coef: np.ndarray, batch: GameBatch, lo: float, hi: float) -> list[float]:
    """Sorted points in (lo, hi) where two actions' expected payoffs cross.

    ``coef[d, r, g, i]`` is the coefficient of t^d in action i's expected payoff (role r, game g)
    as a polynomial in the parameter t (or in a monotone reparametrisation of it)."""
    diff = coef[:, :, :, :, None] - coef[:, :, :, None, :]  # (D, 2, G, N, N)
    valid = batch.valid[:, :, :, None] & batch.valid[:, :, None, :]
    iu = np.triu(np.ones(diff.shape[-1], dtype=bool), 1)
    pairs = diff[:, valid & iu]  # (D, P)
    found: list[float] = []
    if pairs.shape[0] == 1:
        return found
    if pairs.shape[0] == 2:  # linear: c0 + c1 t = 0
        c0, c1 = pairs
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(c1 != 0, -c0 / c1, np.nan)
        found = [float(x) for x in t[np.isfinite(t)]]
    else:
        for col in pairs.T:
            if not np.any(col[1:]):
                continue
            r = np.polynomial.polynomial.polyroots(col)
            found += [float(x.real) for x in r if abs(x.imag) <= 1e-12 * max(1.0, abs(x.real))]
    pts = sorted(x for x in found if lo < x < hi)
    out: list[float] = []
    for x in pts:
        if not out or x - out[-1] > _SAME_POINT * max(1.0, abs(x)):
            out.append(x)
    return out


def _cells(points: list[float], lo: float, hi: float, edge: float,
           responses: Callable[[float], tuple[np.ndarray, ...]]) -> list[tuple[float, float, tuple[np.ndarray, ...]]]:
    """The pieces of [lo, hi] cut at ``points``, each with the responses it gives
    (``responses(x)``), as (lower, upper, responses).

    Each open interval between cut points gives the responses of its middle; each cut point (and
    each end of [lo, hi]) its own. Neighbouring intervals with the responses of the point between
    them are one piece; a point with the responses of an interval next to it belongs to that
    interval; any other point is a piece of its own. An interval end whose point gives other
    responses is *open*: the likelihood approaches its value there without reaching it, so the
    piece stops ``edge`` short of it (a quarter of its width at most) and every parameter it
    yields, even rounded to 6 decimals, gives the responses the piece was fitted with."""
    edges = [lo, *points, hi]
    at = [responses(x) for x in edges]
    mid = [responses(0.5 * (edges[i] + edges[i + 1])) for i in range(len(edges) - 1)]

    def same(x: tuple[np.ndarray, ...], y: tuple[np.ndarray, ...]) -> bool:
        return all(np.array_equal(a, b) for a, b in zip(x, y))

    spans: list[list[int]] = []  # runs of intervals joined through points with their responses
    for i in range(len(mid)):
        if spans and same(mid[spans[-1][-1]], mid[i]) and same(at[i], mid[i]):
            spans[-1].append(i)
        else:
            spans.append([i])
    out: list[tuple[float, float, tuple[np.ndarray, ...]]] = []
    for run in spans:
        first, last = run[0], run[-1]
        a, b = edges[first], edges[last + 1]
        d = min(edge, (b - a) / 4.0)
        out.append((a if same(at[first], mid[first]) else a + d, b if same(at[last + 1], mid[last]) else b - d,
                    mid[first]))
    for i, x in enumerate(edges):
        neighbours = [mid[j] for j in (i - 1, i) if 0 <= j < len(mid)]
        if not any(same(at[i], q) for q in neighbours):
            out.append((x, x, at[i]))
    return out


# ----------------------------------------------------------------------------- Level-K


@dataclass(frozen=True, eq=False)
class LevelKPiece:
    """ε_k ∈ [lo[k], hi[k]] for k = 1..k̂−1 (index 0 unused), with the best responses fixed:
    level k plays (1 − ε_k)·m[:, k] + ε_k·u[:, k] (level 0: m = u = uniform)."""

    lo: tuple[float, ...]
    hi: tuple[float, ...]
    m: np.ndarray  # (2, k̂, G, N)
    u: np.ndarray


def level_k_pieces(batch: GameBatch, k_hat: int, cap: float) -> list[LevelKPiece]:
    """Every piece of the Level-K error rates ε ∈ [0, cap]^{k̂−1}, in a fixed order (ε_1's
    segments first, lower first, then the crossings themselves)."""
    uni = batch.uniform
    out: list[LevelKPiece] = []

    def grow(k: int, lo: list[float], hi: list[float], ms: list[np.ndarray], us: list[np.ndarray]) -> None:
        if k >= k_hat - 1:  # the top level's error rate moves no best response
            top = [] if k_hat == 1 else [(0.0, cap)]
            out.append(LevelKPiece(tuple(lo + [a for a, _ in top]), tuple(hi + [b for _, b in top]),
                                   np.stack(ms, 1), np.stack(us, 1)))
            return
        # the opponent's level k as the strategy each role responds to: (1 − ε)·a + ε·b per action
        a = np.einsum("rgij,rgj->rgi", batch.payoffs, ms[k][::-1])
        b = np.einsum("rgij,rgj->rgi", batch.payoffs, us[k][::-1])
        cuts = _crossings(np.stack([a, b - a]), batch, 0.0, cap)
        for s_lo, s_hi, (m_next, u_next) in _cells(
                cuts, 0.0, cap, EDGE, lambda e: _br_and_rest(batch, ((1.0 - e) * ms[k] + e * us[k])[::-1])):
            grow(k + 1, lo + [s_lo], hi + [s_hi], ms + [m_next], us + [u_next])

    if k_hat == 1:
        return [LevelKPiece((0.0,), (0.0,), uni[:, None], uni[:, None])]
    m1, u1 = _br_and_rest(batch, uni[::-1])
    grow(1, [0.0], [0.0], [uni, m1], [uni, u1])
    return out


def level_k_vertices(piece: LevelKPiece) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The piece's vertex strategies and what each stands for.

    Returns (V, level, eps): V[v] (2, G, N) is level ``level[v]`` playing with error rate
    ``eps[v]`` (an end of its interval). Any Level-K prediction in the piece is Σ_v γ_v·V[v] with
    γ on the simplex: α_k = Σ_{level v = k} γ_v and α_k·ε_k = Σ_{level v = k} γ_v·eps[v]."""
    strategies, levels, eps = [piece.m[:, 0]], [0], [0.0]
    for k in range(1, piece.m.shape[1]):
        ends = (piece.lo[k],) if piece.lo[k] == piece.hi[k] else (piece.lo[k], piece.hi[k])
        for e in ends:
            strategies.append((1.0 - e) * piece.m[:, k] + e * piece.u[:, k])
            levels.append(k)
            eps.append(e)
    return np.stack(strategies), np.array(levels), np.array(eps)


# ----------------------------------------------------------------------------- Poisson CH


@dataclass(frozen=True, eq=False)
class PoissonPiece:
    """λ ∈ [lo, hi] with every level's strategy fixed: s[:, k] (2, k̂, G, N)."""

    lo: float
    hi: float
    s: np.ndarray

    @property
    def point(self) -> bool:
        return self.lo == self.hi


def poisson_pieces(batch: GameBatch, k_hat: int, lam_max: float) -> list[PoissonPiece]:
    """Every piece of λ ∈ [0, lam_max]. λ = 0 is a piece of its own where the levels' responses
    differ there (every level above 0 best-responds to level 0 alone)."""
    uni = batch.uniform
    out: list[PoissonPiece] = []

    def grow(k: int, lo: float, hi: float, levels: list[np.ndarray]) -> None:
        if k >= k_hat:
            out.append(PoissonPiece(lo, hi, np.stack(levels, 1)))
            return
        # level k's belief ∝ Σ_{l<k} (λ^l / l!)·s_l: the expected payoffs are polynomials in λ
        coef = np.stack([np.einsum("rgij,rgj->rgi", batch.payoffs, levels[l][::-1]) / factorial(l)
                         for l in range(k)])
        stacked = np.stack(levels, 1)[::-1]

        def respond(lam: float) -> tuple[np.ndarray]:
            w = np.array([lam ** l / factorial(l) for l in range(k)])
            return (_br_and_rest(batch, np.einsum("l,rlgn->rgn", w / w.sum(), stacked))[0],)

        cells = [(lo, hi, respond(lo))] if lo == hi else _cells(_crossings(coef, batch, lo, hi), lo, hi, EDGE, respond)
        for s_lo, s_hi, (s_k,) in cells:
            grow(k + 1, s_lo, s_hi, levels + [s_k])

    grow(1, 0.0, lam_max, [uni])
    return out
