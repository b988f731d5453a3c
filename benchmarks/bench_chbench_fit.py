"""CHBench fitting benchmark: parameter recovery table and the cost of a paper-sized fit grid.

Grid: 15 games × 6 players × 4 mechanisms of 30-round data, i.e. one pooled fit per (player,
mechanism) for each CH model (24 Level-K + 24 Poisson fits, each an exhaustive search over the pieces on which the
levels' responses are fixed — no restarts), plus the same grid fitted per game (15 × 6 × 4 = 360 fits per model). Run: .venv/bin/python benchmarks/bench_chbench_fit.py
"""

from __future__ import annotations

import time

import numpy as np

from stratbench.seeding import derive_seed
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.fit import (
    CHAgent,
    fit_level_k,
    fit_poisson_ch,
    simulate_counts,
)


def enumerate_cells(data):
    """((player index, mechanism index), observations) in a fixed order, for stable seeds."""
    keys = list(data)
    players = sorted({k[0] for k in keys})
    mechs = list(dict.fromkeys(k[1] for k in keys))
    return [((players.index(p), mechs.index(m)), data[(p, m)]) for p, m in keys]


def main() -> None:
    cat = build_catalogue()
    print("Poisson-CH recovery on the catalogue (20 seeds, 2010 pooled actions each)")
    print("lambda  median  p5     p95    max|err|")
    for lam in (0.5, 1.5, 3.0):
        est = np.array([
            fit_poisson_ch(simulate_counts(CHAgent("p", "poisson", lam=lam), cat, 67, seed=s)).lam
            for s in range(20)
        ])
        p5, med, p95 = np.percentile(est, [5, 50, 95])
        print(f"{lam:<7} {med:<7.3f}{p5:<7.3f}{p95:<7.3f}{np.max(np.abs(est - lam)):.3f}")

    rng = np.random.default_rng(5)
    from stratbench.games.normal_form import NormalFormGame

    games = {i + 1: NormalFormGame(rng.integers(0, 10, (3, 3)).astype(float),
                                   rng.integers(0, 10, (3, 3)).astype(float)) for i in range(20)}
    print("\nLevel-K recovery (20 random 3x3 games x 2 roles x 500 = 20,000 actions)")
    for alpha, eps in [((0.2, 0.3, 0.3, 0.2), (0.1, 0.1, 0.1)),
                       ((0.1, 0.6, 0.2, 0.1), (0.05, 0.05, 0.05)),
                       ((0.5, 0.1, 0.4, 0.0), (0.2, 0.05, 0.1))]:
        obs = simulate_counts(CHAgent("p", "level_k", alpha=alpha, epsilon=eps), games, 500, seed=2)
        # the likelihood is multimodal; the fit is global by construction (no restarts)
        f = fit_level_k(obs)
        print(f"alpha={alpha} eps={eps} -> alpha_hat={np.round(f.alpha, 3).tolist()} "
              f"eps_hat={np.round(f.epsilon, 3).tolist()} max|err alpha|="
              f"{np.max(np.abs(np.array(f.alpha) - alpha)):.3f} NLL={f.neg_log_likelihood:.2f} "
              f"identified={f.identified}")

    players = [f"llm{i}" for i in range(6)]
    mechanisms = ["baseline", "chat", "memory", "chat_memory"]
    data = {}
    for pi, p in enumerate(players):
        for mi, m in enumerate(mechanisms):
            agent = CHAgent(p, "poisson", lam=0.3 + 0.4 * pi + 0.1 * mi)
            data[(p, m)] = simulate_counts(agent, cat, 30, seed=derive_seed(pi, mi))
    for model, fn in (("level_k", fit_level_k), ("poisson", fit_poisson_ch)):
        t = time.perf_counter()
        for _, obs in enumerate_cells(data):
            fn(obs)
        pooled = time.perf_counter() - t
        t = time.perf_counter()
        for (p, m), obs in data.items():
            for gid in obs.game_ids:
                fn(obs.subset([gid]))
        per_game = time.perf_counter() - t
        print(f"\n{model}: 24 pooled fits (6 players x 4 mechanisms, 15 games) "
              f"{pooled:.2f}s; 360 per-game fits {per_game:.2f}s")


if __name__ == "__main__":
    main()
