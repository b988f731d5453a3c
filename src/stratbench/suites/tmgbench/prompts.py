r"""TMGBench prompts, reproduced from the paper's appendix (they define the benchmark).

Sources (paper text: /work/shared/seeds/003_7141deed7ac35d51.txt):

* Appendix E.1, "Example of classic game: classic/111": the classic-setting task description,
  a ``[Scenario] ... [/Scenario]`` block holding a ``| A \ B | B1 | B2 |`` payoff table whose cells
  are written ``a \ b`` (row player A's payoff, a backslash, column player B's payoff) -- not
  ``(a, b)``.
* Appendix E.1, "Story-based Game Generation Prompt": the story generation prompt with its
  placeholders ``{domain}`` and ``{matrix_str}``.
* Appendix E.2, "Reasoning Prompt Used": the system prompt and the six prompting methods DA, CoT,
  FoToM, SoToM, reFoToM, reSoToM, each laid out as ``{task description} {task question}``
  followed by the method's instructions and an example answer block.
* Section 2.3 and Appendix E.3: the story topics.

Every template is one module-level constant; the functions only fill them in. Cell / choice
numbering follows the paper (Section 2.5): choice 1..4 = A1B1, A1B2, A2B1, A2B2 (upper-left,
upper-right, lower-left, lower-right quarter-grid). ``payoff_A`` / ``payoff_B`` are 2x2 nested
lists, ``[r][c]`` = (A plays A{r+1}, B plays B{c+1}).

Where the paper is ambiguous, and what this module chose
--------------------------------------------------------
1. Task question. The appendix writes ``{task description} {task question}`` but never prints the
   question of an atomic game. The only question the paper prints is the nested-form template's
   (Appendix G.2): "What is/are the most possible choice combination(s) of the pre-game
   ultimately? (when all choice combinations have equal possibility, the answer should contain
   nothing)". We use that question without the nested-game words ("of the pre-game ultimately"),
   wrapped in ``[Question] ... [/Question]`` tags as there (``TASK_QUESTION``). The parenthesis is
   kept because 0-equilibrium games have the empty answer, and the paper's answers may be empty
   ("no choice (when the given list is empty)", Section 2.5).
2. Description/question separator. The paper shows a space between ``{task description}`` and
   ``{task question}``; both are tag-delimited blocks (and in G.2 ``[Question]`` starts its own
   line), so they are joined by one newline. The instructions follow after a blank line, as in
   the appendix layout ("User:", blank, task, blank, instructions).
3. Scenario line breaks. In the classic example the sentence "... namely A1,\nA2/B1, B2. ... (larger
   \nnumber means higher payoff):" is broken at the width of the paper's code box (the breaks fall
   inside a list, "A1,\nA2"; G.2 wraps the same way). We treat them as typesetting and write the
   first paragraph as one line. Blank lines around the table are kept as printed.
4. Table row padding. The classic example pads the row labels as ``| A1     |`` (5 spaces); the
   story example ``story-based/111_0`` as ``| A1    |`` (4 spaces). ``classic_prompt`` and the
   generation prompt's ``{matrix_str}`` use the classic example's table byte for byte; the story
   loader accepts any spacing.
5. Answer block. The PDF shows the example answer between curly quotes (“python ... ”), the
   rendering of a fenced Markdown block; we write ``````python`` ... ``````. The example answer
   itself, ``answer = [{"Ax", "By"}] # list-type`` (a list of Python *sets*), is kept verbatim; the
   example block follows "e.g." on the next line.
6. Emphasis and quotes. FoToM/SoToM show some phrases in bold (``**figure out B's action**``) and
   FoToM uses curly apostrophes (A’s); reFoToM/reSoToM, which the paper says only swap the
   players' order (Section 3 / E.2), show the same words unbolded with straight apostrophes. Bold
   is the paper's typesetting, so all six use plain text and straight apostrophes. Everything
   else, including "senario" (sic) and "make choice", is kept verbatim.
7. Story-based task description. The paper does not say which parts of a story file the model
   sees. The ``[Scenario]`` section is the part written for that purpose ("to detailedly describe
   the situation, including the information of characters, choices, preferences and payoffs"), and
   giving the ``[Payoff Matrix]`` would turn the story task into the classic one; so a story task
   is its scenario text wrapped in ``[Scenario] ... [/Scenario]`` exactly like the classic task.
8. Generation prompt. In the PDF box the placeholder is italic (``*{domain}*``), the order
   relation is LaTeX (``$4 > 3 > 2 > 1$``), the response-format JSON blocks are fenced with blank
   lines around them and carry Markdown hard-break spaces (``{  ``). We write plain text and lay
   the response format out like the paper's example story file ``story-based/111_0.txt`` (tag,
   content, closing tag on consecutive lines), which is the format that file -- and
   ``stratbench.suites.tmgbench.stories`` -- uses. Paragraph blank lines are kept.
9. Topics. The paper used 20 topics (Figure 11a, an image); its text names only eight: Business,
   Ecology, Sports, Technology, Health Care, Politics (E.3) and law, transportation (Section 2.3).
   ``STORY_TOPICS`` holds those eight; ``generation_prompt`` accepts any topic string.
10. Raw-model completion format (not in the paper, which only ran chat models). The prompt is the
    system prompt, a blank line, the user message, a blank line and ``COMPLETION_ANSWER_START`` =
    ``"```python\n"``; each candidate continuation is a whole answer line ``answer = [...]``. The
    prompt deliberately stops after the newline and not after ``answer = [``: tokenizers merge
    the bracket with what follows (Gemma 3: `` [{"`` and `` []`` are single tokens), so cutting
    there would score every candidate through an unnatural token boundary and penalise the empty
    answer ``[]`` most. A newline is a token boundary for every common tokenizer. Candidates write
    cells as the paper's example does (``{"A1", "B2"}``), in choice order 1..4, separated by
    ``", "``, and end with ``]``; because every candidate ends in ``]`` none is a prefix of another.
    With a ToM/CoT method the raw model gets the instructions but no room to reason; DA is the
    meaningful method for this format.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Sequence

__all__ = [
    "SYSTEM_PROMPT",
    "CLASSIC_SCENARIO_TEMPLATE",
    "PAYOFF_TABLE_TEMPLATE",
    "STORY_SCENARIO_TEMPLATE",
    "TASK_QUESTION",
    "ANSWER_EXAMPLE",
    "DA_INSTRUCTIONS",
    "COT_INSTRUCTIONS",
    "FOTOM_INSTRUCTIONS",
    "SOTOM_INSTRUCTIONS",
    "REFOTOM_INSTRUCTIONS",
    "RESOTOM_INSTRUCTIONS",
    "METHODS",
    "COMPLETION_ANSWER_START",
    "ANSWER_PREFIX",
    "CHOICE_CELLS",
    "STORY_GENERATION_PROMPT",
    "STORY_TOPICS",
    "canonical_method",
    "payoff_table",
    "classic_prompt",
    "story_task",
    "task_description",
    "system_prompt",
    "method_instructions",
    "user_prompt",
    "build_messages",
    "build_completion_prompt",
    "format_answer",
    "completion_candidates",
    "generation_prompt",
]

# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------

# Appendix E.2, every method: "System: You are a spectator, ..." ("senario" sic).
SYSTEM_PROMPT = "You are a spectator, and you should answer question based on given senario."

# Appendix E.1, "Example of classic game: classic/111" -- the table, byte for byte. Cells are
# "A's payoff \ B's payoff".
PAYOFF_TABLE_TEMPLATE = (
    "| A \\ B | B1      | B2      |\n"
    "|-----|-----|-----|\n"
    "| A1     | {a11} \\ {b11} | {a12} \\ {b12} |\n"
    "| A2     | {a21} \\ {b21} | {a22} \\ {b22} |"
)

# Appendix E.1, "Example of classic game: classic/111" -- the classic-setting task description
# ({task description} of E.2). The first paragraph's line breaks are the paper's box width
# (module docstring, item 3).
CLASSIC_SCENARIO_TEMPLATE = (
    "[Scenario]\n"
    "Player A and Player B are playing a game. Either of them has two choices, namely A1, "
    "A2/B1, B2. The payoff matrix of their different choice combinations is given below (larger "
    "number means higher payoff):\n"
    "\n"
    "{table}\n"
    "\n"
    "Both Player A and Player B are targeting maximizing their own payoff.\n"
    "[/Scenario]"
)

# Story-based task description: the story's [Scenario] section, tagged as in the story files
# (Appendix E.1, story-based/111_0.txt; module docstring, item 7).
STORY_SCENARIO_TEMPLATE = "[Scenario]\n{scenario}\n[/Scenario]"

# {task question} of Appendix E.2, reconstructed from the question of the nested-form template
# (Appendix G.2; module docstring, item 1).
TASK_QUESTION = (
    "[Question]\n"
    "What is/are the most possible choice combination(s)? (when all choice combinations have "
    "equal possibility, the answer should contain nothing)\n"
    "[/Question]"
)

# Appendix E.2: the example answer block every method ends with (fence: docstring, item 5).
ANSWER_EXAMPLE = '```python\nanswer = [{"Ax", "By"}] # list-type\n```'

# Appendix E.2, "DA prompting".
DA_INSTRUCTIONS = (
    "Only give a block of python-style code containing your answer without any process. e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

# Appendix E.2, "CoT prompting".
COT_INSTRUCTIONS = (
    "Think step by step, and finally give a block of python-style code containing your answer. "
    "e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

# Appendix E.2, "FoToM prompting" (bold and curly apostrophes dropped: docstring, item 6).
FOTOM_INSTRUCTIONS = (
    "From A's perspective, try to figure out B's action and make choice. Then from B's "
    "perspective try to figure out A's action and make choice. Finally as a spectator, give a "
    "block of python-style code containing your answer. e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

# Appendix E.2, "SoToM prompting" (bold dropped: docstring, item 6).
SOTOM_INSTRUCTIONS = (
    "From A's perspective, try to figure out B's action, note that he may also reason based on "
    "your information or reasoning. Then from B's perspective try to figure out A's action, note "
    "that he may also reason based on your information or reasoning. Finally as a spectator, give "
    "a block of python-style code containing your answer. e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

# Appendix E.2, "reFoToM prompting".
REFOTOM_INSTRUCTIONS = (
    "From B's perspective, try to figure out A's action and make choice. Then from A's "
    "perspective try to figure out B's action and make choice. Finally as a spectator, give a "
    "block of python-style code containing your answer. e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

# Appendix E.2, "reSoToM prompting".
RESOTOM_INSTRUCTIONS = (
    "From B's perspective, try to figure out A's action, note that he may also reason based on "
    "your information or reasoning. Then from A's perspective try to figure out B's action, note "
    "that he may also reason based on your information or reasoning. Finally as a spectator, give "
    "a block of python-style code containing your answer. e.g.\n"
    '```python\nanswer = [{"Ax", "By"}] # list-type\n```'
)

METHODS: dict[str, str] = {
    "DA": DA_INSTRUCTIONS,
    "CoT": COT_INSTRUCTIONS,
    "FoToM": FOTOM_INSTRUCTIONS,
    "SoToM": SOTOM_INSTRUCTIONS,
    "reFoToM": REFOTOM_INSTRUCTIONS,
    "reSoToM": RESOTOM_INSTRUCTIONS,
}

# Raw-model completion format (not in the paper; docstring, item 10): the prompt ends with the
# opening of the answer block, each candidate is a whole "answer = [...]" line.
COMPLETION_ANSWER_START = "```python\n"
ANSWER_PREFIX = "answer = ["

# Choice numbers of Section 2.5 -> (A's choice, B's choice).
CHOICE_CELLS: dict[int, tuple[str, str]] = {
    1: ("A1", "B1"),
    2: ("A1", "B2"),
    3: ("A2", "B1"),
    4: ("A2", "B2"),
}

# Appendix E.1, "Story-based Game Generation Prompt". Placeholders keep the paper's names
# {domain} and {matrix_str} and are filled by plain replacement (the text holds JSON braces).
# Layout of the response format: docstring, item 8.
STORY_GENERATION_PROMPT = (
    "Please generate a game theory short story with the following requirements:\n"
    "\n"
    "- Specific topic: {domain}\n"
    '- There are two characters who may be in a situation of "cooperation" or "competition";\n'
    "- Each character has 2 choices, and the combinations of their choices form 4 different "
    "scenarios;\n"
    "- In these 4 scenarios, the two characters face different benefits/losses, which can be "
    "abstracted as different rewards they can obtain or different states they can achieve in each "
    "scenario;\n"
    "- They each have a preference relationship for these rewards/states. We use numbers to "
    "represent the degree of preference, with 4 representing the most preferred and 1 the least "
    "preferred (i.e., preference degree 4 > 3 > 2 > 1);\n"
    "- The payoff matrices for both characters can be abstracted and represented in one matrix, "
    "where A and B represent two characters and their choices are A1, A2/B1, B2. The respondent "
    "matrix is shown as below (the story you generate should have the same payoff structure as "
    "it):\n"
    "\n"
    "{matrix_str}\n"
    "\n"
    "Now please design a story that includes:\n"
    "\n"
    "- Characters\n"
    "- Each character's choices\n"
    "- Characters' preferences for different scenarios\n"
    "- Story description\n"
    "\n"
    "Response format:\n"
    "\n"
    "[Characters]\n"
    "{\n"
    '  "A": "...", "B": "..."\n'
    "}\n"
    "[/Characters]\n"
    "[Choices]\n"
    "{\n"
    '  "A1": "...", "A2": "...", "B1": "...", "B2": "..."\n'
    "}\n"
    "[/Choices]\n"
    "[Preferences]\n"
    "Characters' preferences for different scenarios (4 most preferred, 1 least preferred):\n"
    "{\n"
    '  "A": {\n'
    '    4: "...", 3: "...", 2: "...", 1: "..."\n'
    "  },\n"
    '  "B": {\n'
    '    4: "...", 3: "...", 2: "...", 1: "..."\n'
    "  }\n"
    "}\n"
    "[/Preferences]\n"
    "[Payoff Matrix]\n"
    "...\n"
    "[/Payoff Matrix]\n"
    "[Scenario]\n"
    "...(to detailedly describe the situation, including the information of characters, choices, "
    "preferences and payoffs on different choice combinations)\n"
    "[/Scenario]"
)

# The topics the paper's text names (Appendix E.3: "Business, Ecology, Sports, Technology, Health
# Care, Politics, and more"; Section 2.3: "business, law and transportation"). The paper used 20
# (Figure 11a, an image not in the text); the other twelve are unknown.
STORY_TOPICS: tuple[str, ...] = (
    "Business",
    "Ecology",
    "Sports",
    "Technology",
    "Health Care",
    "Politics",
    "Law",
    "Transportation",
)

# --------------------------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------------------------

_METHOD_BY_LOWER = {name.lower(): name for name in METHODS}


def canonical_method(method: str) -> str:
    """The paper's spelling of a method name (matched case-insensitively: "cot", "ReFoToM")."""
    if isinstance(method, str) and method.lower() in _METHOD_BY_LOWER:
        return _METHOD_BY_LOWER[method.lower()]
    raise ValueError(
        f"unknown TMGBench prompting method {method!r}; expected one of {', '.join(METHODS)}"
    )


def _check_matrix(m: Any, name: str) -> list[list[int]]:
    ok = (
        isinstance(m, Sequence)
        and len(m) == 2
        and all(isinstance(row, Sequence) and len(row) == 2 for row in m)
        and all(isinstance(x, int) and not isinstance(x, bool) for row in m for x in row)
    )
    if not ok:
        raise ValueError(f"{name} must be a 2x2 nested list of ints, got {m!r}")
    return [[int(x) for x in row] for row in m]


def payoff_table(payoff_A: Sequence[Sequence[int]], payoff_B: Sequence[Sequence[int]]) -> str:
    """The paper's ``| A \\ B | B1 | B2 |`` table (no trailing newline)."""
    a = _check_matrix(payoff_A, "payoff_A")
    b = _check_matrix(payoff_B, "payoff_B")
    return PAYOFF_TABLE_TEMPLATE.format(
        a11=a[0][0], b11=b[0][0], a12=a[0][1], b12=b[0][1],
        a21=a[1][0], b21=b[1][0], a22=a[1][1], b22=b[1][1],
    )


def classic_prompt(payoff_A: Sequence[Sequence[int]], payoff_B: Sequence[Sequence[int]]) -> str:
    """The classic-setting task description: ``[Scenario] ... [/Scenario]`` with the filled table."""
    return CLASSIC_SCENARIO_TEMPLATE.replace("{table}", payoff_table(payoff_A, payoff_B))


def _scenario_text(story: Any) -> str:
    text = story if isinstance(story, str) else getattr(story, "scenario", None)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("story must be a scenario string or an object with a non-empty .scenario")
    return text.strip("\n")


def story_task(story: Any) -> str:
    """The story-based task description: the story's scenario in ``[Scenario]`` tags.

    `story` is a ``stratbench.suites.tmgbench.stories.Story`` (anything with ``.scenario``) or the
    scenario text itself."""
    return STORY_SCENARIO_TEMPLATE.replace("{scenario}", _scenario_text(story))


def task_description(
    payoff_A: Sequence[Sequence[int]], payoff_B: Sequence[Sequence[int]], story: Any = None
) -> str:
    """{task description}: the classic scenario, or the story's scenario when `story` is given.

    With a story object that carries its own ``payoff_A``/``payoff_B``, they must equal the given
    game's matrices (a story of another game would be scored against the wrong answer)."""
    a = _check_matrix(payoff_A, "payoff_A")
    b = _check_matrix(payoff_B, "payoff_B")
    if story is None:
        return classic_prompt(a, b)
    sa, sb = getattr(story, "payoff_A", None), getattr(story, "payoff_B", None)
    if sa is not None and sb is not None:
        if [list(r) for r in sa] != a or [list(r) for r in sb] != b:
            ident = getattr(story, "path", None) or getattr(story, "game_id", "story")
            raise ValueError(f"{ident}: the story's payoff matrix differs from the game's")
    return story_task(story)


def system_prompt() -> str:
    """The system prompt shared by all six methods (Appendix E.2)."""
    return SYSTEM_PROMPT


def method_instructions(method: str) -> str:
    """The instructions of a prompting method, ending with the paper's example answer block."""
    return METHODS[canonical_method(method)]


def user_prompt(
    payoff_A: Sequence[Sequence[int]],
    payoff_B: Sequence[Sequence[int]],
    method: str,
    story: Any = None,
) -> str:
    """The user message: task description, task question, blank line, method instructions."""
    instructions = method_instructions(method)
    return f"{task_description(payoff_A, payoff_B, story)}\n{TASK_QUESTION}\n\n{instructions}"


def build_messages(
    payoff_A: Sequence[Sequence[int]],
    payoff_B: Sequence[Sequence[int]],
    method: str,
    story: Any = None,
) -> list[dict[str, str]]:
    """Chat messages ``[system, user]`` for one task."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(payoff_A, payoff_B, method, story)},
    ]


def build_completion_prompt(
    payoff_A: Sequence[Sequence[int]],
    payoff_B: Sequence[Sequence[int]],
    method: str = "DA",
    story: Any = None,
) -> str:
    """A plain-text prompt for raw base models (no chat template).

    System prompt, blank line, user message, blank line, then ``COMPLETION_ANSWER_START``
    (``"```python\\n"``). Append a candidate from ``completion_candidates()`` and score it."""
    user = user_prompt(payoff_A, payoff_B, method, story)
    return f"{SYSTEM_PROMPT}\n\n{user}\n\n{COMPLETION_ANSWER_START}"


def format_answer(cells: frozenset[int] | set[int] | Sequence[int]) -> str:
    """The canonical answer line for a set of choice numbers (1..4), e.g.
    ``answer = [{"A1", "B2"}, {"A2", "B1"}]``; ``answer = []`` for the empty set."""
    chosen = set(cells)
    if not chosen <= set(CHOICE_CELLS):
        raise ValueError(f"choice numbers must be in 1..4, got {sorted(chosen)!r}")
    items = ", ".join('{"%s", "%s"}' % CHOICE_CELLS[o] for o in sorted(chosen))
    return f"{ANSWER_PREFIX}{items}]"


def completion_candidates() -> list[tuple[frozenset[int], str]]:
    """The 16 answers a raw model is scored on: (set of choice numbers, continuation text).

    Ordered by size, then lexicographically (empty set first); the text is ``format_answer``'s."""
    subsets: list[frozenset[int]] = [frozenset()]
    for k in range(1, 5):
        subsets += [frozenset(c) for c in combinations((1, 2, 3, 4), k)]
    return [(s, format_answer(s)) for s in subsets]


def generation_prompt(
    payoff_A: Sequence[Sequence[int]], payoff_B: Sequence[Sequence[int]], topic: str
) -> str:
    """The story generation prompt for one game and topic ({domain}), with the classic table as
    {matrix_str}."""
    if not isinstance(topic, str) or not topic.strip() or "\n" in topic:
        raise ValueError(f"topic must be a non-empty one-line string, got {topic!r}")
    table = payoff_table(payoff_A, payoff_B)
    return STORY_GENERATION_PROMPT.replace("{domain}", topic.strip()).replace("{matrix_str}", table)
