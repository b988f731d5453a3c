"""Mixed-strategy answers: JSON objects and lists, fractions, percentages, renormalisation flagged, vectors that are
neither probabilities nor percentages refused, never eval; total on arbitrary text. Strict and flexible answers pinned
on hand-written replies."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.parsing import parse_action
from stratbench.suites.nashgap.answers import DistributionParse, parse_distribution, parse_kind

L3 = ("0", "1", "2")
L40 = tuple(str(i) for i in range(40))
SETTINGS = settings(max_examples=200, deadline=None)


def labels(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


def assert_probs(res: DistributionParse, expected, renormalized=False, tol=1e-12):
    assert res.ok and res.error is None, res
    assert len(res.probs) == len(expected)
    for x, y in zip(res.probs, expected):
        assert abs(x - y) <= tol, (res.probs, expected)
    assert res.renormalized is renormalized


def assert_dist_failure(res: DistributionParse, fragment: str | None = None):
    assert res.probs is None
    assert not res.ok
    assert isinstance(res.error, str) and res.error
    if fragment is not None:
        assert fragment in res.error, res.error


prob_vectors = st.lists(
    st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=12
).filter(lambda v: math.fsum(v) > 0)


def _check_distribution_result(res: DistributionParse, n: int) -> None:
    assert isinstance(res, DistributionParse)
    if res.probs is None:
        assert isinstance(res.error, str) and res.error
    else:
        assert res.error is None
        assert len(res.probs) == n
        assert all(math.isfinite(p) and p >= 0 for p in res.probs)
        assert abs(math.fsum(res.probs) - 1.0) <= 1e-12


_distish = st.lists(
    st.sampled_from(["[", "]", "{", "}", ",", " ", "0", "1", "0.5", "1/3", "1/0", "50%", "-",
                     "NaN", "Infinity", "'0'", '"1"', '"action 2"', ":", "1e5", "e", "."]),
    max_size=25,
).map("".join)


def test_json_object():
    res = parse_distribution('My strategy: {"0": 0.2, "1": 0.3, "2": 0.5}', L3)
    assert_probs(res, [0.2, 0.3, 0.5])
    assert res.raw_sum == pytest.approx(1.0, abs=1e-12)


def test_json_list():
    assert_probs(parse_distribution("[0.25, 0.25, 0.5]", L3), [0.25, 0.25, 0.5])


def test_last_one_wins():
    text = "First guess [0.2, 0.3, 0.5], but actually\n{\"0\": 1, \"1\": 0, \"2\": 0}"
    assert_probs(parse_distribution(text, L3), [1.0, 0.0, 0.0])
    text2 = '{"0": 0.1, "1": 0.1, "2": 0.8} no, final: [0.5, 0.5, 0]'
    assert_probs(parse_distribution(text2, L3), [0.5, 0.5, 0.0])


def test_fractions():
    res = parse_distribution("[1/3, 1/3, 1/3]", L3)
    assert_probs(res, [1 / 3] * 3)
    res = parse_distribution('{"0": 1/4, "1": 3/4}', ("0", "1"))
    assert_probs(res, [0.25, 0.75])
    res = parse_distribution("[2/7, 5/7]", ("0", "1"))
    assert_probs(res, [2 / 7, 5 / 7])


def test_percentages():
    assert_probs(parse_distribution("[25%, 25%, 50%]", L3), [0.25, 0.25, 0.5])
    assert_probs(parse_distribution('{"0": "30%", "1": "70%"}', ("0", "1")), [0.3, 0.7])
    assert_probs(parse_distribution('{"0": 40 %, "1": 60 %}', ("0", "1")), [0.4, 0.6])


def test_single_quotes():
    assert_probs(parse_distribution("{'0': 0.5, '1': 0.5}", ("0", "1")), [0.5, 0.5])


def test_action_key_prefix_and_case():
    text = '{"action 0": 0.6, "Action 1": 0.4}'
    assert_probs(parse_distribution(text, ("0", "1")), [0.6, 0.4])
    text = '{"row 2": 1.0}'
    assert_probs(parse_distribution(text, L3), [0.0, 0.0, 1.0])
    text = '{"rock": 0.5, "PAPER": 0.5}'
    assert_probs(parse_distribution(text, ("Rock", "Paper", "Scissors")), [0.5, 0.5, 0.0])


def test_missing_keys_are_zero():
    res = parse_distribution('{"2": 0.75, "0": 0.25}', L3)
    assert_probs(res, [0.25, 0.0, 0.75])


def test_string_numbers_in_object():
    assert_probs(parse_distribution('{"0": "0.5", "1": "0.5"}', ("0", "1")), [0.5, 0.5])


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[NaN, 0.5, 0.5]", "non-finite"),
        ('{"0": NaN, "1": 1}', "non-finite"),
        ("[Infinity, 0, 0]", "non-finite"),
        ("[-Infinity, 0, 0]", "non-finite"),
        ("[1e400, 0, 0]", "non-finite"),
        ('{"0": "nan", "1": 0.5, "2": 0.5}', "non-finite"),
        ('{"0": "inf"}', "non-finite"),
        ("[-0.5, 1.0, 0.5]", "negative"),
        ('{"0": -0.1, "1": 1.1}', "negative"),
        ("[0, 0, 0]", "sum to 0"),
        ('{"0": 0, "1": 0.0}', "sum to 0"),
        ('{"0": "lots", "1": 0.5}', "not a number"),
    ],
)
def test_rejected_distributions(text, fragment):
    assert_dist_failure(parse_distribution(text, L3), fragment)


def test_renormalization_recorded():
    res = parse_distribution("[0.9, 0.9, 0.9]", L3)
    assert_probs(res, [1 / 3] * 3, renormalized=True)
    assert res.raw_sum == pytest.approx(2.7, abs=1e-12)
    res = parse_distribution("[30, 30, 39]", L3)  # percentages off by rounding
    assert_probs(res, [30 / 99, 30 / 99, 39 / 99], renormalized=True)
    assert res.raw_sum == 99.0


def test_percentages_without_percent_signs():
    res = parse_distribution('{"0": 25, "1": 25, "2": 50}', L3)
    assert_probs(res, [0.25, 0.25, 0.5])
    assert res.raw_sum == 100.0
    assert_probs(parse_distribution("[100, 0, 0]", L3), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("text", [
    "[12345678, 23456789, 34567890]",  # seen with SmolLM2: three 8-digit numbers, summing to millions
    '{"0": 12345678, "1": 23456789, "2": 34567890}',
    '{"0": 2, "1": 6}',  # weights: neither probabilities nor percentages
    "[1.5, 0, 0]",
    "[50, 60, 70]",  # percentages summing to 180
    "[150, 0, 0]",
])
def test_neither_probabilities_nor_percentages(text):
    assert_dist_failure(parse_distribution(text, L3 if text.count(",") == 2 else ("0", "1")),
                        "neither probabilities")


def test_properly_normalised_not_flagged():
    res = parse_distribution("[0.1, 0.2, 0.7]", L3)
    assert res.renormalized is False
    assert res.raw_sum == pytest.approx(1.0, abs=1e-12)
    res = parse_distribution("[1/3, 1/3, 1/3]", L3)
    assert res.renormalized is False


@pytest.mark.parametrize(
    "text",
    [
        "[0.5, 0.5]",
        "[0.25, 0.25, 0.25, 0.25]",
        '{"3": 1.0}',
        '{"0": 0.5, "banana": 0.5}',
        "[0.5, true, 0.5]",
        '["a", "b", "c"]',
        "{}",
        "I would mix evenly.",
        "[0.5, 0.5, ]",
    ],
)
def test_not_a_distribution(text):
    res = parse_distribution(text, L3)
    assert_dist_failure(res)
    assert "no probability vector" in res.error


def test_wrong_length_skipped_for_earlier_valid():
    # The last candidate has the wrong length, so the earlier valid one is used.
    res = parse_distribution("[0.2, 0.8] then [0.1, 0.1, 0.8]", ("0", "1"))
    assert_probs(res, [0.2, 0.8])


@pytest.mark.parametrize("text", [None, "", "  \n"])
def test_empty_distribution(text):
    assert_dist_failure(parse_distribution(text, L3), "empty response")


def test_overflowing_sum_does_not_raise():
    res = parse_distribution("[1e308, 1e308]", ("0", "1"))
    assert res.probs is None or math.isclose(sum(res.probs), 1.0)


def test_huge_integer_does_not_raise():
    res = parse_distribution("[1" + "0" * 400 + ", 1]", ("0", "1"))
    assert isinstance(res, DistributionParse)


def test_integer_over_digit_limit_does_not_raise():
    res = parse_distribution("[1" + "0" * 5000 + ", 1]", ("0", "1"))
    assert isinstance(res, DistributionParse)


@SETTINGS
@given(vec=prob_vectors, as_object=st.booleans())
def test_round_trip_random_vectors(vec, as_object):
    n = len(vec)
    lab = labels(n)
    if as_object:
        body = "{" + ", ".join(f'"{i}": {x!r}' for i, x in enumerate(vec)) + "}"
    else:
        body = "[" + ", ".join(repr(x) for x in vec) + "]"
    res = parse_distribution(f"Here is my strategy:\n{body}\n", lab)
    assert res.ok, res
    total = math.fsum(vec)
    for got, x in zip(res.probs, vec):
        assert abs(got - x / total) <= 1e-12
    assert abs(math.fsum(res.probs) - 1.0) <= 1e-12
    assert all(p >= 0 for p in res.probs)
    assert res.raw_sum == total
    assert res.renormalized == (abs(total - 1.0) > 1e-9)


@SETTINGS
@given(vec=prob_vectors)
def test_json_dumps_object_round_trip(vec):
    total = math.fsum(vec)
    body = json.dumps({f"action {i}": x for i, x in enumerate(vec)})
    res = parse_distribution(body, labels(len(vec)))
    assert res.ok
    assert all(abs(g - x / total) <= 1e-12 for g, x in zip(res.probs, vec))


@SETTINGS
@given(text=st.text(max_size=300), n=st.integers(1, 6))
def test_parse_distribution_total_on_arbitrary_text(text, n):
    _check_distribution_result(parse_distribution(text, labels(n)), n)


@SETTINGS
@given(text=_distish)
def test_parse_distribution_total_on_json_like_text(text):
    _check_distribution_result(parse_distribution(text, L3), 3)


# -- strict and flexible, on hand-written answers -------------------------------------------------

PURE_CASES = [
    # (reply, finish_reason, expected kind or None for a parse failure, action)
    ("I compare the rows.\nAction: 1", "stop", "strict", 1),
    ("Action: 2", "stop", "strict", 2),
    ("Action: 2\n\n  ", "stop", "strict", 2),  # trailing blank lines are not a line
    ("  Action: 0  ", None, "strict", 0),
    ("Action: 1", "length", "flexible", 1),  # cut at the token limit: never strict
    ("Action: 1.", "stop", "flexible", 1),
    ("**Action: 1**", "stop", "flexible", 1),
    ("action: 1", "stop", "flexible", 1),
    ("Action: 1\nThat is my answer.", "stop", "flexible", 1),
    ("I choose 2", "stop", "flexible", 2),
    ("The answer is: 0", "stop", "flexible", 0),
    ("2", "stop", "flexible", 2),
    ("Final answer: 1", "stop", "flexible", 1),
    ("", "stop", None, None),
    ("   \n ", "stop", None, None),
    ("answer with 0 as the last line.", "stop", None, None),
    ("The format needs exactly 2 placeholders in the answer", "stop", None, None),
    ("Premise: [1] You can only choose", "stop", None, None),
    ("Action: 7", "stop", None, None),
]


@pytest.mark.parametrize("text, finish, kind, action", PURE_CASES)
def test_pure_strict_or_flexible(text, finish, kind, action):
    p = parse_action(text, L3)
    if kind is None:
        assert not p.ok, p
        return
    assert p.ok and p.action == action, p
    assert parse_kind(text, L3, "pure", p.action, finish) == kind


MIXED_CASES = [
    ('Mixing keeps me safe.\n{"0": 0.2, "1": 0.3, "2": 0.5}', "stop", "strict"),
    ('{"0": 0.2, "1": 0.3, "2": 0.5}', None, "strict"),
    ('{"2": 0.5, "0": 0.25, "1": 0.25}', "stop", "strict"),  # key order is free
    ('{"0": 0.3333333, "1": 0.3333333, "2": 0.3333334}', "stop", "strict"),
    ('{"0": 1, "1": 0, "2": 0}', "stop", "strict"),
    ('{"0": 0.2, "1": 0.3, "2": 0.5}', "length", "flexible"),  # cut at the token limit
    ('{"0": 0.33, "1": 0.33, "2": 0.33}', "stop", "flexible"),  # sums to 0.99: renormalised
    ('{"0": 0.9, "1": 0.9, "2": 0.9}', "stop", "flexible"),
    ('{"0": 0.5, "2": 0.5}', "stop", "flexible"),  # not every action
    ("{'0': 0.2, '1': 0.3, '2': 0.5}", "stop", "flexible"),  # not JSON
    ('{"0": 1/4, "1": 1/4, "2": 1/2}', "stop", "flexible"),
    ('{"0": "20%", "1": "30%", "2": "50%"}', "stop", "flexible"),
    ('{"0": 25, "1": 25, "2": 50}', "stop", "flexible"),  # percentages
    ('{"action 0": 0.2, "action 1": 0.3, "action 2": 0.5}', "stop", "flexible"),
    ("[0.2, 0.3, 0.5]", "stop", "flexible"),
    ('Strategy: {"0": 0.2, "1": 0.3, "2": 0.5}', "stop", "flexible"),  # not the line alone
    ('{"0": 0.2, "1": 0.3, "2": 0.5}\nI hope this helps.', "stop", "flexible"),
    ('```json\n{"0": 0.2, "1": 0.3, "2": 0.5}\n```', "stop", "flexible"),
    ("", "stop", None),
    ("[12345678, 23456789, 34567890]", "stop", None),
    ('{"0": NaN, "1": 0.5, "2": 0.5}', "stop", None),
    ("I would mix evenly.", "stop", None),
]


@pytest.mark.parametrize("text, finish, kind", MIXED_CASES)
def test_mixed_strict_or_flexible(text, finish, kind):
    q = parse_distribution(text, L3)
    if kind is None:
        assert not q.ok, q
        return
    assert q.ok, q
    assert parse_kind(text, L3, "mixed", None, finish) == kind
