"""Tabular baseline (R-max + count predictor) of the functional-ToM suite against the paper.

Run: .venv/bin/python benchmarks/bench_tom_tabular.py [--episodes N] [--seed S] [--T T]
Prints, for the six (game, partner) settings of the paper, Δ_F/T, ToM %, and Δ_ToM/T (myopic
definition, see stratbench.suites.tom.tabular) with 95% bootstrap CIs next to the paper's Tabular
values, and the wall time of each setting.
"""

from __future__ import annotations

import argparse
import time

from stratbench.suites.tom.tabular import PAPER_TABULAR, run_baseline


def _ci(res: dict, key: str, scale: float = 1.0) -> str:
    lo, hi = res[f"{key}_ci95"]
    return f"{scale * res[key]:7.3f} [{scale * lo:.3f},{scale * hi:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--T", type=int, default=100)
    args = ap.parse_args()
    print(f"episodes={args.episodes} T={args.T} seed={args.seed}")
    hdr = f"{'game':4} {'partner':14} | {'dF/T (ours)':24} paper | {'ToM % (ours)':26} paper | {'dToM/T (ours)':24} paper | secs"
    print(hdr)
    print("-" * len(hdr))
    t_all = time.perf_counter()
    for (game, partner), ref in PAPER_TABULAR.items():
        t0 = time.perf_counter()
        r = run_baseline(game, partner, episodes=args.episodes, T=args.T, seed=args.seed)
        dt = time.perf_counter() - t0
        print(
            f"{game:4} {partner:14} | {_ci(r, 'regret_per_step'):24} {ref['regret']:.3f} | "
            f"{_ci(r, 'tom_accuracy', 100):26} {ref['tom_pct']:5.1f} | "
            f"{_ci(r, 'tom_regret_per_step'):24} {ref['tom_regret']:.3f} | {dt:.2f}"
        )
    print(f"total {time.perf_counter() - t_all:.2f} s")


if __name__ == "__main__":
    main()
