"""The project's one bootstrap: intervals of means, stratified means, differences and refitted
statistics, each seeded and each bracketing what it estimates."""

from __future__ import annotations

import numpy as np
import pytest

from stratbench.stats import (
    bootstrap_ci,
    bootstrap_diff,
    bootstrap_statistic,
    describe,
    percentile_interval,
    stratified_bootstrap_ci,
)


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    x = np.random.default_rng(0).normal(2.0, 1.0, 50)
    lo, hi = bootstrap_ci(x, seed=3)
    assert lo < x.mean() < hi and hi - lo < 1.0
    assert bootstrap_ci(x, seed=3) == [lo, hi] and bootstrap_ci(x, seed=4) != [lo, hi]
    assert bootstrap_ci([]) is None and bootstrap_ci([1.5]) == [1.5, 1.5] and bootstrap_ci([2, 2, 2]) == [2.0, 2.0]


def test_stratified_bootstrap_ci_brackets_the_mean_of_seed_means():
    rng = np.random.default_rng(0)
    groups = [rng.normal(1.0, 1.0, 20), rng.normal(3.0, 1.0, 5)]
    lo, hi = stratified_bootstrap_ci(groups, seed=1)
    m = np.mean([g.mean() for g in groups])
    assert lo < m < hi and hi - lo < 2.0
    assert stratified_bootstrap_ci(groups, seed=1) == [lo, hi]
    assert stratified_bootstrap_ci([[2.0, 2.0], []]) == [2.0, 2.0]
    assert stratified_bootstrap_ci([[], []]) is None


def test_paired_difference_is_tighter_than_unpaired_when_units_share_difficulty():
    rng = np.random.default_rng(1)
    difficulty = rng.normal(0, 5, 40)  # shared by both runs: cancels out when paired
    a, b = difficulty + rng.normal(0, 0.1, 40), difficulty + 0.5 + rng.normal(0, 0.1, 40)
    d_p, (lo_p, hi_p) = bootstrap_diff(a, b, True, np.random.default_rng(0))
    d_u, (lo_u, hi_u) = bootstrap_diff(a, b, False, np.random.default_rng(0))
    assert d_p == pytest.approx(0.5, abs=0.05) and d_u == pytest.approx(d_p)
    assert 0 < lo_p < 0.5 < hi_p and hi_p - lo_p < (hi_u - lo_u) / 10
    assert lo_u < 0 < hi_u  # unpaired, the difficulty spread hides the difference


def test_bootstrap_statistic_skips_resamples_without_a_value():
    units = list(range(10))
    ci = bootstrap_statistic(units, lambda pick, b: float(np.median(pick)), 200, np.random.default_rng(0))
    assert ci is not None and ci[0] <= 4.5 <= ci[1]
    assert bootstrap_statistic(units, lambda pick, b: None, 20, np.random.default_rng(0)) is None


def test_percentile_interval_and_describe():
    assert percentile_interval(np.arange(101.0), 0.9) == pytest.approx([5.0, 95.0])
    assert describe([1.0, 3.0]) == {"mean": 2.0, "median": 2.0, "std": 1.0, "min": 1.0, "max": 3.0}
    assert describe([])["mean"] is None
