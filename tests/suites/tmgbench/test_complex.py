"""Tests for stratbench.suites.tmgbench.complex: TMGBench's sequential / parallel / nested forms."""

from __future__ import annotations

import os

import pytest

from stratbench.suites.tmgbench.complex import (
    PAPER_K,
    ComplexTask,
    complex_messages,
    complex_prompt,
    core_outcome,
    format_complex_answer,
    nested_answer,
    parse_complex_answer,
    parse_complex_answer_detail,
    sample_tasks,
    score_complex,
    summarise_by_form,
    summarise_complex,
)
from stratbench.suites.tmgbench.games import game_by_id, standard_answer
from stratbench.suites.tmgbench.prompts import SYSTEM_PROMPT, payoff_table

FORM_K = [(f, k) for f, ks in PAPER_K.items() for k in ks]


def oracle_reply(task: ComplexTask):
    return format_complex_answer(task, task.expected)


# ---------------------------------------------------------------- sampling


@pytest.mark.parametrize("form,k", FORM_K)
def test_sampling_reproducible_and_prefix_stable(form: str, k: int) -> None:
    a = sample_tasks(form, k, 12, seed=7)
    assert a == sample_tasks(form, k, 12, seed=7)
    assert sample_tasks(form, k, 5, seed=7) == a[:5]  # task i independent of n_tasks
    assert a != sample_tasks(form, k, 12, seed=8)
    for i, t in enumerate(a):
        assert t.index == i and t.form == form and t.k == k and len(t.game_ids) == k
        assert len(set(t.game_ids)) == k  # without replacement within a task
        for gid in t.game_ids:
            game_by_id(gid)


def test_forms_and_sizes_draw_independently() -> None:
    s = sample_tasks("sequential", 3, 4, seed=1)
    p = sample_tasks("parallel", 3, 4, seed=1)
    assert [t.game_ids for t in s] != [t.game_ids for t in p]


def test_bad_form_or_k() -> None:
    with pytest.raises(ValueError):
        sample_tasks("diagonal", 3, 1, 0)
    with pytest.raises(ValueError):
        sample_tasks("nested", 3, 1, 0)


def test_nested_tasks_are_valid() -> None:
    for t in sample_tasks("nested", 2, 60, seed=3):
        pre, core = t.games
        assert core_outcome(core) is not None  # unique core NE
        assert t.expected[0] != standard_answer(pre)  # the restriction changes the pre-game NE set
        assert t.myopic_answer == standard_answer(pre)
        assert t.restricted_player in ("A", "B") and t.restricted_situation in (1, 2, 3, 4)
        assert t.restricted_choice[0] == t.restricted_player


# ---------------------------------------------------------------- nested, hand-checked


def test_nested_forward_looking_hand_checked() -> None:
    # Pre-game and core game are both the Prisoner's Dilemma 111: A2 and B1 dominant, NE A2B1
    # (choice 3), payoffs A1B1 1\4, A1B2 3\3, A2B1 2\2, A2B2 4\1.
    pd = game_by_id("111")
    assert pd.payoff_A == ((1, 3), (2, 4)) and pd.payoff_B == ((4, 3), (2, 1))
    assert standard_answer(pd) == {3}
    # Restriction: if the pre-game ends in (A2, B1), B cannot play B1 in the core game. Then B
    # plays B2 and A best-responds A2 (4 > 3): core A2B2 = 4\1 instead of the NE's 2\2.
    assert core_outcome(pd) == 3
    assert core_outcome(pd, "B", "B1") == 4
    # Reduced pre-game, (core, pre) payoffs:  A1B1 A(2,1) B(2,4); A1B2 A(2,3) B(2,3);
    # A2B1 A(4,2) B(1,2); A2B2 A(2,4) B(2,1). At A2B1, B deviates to A2B2 ((2,1) > (1,2));
    # A2B2 is stable for both ((2,3) < (2,4) for A, (1,2) < (2,1) for B); A1B1 and A1B2 are left
    # by A. So the forward-looking answer is {A2B2}: B gives up its dominant pre-game move.
    assert nested_answer(pd, pd, "B", 3, "B1") == {4}
    # A restriction that only hurts off the equilibrium path changes nothing (rejected by sampling).
    assert nested_answer(pd, pd, "B", 2, "B1") == {3}
    task = ComplexTask("nested", 2, ("111", "111"), 0, 0, "B", 3, "B1")
    assert task.expected == [frozenset({4})]
    assert score_complex(task, [frozenset({4})])["correct"]
    res = score_complex(task, [frozenset({3})])
    assert not res["correct"] and res["gave_myopic"]


def test_nested_sampled_example_hand_checked() -> None:
    # Pre 411: A 1 3 / 2 4, B 3 4 / 1 2 -> NE A2B2. Core 461: A 1 2 / 3 4, B 3 4 / 1 2 -> NE A2B2
    # (4\2). If the pre-game ends in (A2, B2) A cannot play A2: core becomes A1B2 = 2\4. A avoids
    # pre cell A2B2 by playing A1; B answers B2 (4 > 3): answer {A1B2} = {2}.
    assert nested_answer(game_by_id("411"), game_by_id("461"), "A", 4, "A2") == {2}


# ---------------------------------------------------------------- prompts


@pytest.mark.parametrize("form,k", FORM_K)
def test_prompts_contain_every_table_and_k(form: str, k: int) -> None:
    task = sample_tasks(form, k, 1, seed=11)[0]
    if form == "sequential":
        replies = oracle_reply(task)
        msgs = complex_messages(task, "CoT", replies[: k - 1])
        assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert [m["role"] for m in msgs[1:]] == ["user", "assistant"] * (k - 1) + ["user"]
        users = [m["content"] for m in msgs if m["role"] == "user"]
        for j, (g, text) in enumerate(zip(task.games, users)):
            assert text.startswith(f"Game {j + 1} of {k}:\n")
            assert payoff_table(g.payoff_A, g.payoff_B) in text
            assert text == complex_prompt(task, "CoT", j)
        assert [m["content"] for m in msgs if m["role"] == "assistant"] == replies[: k - 1]
        with pytest.raises(ValueError):
            complex_messages(task, "DA", replies)
        return
    text = complex_prompt(task, "DA")
    msgs = complex_messages(task, "DA")
    assert msgs == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]
    for g in task.games:
        assert payoff_table(g.payoff_A, g.payoff_B) in text
    if form == "parallel":
        for j in range(1, k + 1):
            assert f"<Game {j}>" in text
        assert f"<Game {k + 1}>" not in text
        assert f"the {k} games above" in text and f"list of {k} lists" in text
        assert text.count('[{"Ax", "By"}]') == k
    else:
        assert "<Pre-Game >" in text and "<Core-Game >" in text
        assert f"Player {task.restricted_player} is attached with an restriction" in text
        assert f"can not choose action {task.restricted_choice}." in text
        assert "of the pre-game ultimately?" in text


# ---------------------------------------------------------------- oracle and scoring


@pytest.mark.parametrize("form,k", FORM_K)
def test_oracle_scores_100(form: str, k: int) -> None:
    tasks = sample_tasks(form, k, 15, seed=5)
    results = []
    for t in tasks:
        answers = parse_complex_answer(oracle_reply(t), t)
        assert answers == t.expected
        results.append(score_complex(t, answers))
    s = summarise_complex(results)
    assert s["accuracy_pct"] == 100.0 and s["accuracy_pct_ci95"] == [100.0, 100.0]
    assert s["parse_failure_rate"] == 0.0 and s["game_accuracy_pct"] == 100.0
    if form == "sequential":
        assert s["per_position_accuracy_pct"] == [100.0] * k


def test_parallel_one_wrong_game_fails_task() -> None:
    task = sample_tasks("parallel", 5, 1, seed=2)[0]
    answers = list(task.expected)
    answers[2] = frozenset({1, 2, 3, 4}) - answers[2]
    res = score_complex(task, answers)
    assert res["per_game_correct"] == [True, True, False, True, True]
    assert res["n_correct_games"] == 4 and not res["correct"] and not res["parse_failed"]


def test_sequential_per_position_and_summary() -> None:
    tasks = sample_tasks("sequential", 3, 4, seed=9)
    results = []
    for i, t in enumerate(tasks):
        replies = list(oracle_reply(t))
        if i < 2:  # break the last position in half the tasks
            replies[2] = "```python\nanswer = " + ("[]" if t.expected[2] else '[("A1", "B1")]') + "\n```"
        if i == 0:  # and make the first reply unreadable in one task
            replies[0] = "I refuse"
        detail = parse_complex_answer_detail(replies, t)
        results.append(score_complex(t, [p.cells for p in detail]))
    s = summarise_complex(results)
    assert s["per_position_accuracy_pct"] == [75.0, 100.0, 50.0]
    assert s["accuracy_pct"] == 50.0 and s["parse_failure_rate"] == 0.25
    lo, hi = s["accuracy_pct_ci95"]
    assert 0.0 <= lo <= 50.0 <= hi <= 100.0
    by = summarise_by_form(results + [score_complex(sample_tasks("nested", 2, 1, 0)[0], None)])
    assert set(by) == {"sequential/k=3", "nested/k=2"}
    assert by["nested/k=2"]["accuracy_pct"] == 0.0 and by["nested/k=2"]["parse_failure_rate"] == 1.0


# ---------------------------------------------------------------- parser


def test_parallel_parser_variants() -> None:
    task = ComplexTask("parallel", 3, ("111", "222", "333"), 0)
    exp = [frozenset({2}), frozenset(), frozenset({1, 4})]
    text = format_complex_answer(task, exp)
    assert parse_complex_answer(text, task) == exp
    prose = (
        "Reasoning...\n```python\nanswer = [\n  [('A1', 'B2')],  # game 1\n  [],\n"
        "  [{\u201cA1\u201d, \u201cB1\u201d}, ('B2', 'A2')],\n]\n```"
    )
    assert parse_complex_answer(prose, task) == exp
    as_dict = 'answer = {"Game 1": [("A1","B2")], "Game 2": [], "Game 3": ["A1B1", "A2B2"]}'
    assert parse_complex_answer(as_dict, task) == exp
    # wrong number of games, a bad label and a non-literal are all failures, with reasons
    for bad in (
        "answer = [[('A1','B2')], []]",
        "answer = [[('A1','B2')], [], [('A3','B1')]]",
        "answer = [[('A1','B2')], [], x]",
        "no answer here",
        "",
    ):
        assert parse_complex_answer(bad, task) is None
        assert all(p.error for p in parse_complex_answer_detail(bad, task) if p.cells is None)
    assert parse_complex_answer(None, task) is None


def test_parser_never_executes_code(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    par = ComplexTask("parallel", 2, ("111", "222"), 0)
    seq = ComplexTask("sequential", 2, ("111", "222"), 0)
    nest = sample_tasks("nested", 2, 1, 0)[0]
    payloads = [
        "```python\nanswer = __import__('os').system('echo pwned')\n```",
        "answer = [__import__('os').system('echo pwned'), []]",
        "answer = [[('A1','B2')], [__import__('os').system('x')]]",
        "answer = [[('A1','B2')] if __import__('os').system('x') else [], []]",
        "answer = {1: [], 2: __import__('os').system('x')}",
    ]
    for text in payloads:
        assert parse_complex_answer(text, par) is None
        assert parse_complex_answer(text, nest) is None
        assert parse_complex_answer([text, text], seq) is None
    assert calls == []


def test_sequential_single_string_and_missing_turns() -> None:
    seq = ComplexTask("sequential", 2, ("111", "222"), 0)
    assert parse_complex_answer('answer = [[("A2","B1")], []]', seq) == [frozenset({3}), frozenset()]
    detail = parse_complex_answer_detail(['answer = [("A2","B1")]'], seq)
    assert detail[0].cells == {3} and detail[1].cells is None and detail[1].error
