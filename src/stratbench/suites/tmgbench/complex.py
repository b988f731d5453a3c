r"""TMGBench complex forms: sequential, parallel and nested tasks built from the 144 atomic games.

Source: the TMGBench paper (/work/shared/seeds/003_7141deed7ac35d51.txt), Section 2.4 "Complex
forms", Section 3 (complex-form results: k ∈ {3, 5, 10} for sequential/parallel, 2-fold nesting),
Figure 2 / Figure 13 (images, not in the text) and Appendix G.2 (the nested-form template).

What the paper specifies, and how this module implements it
-----------------------------------------------------------
* **Sequential** — "LLMs are required to respond to multiple game tasks in a row, with history of
  previous tasks"; "only if the LLM provides correct answers for all games is it considered to have
  made correct decisions". Implemented as a multi-turn chat: turn j's user message is game j's
  atomic prompt; earlier turns (user prompts and the model's own replies) stay in the history
  (`complex_messages(task, method, replies=...)`). Each reply holds one atomic answer. Scored
  per position and all-correct (the task-level score).
* **Parallel** — "the LLM is given multiple randomly sampled games and must make decisions
  simultaneously ... deemed to have made correct decisions only if it solves all games correctly".
  One user message lists the k games; the model answers with one answer list per game.
* **Nested** — Appendix G.2 template: ``<Pre-Game >`` / ``<Core-Game >`` blocks, players maximise
  "own payoff first in the core Game, then in the pre-game", and one player "can not choose action
  {restricted_choice}" in the core game "if the situation of the pre-game is
  {restricted_situation}"; the question asks for the pre-game's choice combination(s). The paper
  keeps an instance only "if the Nash equilibria of the pre-game changes after the restriction from
  the core game". Correct only with that changed ("forward-looking") answer.

Readings where the paper is silent or ambiguous (each is a choice of this module)
--------------------------------------------------------------------------------
1. Setting. The paper samples *story-based* games; story tasks are not runnable in this package
   yet, so every atomic game here is the classic-setting game (its ``[Scenario]`` payoff table).
   Sampling is over the 144 game types; within one task games are drawn without replacement.
2. Parallel / sequential prompt layout (Figure 13 is an image). Games are wrapped in ``<Game j>``
   tags, mirroring G.2's ``<Pre-Game >`` tags, each holding the atomic task description. The
   parallel question and answer format (a list with one answer list per game, in game order) are
   ours: ``answer = [[{"Ax", "By"}], [{"Ax", "By"}], ...]``. Sequential turns start with the
   line ``Game j of k:`` followed by the unchanged atomic prompt.
3. Nested solution concept. The two games form a two-stage game: the pre-game is played, its cell
   is observed, then the core game is played with the restricted player's strategy space cut down
   if the restricted situation occurred. Preferences are lexicographic (core payoff, then pre-game
   payoff), as the template says. Solved by backward induction over pure NE:
   - the core continuation after pre-game cell o is the pure NE of the (restricted) core game.
     A restricted player has one action left, so the restricted subgame's NE is the other player's
     (strict, hence unique) best response. For the unrestricted core game to have a well-defined
     continuation we only sample core games with exactly **one** pure NE (the paper does not say
     how it handled 0 or 2 equilibria);
   - the reduced pre-game gives each player the tuple (core payoff after o, pre-game payoff at o);
     its pure NE under lexicographic comparison are the answer. Ties cannot occur: a unilateral
     deviation always changes the player's own strict ordinal pre-game payoff.
   The answer may be empty (no pure NE in the reduced game); the paper's question says "when all
   choice combinations have equal possibility, the answer should contain nothing", so an empty
   answer is legitimate. An instance is kept only if this set differs from the pre-game's own
   pure-NE set (the paper's G.2 check) — that is what makes it test forward-looking reasoning.
   The "myopic" answer (the pre-game's own NE set) is recorded for diagnosis.
4. Placeholder rendering in G.2: ``{restricted_player}`` = "Player A"/"Player B",
   ``{restricted_situation}`` = "(A1, B2)", ``{restricted_choice}`` = "B1". The template text
   ("an restriction", "core Game") is kept verbatim; its PDF line breaks are joined.
5. Nested "k" is 2 (one pre-game, one core game = 2-fold nesting); other k are rejected.

Safety: model text is only ever handed to ``ast.parse`` and walked over literal nodes (here for the
outer list, and per game by ``parse_answer_set``); nothing is evaluated.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from stratbench.seeding import derive_seed
from stratbench.stats import bootstrap_ci
from stratbench.suites.tmgbench.answers import (  # the same block-selection rules as atomic answers
    AnswerSetParse,
    locate_answer,
    parse_answer_set,
    parse_literal,
)
from stratbench.suites.tmgbench.games import (
    RGGame,
    all_games,
    game_by_id,
    standard_answer,
)
from stratbench.suites.tmgbench.prompts import (
    CHOICE_CELLS,
    SYSTEM_PROMPT,
    canonical_method,
    classic_prompt,
    format_answer,
    method_instructions,
    user_prompt,
)

__all__ = [
    "FORMS",
    "FORM_CODES",
    "PAPER_K",
    "ComplexTask",
    "complex_messages",
    "complex_prompt",
    "core_outcome",
    "format_complex_answer",
    "nested_answer",
    "parse_complex_answer",
    "parse_complex_answer_detail",
    "sample_tasks",
    "score_complex",
    "summarise_by_form",
    "summarise_complex",
]

FORMS: tuple[str, ...] = ("sequential", "parallel", "nested")
# Stable integer codes keyed into the seed (never reorder: they define the sampled tasks).
FORM_CODES: dict[str, int] = {"sequential": 1, "parallel": 2, "nested": 3}
# The paper's settings (Section 3): k ∈ {3, 5, 10}; nested is 2-fold.
PAPER_K: dict[str, tuple[int, ...]] = {"sequential": (3, 5, 10), "parallel": (3, 5, 10), "nested": (2,)}
MAX_NESTED_TRIES = 10_000

_PLAYERS = ("A", "B")
_ACTIONS = {"A": ("A1", "A2"), "B": ("B1", "B2")}

# Appendix G.2, "template of a kind of nested form game" (line breaks of the PDF box joined).
NESTED_TEMPLATE = (
    "<Pre-Game >\n"
    "{pre_game}\n"
    "<Core-Game >\n"
    "{core_game}\n"
    "[Question]\n"
    "Player A and B are facing the two games, the pre-game and the core-game.\n"
    "Note that their final goal is to maximize own payoff first in the core Game, then in the "
    "pre-game.\n"
    "Additionally, {restricted_player} is attached with an restriction that if the situation of the "
    "pre-game is {restricted_situation}, then he can not choose action {restricted_choice}.\n"
    "What is/are the most possible choice combination(s) of the pre-game ultimately? (when all "
    "choice combinations have equal possibility, the answer should contain nothing)\n"
    "[/Question]"
)

# Parallel form (our reading, module docstring item 2).
PARALLEL_QUESTION = (
    "[Question]\n"
    "Player A and B are facing the {k} games above at the same time; each game is played "
    "independently.\n"
    "For each game, what is/are the most possible choice combination(s)? (when all choice "
    "combinations of a game have equal possibility, the answer for that game should contain "
    "nothing)\n"
    "Give one answer list per game, in the order Game 1 to Game {k}.\n"
    "[/Question]"
)
_ATOMIC_EXAMPLE = 'answer = [{"Ax", "By"}] # list-type'


def _multi_example(k: int) -> str:
    inner = ", ".join('[{"Ax", "By"}]' for _ in range(k))
    return f"answer = [{inner}] # list of {k} lists, one per game"


# --------------------------------------------------------------------------------------------
# Tasks and sampling
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComplexTask:
    """One complex-form task.

    `game_ids`: the atomic games in presentation order (nested: (pre-game, core-game)).
    `index`, `seed`: the task is a function of (seed, form, k, index) only, so a run can be
    extended or resumed without changing earlier tasks.
    Nested only: `restricted_player` ("A"/"B") cannot play `restricted_choice` (e.g. "B1") in the
    core game when the pre-game ends in cell `restricted_situation` (choice number 1..4).
    """

    form: str
    k: int
    game_ids: tuple[str, ...]
    index: int
    seed: int = 0
    restricted_player: str | None = None
    restricted_situation: int | None = None
    restricted_choice: str | None = None

    @property
    def games(self) -> list[RGGame]:
        return [game_by_id(g) for g in self.game_ids]

    @property
    def n_answers(self) -> int:
        """How many answer sets the model gives: k, or 1 for nested (the pre-game only)."""
        return 1 if self.form == "nested" else self.k

    @property
    def expected(self) -> list[frozenset[int]]:
        """The standard answer per answered game (nested: the forward-looking pre-game answer)."""
        if self.form == "nested":
            return [nested_answer(*self._nested_args())]
        return [standard_answer(g) for g in self.games]

    @property
    def myopic_answer(self) -> frozenset[int] | None:
        """Nested only: the pre-game's own pure-NE set, i.e. the answer that ignores the core game."""
        if self.form != "nested":
            return None
        return standard_answer(self.games[0])

    def _nested_args(self) -> tuple[RGGame, RGGame, str, int, str]:
        assert self.restricted_player and self.restricted_situation and self.restricted_choice
        pre, core = self.games
        return pre, core, self.restricted_player, self.restricted_situation, self.restricted_choice

    def to_json(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "k": self.k,
            "game_ids": list(self.game_ids),
            "index": self.index,
            "seed": self.seed,
            "restricted_player": self.restricted_player,
            "restricted_situation": self.restricted_situation,
            "restricted_choice": self.restricted_choice,
        }


def _check_form_k(form: str, k: int) -> None:
    if form not in FORM_CODES:
        raise ValueError(f"unknown complex form {form!r}; expected one of {', '.join(FORMS)}")
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k must be an int, got {k!r}")
    if form == "nested" and k != 2:
        raise ValueError("nested tasks are 2-fold (one pre-game, one core game): k must be 2")
    if form != "nested" and not 1 <= k <= 144:
        raise ValueError(f"k must be within 1..144, got {k}")


def core_outcome(
    core: RGGame, restricted_player: str | None = None, restricted_choice: str | None = None
) -> int | None:
    """The core game's continuation cell (choice number): its unique pure NE, or — when a player is
    forbidden one action — the other player's best response to the remaining action. None when the
    unrestricted core game does not have exactly one pure NE (continuation undefined)."""
    a, b = np.array(core.payoff_A), np.array(core.payoff_B)
    if restricted_player is None:
        ne = core.pure_ne_choices
        return ne[0] if len(ne) == 1 else None
    if restricted_player not in _PLAYERS or restricted_choice not in _ACTIONS[restricted_player]:
        raise ValueError(f"bad restriction {restricted_player!r} / {restricted_choice!r}")
    forbidden = _ACTIONS[restricted_player].index(restricted_choice)
    left = 1 - forbidden
    if restricted_player == "A":
        col = int(np.argmax(b[left]))  # B best-responds to A's remaining row
        return 1 + 2 * left + col
    row = int(np.argmax(a[:, left]))  # A best-responds to B's remaining column
    return 1 + 2 * row + left


def nested_answer(
    pre: RGGame, core: RGGame, restricted_player: str, restricted_situation: int, restricted_choice: str
) -> frozenset[int]:
    """The forward-looking answer of a 2-fold nested task (module docstring, item 3).

    Backward induction: after pre-game cell o the core game ends in `core_outcome` (restricted iff
    o == restricted_situation); each player ranks pre-game cells by (core payoff, pre-game payoff)
    lexicographically; the answer is the set of pure NE of that reduced pre-game."""
    free = core_outcome(core)
    if free is None:
        raise ValueError(f"core game {core.id} must have exactly one pure NE")
    bound = core_outcome(core, restricted_player, restricted_choice)
    assert bound is not None  # a restricted core game always has a continuation
    ca, cb = np.array(core.payoff_A), np.array(core.payoff_B)

    def util(o: int) -> tuple[tuple[int, int], tuple[int, int]]:
        c = bound if o == restricted_situation else free
        cr, cc = divmod(c - 1, 2)
        r, col = divmod(o - 1, 2)
        return (
            (int(ca[cr][cc]), pre.payoff_A[r][col]),
            (int(cb[cr][cc]), pre.payoff_B[r][col]),
        )

    out = set()
    for r, c in itertools.product(range(2), repeat=2):
        o = 1 + 2 * r + c
        ua, ub = util(o)
        a_dev = util(1 + 2 * (1 - r) + c)[0]
        b_dev = util(1 + 2 * r + (1 - c))[1]
        if ua > a_dev and ub > b_dev:
            out.add(o)
    return frozenset(out)


def _sample_one(form: str, k: int, seed: int, index: int, ids: Sequence[str]) -> ComplexTask:
    rng = np.random.default_rng(derive_seed(seed, FORM_CODES[form], k, index))
    if form != "nested":
        picks = rng.choice(len(ids), size=k, replace=False)
        return ComplexTask(form, k, tuple(ids[int(i)] for i in picks), index, seed)
    for _ in range(MAX_NESTED_TRIES):
        i_pre, i_core = rng.choice(len(ids), size=2, replace=False)
        player = _PLAYERS[int(rng.integers(2))]
        situation = int(rng.integers(1, 5))
        choice = _ACTIONS[player][int(rng.integers(2))]
        pre, core = game_by_id(ids[int(i_pre)]), game_by_id(ids[int(i_core)])
        if core_outcome(core) is None:
            continue
        if nested_answer(pre, core, player, situation, choice) == standard_answer(pre):
            continue  # the paper keeps only instances whose pre-game NE set changes (G.2)
        return ComplexTask(form, k, (pre.id, core.id), index, seed, player, situation, choice)
    raise RuntimeError("could not sample a valid nested task")  # pragma: no cover


def sample_tasks(form: str, k: int, n_tasks: int, seed: int) -> list[ComplexTask]:
    """`n_tasks` reproducible tasks of one form and size.

    Task i draws from ``default_rng(derive_seed(seed, FORM_CODES[form], k, i))`` only, so it does
    not depend on `n_tasks` or on the other tasks. Nested tasks use rejection sampling on the same
    generator (core game with one pure NE; pre-game NE set changed by the restriction)."""
    _check_form_k(form, k)
    if n_tasks < 0:
        raise ValueError(f"n_tasks must be >= 0, got {n_tasks}")
    ids = [g.id for g in all_games()]
    return [_sample_one(form, k, int(seed), i, ids) for i in range(n_tasks)]


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------


def _situation_text(o: int) -> str:
    a, b = CHOICE_CELLS[o]
    return f"({a}, {b})"


def _multi_instructions(method: str, k: int) -> str:
    """The method's instructions with the example answer widened to one list per game."""
    text = method_instructions(method)
    return text.replace(_ATOMIC_EXAMPLE, _multi_example(k))


def complex_prompt(task: ComplexTask, method: str = "DA", step: int = 0) -> str:
    """The user message of a task (for sequential: of turn `step`, 0-based).

    Sequential turn j: ``Game j+1 of k:`` then game j's atomic prompt. Parallel: the k games in
    ``<Game j>`` blocks, the parallel question and the method instructions asking for a list of k
    answer lists. Nested: the G.2 template, then the method instructions (one answer list)."""
    method = canonical_method(method)
    games = task.games
    if task.form == "sequential":
        if not 0 <= step < task.k:
            raise ValueError(f"step must be within 0..{task.k - 1}, got {step}")
        g = games[step]
        return f"Game {step + 1} of {task.k}:\n{user_prompt(g.payoff_A, g.payoff_B, method)}"
    if task.form == "parallel":
        blocks = "\n".join(
            f"<Game {j + 1}>\n{classic_prompt(g.payoff_A, g.payoff_B)}\n</Game {j + 1}>"
            for j, g in enumerate(games)
        )
        question = PARALLEL_QUESTION.replace("{k}", str(task.k))
        return f"{blocks}\n{question}\n\n{_multi_instructions(method, task.k)}"
    if task.form == "nested":
        pre, core = games
        player = f"Player {task.restricted_player}"
        body = (
            NESTED_TEMPLATE.replace("{pre_game}", classic_prompt(pre.payoff_A, pre.payoff_B))
            .replace("{core_game}", classic_prompt(core.payoff_A, core.payoff_B))
            .replace("{restricted_player}", player)
            .replace("{restricted_situation}", _situation_text(int(task.restricted_situation or 0)))
            .replace("{restricted_choice}", str(task.restricted_choice))
        )
        return f"{body}\n\n{method_instructions(method)}"
    raise ValueError(f"unknown form {task.form!r}")


def complex_messages(
    task: ComplexTask, method: str = "DA", replies: Sequence[str] = ()
) -> list[dict[str, str]]:
    """Chat messages for the next model call.

    Parallel/nested: ``[system, user]``. Sequential: the history of earlier turns — each turn's
    user prompt followed by the model's own reply from `replies` — then the next turn's prompt;
    pass the first j replies to get the messages for turn j."""
    msgs = [{"role": "system", "content": SYSTEM_PROMPT}]
    if task.form != "sequential":
        if replies:
            raise ValueError(f"{task.form} tasks are single-turn; replies must be empty")
        msgs.append({"role": "user", "content": complex_prompt(task, method)})
        return msgs
    if len(replies) >= task.k:
        raise ValueError(f"a sequential task has {task.k} turns; got {len(replies)} replies")
    for j, reply in enumerate(replies):
        msgs.append({"role": "user", "content": complex_prompt(task, method, j)})
        msgs.append({"role": "assistant", "content": str(reply)})
    msgs.append({"role": "user", "content": complex_prompt(task, method, len(replies))})
    return msgs


def format_complex_answer(task: ComplexTask, answers: Sequence[frozenset[int]]) -> str | list[str]:
    """Canonical model output for given answers (used by the oracle and round-trip tests).

    Sequential: one fenced reply per turn (a list); parallel: one fenced block with a list of k
    lists; nested: one fenced atomic answer."""
    if len(answers) != task.n_answers:
        raise ValueError(f"expected {task.n_answers} answers, got {len(answers)}")
    if task.form == "sequential":
        return [f"```python\n{format_answer(a)}\n```" for a in answers]
    if task.form == "nested":
        return f"```python\n{format_answer(answers[0])}\n```"
    inner = ", ".join(format_answer(a)[len("answer = "):] for a in answers)
    return f"```python\nanswer = [{inner}]\n```"


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _game_key(node: ast.AST) -> int | None:
    """1-based game number of a dict key: 1, "1", "Game 1", "game_1"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        s = node.value.strip().lower().replace("_", " ")
        s = s[4:].strip() if s.startswith("game") else s
        return int(s) if s.isdigit() else None
    return None


def _parse_multi(text: str, k: int) -> list[AnswerSetParse]:
    """k per-game parses from one answer holding a list (or {game: answer} dict) of k answers.
    A game's parse is strict when its own list is written as requested and the outer answer is
    too: `answer = [[...], [...], ...]`, a list, in a closed ```python block."""
    def failed(msg: str) -> list[AnswerSetParse]:
        return [AnswerSetParse(None, msg) for _ in range(k)]

    if not text or not str(text).strip():
        return failed("empty response")
    found = locate_answer(str(text))
    if found is None:
        return failed("no `answer = ...` assignment or answer code block found")
    expr = found.expr.strip()
    if len(expr) > 4000 * max(k, 1):
        return failed("answer expression too long")
    try:
        tree = ast.parse(expr, mode="eval")  # builds a tree; nothing is evaluated
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return failed("answer is not a Python literal")
    node = tree.body
    outer = found.note
    if isinstance(node, ast.Dict):
        keys = [_game_key(kn) if kn is not None else None for kn in node.keys]
        if sorted(x for x in keys if x is not None) != list(range(1, k + 1)) or None in keys:
            return failed(f"dict answer must have game keys 1..{k}")
        elts = [v for _, v in sorted(zip(cast("list[int]", keys), node.values), key=lambda kv: kv[0])]
        outer = outer or "a dict of games, not a list"
    elif isinstance(node, (ast.List, ast.Tuple)):
        elts = list(node.elts)
        if isinstance(node, ast.Tuple):
            outer = outer or "not a list"
    else:
        return failed(f"expected a list of {k} answer lists, found {type(node).__name__}")
    if len(elts) != k:
        return failed(f"expected {k} answers (one per game), found {len(elts)}")
    out = []
    for e in elts:
        seg = ast.get_source_segment(expr, e)
        if seg is None:  # pragma: no cover - every literal node has a position
            out.append(AnswerSetParse(None, "could not locate a game's answer"))
            continue
        # Element-level literal check is parse_literal's: it only ast.parses and walks literals.
        p = parse_literal(seg)
        if p.ok and outer is not None:
            p = AnswerSetParse(p.cells, None, strict=False, note="; ".join(x for x in (outer, p.note) if x))
        out.append(p)
    return out


def parse_complex_answer_detail(text: str | Sequence[str] | None, task: ComplexTask) -> list[AnswerSetParse]:
    """Per-answered-game parses (length `task.n_answers`), each with its error if any.

    Sequential: `text` is the list of the k replies (one atomic answer each); a single string is
    read like a parallel answer (a list of k lists). Parallel: one reply with k lists. Nested: one
    reply with one atomic answer (the pre-game's)."""
    n = task.n_answers
    if text is None:
        return [AnswerSetParse(None, "empty response") for _ in range(n)]
    if task.form == "nested":
        if not isinstance(text, str):
            raise TypeError("a nested task's reply is one string")
        return [parse_answer_set(text)]
    if task.form == "sequential" and not isinstance(text, str):
        replies = list(text)
        parsed = [parse_answer_set(r) for r in replies[:n]]
        parsed += [AnswerSetParse(None, "no reply for this turn") for _ in range(n - len(parsed))]
        return parsed
    if not isinstance(text, str):
        raise TypeError("a parallel task's reply is one string")
    return _parse_multi(text, n)


def parse_complex_answer(text: str | Sequence[str] | None, task: ComplexTask) -> list[frozenset[int]] | None:
    """The answer set of every answered game, or None if any of them cannot be read."""
    parsed = parse_complex_answer_detail(text, task)
    if any(p.cells is None for p in parsed):
        return None
    return [p.cells for p in parsed]  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def _key(s: frozenset[int] | None) -> list[int] | None:
    return None if s is None else sorted(s)


def score_complex(
    task: ComplexTask, answers: Sequence[frozenset[int] | None] | None
) -> dict[str, Any]:
    """Score one task. `answers`: per answered game (None entries / None = unreadable, scored wrong).

    Per-game correctness is exact set equality with the standard answer. Task-level `correct`:
    sequential and parallel — all k games correct; nested — the forward-looking pre-game answer."""
    n = task.n_answers
    given: list[frozenset[int] | None] = [None] * n if answers is None else list(answers)
    if len(given) != n:
        raise ValueError(f"expected {n} answers, got {len(given)}")
    expected = task.expected
    per_game = [a is not None and frozenset(a) == e for a, e in zip(given, expected)]
    out: dict[str, Any] = {
        **task.to_json(),
        "expected": [_key(e) for e in expected],
        "answers": [_key(frozenset(a)) if a is not None else None for a in given],
        "per_game_correct": per_game,
        "n_correct_games": int(sum(per_game)),
        "all_correct": all(per_game),
        "parse_failed": any(a is None for a in given),
        "correct": all(per_game),
    }
    if task.form == "nested":
        myopic = task.myopic_answer
        out["myopic_answer"] = _key(myopic)
        out["gave_myopic"] = given[0] is not None and frozenset(given[0]) == myopic
    return out


def _pct_ci(values: Sequence[float]) -> list[float] | None:
    ci = bootstrap_ci([100.0 * v for v in values])
    return None if ci is None else [round(x, 6) for x in ci]


def summarise_complex(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy over tasks (percent, bootstrap 95% CI over tasks), parse-failure rate, mean per-game
    accuracy and — for sequential — accuracy per position. Mix forms/k via `summarise_by_form`."""
    n = len(results)
    correct = [float(bool(r["correct"])) for r in results]
    out: dict[str, Any] = {
        "n_tasks": n,
        "forms": sorted({f"{r['form']}/k={r['k']}" for r in results}),
        "accuracy_pct": 100.0 * float(np.mean(correct)) if n else None,
        "accuracy_pct_ci95": _pct_ci(correct),
        "parse_failure_rate": float(np.mean([bool(r["parse_failed"]) for r in results])) if n else None,
    }
    games = [float(c) for r in results for c in r["per_game_correct"]]
    out["game_accuracy_pct"] = 100.0 * float(np.mean(games)) if games else None
    if n and all(r["form"] == "sequential" for r in results) and len({r["k"] for r in results}) == 1:
        k = int(results[0]["k"])
        out["per_position_accuracy_pct"] = [
            100.0 * float(np.mean([r["per_game_correct"][j] for r in results])) for j in range(k)
        ]
    if n and all(r["form"] == "nested" for r in results):
        out["myopic_rate"] = float(np.mean([bool(r.get("gave_myopic")) for r in results]))
    return out


def summarise_by_form(results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """`summarise_complex` per "form/k=K" group."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in results:
        groups.setdefault(f"{r['form']}/k={r['k']}", []).append(r)
    return {key: summarise_complex(v) for key, v in sorted(groups.items())}
