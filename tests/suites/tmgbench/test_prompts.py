"""Tests for stratbench.suites.tmgbench.prompts: the paper's prompts, chat messages and the raw-model
completion format with its 16 candidate answers."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from stratbench.suites.tmgbench import prompts as tp

# classic/111 as printed in the paper (Appendix E.1): A1B1 = 1 \ 4, A1B2 = 3 \ 3, ...
PD_A = [[1, 3], [2, 4]]
PD_B = [[4, 3], [2, 1]]
# Grid (3, 4) = 444, the paper's failure case (Appendix F.2): no pure equilibrium.
G444_A = [[3, 1], [2, 4]]
G444_B = [[1, 4], [3, 2]]

METHOD_NAMES = ("DA", "CoT", "FoToM", "SoToM", "reFoToM", "reSoToM")
EXAMPLE = '```python\nanswer = [{"Ax", "By"}] # list-type\n```'


def test_classic_prompt_is_the_papers_example_byte_for_byte() -> None:
    expected = (
        "[Scenario]\n"
        "Player A and Player B are playing a game. Either of them has two choices, namely A1, "
        "A2/B1, B2. The payoff matrix of their different choice combinations is given below "
        "(larger number means higher payoff):\n"
        "\n"
        "| A \\ B | B1      | B2      |\n"
        "|-----|-----|-----|\n"
        "| A1     | 1 \\ 4 | 3 \\ 3 |\n"
        "| A2     | 2 \\ 2 | 4 \\ 1 |\n"
        "\n"
        "Both Player A and Player B are targeting maximizing their own payoff.\n"
        "[/Scenario]"
    )
    assert tp.classic_prompt(PD_A, PD_B) == expected


def test_table_cells_are_a_backslash_b_in_cell_order() -> None:
    table = tp.payoff_table(G444_A, G444_B)
    assert table == (
        "| A \\ B | B1      | B2      |\n"
        "|-----|-----|-----|\n"
        "| A1     | 3 \\ 1 | 1 \\ 4 |\n"
        "| A2     | 2 \\ 3 | 4 \\ 2 |"
    )
    # the table lines appear once, in order, in the prompt
    lines = tp.classic_prompt(G444_A, G444_B).splitlines()
    i = lines.index("| A \\ B | B1      | B2      |")
    assert lines[i : i + 4] == table.splitlines()
    # tuples (the Robinson-Goforth module's type) work too
    assert tp.payoff_table(tuple(map(tuple, G444_A)), tuple(map(tuple, G444_B))) == table


@pytest.mark.parametrize("bad", [[[1, 2]], [[1, 2], [3]], [[1, 2], [3, "4"]], [[1, 2], [3, True]], None])
def test_bad_matrices_raise(bad: object) -> None:
    with pytest.raises(ValueError):
        tp.classic_prompt(bad, PD_B)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        tp.classic_prompt(PD_A, bad)  # type: ignore[arg-type]


def test_system_prompt() -> None:
    assert tp.system_prompt() == (
        "You are a spectator, and you should answer question based on given senario."
    )


def test_method_instructions_are_the_papers() -> None:
    first = {
        "DA": "Only give a block of python-style code containing your answer without any process. e.g.",
        "CoT": "Think step by step, and finally give a block of python-style code containing your answer. e.g.",
        "FoToM": "From A's perspective, try to figure out B's action and make choice. Then from B's "
        "perspective try to figure out A's action and make choice. Finally as a spectator, give a "
        "block of python-style code containing your answer. e.g.",
        "SoToM": "From A's perspective, try to figure out B's action, note that he may also reason "
        "based on your information or reasoning. Then from B's perspective try to figure out A's "
        "action, note that he may also reason based on your information or reasoning. Finally as a "
        "spectator, give a block of python-style code containing your answer. e.g.",
        "reFoToM": "From B's perspective, try to figure out A's action and make choice. Then from A's "
        "perspective try to figure out B's action and make choice. Finally as a spectator, give a "
        "block of python-style code containing your answer. e.g.",
        "reSoToM": "From B's perspective, try to figure out A's action, note that he may also reason "
        "based on your information or reasoning. Then from A's perspective try to figure out B's "
        "action, note that he may also reason based on your information or reasoning. Finally as a "
        "spectator, give a block of python-style code containing your answer. e.g.",
    }
    assert set(tp.METHODS) == set(METHOD_NAMES)
    for name in METHOD_NAMES:
        assert tp.method_instructions(name) == first[name] + "\n" + EXAMPLE
        assert "**" not in tp.method_instructions(name)
        assert "’" not in tp.method_instructions(name)
    # the re- variants only swap the players
    swap = lambda s: s.replace("A", "\0").replace("B", "A").replace("\0", "B")  # noqa: E731
    assert swap(first["FoToM"]) == first["reFoToM"]
    assert swap(first["SoToM"]) == first["reSoToM"]


def test_method_names_case_insensitive_and_unknown_rejected() -> None:
    assert tp.method_instructions("cot") == tp.COT_INSTRUCTIONS
    assert tp.method_instructions("ReSoToM") == tp.RESOTOM_INSTRUCTIONS
    for bad in ("ToM", "", "DA ", None, 3):
        with pytest.raises(ValueError):
            tp.method_instructions(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            tp.build_messages(PD_A, PD_B, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            tp.build_completion_prompt(PD_A, PD_B, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_messages_shape_and_layout(method: str) -> None:
    msgs = tp.build_messages(PD_A, PD_B, method)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert all(set(m) == {"role", "content"} for m in msgs)
    assert msgs[0]["content"] == tp.SYSTEM_PROMPT
    user = msgs[1]["content"]
    assert user == (
        tp.classic_prompt(PD_A, PD_B) + "\n" + tp.TASK_QUESTION + "\n\n" + tp.method_instructions(method)
    )
    assert user.endswith(EXAMPLE)
    assert user.count("[Scenario]") == 1 and user.count("[/Question]") == 1


def test_task_question() -> None:
    assert tp.TASK_QUESTION == (
        "[Question]\n"
        "What is/are the most possible choice combination(s)? (when all choice combinations have "
        "equal possibility, the answer should contain nothing)\n"
        "[/Question]"
    )


def test_story_messages_use_the_scenario_only() -> None:
    story = SimpleNamespace(scenario="\nSarah and Mark ... (A1, B1) ...\n", payoff_A=PD_A, payoff_B=PD_B)
    user = tp.build_messages(PD_A, PD_B, "CoT", story=story)[1]["content"]
    assert user.startswith("[Scenario]\nSarah and Mark ... (A1, B1) ...\n[/Scenario]\n[Question]\n")
    assert "| A \\ B |" not in user
    # a bare scenario string works too
    assert tp.build_messages(PD_A, PD_B, "CoT", story="Sarah.")[1]["content"].startswith(
        "[Scenario]\nSarah.\n[/Scenario]\n"
    )
    # a story of another game is refused
    other = SimpleNamespace(scenario="x", payoff_A=G444_A, payoff_B=G444_B, path="444_0.txt")
    with pytest.raises(ValueError, match="444_0.txt"):
        tp.build_messages(PD_A, PD_B, "DA", story=other)
    with pytest.raises(ValueError):
        tp.build_messages(PD_A, PD_B, "DA", story=SimpleNamespace(scenario="  "))


# --------------------------------------------------------------------------------------------
# Raw-model completion format
# --------------------------------------------------------------------------------------------

CELL_RE = re.compile(r'\{"(A[12])", "(B[12])"\}')
ANSWER_RE = re.compile(r'^answer = \[((?:\{"A[12]", "B[12]"\})(?:, \{"A[12]", "B[12]"\})*)?\]$')
CELL_NUMBER = {("A1", "B1"): 1, ("A1", "B2"): 2, ("A2", "B1"): 3, ("A2", "B2"): 4}


def parse_candidate(text: str) -> frozenset[int]:
    """An independent reading of a candidate answer line."""
    m = ANSWER_RE.match(text)
    assert m, text
    cells = [CELL_NUMBER[c] for c in CELL_RE.findall(m.group(1) or "")]
    assert len(cells) == len(set(cells)) and cells == sorted(cells), text
    return frozenset(cells)


def test_completion_prompt_layout() -> None:
    p = tp.build_completion_prompt(PD_A, PD_B)
    assert p == (
        tp.SYSTEM_PROMPT + "\n\n" + tp.build_messages(PD_A, PD_B, "DA")[1]["content"] + "\n\n```python\n"
    )
    assert p.endswith(EXAMPLE + "\n\n```python\n")
    assert "<" not in p and "User:" not in p and "System:" not in p  # no chat template or roles
    assert tp.build_completion_prompt(PD_A, PD_B, "SoToM").endswith(
        tp.SOTOM_INSTRUCTIONS + "\n\n```python\n"
    )
    story = SimpleNamespace(scenario="A story.")
    assert tp.build_completion_prompt(PD_A, PD_B, story=story).startswith(
        tp.SYSTEM_PROMPT + "\n\n[Scenario]\nA story.\n[/Scenario]\n[Question]"
    )


def test_candidates_cover_all_16_subsets_and_round_trip() -> None:
    cands = tp.completion_candidates()
    assert len(cands) == 16
    subsets = [s for s, _ in cands]
    texts = [t for _, t in cands]
    assert len(set(subsets)) == 16 and len(set(texts)) == 16
    assert set(subsets) == {frozenset(c for c in range(1, 5) if mask >> (c - 1) & 1) for mask in range(16)}
    for s, t in cands:
        assert parse_candidate(t) == s
        assert t.startswith(tp.ANSWER_PREFIX) and t.endswith("]") and "\n" not in t
    # no candidate is a prefix of another, so their scores are comparable
    for t in texts:
        assert not any(u != t and u.startswith(t) for u in texts)
    assert dict(cands)[frozenset()] == "answer = []"
    assert dict(cands)[frozenset({2, 3})] == 'answer = [{"A1", "B2"}, {"A2", "B1"}]'
    # same cell format as the paper's example answer
    example_cell = re.search(r"\{.*?\}", EXAMPLE).group(0)  # {"Ax", "By"}
    assert CELL_RE.fullmatch(example_cell.replace("Ax", "A1").replace("By", "B2"))


def test_prompt_plus_candidate_reads_as_a_python_answer_block() -> None:
    p = tp.build_completion_prompt(G444_A, G444_B)
    for s, t in tp.completion_candidates():
        full = p + t
        last = full.rsplit("```python\n", 1)[1]
        assert parse_candidate(last) == s


def test_format_answer_rejects_bad_cells() -> None:
    with pytest.raises(ValueError):
        tp.format_answer({0, 1})
    assert tp.format_answer([4, 1]) == 'answer = [{"A1", "B1"}, {"A2", "B2"}]'


# --------------------------------------------------------------------------------------------
# Story generation prompt
# --------------------------------------------------------------------------------------------


def test_generation_prompt() -> None:
    p = tp.generation_prompt(PD_A, PD_B, "Ecology")
    assert p.startswith(
        "Please generate a game theory short story with the following requirements:\n\n"
        "- Specific topic: Ecology\n"
    )
    assert "\n\n" + tp.payoff_table(PD_A, PD_B) + "\n\n" in p
    assert "{domain}" not in p and "{matrix_str}" not in p
    for tag in ("Characters", "Choices", "Preferences", "Payoff Matrix", "Scenario"):
        assert f"\n[{tag}]\n" in p and f"\n[/{tag}]" in p
    assert "    4: \"...\", 3: \"...\", 2: \"...\", 1: \"...\"\n" in p
    assert p.endswith("[/Scenario]")
    with pytest.raises(ValueError):
        tp.generation_prompt(PD_A, PD_B, " ")
    with pytest.raises(ValueError):
        tp.generation_prompt(PD_A, PD_B, "a\nb")


def test_topics_are_the_ones_the_paper_names() -> None:
    assert set(tp.STORY_TOPICS) >= {"Business", "Ecology", "Sports", "Technology", "Health Care", "Politics"}
    assert "Law" in tp.STORY_TOPICS and "Transportation" in tp.STORY_TOPICS
    assert len(set(tp.STORY_TOPICS)) == len(tp.STORY_TOPICS)
