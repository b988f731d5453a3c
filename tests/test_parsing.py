"""Tests for stratbench.parsing: final-action and mixed-strategy parsers for model answers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.parsing import (
    ActionParse,
    DistributionParse,
    parse_action,
    parse_distribution,
)

L3 = ("0", "1", "2")
L40 = tuple(str(i) for i in range(40))
SETTINGS = settings(max_examples=200, deadline=None)


def labels(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


def assert_action(res: ActionParse, expected: int) -> None:
    assert res == ActionParse(expected, None), res
    assert res.ok


def assert_failure(res: ActionParse) -> None:
    assert res.action is None
    assert not res.ok
    assert isinstance(res.error, str) and res.error


# --------------------------------------------------------------------------------------------
# parse_action: examples
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("I choose 2, not 0", 2),
        ("Action: 1", 1),
        ("action: 0", 0),
        ("Action 0 is bad.\nAction: 2", 2),
        ("Answer: 0\nHmm, wait. Final answer: 2", 2),
        ("Row 1 looks tempting but action 0 is safer.\nFinal answer: 0", 0),
        ("**Answer:** 1", 1),
        ("**Answer**: 1", 1),
        ("The answer is 2.", 2),
        ("Final answer = 1", 1),
        ("Choice: action 2", 2),
        ("Decision: `1`", 1),
        ("Answer: (2)", 2),
        (r"So the result is \boxed{1}", 1),
        (r"\boxed{\text{2}}", 2),
        (r"Action: 0 ... on reflection \boxed{2}", 2),
        ("2", 2),
        ("  1.  \n", 1),
        ('"0"', 0),
        ("I will play 1.", 1),
        ("I'll go with 0", 0),
        ("I pick 0, no wait, I pick 2.", 2),
        ("Both are fine.\nI think 1 is the best.", 1),
    ],
)
def test_parse_action_examples(text, expected):
    assert_action(parse_action(text, L3), expected)


def test_explicit_beats_verbs_and_mentions():
    # an explicit statement outranks a later verb statement
    assert_action(parse_action("Answer: 1. Later I might choose 2", L3), 1)


def test_two_digit_action_with_many_labels():
    assert_action(parse_action("action 37", L40), 37)
    assert_action(parse_action("Action: 37", L40), 37)
    assert_action(parse_action("I choose 3 ... no, I choose 37", L40), 37)
    # "37" is never read as "3" (or "7")
    res = parse_action("action 37", L3)
    assert_failure(res)
    res = parse_action("Action: 37", L3)
    assert_failure(res)
    assert "37" in res.error and "not a legal action" in res.error


def test_illegal_final_answer_is_failure_not_guess():
    res = parse_action("Action 1 looks good. Final answer: 7", L3)
    assert_failure(res)
    assert "'7'" in res.error
    assert "not a legal action" in res.error
    res = parse_action(r"\boxed{-1}", L3)
    assert_failure(res)
    assert "not a legal action" in res.error


@pytest.mark.parametrize("text", [None, "", "   ", "\n\t\n"])
def test_empty_response(text):
    res = parse_action(text, L3)
    assert_failure(res)
    assert res.error == "empty response"


@pytest.mark.parametrize(
    "text",
    [
        "1.5",
        "0.5",
        "I like 1.5 better",
        "Action: 1.5",
        "maybe 0 or 1",
        "I have no idea.",
        "3",
        "12",
        "x1",
    ],
)
def test_parse_action_not_parsed(text):
    assert_failure(parse_action(text, L3))


def test_non_numeric_labels():
    lab = ("A1", "A2")
    assert_action(parse_action("Action: A2", lab), 1)
    assert_action(parse_action("I choose a1", lab), 0)  # case-insensitive when unambiguous
    assert_action(parse_action("A2", lab), 1)
    assert_action(parse_action("Thinking...\nA1 it is", lab), 0)
    assert_failure(parse_action("Action: 1", lab))
    assert_failure(parse_action("Action: A3", lab))
    assert_failure(parse_action("A1 or A2", lab))
    words = ("Rock", "Paper", "Scissors")
    assert_action(parse_action("I'll play **Paper**.", words), 1)
    assert_action(parse_action("Final answer: scissors", words), 2)


def test_case_sensitive_labels_prefer_exact():
    lab = ("a", "A")
    assert_action(parse_action("Action: A", lab), 1)
    assert_action(parse_action("Action: a", lab), 0)


def test_reasoning_after_final_answer():
    res = parse_action("Final answer: 1 because the other action is dominated.", L3)
    assert res.action == 1


# --------------------------------------------------------------------------------------------
# parse_action: properties
# --------------------------------------------------------------------------------------------

@SETTINGS
@given(data=st.data(), n=st.integers(1, 60))
def test_action_line_property(data, n):
    k = data.draw(st.integers(0, n - 1))
    lab = labels(n)
    assert_action(parse_action(f"blah blah\nAction: {k}", lab), k)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 60))
def test_final_answer_wins_property(data, n):
    k = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, 200))
    assert_action(parse_action(f"I pick {j}. Final answer: {k}", labels(n)), k)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 60))
def test_illegal_index_property(data, n):
    k = data.draw(st.integers(n, 10 * n + 100))
    res = parse_action(f"Action: {k}", labels(n))
    assert_failure(res)
    assert str(k) in res.error


@SETTINGS
@given(text=st.text(max_size=300), n=st.integers(1, 12))
def test_parse_action_total_on_arbitrary_text(text, n):
    lab = labels(n)
    res = parse_action(text, lab)
    assert isinstance(res, ActionParse)
    if res.action is None:
        assert isinstance(res.error, str) and res.error
    else:
        assert res.error is None
        assert isinstance(res.action, int) and 0 <= res.action < n


_answerish = st.lists(
    st.sampled_from(["Action:", "Answer", "answer is", "I choose", "\\boxed{", "**", "0", "1",
                     "2", "37", ".", "\n", " ", "action", "1.5", "final answer:", "{", "}"]),
    max_size=20,
).map("".join)


@SETTINGS
@given(text=_answerish)
def test_parse_action_total_on_answerish_text(text):
    res = parse_action(text, L3)
    assert (res.action is None) != (res.error is None)
    if res.action is not None:
        assert res.action in (0, 1, 2)


# --------------------------------------------------------------------------------------------
# parse_distribution: examples
# --------------------------------------------------------------------------------------------

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
    res = parse_distribution('{"0": 2, "1": 6}', ("0", "1"))
    assert_probs(res, [0.25, 0.75], renormalized=True)
    assert res.raw_sum == 8.0


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


# --------------------------------------------------------------------------------------------
# parse_distribution: properties
# --------------------------------------------------------------------------------------------

prob_vectors = st.lists(
    st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=12
).filter(lambda v: math.fsum(v) > 0)


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


def _check_distribution_result(res: DistributionParse, n: int) -> None:
    assert isinstance(res, DistributionParse)
    if res.probs is None:
        assert isinstance(res.error, str) and res.error
    else:
        assert res.error is None
        assert len(res.probs) == n
        assert all(math.isfinite(p) and p >= 0 for p in res.probs)
        assert abs(math.fsum(res.probs) - 1.0) <= 1e-12


@SETTINGS
@given(text=st.text(max_size=300), n=st.integers(1, 6))
def test_parse_distribution_total_on_arbitrary_text(text, n):
    _check_distribution_result(parse_distribution(text, labels(n)), n)


_distish = st.lists(
    st.sampled_from(["[", "]", "{", "}", ",", " ", "0", "1", "0.5", "1/3", "1/0", "50%", "-",
                     "NaN", "Infinity", "'0'", '"1"', '"action 2"', ":", "1e5", "e", "."]),
    max_size=25,
).map("".join)


@SETTINGS
@given(text=_distish)
def test_parse_distribution_total_on_json_like_text(text):
    _check_distribution_result(parse_distribution(text, L3), 3)
