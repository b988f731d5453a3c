"""Pure-action answers: find the *final* answer, for any number of actions.

Models think aloud ("action 0 looks bad... I choose 2, not 0"), so the first number in the text is
the wrong one. We look for answer statements in decreasing order of explicitness and take the last
occurrence of the most explicit kind present:

1. "Action: X", "Answer: X", "Final answer: X", "Choice: X", \\boxed{X}
2. verbs: "I choose/select/pick/play X"
3. the whole reply is one label
4. the last non-empty line mentions exactly one label

Tokens are matched whole ("37" is never read as "3"). A statement that names something that is not
a legal action is a parse failure with the reason, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ActionParse:
    action: int | None
    error: str | None = None

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


def parse_action(text: str | None, labels: Sequence[str]) -> ActionParse:
    """The index of the final chosen action in `text`, or a reason it could not be found."""
    if text is None or not text.strip():
        return ActionParse(None, "empty response")
    for tier in (_EXPLICIT, [_VERBS]):
        matches = [(m.start(), m.group(1)) for pat in tier for m in pat.finditer(text)]
        if matches:
            _, token = max(matches)
            idx = _lookup(token, labels)
            if idx is None:
                return ActionParse(None, f"answer {token.strip(_STRIP)!r} is not a legal action")
            return ActionParse(idx)
    whole = _lookup(text.strip().strip(_STRIP).strip(), labels)
    if whole is not None:
        return ActionParse(whole)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if lines:
        mentioned = set(_label_mentions(lines[-1], labels))
        if len(mentioned) == 1:
            return ActionParse(mentioned.pop())
    return ActionParse(None, "no final action found")
