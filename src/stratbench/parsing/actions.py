"""Pure-action answers: find the *final* answer, for any number of actions.

Models think aloud ("action 0 looks bad... I choose 2, not 0"), so the first number in the text is
the wrong one. We look for answer statements in decreasing order of explicitness and take the last
occurrence of the most explicit kind present:

1. "Action: X", "Answer: X", "Final answer: X", "Choice: X", \\boxed{X}
2. verbs: "I choose/select/pick/play X"
3. the whole reply is one label
4. the last non-empty line is short (at most six words), mentions exactly one label and does not
   talk about the instructions (format, placeholders, "you must", ...)

Tokens are matched whole ("37" is never read as "3"). A statement that names something that is not
a legal action is a parse failure with the reason, never a guess. Tier 4 is kept short on purpose:
a long last line that happens to hold one number ("… exactly 2 placeholders …", "answer with 0 as
the last line.") is prose, often the prompt echoed back, not an answer.

Every parse says which kind of statement it read (`tier`) and the line it stood on (`line`), so a
suite can tell an answer in its exact requested format (strict) from one extracted from free text
(flexible).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

_TOKEN = r"[\"'`*(\[]*\s*(?:action\s+|row\s+|option\s+)?[\"'`*]*([A-Za-z0-9_+\-.]+)"
_EXPLICIT = [
    re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*(?:action\s*)?([A-Za-z0-9_+\-.]+)", re.I),
    # "answer is X" / "Answer: X" / "my action is X"; a bare "action" only with ":" or "=", since
    # prose like "the other action is dominated" is not an answer statement.
    re.compile(
        r"\b(?:final\s+answer|final\s+action|my\s+action|answer|choice|decision)\s*[*]*\s*"
        r"(?:is\s*:?|:|=)\s*[*]*\s*" + _TOKEN,
        re.I,
    ),
    re.compile(r"\baction\s*[*]*\s*(?::|=)\s*[*]*\s*" + _TOKEN, re.I),
]
_VERBS = re.compile(
    r"\b(?:i\s+(?:will\s+|would\s+|'ll\s+)?)?(?:choose|chose|select|pick|play|go\s+with)\s+(?:to\s+play\s+)?"
    + _TOKEN,
    re.I,
)
_STRIP = ".,;:!?*\"'`)]}"


MAX_LAST_LINE_WORDS = 6
# a last line with these is the model discussing (or echoing) the task, not answering it
_ABOUT_THE_TASK = re.compile(
    r"placeholder|last line|answer with|format|premise|you (?:can|must|should|may)|instruction|example",
    re.I)


@dataclass(frozen=True)
class ActionParse:
    action: int | None
    error: str | None = None
    # how the answer was read ("explicit", "verb", "whole", "last_line") and the (stripped) line it
    # stood on: descriptions of the parse, not part of its result
    tier: str | None = field(default=None, compare=False)
    line: str | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.action is not None


def _lookup(token: str, labels: Sequence[str]) -> int | None:
    t = token.strip(_STRIP)
    if t in labels:
        return list(labels).index(t)
    lowered = [s.lower() for s in labels]
    if lowered.count(t.lower()) == 1:
        return lowered.index(t.lower())
    return None


def _label_mentions(text: str, labels: Sequence[str]) -> list[int]:
    alts = "|".join(re.escape(s) for s in sorted(labels, key=len, reverse=True))
    pat = re.compile(rf"(?<![\w.])(?:{alts})(?![\w]|\.\d)", re.I)
    out = []
    for m in pat.finditer(text):
        idx = _lookup(m.group(0), labels)
        if idx is not None:
            out.append(idx)
    return out


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start: end if end >= 0 else len(text)].strip()


def parse_action(text: str | None, labels: Sequence[str]) -> ActionParse:
    """The index of the final chosen action in `text`, or a reason it could not be found."""
    if text is None or not text.strip():
        return ActionParse(None, "empty response")
    for name, tier in (("explicit", _EXPLICIT), ("verb", [_VERBS])):
        matches = [(m.start(), m.group(1)) for pat in tier for m in pat.finditer(text)]
        if matches:
            pos, token = max(matches)
            idx = _lookup(token, labels)
            if idx is None:
                return ActionParse(None, f"answer {token.strip(_STRIP)!r} is not a legal action", name,
                                   _line_at(text, pos))
            return ActionParse(idx, None, name, _line_at(text, pos))
    whole = _lookup(text.strip().strip(_STRIP).strip(), labels)
    if whole is not None:
        return ActionParse(whole, None, "whole", text.strip())
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if lines and len(lines[-1].split()) <= MAX_LAST_LINE_WORDS and not _ABOUT_THE_TASK.search(lines[-1]):
        mentioned = set(_label_mentions(lines[-1], labels))
        if len(mentioned) == 1:
            return ActionParse(mentioned.pop(), None, "last_line", lines[-1])
    return ActionParse(None, "no final action found")
