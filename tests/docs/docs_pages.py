"""The documentation as data, for the docs tests: its pages (README.md and docs/**/*.md), their
fenced code blocks, links and headings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: the info string that marks a fenced block as executed by tests/docs/test_runnable_blocks.py
RUNNABLE = ("bash", "runnable")

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def pages() -> list[Path]:
    """README.md, then every page under docs/, in a fixed order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    info: tuple[str, ...]
    text: str

    @property
    def runnable(self) -> bool:
        return self.info[:2] == RUNNABLE

    @property
    def id(self) -> str:
        return f"{rel(self.page)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, in order."""
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m["fence"], i
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        out.append(Block(page, start + 1, tuple(m["info"].split()), "\n".join(body) + "\n"))
        i += 1
    return out


def prose(page: Path) -> str:
    """A page's text outside its fenced code blocks (code blocks' lines become empty lines)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    inside: str | None = None
    out = []
    for line in lines:
        m = FENCE.match(line)
        if inside is None and m:
            inside = m["fence"]
            out.append("")
        elif inside is not None and line.startswith(inside):
            inside = None
            out.append("")
        else:
            out.append("" if inside is not None else line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, spaces,
    hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page (repeated headings get GitHub's -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(page).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m[1])
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


LINK = re.compile(r"(?<!\!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link in a page's prose."""
    out = []
    for n, line in enumerate(prose(page).split("\n"), 1):
        for m in LINK.finditer(line):
            out.append((n, m["target"]))
    return out
