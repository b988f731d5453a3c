"""Prompting strategies: names, and how a generated answer is read.

The paper accepts a generated answer when it "matches the template and includes an action from the
action list", and otherwise samples again. Here the template's answer line is located first - the
*first* line of the form ``Option: ...`` (markdown emphasis allowed) - and its value is read with
the project's robust action parser (:func:`stratbench.parsing.actions.parse_action`, whole-token
label matching, never eval). Taking the first such line matters for raw models, which often go on
writing after the answer (a new "round", another template); a value naming no legal label, or
naming two ("<J or F>" echoed back), is a parse failure with the reason; an empty ``Option:``
line takes its value from the next non-empty line (``Option:\nJ``). Free-text fields
(``Thoughts:``, ``Plans:``, ``Insights:``, ``Plan:``) are read the same way: the first field line,
up to the next field line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stratbench.errors import InputError
from stratbench.parsing.actions import ActionParse, parse_action

PROMPTINGS = ("LM", "QA", "CoT", "CoT3", "Social", "SocialLM", "PlansInsights", "Reflexion", "Oracle",
              "OracleMax", "S2A", "S2ACoT")
"""Every ``--prompting`` value. ``Social`` = the paper's Social QA (the prediction is generated with
the partner-first QA prompt); ``SocialLM`` = Social LM (the prediction is read from log-probs with
Figure 3's prompt); ``CoT3`` = CoT 3-Shot (Figure 13); ``S2A`` / ``S2ACoT`` = System 2 Attention
(Figures 16-17) followed by QA / CoT prompting (the paper's "S2A" and "S2A + CoT" rows)."""

GENERATION_PROMPTINGS = tuple(p for p in PROMPTINGS if p != "LM")

_ALIASES = {
    "lm": "LM", "qa": "QA", "cot": "CoT", "social": "Social", "socialqa": "Social",
    "sociallm": "SocialLM", "plansinsights": "PlansInsights", "plans+insights": "PlansInsights",
    "reflexion": "Reflexion", "oracle": "Oracle", "oraclemax": "OracleMax", "oracle+max": "OracleMax",
    "cot3": "CoT3", "cot3shot": "CoT3", "cot+3shot": "CoT3", "s2a": "S2A", "s2aqa": "S2A",
    "s2a+qa": "S2A", "system2attention": "S2A", "s2acot": "S2ACoT", "s2a+cot": "S2ACoT",
}

FIELDS = ("thoughts", "plans", "plan", "insights", "option")
_FIELD_LINE = re.compile(r"^[ \t>#*_-]*(thoughts|plans|plan|insights|option)[ \t*_]*:", re.IGNORECASE | re.MULTILINE)


def normalize_prompting(name: str) -> str:
    """Canonical strategy name (case-insensitive; "Plans+Insights", "Oracle+Max", "SocialQA" too)."""
    key = name.strip().lower().replace("_", "").replace("-", "").replace(" ", "")
    if key not in _ALIASES:
        raise InputError(f"unknown --prompting {name!r}; known: {', '.join(PROMPTINGS)}")
    return _ALIASES[key]


def extract_field(text: str | None, name: str) -> str | None:
    """The text of the first ``name:`` field, up to the next field line; None when absent.

    ``plan`` and ``plans`` are different fields (the reflection answers ``Plan:``, Plans+Insights
    ``Plans:``); matching is case-insensitive and ignores markdown emphasis around the name.
    """
    if not text:
        return None
    want = name.lower()
    matches = list(_FIELD_LINE.finditer(text))
    for i, m in enumerate(matches):
        if m.group(1).lower() == want:
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            return text[m.end():end].strip().strip("*_").strip()
    return None


def parse_option(text: str | None, labels: Sequence[str]) -> ActionParse:
    """The action on the first ``Option:`` line of ``text`` (see the module doc)."""
    if text is None or not text.strip():
        return ActionParse(None, "empty response")
    for m in _FIELD_LINE.finditer(text):
        if m.group(1).lower() != "option":
            continue
        line_end = text.find("\n", m.end())
        value = text[m.end(): len(text) if line_end < 0 else line_end].strip()
        if not value and line_end >= 0:  # "Option:\nJ": the value on the next non-empty line
            rest = [ln.strip() for ln in text[line_end:].splitlines() if ln.strip()]
            if rest and not _FIELD_LINE.match(rest[0]):
                value = rest[0]
        if not value:
            return ActionParse(None, "empty 'Option:' line")
        res = parse_action(value, labels)
        if res.ok:
            return res
        return ActionParse(None, f"'Option: {value[:40]}': {res.error}")
    return ActionParse(None, "no 'Option:' line (the answer does not follow the template)")
