"""TMGBench answers: a set of pure-strategy cells written as "python-style code", never executed.

The paper asks models for a block such as

    ```python
    answer = [("A1", "B2"), ("A2", "B1")]  # list-type
    ```

(its prompt template even writes the pairs as sets, `[{"Ax", "By"}]`). An empty list means "no
equilibrium", which is a real answer, not a failure.

Where the answer is taken from: the last ``` code block that holds an answer wins — one with an
`answer = …` assignment (the last one in it counts) or whose first statement is a bracketed
literal; blocks with neither (say, worked-out code) are skipped. With no such block, the last
`answer = …` in the prose is used. An unclosed final fence counts as a block running to the end of
the text. Text after the literal on the same line ("… is my answer", a closing backtick) is ignored.
Deliberately, a malformed answer in the last answer block is a failure: we never fall back to an
earlier block, which would reward a model for a draft it then rewrote.

How it is read: the right-hand side is handed to `ast.parse` and only literal nodes are accepted —
string constants, tuples, lists, sets, `{}` and `set()`. Anything else (a call, a name, an
attribute, an operator, …) makes the whole answer unparseable, so a payload such as
`__import__('os').system(...)` is reported as an error and never runs. Curly quotes are straightened
first, labels are matched case-insensitively, a pair may be written in either order (A's label
first or B's), and a string naming a whole cell ("A1B2", "A1, B2") is accepted too. Unknown labels
("A3"), pairs of two A labels, deeper nesting or `None` are errors with a reason, never guesses.

Cells become TMGBench choice numbers: A1B1 = 1, A1B2 = 2, A2B1 = 3, A2B2 = 4.

Strict and flexible answers (lm-eval's strict-match / flexible-extract). Every method's prompt
ends "give a block of python-style code containing your answer. e.g." followed by

    ```python
    answer = [{"Ax", "By"}] # list-type
    ```

so an answer is **strict** (`AnswerSetParse.strict`) when it is written that way:

1. it stands in a fenced code block whose opening line is exactly ```python (the tag in any case)
   and which is closed by ```;
2. the block assigns it, `answer = [...]`: a list literal (the "# list-type"); a comment after it
   is fine, other text on the same line is not;
3. every element of the list is one cell, a pair of the labels exactly as the prompt names them
   ("A1", "A2", "B1", "B2": capitals, no spaces, straight quotes) as a set, tuple or list, in
   either order; `answer = []` ("no equilibrium") is strict.

Everything else this reader still reads is **flexible**, with a `note` saying why: another or no
language tag, an unclosed block, an answer outside any code block (prose, inline code), a bare
literal without `answer =`, a tuple or set instead of a list, a single pair not in a list, cells
written as strings ("A1B2"), lower-case or padded labels, typographic quotes, text after the
literal on its line. Text around the block (a CoT's reasoning, or prose a DA answer was told to
leave out) does not matter. Whether the reply was cut by the token budget is the caller's to add
(a reply with `finish_reason == "length"` is never strict).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

MAX_EXPR_CHARS = 4000

#: typographic quotes and no-break spaces → their ASCII forms, applied before an answer is read
QUOTES = str.maketrans(
    {
        "\u2018": "'",  # ‘
        "\u2019": "'",  # ’
        "\u201a": "'",  # ‚
        "\u2032": "'",  # ′
        "\u201c": '"',  # “
        "\u201d": '"',  # ”
        "\u201e": '"',  # „
        "\u2033": '"',  # ″
        "\u00a0": " ",  # no-break space
    }
)
_ASSIGN = re.compile(r"(?<![\w.])answer\s*=(?!=)", re.I)
_LANG_LINE = re.compile(r"\A[ \t]*[\"']?[ \t]*(?:python3?|py)?[ \t]*[\"']?[ \t]*(?:\n|\Z)", re.I)
_QUOTE_CHARS = frozenset(chr(c) for c in QUOTES)
_LABELS = frozenset({"A1", "A2", "B1", "B2"})
_A = {"A1": 0, "A2": 1}
_B = {"B1": 0, "B2": 1}
_CELL_STRING = re.compile(r"^\s*\(?\s*(A[12])\s*[,;:/\s-]?\s*(B[12])\s*\)?\s*$", re.I)
_CELL_STRING_REV = re.compile(r"^\s*\(?\s*(B[12])\s*[,;:/\s-]?\s*(A[12])\s*\)?\s*$", re.I)


@dataclass(frozen=True)
class AnswerSetParse:
    """`cells`: the chosen choice numbers (empty = "no equilibrium"), or None with an `error`.
    `strict`: the answer is written in the requested format (module docstring); else `note` says
    how it departs from it (a flexible answer)."""

    cells: frozenset[int] | None
    error: str | None = None
    strict: bool = field(default=False, compare=False)
    note: str | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.cells is not None


class _Reject(ValueError):
    """Raised inside the walker; its message becomes the parse error."""


@dataclass(frozen=True)
class _Block:
    """A ``` fenced block: its content (the language tag line removed), where that content starts
    in the text, whether its opening line is exactly ```python, and whether it is closed."""

    content: str
    start: int
    python: bool
    closed: bool


def _blocks(text: str) -> list[_Block]:
    """The ``` fenced blocks in order (an unclosed final fence runs to the end of the text).

    The paper's own template prints a stray `“python` line and a closing `”` inside the fence; after
    quote straightening those are a `"python` tag line and a lone `"`, which the caller tolerates.
    """
    fences = [m.start() for m in re.finditer("```", text)]  # the same cuts as text.split("```")
    out = []
    for i in range(0, len(fences), 2):
        start = fences[i] + 3
        end = fences[i + 1] if i + 1 < len(fences) else len(text)
        body = text[start:end]
        tag = _LANG_LINE.match(body)
        skip = tag.end() if tag else 0
        python = tag is not None and tag.group(0).strip().lower() == "python"
        out.append(_Block(body[skip:], start + skip, python, i + 1 < len(fences)))
    return out


def _rhs_extent(s: str, start: int) -> str:
    """The expression text from `start` to the end of the statement: the first newline outside any
    bracket or string (so multi-line lists work), or the end of `s`."""
    depth = 0
    quote: str | None = None
    i = start
    n = len(s)
    while i < n:
        ch = s[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
            elif ch == "\n":  # unterminated string: stop at the line end
                return s[start:i]
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            j = s.find("\n", i)
            if j < 0:
                return s[start:i]
            if depth == 0:
                return s[start:i]
            i = j
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "\n" and depth <= 0:
            return s[start:i]
        i += 1
    return s[start:]


def _last_assignment(s: str) -> str | None:
    """The right-hand side of the last `answer = …` in `s`, or None."""
    span = _last_assignment_at(s)
    return None if span is None else s[span[0]:span[1]]


def _last_assignment_at(s: str) -> tuple[int, int] | None:
    """Where the right-hand side of the last `answer = …` in `s` lies, or None."""
    matches = list(_ASSIGN.finditer(s))
    if not matches:
        return None
    start = matches[-1].end()
    return start, start + len(_rhs_extent(s, start))


def _bare_literal(block: str) -> str | None:
    """A block whose first statement is a bracketed literal (after dropping the template's stray
    quote lines) is accepted as the answer itself, e.g. a raw model continuing "answer =" with
    `[("A1", "B2")]  # list-type`."""
    lines = [ln for ln in block.splitlines() if ln.strip() not in ("", '"', "'")]
    body = "\n".join(lines).strip()
    expr = _rhs_extent(body, 0).strip()
    if expr and expr[0] in "([{":
        return expr
    if re.fullmatch(r"set\(\s*\)", expr):
        return expr
    return None


def _label(node: ast.AST, notes: list[str]) -> str:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise _Reject(f"expected a quoted label, found {type(node).__name__}")
    if node.value not in _LABELS:
        _note(notes, "labels not written as A1, A2, B1, B2")
    return node.value.strip().upper()


def _note(notes: list[str], why: str) -> None:
    if why not in notes:
        notes.append(why)


def _pair(node: ast.AST, notes: list[str]) -> int:
    """Choice number of one cell written as a 2-element tuple/list/set of labels, or a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _CELL_STRING.match(node.value)
        if m:
            _note(notes, "a cell written as a string")
            return 1 + 2 * _A[m.group(1).upper()] + _B[m.group(2).upper()]
        m = _CELL_STRING_REV.match(node.value)
        if m:
            _note(notes, "a cell written as a string")
            return 1 + 2 * _A[m.group(2).upper()] + _B[m.group(1).upper()]
        raise _Reject(f"{node.value!r} does not name a cell (expected a pair like ('A1', 'B2'))")
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        raise _Reject(f"expected a pair of labels, found {type(node).__name__}")
    if len(node.elts) != 2:
        raise _Reject(f"a cell needs exactly 2 labels, found {len(node.elts)}")
    x, y = (_label(e, notes) for e in node.elts)
    if x in _A and y in _B:
        return 1 + 2 * _A[x] + _B[y]
    if y in _A and x in _B:
        return 1 + 2 * _A[y] + _B[x]
    bad = [v for v in (x, y) if v not in _A and v not in _B]
    if bad:
        raise _Reject(f"unknown label {bad[0]!r} (labels are A1, A2, B1, B2)")
    raise _Reject(f"a cell needs one A label and one B label, got ({x!r}, {y!r})")


def _is_empty(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not node.elts:
        return True
    if isinstance(node, ast.Dict) and not node.keys:
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and not node.args
        and not node.keywords
    )


def _looks_like_single_pair(node: ast.AST) -> bool:
    return (
        isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and len(node.elts) == 2
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
        and not any(_CELL_STRING.match(e.value) or _CELL_STRING_REV.match(e.value) for e in node.elts)  # type: ignore[attr-defined]
    )


def _parse_expr(expr: str) -> ast.Expression | None:
    """`ast.parse` in eval mode — parsing only builds a tree, nothing is evaluated."""
    try:
        return ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _first_bracketed(expr: str) -> str | None:
    """The prefix of `expr` up to the bracket that closes its opening bracket, if it opens one."""
    if not expr or expr[0] not in "([{":
        return None
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(expr):
        ch = expr[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return expr[: i + 1]
        i += 1
    return None


def _interpret(expr: str, notes: list[str] | None = None) -> frozenset[int]:
    """Read the literal in `expr` into choice numbers; _Reject for anything else. Each way the
    literal departs from the requested `[{"A1", "B2"}, ...]` is added to `notes`."""
    notes = [] if notes is None else notes
    expr = expr.strip()
    if not expr:
        raise _Reject("empty answer expression")
    if len(expr) > MAX_EXPR_CHARS:
        raise _Reject(f"answer expression longer than {MAX_EXPR_CHARS} characters")
    tree = _parse_expr(expr)
    if tree is None:
        # Prose after the literal on the same line ("answer = [...] is my answer", a closing
        # inline backtick): retry with just the first bracketed literal.
        prefix = _first_bracketed(expr)
        tree = _parse_expr(prefix) if prefix is not None else None
        if tree is None:
            raise _Reject("answer is not a Python literal")
        _note(notes, "text after the answer on its line")
    node = tree.body
    if _is_empty(node):
        if not isinstance(node, ast.List):
            _note(notes, "not a list")
        return frozenset()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        _note(notes, "a single cell, not a list")
        return frozenset({_pair(node, notes)})
    if _looks_like_single_pair(node):
        _note(notes, "a single pair, not a list of cells")
        return frozenset({_pair(node, notes)})
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if not isinstance(node, ast.List):
            _note(notes, "not a list")
        return frozenset(_pair(e, notes) for e in node.elts)
    if isinstance(node, ast.Constant):
        raise _Reject(f"answer is {node.value!r}, not a list of cells")
    raise _Reject(f"only literals are read, found {type(node).__name__}")


@dataclass(frozen=True)
class LocatedAnswer:
    """The answer expression of a reply and how it was found: `note` is None when it is assigned
    (`answer = ...`) in a closed ```python block with straight quotes (the requested place and
    spelling), else the first way it is not."""

    expr: str
    note: str | None


def _locate(text: str) -> tuple[str, int | None, str | None] | None:
    """(expression, its offset in `text` when it is an assignment, note) — see `locate_answer`."""
    for block in reversed(_blocks(text)):
        at = _last_assignment_at(block.content)
        if at is not None:
            note = (None if block.python and block.closed else
                    "code block not closed" if block.python else "code block not tagged ```python")
            return block.content[at[0]:at[1]], block.start + at[0], note
        lit = _bare_literal(block.content)
        if lit is not None:
            return lit, None, "a bare literal without `answer =`"
    at = _last_assignment_at(text)
    if at is not None:
        return text[at[0]:at[1]], at[0], "answer written outside a ```python code block"
    return None


def locate_answer(text: str) -> LocatedAnswer | None:
    """The answer expression of a reply, quotes straightened (:data:`QUOTES`): the last
    ``answer = ...`` (or bare literal) in the last code block that has one, else the last
    ``answer = ...`` anywhere; None when there is none. The complex forms read their answer lists
    with the same rules."""
    clean = text.translate(QUOTES)  # one character for one: offsets in `clean` are offsets in `text`
    found = _locate(clean)
    if found is None:
        return None
    expr, at, note = found
    if note is None and at is not None and any(c in _QUOTE_CHARS for c in text[at:at + len(expr)]):
        note = "typographic quotes"
    return LocatedAnswer(expr, note)


def find_expression(text: str) -> str | None:
    """The answer expression of a reply whose quotes are already straightened (see
    :func:`locate_answer`), or None."""
    found = _locate(text)
    return None if found is None else found[0]


def parse_literal(expr: str) -> AnswerSetParse:
    """The cells of one answer literal (`[{"A1", "B2"}]`), strict when it is written exactly as
    requested. Never raises; nothing is evaluated."""
    notes: list[str] = []
    try:
        cells = _interpret(expr.translate(QUOTES), notes)
    except _Reject as e:
        return AnswerSetParse(None, str(e))
    except (RecursionError, MemoryError, ValueError) as e:  # pragma: no cover - defensive
        return AnswerSetParse(None, f"could not read the answer: {type(e).__name__}")
    if any(c in _QUOTE_CHARS for c in expr):
        _note(notes, "typographic quotes")
    return AnswerSetParse(cells, None, strict=not notes, note="; ".join(notes) or None)


def parse_answer_set(text: str | None) -> AnswerSetParse:
    """The set of cells in a TMGBench answer (see the module docstring), or the reason it has none;
    `strict` says whether it is written in the requested format, `note` why not.

    Never raises and never executes anything from `text`.
    """
    if text is None or not str(text).strip():
        return AnswerSetParse(None, "empty response")
    try:
        found = locate_answer(str(text))
        if found is None:
            return AnswerSetParse(None, "no `answer = ...` assignment or answer code block found")
        notes = [found.note] if found.note else []
        cells = _interpret(found.expr, notes)
        return AnswerSetParse(cells, None, strict=not notes, note="; ".join(notes) or None)
    except _Reject as e:
        return AnswerSetParse(None, str(e))
    except (RecursionError, MemoryError, ValueError) as e:  # pragma: no cover - defensive
        return AnswerSetParse(None, f"could not read the answer: {type(e).__name__}")
