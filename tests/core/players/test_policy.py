"""The player layer: one definition of the policies, one exact policy from a scored label set.

Suites may not keep their own copies (a new suite reproduced the prefix-label bug by copying one):
the guard below fails when a suite module defines the policy names or renormalises log-probs itself.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratbench.errors import InputError
from stratbench.models.base import ScoreResult
from stratbench.players import POLICIES, check_policy, exact_policy, scored_policy

SRC = Path(__file__).resolve().parents[3] / "src" / "stratbench"


def test_policy_names_and_their_check():
    assert POLICIES == ("logprob", "choice", "sample")
    for p in (None, *POLICIES):
        check_policy(p)
    with pytest.raises(InputError, match=r"^unknown --policy 'maybe'; use logprob, choice or sample$"):
        check_policy("maybe")
    with pytest.raises(InputError, match=r"^unknown model 'x': policy 'LOGPROB'"):
        check_policy("LOGPROB", "model 'x': policy")


@given(st.lists(st.floats(min_value=-60, max_value=-0.01), min_size=1, max_size=30))
def test_exact_policy_is_the_renormalised_label_probabilities(lps):
    p = np.exp(np.asarray(lps))
    pol = exact_policy(lps)
    if p.sum() > 1 + 1e-6:  # overlapping labels: refused, never rescaled
        assert isinstance(pol, str) and "sum to" in pol
        return
    assert not isinstance(pol, str)
    assert np.allclose(pol.probs, p / p.sum(), rtol=1e-12, atol=1e-300)
    assert math.isclose(pol.mass, float(p.sum()), rel_tol=1e-12)
    assert math.isclose(sum(pol.probs), 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("lps,why", [
    (None, "no log-probabilities"),
    ([], "not a number"),
    ([-1.0, float("nan")], "not a number"),
    ([-1.0, 0.5], "above 0"),
    ([float("-inf"), float("-inf")], "no legal label"),
    ([-0.1, -0.2], "sum to"),
])
def test_no_policy_from_numbers_that_are_no_probabilities(lps, why):
    pol = exact_policy(lps)
    assert isinstance(pol, str) and why in pol


def test_scored_policy_keeps_the_calls_own_error():
    assert scored_policy(ScoreResult(None, error="HTTP 500: boom")) == "HTTP 500: boom"
    assert scored_policy(ScoreResult([0.5, -1.0])) == exact_policy([0.5, -1.0])
    pol = scored_policy(ScoreResult([math.log(0.3), math.log(0.6)]))
    assert not isinstance(pol, str) and np.allclose(pol.probs, [1 / 3, 2 / 3]) and math.isclose(pol.mass, 0.9)


def test_no_suite_keeps_its_own_copy_of_the_policies_or_the_renormalisation():
    copies = []
    for path in sorted((SRC / "suites").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pattern in (r"^POLICIES\s*=", r"^Policy\s*=", r"^def _?(softmax|policy|label_mass)\(",
                        r"np\.logaddexp\.reduce\(.*logprobs", r"np\.exp\(.*logprobs"):
            copies += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in re.finditer(pattern, text, re.M)]
    assert not copies, copies
