"""Solver benchmark: stratbench's one-LP solver (row LP + duals, then polishing) against a two-LP
formulation like the original benchmark's (one LP per player), timed in the same run.

Run: .venv/bin/python benchmarks/bench_solver.py [--repeats N]
Prints, per size, the median time of each and their ratio (two-LP / one-LP), and the accuracy
(duality gap) each reaches. `bench_local.py` puts the same measurement in its markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.optimize import linprog

from stratbench.solvers import solve_zero_sum


def two_lp(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Row LP and column LP solved separately, as the original did (default HiGHS settings)."""
    m, n = a.shape
    c = np.zeros(m + 1)
    c[-1] = -1
    row = linprog(c, A_ub=np.hstack([-a.T, np.ones((n, 1))]), b_ub=np.zeros(n),
                  A_eq=np.r_[np.ones(m), 0][None], b_eq=[1], bounds=[(0, None)] * m + [(None, None)],
                  method="highs")
    c = np.zeros(n + 1)
    c[-1] = 1
    col = linprog(c, A_ub=np.hstack([a, -np.ones((m, 1))]), b_ub=np.zeros(m),
                  A_eq=np.r_[np.ones(n), 0][None], b_eq=[1], bounds=[(0, None)] * n + [(None, None)],
                  method="highs")
    return row.x[:m], col.x[:n], float(row.x[-1])


def timed(fn, *args, repeats: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure(repeats: int = 0) -> list[tuple[str, float, float, float, float]]:
    """(size, one-LP seconds, two-LP seconds, one-LP duality gap, two-LP duality gap) per size."""
    rng = np.random.default_rng(0)
    out = []
    for n in (3, 50, 200):
        reps = repeats or {3: 200, 50: 30, 200: 5}[n]
        a = np.round(rng.uniform(-100, 100, (n, n)), 2)
        t1, sol = timed(solve_zero_sum, a, repeats=reps)
        t2, (p, q, _) = timed(two_lp, a, repeats=reps)
        p = np.clip(p, 0, None) / np.clip(p, 0, None).sum()
        q = np.clip(q, 0, None) / np.clip(q, 0, None).sum()
        gap2 = float((a @ q).max() - (p @ a).min())
        out.append((f"{n}×{n}", t1, t2, float(sol.duality_gap), gap2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=0, help="repeats per size (default: by size)")
    args = ap.parse_args()
    print(f"{'size':>8} {'one-LP ms':>10} {'two-LP ms':>10} {'ratio':>7} {'gap one-LP':>11} {'gap two-LP':>11}")
    for size, t1, t2, g1, g2 in measure(args.repeats):
        print(f"{size:>8} {t1 * 1e3:>10.2f} {t2 * 1e3:>10.2f} {t2 / t1:>7.2f} {g1:>11.1e} {g2:>11.1e}")


if __name__ == "__main__":
    main()
