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
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

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
_A = {"A1": 0, "A2": 1}
_B = {"B1": 0, "B2": 1}
_CELL_STRING = re.compile(r"^\s*\(?\s*(A[12])\s*[,;:/\s-]?\s*(B[12])\s*\)?\s*$", re.I)
_CELL_STRING_REV = re.compile(r"^\s*\(?\s*(B[12])\s*[,;:/\s-]?\s*(A[12])\s*\)?\s*$", re.I)


@dataclass(frozen=True)
class AnswerSetParse:
    """`cells`: the chosen choice numbers (empty = "no equilibrium"), or None with an `error`."""

    cells: frozenset[int] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.cells is not None


class _Reject(ValueError):
    """Raised inside the walker; its message becomes the parse error."""


def _code_blocks(text: str) -> list[str]:
    """Contents of ``` fenced blocks in order, the language tag line removed.

    The paper's own template prints a stray `“python` line and a closing `”` inside the fence; after
    quote straightening those are a `"python` tag line and a lone `"`, which the caller tolerates.
    """
    parts = text.split("```")
    blocks = [parts[k] for k in range(1, len(parts), 2)]
    return [_LANG_LINE.sub("", b, count=1) for b in blocks]


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
    matches = list(_ASSIGN.finditer(s))
    if not matches:
        return None
    return _rhs_extent(s, matches[-1].end())


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


def _label(node: ast.AST) -> str:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise _Reject(f"expected a quoted label, found {type(node).__name__}")
    return node.value.strip().upper()


def _pair(node: ast.AST) -> int:
    """Choice number of one cell written as a 2-element tuple/list/set of labels, or a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _CELL_STRING.match(node.value)
        if m:
            return 1 + 2 * _A[m.group(1).upper()] + _B[m.group(2).upper()]
        m = _CELL_STRING_REV.match(node.value)
        if m:
            return 1 + 2 * _A[m.group(2).upper()] + _B[m.group(1).upper()]
        raise _Reject(f"{node.value!r} does not name a cell (expected a pair like ('A1', 'B2'))")
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        raise _Reject(f"expected a pair of labels, found {type(node).__name__}")
    if len(node.elts) != 2:
        raise _Reject(f"a cell needs exactly 2 labels, found {len(node.elts)}")
    x, y = (_label(e) for e in node.elts)
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


def _interpret(expr: str) -> frozenset[int]:
    """Read the literal in `expr` into choice numbers; _Reject for anything else."""
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
    node = tree.body
    if _is_empty(node):
        return frozenset()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({_pair(node)})
    if _looks_like_single_pair(node):
        return frozenset({_pair(node)})
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return frozenset(_pair(e) for e in node.elts)
    if isinstance(node, ast.Constant):
        raise _Reject(f"answer is {node.value!r}, not a list of cells")
    raise _Reject(f"only literals are read, found {type(node).__name__}")


def find_expression(text: str) -> str | None:
    """The answer expression of a reply (quotes already normalised with :data:`QUOTES`): the last
    ``answer = ...`` (or bare literal) in the last code block that has one, else the last
    ``answer = ...`` anywhere; None when there is none. The complex forms read their answer lists
    with the same rules."""
    blocks = _code_blocks(text)
    for block in reversed(blocks):
        rhs = _last_assignment(block)
        if rhs is not None:
            return rhs
        lit = _bare_literal(block)
        if lit is not None:
            return lit
    return _last_assignment(text)


def parse_answer_set(text: str | None) -> AnswerSetParse:
    """The set of cells in a TMGBench answer (see the module docstring), or the reason it has none.

    Never raises and never executes anything from `text`.
    """
    if text is None or not str(text).strip():
        return AnswerSetParse(None, "empty response")
    try:
        clean = str(text).translate(QUOTES)
        expr = find_expression(clean)
        if expr is None:
            return AnswerSetParse(None, "no `answer = ...` assignment or answer code block found")
        return AnswerSetParse(_interpret(expr), None)
    except _Reject as e:
        return AnswerSetParse(None, str(e))
    except (RecursionError, MemoryError, ValueError) as e:  # pragma: no cover - defensive
        return AnswerSetParse(None, f"could not read the answer: {type(e).__name__}")
