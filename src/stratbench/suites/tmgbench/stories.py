r"""TMGBench story-based games: load, check and write story files.

A story file ``{id}_{k}.txt`` (the paper's ``story-based/111_0.txt``, Appendix E.1) is the
``k``-th story of classic game ``id`` and holds five tagged sections, each opened by a line
``[Name]`` and closed by a line ``[/Name]``:

* ``[Characters]``: a JSON object ``{"A": ..., "B": ...}``;
* ``[Choices]``: a JSON object ``{"A1": ..., "A2": ..., "B1": ..., "B2": ...}``;
* ``[Preferences]``: an optional intro line, then a Python-literal object whose inner keys are
  unquoted integers, ``{"A": {4: "...", 3: "...", 2: "...", 1: "..."}, "B": {...}}``. It is read
  by a small literal parser (dicts, strings, integers), never evaluated;
* ``[Payoff Matrix]``: the classic setting's table, ``| A1 | 1 \ 4 | 3 \ 3 |`` rows with A's
  payoff before the backslash and B's after (any spacing; ``(1, 4)`` cells are also accepted);
* ``[Scenario]``: free text (what the model is shown in the story-based setting).

Text outside the sections is ignored, and a JSON section may be wrapped in a Markdown fence (what a
generator following the paper's prompt sometimes writes). Anything malformed raises
``stratbench.errors.GameFormatError`` with one line naming the file and the section. Files are read
through :mod:`stratbench.files` (size cap, UTF-8, nesting limits); a folder whose ``.txt`` entries
are not readable story files (a sub-folder, a symlink loop, two files for one story such as
``111_0.txt`` and ``111_00.txt``) is refused with one line.

The loader checks format only; ``verify_story`` compares a story's matrix with its classic game's
matrices (which the Robinson-Goforth module supplies; this module only needs the 2x2 lists).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from stratbench.errors import GameFormatError
from stratbench.files import MAX_DEPTH, display, list_dir, parse_json, read_text
from stratbench.suites.tmgbench.prompts import payoff_table  # the same table as the classic setting

__all__ = [
    "SECTIONS",
    "Story",
    "parse_story",
    "load_story",
    "load_story_dir",
    "verify_story",
    "format_story",
    "parse_payoff_table",
    "parse_preferences",
]

SECTIONS = ("Characters", "Choices", "Preferences", "Payoff Matrix", "Scenario")
_FILE_RE = re.compile(r"^([^_/\\]+)_(\d{1,6})\.txt$", re.ASCII)
_PREFERENCES_INTRO = (
    "Characters' preferences for different scenarios (4 most preferred, 1 least preferred):"
)


@dataclass(frozen=True)
class Story:
    """One story-based game. Matrices as in the classic setting: ``[r][c]`` = (A{r+1}, B{c+1})."""

    game_id: str
    variant: int
    characters: dict[str, str]
    choices: dict[str, str]
    preferences: dict[str, dict[int, str]]
    payoff_A: list[list[int]]
    payoff_B: list[list[int]]
    scenario: str
    path: Path | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """``{game_id}_{variant}``, the paper's story name."""
        return f"{self.game_id}_{self.variant}"


class _SectionError(Exception):
    def __init__(self, section: str, detail: str) -> None:
        super().__init__(detail)
        self.section = section
        self.detail = detail


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


def _split_sections(text: str) -> dict[str, str]:
    lines = text.splitlines()
    found: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"\s*\[([A-Za-z ]+)\]\s*", lines[i])
        if m and m.group(1) in SECTIONS:
            name = m.group(1)
            if name in found:
                raise _SectionError(name, "section appears twice")
            close = f"[/{name}]"
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == close:
                    break
                if lines[j].strip() in {f"[{s}]" for s in SECTIONS}:
                    nxt = lines[j].strip()
                    raise _SectionError(name, f"section is not closed by {close} before {nxt}")
            else:
                raise _SectionError(name, f"section is not closed by {close}")
            found[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
            continue
        i += 1
    for name in SECTIONS:
        if name not in found:
            raise _SectionError(name, "section is missing")
    return found


def _strip_fence(body: str) -> str:
    kept = [ln for ln in body.splitlines() if not re.fullmatch(r"\s*```[A-Za-z]*\s*", ln)]
    return "\n".join(kept).strip()


def _string_map(body: str, section: str, keys: tuple[str, ...]) -> dict[str, str]:
    try:  # duplicate keys, deep nesting, lone surrogates are refused like any JSON file's
        obj = parse_json(_strip_fence(body), "JSON", error=GameFormatError)
    except GameFormatError as e:
        detail = _one_line(str(e).removeprefix("JSON: ").removeprefix("invalid JSON "))
        if detail.startswith("(") and detail.endswith(")"):
            detail = detail[1:-1]
        raise _SectionError(section, f"not a valid JSON object ({detail})") from None
    if not isinstance(obj, dict):
        raise _SectionError(section, "not a JSON object")
    if set(obj) != set(keys):
        got = ", ".join(map(str, obj)) or "none"
        raise _SectionError(section, f"keys must be {', '.join(keys)}; got {got}")
    bad = [k for k in keys if not isinstance(obj[k], str) or not obj[k].strip()]
    if bad:
        raise _SectionError(section, f"value of {bad[0]} must be a non-empty string")
    return {k: obj[k] for k in keys}


# --------------------------------------------------------------------------------------------
# A small literal parser for [Preferences] (dicts, strings, ints; never eval)
# --------------------------------------------------------------------------------------------

_ESCAPES = {
    '"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"
}


class _LiteralParser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.depth = 0

    def fail(self, what: str) -> ValueError:
        return ValueError(f"{what} at character {self.i + 1}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def parse(self) -> Any:
        self.ws()
        value = self.value()
        self.ws()
        if self.i != len(self.s):
            raise self.fail("unexpected text after the object")
        return value

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("unexpected end of text")
        c = self.s[self.i]
        if c == "{":
            return self.dict_()
        if c in "\"'":
            return self.string()
        if c.isdigit() or c in "+-":
            return self.integer()
        raise self.fail(f"unexpected {c!r}")

    def dict_(self) -> dict[Any, Any]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"objects nested deeper than {MAX_DEPTH} levels")
        try:
            return self._dict_body()
        finally:
            self.depth -= 1

    def _dict_body(self) -> dict[Any, Any]:
        self.i += 1  # {
        out: dict[Any, Any] = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            self.ws()
            key = self.value()
            if isinstance(key, dict):
                raise self.fail("a dict cannot be a key")
            if key in out:
                raise self.fail(f"duplicate key {key!r}")
            self.ws()
            if not self.s.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            out[key] = self.value()
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                self.ws()
                if self.s.startswith("}", self.i):  # trailing comma
                    self.i += 1
                    return out
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return out
            raise self.fail("expected ',' or '}'")

    def string(self) -> str:
        quote = self.s[self.i]
        self.i += 1
        out: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == quote:
                self.i += 1
                return "".join(out)
            if c == "\n":
                raise self.fail("unterminated string")
            if "\ud800" <= c <= "\udfff":
                raise self.fail("not valid Unicode (a lone surrogate)")
            if c == "\\":
                nxt = self.s[self.i + 1 : self.i + 2]
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                    self.i += 2
                    continue
                if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", self.s[self.i + 2 : self.i + 6]):
                    code = int(self.s[self.i + 2 : self.i + 6], 16)
                    self.i += 6
                    low = self.s[self.i : self.i + 6]
                    if 0xD800 <= code <= 0xDBFF and re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", low):
                        code = 0x10000 + ((code - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00)  # a pair
                        self.i += 6
                    if 0xD800 <= code <= 0xDFFF:
                        raise self.fail("not valid Unicode (a lone surrogate escape)")
                    out.append(chr(code))
                    continue
                raise self.fail("bad escape")
            out.append(c)
            self.i += 1
        raise self.fail("unterminated string")

    def integer(self) -> int:
        m = re.compile(r"[+-]?\d{1,9}(?!\d)", re.ASCII).match(self.s, self.i)
        if not m:
            raise self.fail("bad number (ASCII digits, at most 9)")
        self.i = m.end()
        return int(m.group(0))


def parse_preferences(body: str) -> dict[str, dict[int, str]]:
    """The [Preferences] section: optional intro text, then the Python-literal object."""
    text = _strip_fence(body)
    start = text.find("{")
    if start < 0:
        raise ValueError("no '{' object found")
    try:
        obj = _LiteralParser(text[start:]).parse()
    except ValueError as e:
        raise ValueError(f"not a valid object ({e})") from None
    if not isinstance(obj, dict) or set(obj) != {"A", "B"}:
        raise ValueError('the object must have exactly the keys "A" and "B"')
    out: dict[str, dict[int, str]] = {}
    for player in ("A", "B"):
        prefs = obj[player]
        if not isinstance(prefs, dict):
            raise ValueError(f"{player}'s preferences must be an object")
        keys = {int(k) if isinstance(k, str) and k.strip().isdigit() else k for k in prefs}
        if keys != {1, 2, 3, 4} or len(prefs) != 4:
            raise ValueError(f"{player}'s preference keys must be 4, 3, 2, 1")
        norm = {int(k): v for k, v in prefs.items()}
        if not all(isinstance(v, str) and v.strip() for v in norm.values()):
            raise ValueError(f"{player}'s preferences must be non-empty strings")
        out[player] = {k: norm[k] for k in (4, 3, 2, 1)}
    return out


# --------------------------------------------------------------------------------------------
# [Payoff Matrix]
# --------------------------------------------------------------------------------------------

_CELL = r"\(?\s*([+-]?\d{1,9})\s*(?:\\|,|/)\s*([+-]?\d{1,9})\s*\)?"
_ROW_RE = re.compile(r"^\|?\s*(A[12])\s*\|\s*" + _CELL + r"\s*\|\s*" + _CELL + r"\s*\|?\s*$", re.ASCII)
_HEADER_RE = re.compile(r"^\|?\s*A\s*\\\s*B\s*\|\s*B1\s*\|\s*B2\s*\|?\s*$")
_RULE_RE = re.compile(r"^\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")


def parse_payoff_table(body: str) -> tuple[list[list[int]], list[list[int]]]:
    """``(payoff_A, payoff_B)`` from the ``| A \\ B | B1 | B2 |`` table."""
    lines = [ln.strip() for ln in _strip_fence(body).splitlines() if ln.strip()]
    if not lines or not _HEADER_RE.match(lines[0]):
        raise ValueError(r"first line must be the header '| A \ B | B1 | B2 |'")
    rows: dict[str, tuple[int, int, int, int]] = {}
    for ln in lines[1:]:
        if _RULE_RE.match(ln):
            continue
        m = _ROW_RE.match(ln)
        if not m:
            raise ValueError(f"cannot read table line {_clip(ln)!r}")
        label = m.group(1)
        if label in rows:
            raise ValueError(f"row {label} appears twice")
        rows[label] = tuple(int(x) for x in m.groups()[1:])  # type: ignore[assignment]
    missing = [r for r in ("A1", "A2") if r not in rows]
    if missing:
        raise ValueError(f"row {missing[0]} is missing")
    a = [[rows[r][0], rows[r][2]] for r in ("A1", "A2")]
    b = [[rows[r][1], rows[r][3]] for r in ("A1", "A2")]
    return a, b


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def _one_line(s: str, limit: int = 300) -> str:
    return _clip(" ".join(s.split()), limit)


def _clip(s: str, limit: int = 60) -> str:
    """At most ``limit`` characters of a user's text in a message."""
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _name_parts(path: Path) -> tuple[str, int]:
    m = _FILE_RE.match(path.name)
    if not m:
        raise GameFormatError(f"{path}: story file names must look like {{id}}_{{k}}.txt (e.g. 111_0.txt)")
    return m.group(1), int(m.group(2))


def parse_story(text: str, game_id: str, variant: int, path: Path | str | None = None) -> Story:
    """A story from its file text; errors name `path` (or ``<story>``) and the section."""
    where = str(path) if path is not None else "<story>"
    try:
        sections = _split_sections(text)
        characters = _string_map(sections["Characters"], "Characters", ("A", "B"))
        choices = _string_map(sections["Choices"], "Choices", ("A1", "A2", "B1", "B2"))
        try:
            preferences = parse_preferences(sections["Preferences"])
        except ValueError as e:
            raise _SectionError("Preferences", str(e)) from None
        try:
            payoff_A, payoff_B = parse_payoff_table(sections["Payoff Matrix"])
        except ValueError as e:
            raise _SectionError("Payoff Matrix", str(e)) from None
        scenario = sections["Scenario"].strip("\n")
        if not scenario.strip():
            raise _SectionError("Scenario", "section is empty")
    except _SectionError as e:
        raise GameFormatError(f"{where}: [{e.section}]: {_one_line(e.detail)}") from None
    return Story(
        game_id=game_id,
        variant=variant,
        characters=characters,
        choices=choices,
        preferences=preferences,
        payoff_A=payoff_A,
        payoff_B=payoff_B,
        scenario=scenario,
        path=Path(path) if path is not None else None,
    )


def load_story(path: str | Path, label: str = "") -> Story:
    """Load one story file named ``{id}_{k}.txt``."""
    p = Path(path)
    game_id, variant = _name_parts(p)
    text = read_text(p, label, error=GameFormatError)
    return parse_story(text, game_id, variant, p)


def load_story_dir(directory: str | Path, label: str = "") -> list[Story]:
    """Every ``*.txt`` story in `directory` (not recursive), sorted by game id then variant.
    A ``.txt`` entry that is not a readable story file (another kind of name, a folder, a symlink
    loop, a second file for the same story) is an error; other files are ignored."""
    d = Path(directory)
    entries = [p for p in list_dir(d, label, error=GameFormatError) if p.name.endswith(".txt")]
    stories: list[Story] = []
    seen: dict[tuple[str, int], Path] = {}
    for p in entries:
        game_id, variant = _name_parts(p)
        if (game_id, variant) in seen:
            raise GameFormatError(f"{display(d, label)}: {seen[game_id, variant].name} and {p.name} are both "
                                  f"story {variant} of game {game_id}; keep one")
        seen[game_id, variant] = p
        stories.append(load_story(p))
    return sorted(stories, key=lambda s: (len(s.game_id), s.game_id, s.variant))


def verify_story(
    story: Story, payoff_A: Sequence[Sequence[int]], payoff_B: Sequence[Sequence[int]]
) -> list[str]:
    """Problems of a story against its classic game's matrices; empty when they match exactly."""
    problems: list[str] = []
    for name, m in (("payoff_A", payoff_A), ("payoff_B", payoff_B)):
        if not (len(m) == 2 and all(len(r) == 2 for r in m)):
            raise ValueError(f"{name} must be 2x2, got {m!r}")
    for player, sm in (("A", story.payoff_A), ("B", story.payoff_B)):
        ranks = sorted(x for row in sm for x in row)
        if ranks != [1, 2, 3, 4]:
            problems.append(f"{story.name}: {player}'s payoffs {ranks} are not the ranks 1, 2, 3, 4")
    for r in range(2):
        for c in range(2):
            got = (story.payoff_A[r][c], story.payoff_B[r][c])
            want = (payoff_A[r][c], payoff_B[r][c])
            if got != want:
                problems.append(
                    f"{story.name}: cell A{r + 1}B{c + 1} is {got[0]} \\ {got[1]} in the story "
                    f"but {want[0]} \\ {want[1]} in game {story.game_id}"
                )
    return problems


def format_story(story: Story) -> str:
    """A story in the paper's file layout (``story-based/111_0.txt``); ``parse_story`` reads it
    back to an equal `Story`."""

    def dump(obj: Any) -> str:
        return json.dumps(obj, indent=2, ensure_ascii=False)

    prefs = ["{"]
    for n, player in enumerate(("A", "B")):
        prefs.append(f'  "{player}": {{')
        items = list(story.preferences[player].items())
        for m, (k, v) in enumerate(items):
            comma = "," if m < len(items) - 1 else ""
            prefs.append(f"    {k}: {json.dumps(v, ensure_ascii=False)}{comma}")
        prefs.append("  }" + ("," if n == 0 else ""))
    prefs.append("}")
    parts = [
        "[Characters]", dump(story.characters), "[/Characters]",
        "[Choices]", dump(story.choices), "[/Choices]",
        "[Preferences]", _PREFERENCES_INTRO, "\n".join(prefs), "[/Preferences]",
        "[Payoff Matrix]", payoff_table(story.payoff_A, story.payoff_B), "[/Payoff Matrix]",
        "[Scenario]", story.scenario, "[/Scenario]",
    ]
    return "\n".join(parts) + "\n"
