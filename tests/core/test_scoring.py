"""The normalised scores of the scorecard (stratbench.scoring): the formula's fixed points, the
ratio of means, the joint bootstrap, paired differences, and the reader of scorecard.json."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.errors import InputError
from stratbench.scoring import (
    SCORECARD_VERSION,
    UnitScores,
    normalized,
    normalized_score,
    paired_difference,
    raw_mean,
    read_scorecard,
)


def test_formula_fixed_points_for_both_directions():
    # higher is better (PAR %): uniform 6.25, oracle 100
    assert normalized(6.25, 6.25, 100.0) == 0.0
    assert normalized(100.0, 6.25, 100.0) == 100.0
    assert normalized(53.125, 6.25, 100.0) == pytest.approx(50.0)
    # lower is better (exploitability, regret): chance 0.2, optimal 0
    assert normalized(0.1, 0.2, 0.0) == pytest.approx(50.0)
    assert normalized(0.3, 0.2, 0.0) == pytest.approx(-50.0)  # worse than chance is kept, not clipped
    assert normalized(1.0, 0.5, 0.5) is None  # references that coincide cannot normalise


def test_score_is_a_ratio_of_means_not_a_mean_of_ratios():
    # unit 2's chance is nearly optimal: a mean of per-unit ratios would be dominated by it
    t = UnitScores.of([("g1", 0.5, 1.0, 0.0), ("g2", 0.0, 0.001, 0.0)])
    score, ci = normalized_score(t, seed=0)
    assert score == pytest.approx(100 * (0.25 - 0.5005) / (0.0 - 0.5005))
    assert ci is not None and ci[0] <= score <= ci[1]


def test_bootstrap_is_seeded_and_degenerate_cases_are_exact():
    rng = np.random.default_rng(3)
    rows = [(i, float(v), float(c), 0.0) for i, (v, c) in enumerate(zip(rng.uniform(0, 1, 30), rng.uniform(1, 2, 30)))]
    t = UnitScores.of(rows)
    assert normalized_score(t, seed=5) == normalized_score(t, seed=5)
    assert normalized_score(t, seed=5)[1] != normalized_score(t, seed=6)[1]
    optimal = UnitScores.of([(i, 0.0, c, 0.0) for i, _, c, _ in rows])
    assert normalized_score(optimal)[0] == 100.0 and normalized_score(optimal)[1] == pytest.approx([100.0, 100.0])
    assert normalized_score(UnitScores.of([])) == (None, None)
    assert normalized_score(UnitScores.of([("only", 0.5, 1.0, 0.0)])) == (50.0, [50.0, 50.0])
    assert raw_mean(t)[0] == pytest.approx(float(np.mean([r[1] for r in rows])))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(1.5, 3)), min_size=2, max_size=25),
       st.floats(0.5, 4), st.floats(-2, 2))
def test_score_is_invariant_to_affine_changes_of_the_metric(rows, scale, shift):
    """Rescaling a metric (payoffs ×2, PAR in % or fractions) leaves every score and CI unchanged."""
    t = UnitScores.of([(i, v, c, 0.0) for i, (v, c) in enumerate(rows)])
    u = UnitScores.of([(i, scale * v + shift, scale * c + shift, shift) for i, (v, c) in enumerate(rows)])
    (s1, ci1), (s2, ci2) = normalized_score(t, seed=1, n_boot=200), normalized_score(u, seed=1, n_boot=200)
    assert s1 == pytest.approx(s2, abs=1e-6)
    assert ci1 is not None and ci2 is not None
    assert ci1 == pytest.approx(ci2, abs=1e-6)


def test_paired_difference_uses_shared_units_and_resamples_them_jointly():
    a = UnitScores.of([(g, 0.1 * g, 1.0, 0.0) for g in range(10)])
    same = paired_difference(a, a)
    assert same == (0.0, [0.0, 0.0], 10)
    better = UnitScores.of([(g, 0.1 * g - 0.05, 1.0, 0.0) for g in range(2, 12)])  # units 10, 11 not in A
    diff, ci, n = paired_difference(a, better)
    assert n == 8
    assert diff == pytest.approx(5.0)  # 0.05 less exploitable on every shared game = +5 points
    assert ci == pytest.approx([5.0, 5.0])  # a constant paired shift has no sampling noise
    assert paired_difference(a, UnitScores.of([("x", 0.0, 1.0, 0.0)])) == (None, None, 0)


def _card(**over):
    card = {"version": SCORECARD_VERSION, "budget": "quick", "seed": 0, "suites": [], "players": [], "cells": []}
    card.update(over)
    return card


@pytest.mark.parametrize("content", [
    None,  # no file
    "{",  # truncated
    json.dumps(_card(version=999)),
    json.dumps(_card(cells={"a": 1})),
    json.dumps(_card(cells=[1, 2])),
    json.dumps([1]),
    "[" * 100000,
])
def test_read_scorecard_refuses_broken_files_in_one_line(tmp_path, content):
    if content is not None:
        (tmp_path / "scorecard.json").write_text(content)
    with pytest.raises(InputError, match="no readable scorecard.json"):
        read_scorecard(tmp_path)


def test_read_scorecard_reads_a_good_file(tmp_path):
    (tmp_path / "scorecard.json").write_text(json.dumps(_card()))
    assert read_scorecard(tmp_path)["budget"] == "quick"
