"""Every generated reply read as a reasoning model's: its thinking apart from its answer.

`open_model` puts every backend behind `ReasoningReplies`, so whatever generates — a local GGUF
or transformers model, an OpenAI-compatible server with or without a reasoning parser, a hosted
API, a cached reply — reaches the suites' parsers as the answer alone (`GenerateResult.text`),
with the thinking in `GenerateResult.reasoning`. A reply cut inside its thinking has the empty
answer: the suites count it as a parse failure, never as an action read out of the reasoning
(`stratbench.parsing.reasoning` has the rules). A reply without reasoning passes unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
    WrappedModel,
)
from stratbench.parsing.reasoning import DEFAULT_TAGS, split_reasoning

__all__ = ["THINKING_BUDGETS", "ReasoningReplies", "answer_only", "thinking_budget"]

#: --reasoning-effort → the thinking budget (tokens) sent to the APIs that take a budget rather
#: than an effort (Anthropic's extended thinking, Gemini's thinking_config). "none" turns thinking
#: off (Anthropic: no thinking block is asked for; Gemini: a budget of 0). The smallest budget is
#: Anthropic's minimum (1,024); the largest the most every Gemini 2.5 model takes (24,576).
THINKING_BUDGETS: dict[str, int] = {"none": 0, "minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}


def thinking_budget(effort: str | None) -> int | None:
    """The thinking budget of ``effort`` (None: the API's default, nothing sent)."""
    return None if effort is None else THINKING_BUDGETS[effort]


def answer_only(res: GenerateResult, tags: tuple[tuple[str, str], ...] = DEFAULT_TAGS) -> GenerateResult:
    """``res`` with any ``<think>`` block (or the block between ``tags``) of its text moved to
    ``reasoning`` (after the server's own reasoning, when it sent both)."""
    if not res.ok or res.text is None:
        return res
    split = split_reasoning(res.text, tags)
    if split.reasoning is None:
        return res
    parts = [p for p in (res.reasoning, split.reasoning) if p]
    return dataclasses.replace(res, text=split.answer if split.answer is not None else "",
                               reasoning="\n\n".join(parts))


class ReasoningReplies(WrappedModel):
    """A backend whose replies are split into reasoning and answer (`answer_only`); everything
    else — scoring, its usage counters, its identity, its chat checks — is the backend's own.
    ``tags``: the thinking's tag pairs (--think-tags); the cache holds the reply as it came, so
    other tags read the same cached replies anew."""

    def __init__(self, inner: LanguageModel, tags: tuple[tuple[str, str], ...] = DEFAULT_TAGS) -> None:
        super().__init__(inner)
        self.tags = tags

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        return await self.inner.score(requests)

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return [answer_only(r, self.tags) for r in await self.inner.generate(requests)]
