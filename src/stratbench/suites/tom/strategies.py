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

Strict and flexible answers (lm-eval's strict-match / flexible-extract), as
:func:`read_option` reports them in every call record's ``parse``:

* **strict**: the first ``Option:`` line holds exactly one legal label (``Option: J``; markdown
  emphasis around the field name or the label and a final full stop allowed: ``**Option:** J.``)
  and the reply was not cut by the token budget (``finish_reason != "length"``);
* **flexible**: an answer read in any other way - the first ``Option:`` line says more than the
  label (``Option: J, since they copy me``, ``Option: Option J``, the label on the next line) or
  the reply was cut at the token limit, or the reply has no ``Option:`` line at all and the action
  parser finds an answer statement in the free text ("The answer is: Option B", "I choose J", a
  short last line naming one label);
* otherwise a parse failure with its reason. A first ``Option:`` line that names no legal label
  (or two) is a failure even when other text names one: that line is where the template puts the
  answer. An empty reply is never an answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from stratbench.errors import InputError
from stratbench.parsing.actions import parse_action

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


ParseMode = Literal["strict", "flexible"]


@dataclass(frozen=True)
class OptionParse:
    """A read answer: the action index (None on a failure, with ``error``) and how it was read."""

    action: int | None
    error: str | None = None
    parse: ParseMode | None = None  # strict / flexible (see the module doc); None on a failure

    @property
    def ok(self) -> bool:
        return self.action is not None


_EMPHASIS = " \t*_`"


def _exact_label(value: str, labels: Sequence[str]) -> int | None:
    """The label ``value`` is exactly (markdown emphasis and a final full stop aside), or None."""
    v = value.strip(_EMPHASIS)
    v = v[:-1].strip(_EMPHASIS) if v.endswith(".") else v
    return list(labels).index(v) if v in labels else None


def read_option(text: str | None, labels: Sequence[str], finish_reason: str | None = None) -> OptionParse:
    """The action of an answer and whether it was strict or flexible (see the module doc).

    ``text`` is the reply (completion mode: the answer stem put back in front of it);
    ``finish_reason`` the backend's ("length": cut by the token budget, never strict)."""
    if text is None or not text.strip():
        return OptionParse(None, "empty reply")
    cut = finish_reason == "length"
    for m in _FIELD_LINE.finditer(text):
        if m.group(1).lower() != "option":
            continue
        line_end = text.find("\n", m.end())
        value = text[m.end(): len(text) if line_end < 0 else line_end].strip()
        same_line = bool(value.strip(_EMPHASIS))
        if not same_line and line_end >= 0:  # "Option:\nJ": the value on the next non-empty line
            rest = [ln.strip() for ln in text[line_end:].splitlines() if ln.strip()]
            if rest and not _FIELD_LINE.match(rest[0]):
                value = rest[0]
        if not value.strip(_EMPHASIS):
            return OptionParse(None, "empty 'Option:' line")
        exact = _exact_label(value, labels) if same_line else None
        if exact is not None:
            return OptionParse(exact, None, "flexible" if cut else "strict")
        res = parse_action(value, labels)
        if res.ok:
            return OptionParse(res.action, None, "flexible")
        return OptionParse(None, f"'Option: {value[:40]}': {res.error}")
    res = parse_action(text, labels)
    if res.ok:
        return OptionParse(res.action, None, "flexible")
    return OptionParse(None, f"no 'Option:' line (the answer does not follow the template) and no answer "
                             f"in the text: {res.error}")


def parse_option(text: str | None, labels: Sequence[str]) -> OptionParse:
    """The action of an answer (strict or flexible): :func:`read_option` without a finish reason."""
    return read_option(text, labels)
