"""CHBench MLE fits: recovery of known agents, determinism, observations CSV."""

from __future__ import annotations

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.fit import (
    CHAgent,
    fit_level_k,
    fit_poisson_ch,
    level_kl,
    observations_from_csv,
    simulate_counts,
    simulate_rounds,
    write_observations_csv,
)

CAT = build_catalogue()


@pytest.mark.parametrize("lam,n_per_role", [(0.5, 67), (1.5, 67), (3.0, 200)])
def test_poisson_recovery(lam: float, n_per_role: int) -> None:
    # Stated tolerance |λ̂ − λ| ≤ 0.35. Pooled actions: 15 games × 2 roles × n_per_role = 2010
    # for λ = 0.5, 1.5; 6000 for λ = 3, where k̂ = 4 makes the likelihood flat in λ (at 2010
    # actions the 95th percentile of λ̂ over 20 seeds is 3.5).
    obs = simulate_counts(CHAgent("p", "poisson", lam=lam), CAT, n_per_role, seed=11)
    fit = fit_poisson_ch(obs, seed=0)
    assert abs(fit.lam - lam) <= 0.35
    assert sum(fit.level_distribution) == pytest.approx(1.0)


def _random_games(n: int, seed: int) -> dict[int, NormalFormGame]:
    rng = np.random.default_rng(seed)
    return {
        i + 1: NormalFormGame(rng.integers(0, 10, (3, 3)).astype(float), rng.integers(0, 10, (3, 3)).astype(float))
        for i in range(n)
    }


@pytest.mark.parametrize(
    "alpha,eps",
    [((0.2, 0.3, 0.3, 0.2), (0.1, 0.1, 0.1)), ((0.1, 0.6, 0.2, 0.1), (0.05, 0.05, 0.05))],
)
def test_level_k_recovery(alpha, eps) -> None:
    # In the catalogue levels 1..3 mostly coincide (α not identifiable there), so recovery uses
    # 20 random 3×3 games × 2 roles × 500 = 20,000 actions; stated tolerance max|α̂ − α| ≤ 0.1.
    obs = simulate_counts(CHAgent("p", "level_k", alpha=alpha, epsilon=eps), _random_games(20, 5), 500, seed=2)
    fit = fit_level_k(obs, seed=0)
    assert np.max(np.abs(np.array(fit.alpha) - alpha)) <= 0.1
    assert sum(fit.alpha) == pytest.approx(1.0)
    assert fit.neg_log_likelihood <= fit_level_k(obs, restarts=1, seed=3).neg_log_likelihood + 1e-6


def test_determinism_and_csv_roundtrip(tmp_path) -> None:
    a = CHAgent("alice", "poisson", lam=1.2)
    b = CHAgent("bob", "level_k", alpha=(0.3, 0.4, 0.2, 0.1), epsilon=(0.1, 0.1, 0.1))
    rows = simulate_rounds(CAT, a, b, 30, seed=4) + simulate_rounds(CAT, b, a, 30, seed=5)
    assert rows == simulate_rounds(CAT, a, b, 30, seed=4) + simulate_rounds(CAT, b, a, 30, seed=5)
    p = tmp_path / "obs.csv"
    write_observations_csv(p, rows)
    obs = observations_from_csv(p, CAT)
    assert set(obs) == {"alice", "bob"}
    assert obs["alice"].n_actions_observed == 15 * 60
    f1 = fit_level_k(obs["bob"], seed=7)
    f2 = fit_level_k(obs["bob"], seed=7)
    assert f1 == f2
    g1, g2 = fit_poisson_ch(obs["alice"], seed=7), fit_poisson_ch(obs["alice"], seed=7)
    assert g1 == g2
    assert level_kl(obs["bob"], f1).shape == (2, 15, 3)
    d = g1.to_dict()
    assert {"lambda", "level_distribution", "mean_level", "neg_log_likelihood", "k_hat"} <= set(d)


def test_csv_rejects_bad_input(tmp_path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("game_id,round,row_player,col_player,row_action,col_action\n1,1,a,b,A,Z\n")
    with pytest.raises(InputError, match="action"):
        observations_from_csv(p, CAT)
    p.write_text("game_id,round,row_player\n1,1,a\n")
    with pytest.raises(InputError, match="missing column"):
        observations_from_csv(p, CAT)
    p.write_text("game_id,round,row_player,col_player,row_action,col_action\n42,1,a,b,A,A\n")
    with pytest.raises(InputError, match="not in the catalogue"):
        observations_from_csv(p, CAT)
