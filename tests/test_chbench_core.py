"""CHBench core: catalogue (transpose reading), level strategies, MLE fits and recovery."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.chbench.catalogue import (
    build_catalogue,
    intro_example,
    load_corrections,
    recoverable,
    symmetric_2x2_type,
)
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
from stratbench.suites.chbench.hierarchy import (
    kl_consecutive,
    level_k_strategies,
    poisson_ch_strategies,
    poisson_weights,
    predicted_strategy,
)

CAT = build_catalogue()
BY_ID = {g.id: g for g in CAT}


def test_intro_example_reproduced() -> None:
    ex = intro_example()
    np.testing.assert_allclose(ex.ne_row, [1 / 3, 2 / 3])
    np.testing.assert_allclose(ex.ne_col, [1 / 3, 2 / 3])
    assert ex.u_row_uniform_vs_ne == pytest.approx(2 / 3)
    assert ex.u_col_uniform_vs_ne == pytest.approx(-1 / 6)
    assert ex.u_row_uniform_vs_br == pytest.approx(3.0)
    assert ex.u_col_uniform_vs_br == pytest.approx(0.5)
    assert ex.pure_equilibria == [(0, 1), (1, 0)]


def test_catalogue_classic_games_by_structure() -> None:
    assert len(CAT) == 15
    assert symmetric_2x2_type(BY_ID[1].game) == "prisoners_dilemma"
    assert symmetric_2x2_type(BY_ID[2].game) == "coordination"
    assert symmetric_2x2_type(BY_ID[3].game) == "chicken"  # snowdrift
    assert symmetric_2x2_type(BY_ID[6].game) == "chicken"  # hawk-dove
    # hawk-dove: mutual hawk (first action) is the worst outcome and negative
    a6 = BY_ID[6].game.payoff_row
    assert a6[0, 0] < 0 and a6[0, 0] == a6.min()
    for g in CAT:
        if g.symmetric:
            np.testing.assert_array_equal(g.game.payoff_col, g.game.payoff_row.T)


def test_uncertain_games_flagged() -> None:
    flagged = {g.id for g in CAT if g.uncertain}
    assert flagged == {8, 9, 10, 12, 14, 15}
    assert {g.id for g in recoverable(CAT)} == {1, 2, 3, 4, 5, 6, 7, 11, 13}
    np.testing.assert_array_equal(BY_ID[15].game.payoff_row, [[3, 4, 2], [4, 4, 1], [5, 5, 3]])
    np.testing.assert_array_equal(BY_ID[15].game.payoff_col, [[5, 4, 2], [3, 4, 1], [2, 1, 3]])
    assert "Table-2" in (BY_ID[15].uncertain or "")


def test_corrections_load_and_reject(tmp_path) -> None:
    good = tmp_path / "c.json"
    good.write_text(json.dumps({"8": {"payoff_row": [[1, 2], [3, 4]], "payoff_col": [[0, 1], [1, 0]]}}))
    cat = load_corrections(good, CAT)
    g8 = {g.id: g for g in cat}[8]
    assert g8.uncertain is None and not g8.symmetric
    np.testing.assert_array_equal(g8.game.payoff_col, [[0, 1], [1, 0]])
    bad_cases = [
        "not json",
        json.dumps([1, 2]),
        json.dumps({"99": {"payoff_row": [[1]], "payoff_col": [[1]]}}),
        json.dumps({"8": {"payoff_row": [[1, 2], [3, 4]]}}),
        json.dumps({"8": {"payoff_row": [[1, 2, 3]], "payoff_col": [[1, 2, 3]]}}),
        json.dumps({"8": {"payoff_row": [[1, "x"], [3, 4]], "payoff_col": [[1, 2], [3, 4]]}}),
    ]
    for i, text in enumerate(bad_cases):
        p = tmp_path / f"bad{i}.json"
        p.write_text(text)
        with pytest.raises(InputError) as e:
            load_corrections(p, CAT)
        assert "\n" not in str(e.value)
    with pytest.raises(InputError):
        load_corrections(tmp_path / "missing.json", CAT)


# Asymmetric 2×3 test game, hand-checked.
# Row payoffs A (rows U, D; cols L, M, R) and column payoffs B.
HAND = NormalFormGame(
    np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 1.0]]),
    np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 3.0]]),
)


def test_level_k_hand_checked() -> None:
    # level 1 row vs uniform col: U = 4/3, D = 1 → U. level 1 col vs uniform row: L 1, M 1, R 1.5 → R.
    # level 2 row vs col level 1 (R w.p. 1−ε, L/M ε/2): U = 1.5ε+1−ε, D = ε+1−ε → U iff ε>0.
    # with ε = 0 ties U=D=1 → uniform. level 2 col vs row level 1 (U): L → L.
    s_row = level_k_strategies(HAND, "row", 3, 0.0)
    s_col = level_k_strategies(HAND, "col", 3, 0.0)
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [1, 0], [0.5, 0.5]])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0, 0, 1], [1, 0, 0]])
    s_row = level_k_strategies(HAND, "row", 3, [0.2, 0.2])
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [0.8, 0.2], [0.8, 0.2]])
    s_col = level_k_strategies(HAND, "col", 3, [0.2, 0.2])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    mix = predicted_strategy(s_col, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(mix, [1 / 6 + 0.025 + 0.2, 1 / 6 + 0.025 + 0.025, 1 / 6 + 0.2 + 0.025])


def test_poisson_hand_checked() -> None:
    # λ = 1, k̂ = 3: level 2 col faces row mix of levels 0, 1 weighted 1:1 → row (0.75, 0.25):
    # L 1.5, M 1.0, R 0.75 → L. level 2 row faces col (1/6, 1/6, 2/3): U 0.5+0.667, D 0.333+0.667 → U.
    np.testing.assert_allclose(poisson_weights(1.0, 3), np.array([1, 1, 0.5]) / 2.5)
    s_row = poisson_ch_strategies(HAND, "row", 3, 1.0)
    s_col = poisson_ch_strategies(HAND, "col", 3, 1.0)
    np.testing.assert_allclose(s_row, [[0.5, 0.5], [1, 0], [1, 0]])
    np.testing.assert_allclose(s_col, [[1 / 3] * 3, [0, 0, 1], [1, 0, 0]])
    kl = kl_consecutive(s_row)
    assert kl[1] == 0.0 and kl[0] == np.inf  # uniform vs pure: support mismatch


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
