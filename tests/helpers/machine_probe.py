"""The numerically sensitive computations, run in one process under whatever BLAS set-up the
environment gives it (``OPENBLAS_NUM_THREADS``, ``OPENBLAS_CORETYPE``), written as JSON for
tests/test_machines.py to compare across set-ups. Floats go through ``repr`` (JSON round-trips
them exactly), so "equal" below means bit-identical.

Usage: python machine_probe.py OBSERVATIONS_CSV OUT_JSON
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def chbench_cli_fit(observations: str) -> dict[str, Any]:
    """`stratbench chbench fit` on a run's observations, as a user would: fit.json's numbers."""
    from stratbench.cli.main import main

    with tempfile.TemporaryDirectory() as d:
        try:
            main(["chbench", "fit", "--data", observations, "--allow-uncertain", "--bootstrap", "20",
                  "--output-dir", d])
        except SystemExit as e:
            if e.code:
                raise
        (fit_file,) = Path(d).glob("*/fit.json")
        return json.loads(fit_file.read_text())


def chbench_simulated() -> dict[str, Any]:
    """Fits and bootstrap CIs of simulated players on random 3×3 games (identified and not)."""
    from stratbench.games.normal_form import NormalFormGame
    from stratbench.suites.chbench.fit import CHAgent, fit_report, simulate_counts

    rng = np.random.default_rng(5)
    games = {i + 1: NormalFormGame(rng.integers(0, 10, (3, 3)).astype(float),
                                   rng.integers(0, 10, (3, 3)).astype(float)) for i in range(8)}
    agents = [CHAgent("lk", "level_k", alpha=(0.2, 0.3, 0.3, 0.2), epsilon=(0.1, 0.1, 0.1)),
              CHAgent("l1", "level_k", alpha=(0.0, 1.0, 0.0, 0.0), epsilon=(0.0, 0.0, 0.0)),
              CHAgent("po", "poisson", lam=1.5)]
    out = {}
    for i, agent in enumerate(agents):
        obs = simulate_counts(agent, games, 20, seed=i)
        for model in ("level_k", "poisson"):
            out[f"{agent.name}/{model}"] = fit_report(obs, model, 4, 20, 7)
    return out


def tom_regret() -> dict[str, Any]:
    """The tabular R-max baseline's trajectories and their exact DP regret per step."""
    from stratbench.suites.tom.games import get_game
    from stratbench.suites.tom.partners import make_partner
    from stratbench.suites.tom.regret import optimal_values, regret_per_step
    from stratbench.suites.tom.tabular import simulate_rmax

    out = {}
    for game in ("rps", "ibs", "ipd"):
        for partner in ("single_action", "tit_for_tat"):
            g, p = get_game(game), make_partner(partner, game)
            tr = simulate_rmax(g, p, list(range(6)), 30, seed=3)
            r = regret_per_step(g, p, tr["mine"], tr["theirs"], tr["s0"])
            v = optimal_values(g, p, 30)
            out[f"{game}/{partner}"] = {"mine": tr["mine"].tolist(), "regret": r.tolist(),
                                        "V0": v.V[0].tolist()}
    return out


def scorecard_scores() -> dict[str, Any]:
    """Normalised scores and their bootstrap CIs, and a paired difference."""
    from stratbench.scoring import UnitScores, normalized_score, paired_difference, raw_mean

    rng = np.random.default_rng(11)
    rows = [(f"u{i}", float(v), float(c), float(o))
            for i, (v, c, o) in enumerate(zip(rng.uniform(0, 1, 40), rng.uniform(0, 0.3, 40), rng.uniform(0.8, 1, 40)))]
    a, b = UnitScores.of(rows), UnitScores.of([(u, v * 0.9 + 0.1, c, o) for u, v, c, o in rows])
    return {"score": normalized_score(a, seed=2), "raw": raw_mean(a, seed=2), "paired": paired_difference(a, b, seed=2)}


def nash_solver() -> dict[str, Any]:
    """Equilibria of random zero-sum games from 2×2 to 20×20 (HiGHS, then the solver's exact
    polish on the support)."""
    from stratbench.solvers.zerosum import solve_zero_sum
    from stratbench.suites.nashgap.games import generate_games

    out = {}
    for n in (2, 3, 5, 8, 12, 20):
        for k, g in enumerate(generate_games(n, 4, rows=n, cols=n)):
            s = solve_zero_sum(g.payoff_row)
            out[f"{n}x{n}/{k}"] = {"value": s.value, "p": s.row_strategy.tolist(), "q": s.col_strategy.tolist()}
    return out


def blas() -> list[dict[str, Any]]:
    """The BLAS libraries loaded (numpy's and scipy's), with the kernels and threads they use."""
    import scipy.linalg  # noqa: F401 - loads scipy's own OpenBLAS
    import threadpoolctl

    return [{"architecture": i.get("architecture"), "num_threads": i["num_threads"]}
            for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]


def main() -> None:
    observations, target = sys.argv[1], sys.argv[2]
    setup = blas()
    exact = {"chbench_fit_json": chbench_cli_fit(observations), "chbench_simulated": chbench_simulated(),
             "tom": tom_regret(), "scorecard": scorecard_scores()}
    Path(target).write_text(json.dumps({"blas": setup, "exact": exact, "solver": nash_solver()}, default=float))


if __name__ == "__main__":
    main()
