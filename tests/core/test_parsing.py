"""The shared action parser: the final answer wins, illegal answers fail (never guessed), total on arbitrary text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.parsing import ActionParse, parse_action

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


_answerish = st.lists(
    st.sampled_from(["Action:", "Answer", "answer is", "I choose", "\\boxed{", "**", "0", "1",
                     "2", "37", ".", "\n", " ", "action", "1.5", "final answer:", "{", "}"]),
    max_size=20,
).map("".join)


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


@SETTINGS
@given(text=_answerish)
def test_parse_action_total_on_answerish_text(text):
    res = parse_action(text, L3)
    assert (res.action is None) != (res.error is None)
    if res.action is not None:
        assert res.action in (0, 1, 2)


@pytest.mark.parametrize("text", [
    "answer with 0 as the last line.",
    "Fill the table.\nYou must use exactly 2 placeholders in the table",
    "Premise: [1] You can only choose",
])
def test_prose_about_the_task_is_not_an_answer(text):
    """Replies a small instruct model gave that echo or discuss the instructions: no action in them."""
    assert parse_action(text, ["0", "1", "2"]) == ActionParse(None, "no final action found")


@pytest.mark.parametrize("text, tier, line", [
    ("Action: 2", "explicit", "Action: 2"),
    ("I think...\nI choose 1.", "verb", "I choose 1."),
    ("2", "whole", "2"),
    ("Hmm.\nRow 2", "last_line", "Row 2"),
])
def test_a_parse_says_how_it_read_the_answer(text, tier, line):
    r = parse_action(text, ["0", "1", "2"])
    assert r.ok and (r.tier, r.line) == (tier, line)
