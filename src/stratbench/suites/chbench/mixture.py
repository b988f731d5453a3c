"""Maximum likelihood of a mixture of fixed strategies, and what the data leave undetermined.

Within one piece of a CH model's parameter space (`pieces.py`) the prediction is Σ_v γ_v·V_v:
a point γ of the simplex mixing the piece's vertex strategies V_v. The negative log-likelihood
−Σ_j c_j·log (Vγ)_j is convex in γ, so each piece has one optimal *prediction* p* on the observed
cells, found from any start; the global fit is the best piece. Three tools:

- :func:`em_bounds` — a few EM (multiplicative) steps on many pieces at once, with the duality
  bound f* ≥ f(γ) − n·log max_v r_v (r_v = Σ_j c_j V_jv / (n·p_j); Jensen's inequality), so pieces
  that cannot reach the incumbent are dropped without solving them;
- :func:`solve` — SLSQP from the EM point, then Newton steps on the support (the KKT system,
  least-squares where the data leave directions flat) until the prediction is exact to rounding,
  so the reported numbers do not move with the BLAS kernels or thread count that SLSQP ran on;
- :func:`fibre` — every γ with the same observed prediction is an equally good fit: the polytope
  {γ ≥ 0, Σγ = 1, V_obs·γ = p*}. Linear objectives (the mean level) take an interval over it,
  computed by LPs in the null space (HiGHS), and :meth:`Fibre.lexmin` picks one canonical vertex
  by a list of objectives taken in turn, its coordinates recomputed from its support.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog, minimize

FLOOR = 1e-300
_LP = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
_RANK_TOL = 1e-10  # singular values below this × the largest are treated as 0
_SUPPORT_TOL = 1e-11  # weights below this are 0


def nll(v: np.ndarray, c: np.ndarray, w: np.ndarray) -> float:
    """−Σ c·log(V·w) with V (cells, vertices)."""
    return -float(np.sum(c * np.log(np.maximum(v @ w, FLOOR))))


def em_bounds(v: np.ndarray, mask: np.ndarray, c: np.ndarray, iters: int,
              w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EM steps on P pieces at once: v (P, cells, vertices) padded, mask (P, vertices) marks real
    vertices. Returns (weights, upper, lower): each piece's NLL at its weights (an upper bound on
    its optimum) and a lower bound on that optimum."""
    n = float(c.sum())
    if w is None:
        w = mask / mask.sum(axis=1, keepdims=True)
    p = np.einsum("pcv,pv->pc", v, w)
    for _ in range(iters):
        r = np.einsum("pcv,pc->pv", v, c / np.maximum(p, FLOOR)) / n
        w = w * r
        w /= w.sum(axis=1, keepdims=True)
        p = np.einsum("pcv,pv->pc", v, w)
    r = np.einsum("pcv,pc->pv", v, c / np.maximum(p, FLOOR)) / n
    upper = -np.einsum("c,pc->p", c, np.log(np.maximum(p, FLOOR)))
    best_r = np.max(np.where(mask, r, -np.inf), axis=1)
    lower = upper - n * np.log(np.maximum(best_r, 1.0))
    return w, upper, lower


def _newton(v: np.ndarray, c: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Newton steps for min f on the support of w with Σw = 1, until a step no longer lowers f (a
    vertex whose weight a step would make negative leaves the support)."""
    w = w.copy()
    w[w <= _SUPPORT_TOL] = 0.0
    w /= w.sum()
    for _ in range(30):
        s = np.flatnonzero(w)
        vs, ws = v[:, s], w[s]
        p = vs @ ws
        g = -vs.T @ (c / p)
        h = (vs * (c / p ** 2)[:, None]).T @ vs
        k = s.size
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k], kkt[:k, k], kkt[k, :k] = h, 1.0, 1.0
        step = np.linalg.lstsq(kkt, np.concatenate([-g, [0.0]]), rcond=None)[0][:k]
        if not np.all(np.isfinite(step)) or not float(-g @ step) > 0.0:
            break  # no descent direction left: converged to rounding
        t = 1.0
        neg = step < 0
        if np.any(neg):
            t = min(1.0, float(np.min(-ws[neg] / step[neg])))
        f0 = nll(vs, c, ws)
        for _ in range(8):
            new = np.maximum(ws + t * step, 0.0)
            if nll(vs, c, new) < f0:
                break
            t /= 4.0
        else:
            break
        w[s] = new / new.sum()
        w[w <= _SUPPORT_TOL] = 0.0
        w /= w.sum()
    return w


def solve(v: np.ndarray, c: np.ndarray, w0: np.ndarray) -> tuple[np.ndarray, float]:
    """The optimal weights (one of them, where several give the same prediction) and the NLL."""
    k = v.shape[1]
    if k == 1:
        w = np.ones(1)
        return w, nll(v, c, w)

    def f(w: np.ndarray) -> tuple[float, np.ndarray]:
        p = np.maximum(v @ w, FLOOR)
        return -float(np.sum(c * np.log(p))), -(v.T @ (c / p))

    res = minimize(f, w0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                   constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1.0, "jac": lambda w: np.ones(k)}],
                   options={"maxiter": 200, "ftol": 1e-10})
    w = np.clip(res.x, 0.0, None)
    w /= w.sum()
    if nll(v, c, w) > nll(v, c, w0):  # SLSQP can stop early: never worse than the start
        w = w0.copy()
    polished = _newton(v, c, w)
    if nll(v, c, polished) <= nll(v, c, w) + 1e-12 * abs(nll(v, c, w)):
        w = polished
    return w, nll(v, c, w)


@dataclass(frozen=True)
class Fibre:
    """{γ ≥ 0, Σγ = 1, V·γ = V·γ*}: the weights that predict the observed cells exactly as γ*."""

    v: np.ndarray  # (observed cells, vertices)
    point: np.ndarray  # γ*
    null: np.ndarray  # (vertices, d): directions that change no observed prediction

    @property
    def flat(self) -> bool:
        return self.null.shape[1] > 0

    def _lp(self, obj: np.ndarray, fixed: list[tuple[np.ndarray, float]]) -> np.ndarray:
        """The γ of the fibre minimising obj·γ, keeping earlier objectives at their minima."""
        n = self.null
        a_ub = [-n]
        b_ub = [self.point]
        for a, val in fixed:  # a·(γ* + N z) ≤ val (+ rounding)
            a_ub.append((a @ n)[None, :])
            b_ub.append(np.array([val - a @ self.point + 1e-11 * (1.0 + abs(val))]))
        res = linprog(obj @ n, A_ub=np.vstack(a_ub), b_ub=np.concatenate(b_ub), bounds=[(None, None)] * n.shape[1],
                      method="highs", options=_LP)
        if res.status != 0:  # the start point itself is in the fibre
            return self.point.copy()
        return self._exact(self.point + n @ res.x)

    def _exact(self, g: np.ndarray) -> np.ndarray:
        """The vertex the LP found, recomputed from its support: exact to rounding."""
        s = np.flatnonzero(g > 1e-9)
        a = np.vstack([self.v[:, s], np.ones((1, s.size))])
        b = np.concatenate([self.v @ self.point, [1.0]])
        x, *_ = np.linalg.lstsq(a, b, rcond=None)
        if np.any(x < -1e-9) or np.max(np.abs(a @ x - b)) > 1e-9:
            return np.clip(g, 0.0, None) / np.clip(g, 0.0, None).sum()
        out = np.zeros_like(g)
        out[s] = np.clip(x, 0.0, None)
        return out / out.sum()

    def range(self, a: np.ndarray) -> tuple[float, float]:
        """(min, max) of a·γ over the fibre."""
        if not self.flat:
            val = float(a @ self.point)
            return val, val
        return float(a @ self._lp(a, [])), float(a @ self._lp(-a, []))

    def lexmin(self, objectives: list[np.ndarray]) -> np.ndarray:
        """The γ minimising the objectives in turn (each kept at its minimum for the next)."""
        if not self.flat:
            return self.point.copy()
        fixed: list[tuple[np.ndarray, float]] = []
        g = self.point
        for a in objectives:
            g = self._lp(a, fixed)
            fixed.append((a, float(a @ g)))
        return g


def fibre(v: np.ndarray, point: np.ndarray) -> Fibre:
    """The fibre through ``point`` of the observed-cell map V (cells, vertices)."""
    a = np.vstack([v, np.ones((1, v.shape[1]))])
    _, sv, vt = np.linalg.svd(a)
    rank = int(np.sum(sv > _RANK_TOL * sv[0])) if sv.size else 0
    return Fibre(v, point, vt[rank:].T.copy())
