"""The tabular R-max baseline against the paper's Tabular rows."""

from __future__ import annotations

import numpy as np
import pytest

from stratbench.suites.tom.tabular import PAPER_TABULAR, run_baseline

EPISODES = 300
SEED = 0


# ---------------------------------------------------------------- the paper's Tabular rows
@pytest.fixture(scope="module")
def tabular_results() -> dict:
    return {key: run_baseline(key[0], key[1], episodes=EPISODES, seed=SEED) for key in PAPER_TABULAR}


@pytest.mark.parametrize("key", list(PAPER_TABULAR), ids=lambda k: f"{k[0]}-{k[1]}")
def test_tabular_regret_matches_paper(tabular_results: dict, key: tuple[str, str]) -> None:
    res = tabular_results[key]
    assert res["n_episodes"] >= 300
    assert res["regret_per_step"] == pytest.approx(PAPER_TABULAR[key]["regret"], abs=0.04)


@pytest.mark.parametrize("key", list(PAPER_TABULAR), ids=lambda k: f"{k[0]}-{k[1]}")
def test_tabular_tom_accuracy_matches_paper(tabular_results: dict, key: tuple[str, str]) -> None:
    res = tabular_results[key]
    assert 100 * res["tom_accuracy"] == pytest.approx(PAPER_TABULAR[key]["tom_pct"], abs=1.5)


def test_tabular_reproducible_and_shaped() -> None:
    a = run_baseline("ipd", "tft", episodes=20, seed=7)
    b = run_baseline("ipd", "tft", episodes=20, seed=7)
    assert a["regret_per_step"] == b["regret_per_step"]
    assert np.array_equal(a["episode_regret_per_step"], b["episode_regret_per_step"])
    assert a["regret_curve"].shape == (100,) and a["tom_accuracy_curve"].shape == (100,)
    lo, hi = a["regret_per_step_ci95"]
    assert lo <= a["regret_per_step"] <= hi
    assert a["regret_curve"].mean() == pytest.approx(a["regret_per_step"])
