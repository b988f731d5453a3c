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

Text before an opening tag (rare) stays part of the answer — also when the reply is then cut
inside that reasoning (``A<think>R`` → answer A) —, and a reply with several reasoning spans keeps
every span as reasoning and every piece outside them as the answer.
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
    """``text`` as (answer, reasoning) by the first tag pair it uses (see the module's rules):
    every span between the tags (and before a closing tag that comes first) is reasoning, the rest
    answer — text before an opening tag too, also when the reply is cut inside that reasoning."""
    for open_tag, close_tag in tags:
        if open_tag in text or close_tag in text:
            return _split(text, open_tag, close_tag)
    return Split(text, None)


def _split(text: str, open_tag: str, close_tag: str) -> Split:
    answer: list[str] = []
    reasoning: list[str] = []
    rest = text
    c, o = rest.find(close_tag), rest.find(open_tag)
    if c >= 0 and (o < 0 or c < o):  # a closing tag with no opening one before it: the template opened it
        reasoning.append(rest[:c])
        rest = rest[c + len(close_tag):]
    cut = False
    while True:
        o = rest.find(open_tag)
        if o < 0:
            answer.append(rest)
            break
        answer.append(rest[:o])
        rest = rest[o + len(open_tag):]
        c = rest.find(close_tag)
        if c < 0:  # the reply ends inside this reasoning
            reasoning.append(rest)
            cut = True
            break
        reasoning.append(rest[:c])
        rest = rest[c + len(close_tag):]
    # the answer's pieces joined by a line: stripped where they meet a tag (the reply's own start
    # and end are kept)
    after_tag = bool(reasoning) and text.find(close_tag) >= 0 and (text.find(open_tag) < 0
                                                                   or text.find(close_tag) < text.find(open_tag))
    pieces = [a.lstrip() if i or after_tag else a for i, a in enumerate(answer)]
    pieces = [a.rstrip() if i < len(pieces) - 1 or cut else a for i, a in enumerate(pieces)]
    said = "\n".join(a for a in pieces if a.strip())
    thought = "\n\n".join(r.strip() for r in reasoning if r.strip())
    return Split(None if cut and not said else said, thought)
