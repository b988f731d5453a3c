"""Tests for stratbench.suites.tmgbench.answers: TMGBench's "python-style" answer sets, never executed."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.suites.tmgbench.answers import AnswerSetParse, parse_answer_set

SETTINGS = settings(max_examples=150, deadline=None)
CELL = {1: ("A1", "B1"), 2: ("A1", "B2"), 3: ("A2", "B1"), 4: ("A2", "B2")}


def ok(text: str, expected: set[int]) -> None:
    res = parse_answer_set(text)
    assert res == AnswerSetParse(frozenset(expected), None), (text, res)
    assert res.ok


def bad(text: str | None) -> AnswerSetParse:
    res = parse_answer_set(text)
    assert res.cells is None and not res.ok, (text, res)
    assert isinstance(res.error, str) and res.error
    return res


# --------------------------------------------------------------------------------------------
# Formats


@pytest.mark.parametrize(
    "text, expected",
    [
        ('```python\nanswer = [("A1", "B2"), ("A2", "B1")] # list-type\n```', {2, 3}),
        # The paper's own appendix output, curly quotes and stray quote lines included.
        ("```\n“python\nanswer = [(“A1”, “B2”), (“A2”, “B1”)] # list-type\n”\n```", {2, 3}),
        ("“python\nanswer = [(“A1”, “B1”), (“A2”, “B2”)] # list-type\n”", {1, 4}),
        # The prompt template's set-valued pairs.
        ('```python\nanswer = [{"A2", "B2"}] # list-type\n```', {4}),
        ("answer = [('A1', 'B1')]", {1}),
        ("answer = [(‘A2’, ‘B1’)]", {3}),
        ('answer = {("A1","B1"), ("A2","B2")}', {1, 4}),
        ('answer = (("A1","B2"),)', {2}),
        ('answer = ("A1", "B2")', {2}),  # a single pair
        ('answer = ["A2", "B2"]', {4}),  # a single pair as a list
        ('answer = {"B1", "A2"}', {3}),  # a single pair as a set
        ('answer = [("B2", "A1")]', {2}),  # B's label first
        ('answer   =   [  (  "A1" ,  "B2"  )  ,  ( "A2","B1" ) ]   ', {2, 3}),
        ('answer = [("a1", "b2")]', {2}),  # case-insensitive labels
        ('answer = [(" A1 ", "B2")]', {2}),
        ('answer = ["A1B2", "A2, B1"]', {2, 3}),  # cells as strings
        ('answer = [("A1", "B1"), ("A1", "B1")]', {1}),  # duplicates collapse
        ('answer = [("A1", "B1"),]', {1}),
        ("answer = [\n    ('A1', 'B1'),  # first\n    ('A2', 'B2'),  # second\n]", {1, 4}),
        ("The answer:\n```py\nanswer = [('A1','B2')]\n```", {2}),
        ("```python\nanswer = [('A1','B2')]", {2}),  # unclosed final fence
        ("```\n[('A2', 'B1')]\n```", {3}),  # block holding only a literal
        # A raw model continuing a prompt that ends in "```python\nanswer =".
        ("```python\n [('A1', 'B2')]  # list-type\n```\nThe next question", {2}),
        ("So `answer = [('A2', 'B2')]` is it.", {4}),  # inline code, prose after
        ("answer = [('A1', 'B2')] is my final answer", {2}),
        ("ANSWER = [('A1', 'B2')]", {2}),
        ("answer = [(\"A1\", \"B2\")]\u00a0# trailing comment", {2}),
    ],
)
def test_formats(text: str, expected: set[int]) -> None:
    ok(text, expected)


@pytest.mark.parametrize(
    "text",
    ["answer = []", "answer = set()", "answer = {}", "answer = ()", "```python\nanswer = [] # none\n```",
     "answer = [ ]", "```\n[]\n```"],
)
def test_empty_means_no_equilibrium(text: str) -> None:
    res = parse_answer_set(text)
    assert res.ok and res.cells == frozenset() and res.error is None


def test_last_code_block_wins() -> None:
    text = (
        "First guess:\n```python\nanswer = [('A1', 'B1')]\n```\n"
        "On reflection:\n```python\nanswer = [('A2', 'B2'), ('A1', 'B2')]\n```\n"
    )
    ok(text, {2, 4})
    # Within a block, the last assignment.
    ok("```python\nanswer = [('A1','B1')]\nanswer = [('A2','B1')]\n```", {3})
    # A later empty answer is still an answer.
    ok("```python\nanswer = [('A1','B1')]\n```\n```python\nanswer = []\n```", set())
    # A later block that holds no answer (working code) is skipped.
    ok("```python\nanswer = [('A1','B1')]\n```\n```python\nprint(payoffs)\n```", {1})
    # Blocks beat prose: the block's answer wins over an earlier or later prose assignment.
    ok("answer = [('A2','B2')]\n```python\nanswer = [('A1','B1')]\n```\nanswer = []", {1})


def test_last_prose_assignment_without_blocks() -> None:
    ok("I first thought answer = [('A1','B1')] but actually answer = [('A2','B1')]", {3})


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "The equilibrium is (A1, B2).",  # no answer statement
        "answer = [('A3', 'B2')]",  # unknown label
        "answer = [('A1', 'A2')]",  # two A labels
        "answer = [('A1', 'B2', 'B1')]",  # not a pair
        "answer = [('A1',)]",
        "answer = [(A1, B2)]",  # bare names
        "answer = [('A1', 'B2')] + [('A2', 'B1')]",  # operators are not literals
        "answer = None",
        "answer = 3",
        "answer = [[('A1', 'B2')]]",  # nested too deep
        "answer = [('A1', 'B2')",  # unbalanced
        "answer = {'A1': 'B2'}",
        "answer = set([('A1', 'B2')])",  # only set() with no arguments is read
        "answer = list()",
        "answer = [('A1', 1)]",
        "answer = 'A1B3'",
        "answer = [('A1', 'B2').upper()]",
        "answer = [x for x in 'ab']",
        "answer = lambda: 1",
        "```python\nanswer = [('A1'; 'B2')]\n```",
    ],
)
def test_failures_have_a_reason(text: str | None) -> None:
    bad(text)


def test_malformed_last_block_does_not_fall_back_to_earlier_ones() -> None:
    bad("```python\nanswer = [('A1','B1')]\n```\n```python\nanswer = [('A9','B1')]\n```")


# --------------------------------------------------------------------------------------------
# Nothing is ever executed


@pytest.mark.parametrize(
    "template, expected",
    [
        ("answer = __import__('os').system('touch {p}')", None),
        ("```python\nanswer = __import__('os').system('touch {p}')\n```", None),
        ("answer = [__import__('pathlib').Path('{p}').write_text('x')]", None),
        ("answer = [('A1', __import__('pathlib').Path('{p}').write_text('x'))]", None),
        ("answer = open('{p}', 'w').write('x')", None),
        ("answer = exec(\"open('{p}', 'w').write('x')\")", None),
        # Only the literal is read; what follows it on the line is ignored, never run.
        ("answer = [('A1','B2')]; __import__('os').system('touch {p}')", {2}),
        # Code before the assignment is ignored, never run.
        ("```python\nimport os; os.system('touch {p}')\nanswer = [('A1','B2')]\n```", {2}),
    ],
)
def test_payloads_are_not_executed(tmp_path: Path, template: str, expected: set[int] | None) -> None:
    target = tmp_path / "pwned"
    res = parse_answer_set(template.format(p=target))
    assert not target.exists()
    if expected is None:
        assert res.cells is None and res.error
    else:
        assert res.cells == frozenset(expected)


def test_echo_payload_is_unparseable(capfd: pytest.CaptureFixture[str]) -> None:
    res = parse_answer_set("answer = __import__('os').system('echo pwned')")
    assert res.cells is None and "Call" in (res.error or "")
    out, err = capfd.readouterr()
    assert "pwned" not in out and "pwned" not in err


# --------------------------------------------------------------------------------------------
# Properties

QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’")]


def fmt_pair(cell: tuple[str, str], q: tuple[str, str], style: str, reverse: bool) -> str:
    a, b = (cell[1], cell[0]) if reverse else cell
    x, y = f"{q[0]}{a}{q[1]}", f"{q[0]}{b}{q[1]}"
    return {"tuple": f"({x}, {y})", "list": f"[{x},{y}]", "set": f"{{ {x} , {y} }}"}[style]


def fmt_answer(cells: list[int], q, pair_style: str, outer: str, reverse: bool) -> str:
    pairs = [fmt_pair(CELL[o], q, pair_style, reverse) for o in cells]
    if not pairs:
        return {"list": "[]", "tuple": "()", "set": "set()"}[outer]
    if outer == "list":
        return "[" + ", ".join(pairs) + "]"
    if outer == "tuple":
        return "(" + ", ".join(pairs) + ",)"
    return "{" + ", ".join(pairs) + "}"


def wrap(expr: str, how: str, comment: bool) -> str:
    line = f"answer = {expr}" + ("  # list-type" if comment else "")
    if how == "block":
        return f"Reasoning...\n```python\n{line}\n```\n"
    if how == "paper":
        return f"```\n“python\n{line}\n”\n```"
    if how == "prose":
        return f"Thinking about it, {line}\nDone."
    return line


@SETTINGS
@given(
    cells=st.lists(st.sampled_from([1, 2, 3, 4]), unique=True, max_size=4),
    q=st.sampled_from(QUOTES),
    pair_style=st.sampled_from(["tuple", "list", "set"]),
    outer=st.sampled_from(["list", "tuple", "set"]),
    reverse=st.booleans(),
    how=st.sampled_from(["block", "paper", "prose", "bare"]),
    comment=st.booleans(),
)
def test_any_subset_in_any_style_round_trips(cells, q, pair_style, outer, reverse, how, comment):
    text = wrap(fmt_answer(cells, q, pair_style, outer, reverse), how, comment)
    res = parse_answer_set(text)
    assert res.error is None, (text, res)
    assert res.cells == frozenset(cells), text


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    res = parse_answer_set(text)
    assert isinstance(res, AnswerSetParse)
    assert (res.cells is None) == (res.error is not None)


@SETTINGS
@given(
    st.lists(
        st.sampled_from(
            ["answer", "=", "[", "]", "(", ")", "{", "}", ",", "'", '"', "A1", "B2", "A3", "#",
             "\n", "```", "python", "set", "()", " ", "\\", "“", "’", "__import__"]
        ),
        max_size=40,
    )
)
def test_answer_like_noise_never_raises(tokens: list[str]) -> None:
    res = parse_answer_set("".join(tokens))
    assert (res.cells is None) == (res.error is not None)
    if res.cells is not None:
        assert res.cells <= {1, 2, 3, 4}


def test_every_subset_as_the_paper_writes_it() -> None:
    for k in range(5):
        for combo in itertools.combinations([1, 2, 3, 4], k):
            body = ", ".join(f'(“{CELL[o][0]}”, “{CELL[o][1]}”)' for o in combo)
            ok(f"```\n“python\nanswer = [{body}] # list-type\n”\n```", set(combo))


def test_huge_or_deeply_nested_input_fails_cleanly() -> None:
    bad("answer = " + "[" * 5000 + "]" * 5000)
    bad("answer = [" + ", ".join(["('A1','B2')"] * 2000) + "]")  # over the length cap
    ok("x" * 200_000 + "\nanswer = [('A1','B2')]", {2})


# --------------------------------------------------------------------------------------------
# Strict and flexible answers (lm-eval's strict-match / flexible-extract): strict = written as the
# prompt asks, "a block of python-style code" like ```python\nanswer = [{"Ax", "By"}] # list-type\n```


@pytest.mark.parametrize(
    "text, cells, strict",
    [
        # strict: an `answer = [...]` list in a closed ```python block, exact labels, straight quotes
        ('```python\nanswer = [{"A2", "B1"}] # list-type\n```', {3}, True),
        ('```python\nanswer = [("A1", "B2"), ("A2", "B1")]\n```', {2, 3}, True),
        ("```python\nanswer = [['B1', 'A2']]\n```", {3}, True),  # a pair as a list, B's label first
        ("```python\nanswer = []\n```", set(), True),  # no equilibrium
        ("```PYTHON\nanswer = [{'A1', 'B1'}]\n```", {1}, True),  # the tag in any case
        ('Step 1: A prefers A2.\n```python\nanswer = [{"A2", "B1"}]  # list-type\n```\nSo (A2, B1).', {3}, True),
        ('```python\nx = 1\nanswer = []\nanswer = [{"A2", "B2"}]\n```', {4}, True),  # the last assignment
        ('```python\nanswer = [\n    {"A1", "B1"},\n    {"A2", "B2"},\n]\n```', {1, 4}, True),
        # flexible: read by the lenient reader, but not in the requested format
        ('answer = [{"A2", "B1"}]', {3}, False),  # no code block
        ('The answer is `answer = [("A2", "B1")]`.', {3}, False),  # inline code
        ('```\nanswer = [{"A2", "B1"}]\n```', {3}, False),  # no language tag
        ('```py\nanswer = [{"A2", "B1"}]\n```', {3}, False),  # another tag
        ('```python\nanswer = [{"A2", "B1"}]', {3}, False),  # the block never closed
        ('```python\n[{"A2", "B1"}]\n```', {3}, False),  # a bare literal
        ('```python\nanswer = ({"A2", "B1"},)\n```', {3}, False),  # a tuple, not a list
        ('```python\nanswer = {("A2", "B1")}\n```', {3}, False),  # a set, not a list
        ('```python\nanswer = set()\n```', set(), False),
        ('```python\nanswer = ("A2", "B1")\n```', {3}, False),  # a single pair
        ('```python\nanswer = ["A2", "B1"]\n```', {3}, False),  # a single pair as a list
        ('```python\nanswer = ["A2B1"]\n```', {3}, False),  # a cell as a string
        ('```python\nanswer = [("a2", "b1")]\n```', {3}, False),  # lower-case labels
        ('```python\nanswer = [(" A2", "B1")]\n```', {3}, False),  # a padded label
        ('```python\nanswer = [{“A2”, “B1”}]\n```', {3}, False),  # typographic quotes
        ("```\n“python\nanswer = [(“A1”, “B2”)] # list-type\n”\n```", {2}, False),  # the paper's PDF rendering
    ],
)
def test_strict_and_flexible_answers(text: str, cells: set[int], strict: bool) -> None:
    res = parse_answer_set(text)
    assert res.ok and res.cells == frozenset(cells), (text, res)
    assert res.strict is strict, (text, res)
    assert (res.note is None) is strict, (text, res)


@pytest.mark.parametrize("text", [None, "", "   \n", "```python\n```", "```python\nanswer = \n```",
                                  '```python\nanswer = [{"Ax", "By"}] # list-type\n```'])
def test_empty_or_template_answers_are_never_parsed(text: str | None) -> None:
    res = parse_answer_set(text)
    assert not res.ok and not res.strict
