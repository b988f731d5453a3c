"""A reasoning model's reply split into its reasoning and its answer, so that parsers read only
the answer.

Open reasoning models (DeepSeek-R1 and its distills, Qwen3 in thinking mode, served by vLLM or
llama.cpp without a reasoning parser) put their thinking in the reply itself, between tags:
``<think>…</think>\\n\\nAction: 2``. A sentence of that thinking ("if I choose Action: 0 the
opponent …") is no answer, and a reply the token limit cut *inside* its thinking has no answer at
all: reading an action out of it would invent one. So:

* ``<think>R</think>A`` → reasoning R, answer A;
* ``R</think>A`` (the chat template opened the tag in the prompt) → reasoning R, answer A;
* ``<think>R`` with no closing tag → reasoning R and **no answer** (a parse failure, never an
  action taken from R);
* a reply without the tags is all answer.

Text before an opening tag (rare) stays part of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from stratbench.checks import tag_pair

#: (opening, closing) tag pairs recognised, in order
DEFAULT_TAGS: tuple[tuple[str, str], ...] = (("<think>", "</think>"),)

__all__ = ["DEFAULT_TAGS", "Split", "parse_tags", "split_reasoning"]


def parse_tags(value: str | None, flag: str = "--think-tags") -> tuple[tuple[str, str], ...]:
    """``"OPEN,CLOSE"`` (``"<reasoning>,</reasoning>"``) as the one tag pair recognised; None: the
    default ``<think>`` pair (`stratbench.checks.tag_pair` says what a value may be)."""
    return DEFAULT_TAGS if value is None else (tag_pair(flag, value),)


@dataclass(frozen=True)
class Split:
    answer: str | None  # None: the reply ended inside its reasoning (no answer was given)
    reasoning: str | None  # None: the reply holds no reasoning


def split_reasoning(text: str, tags: tuple[tuple[str, str], ...] = DEFAULT_TAGS) -> Split:
    """``text`` as (answer, reasoning) by the first tag pair it uses (see the module's rules)."""
    for open_tag, close_tag in tags:
        o = text.find(open_tag)
        c = text.find(close_tag, o + len(open_tag) if o >= 0 else 0)
        if o < 0 and c < 0:
            continue
        if o >= 0 and (c < 0 or o < c):
            before, start = text[:o], o + len(open_tag)
        else:  # a closing tag with no opening one before it: the template opened the reasoning
            before, start = "", 0
        if c < 0:
            return Split(None, text[start:].strip())
        after = text[c + len(close_tag):]
        answer = (before.rstrip() + ("\n" if before.strip() else "") + after.lstrip()) if before.strip() else after.lstrip()
        return Split(answer, text[start:c].strip())
    return Split(text, None)
