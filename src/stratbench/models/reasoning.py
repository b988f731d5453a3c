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

from stratbench.models.base import GenerateRequest, GenerateResult, ScoreRequest, ScoreResult, WrappedModel
from stratbench.parsing.reasoning import split_reasoning

__all__ = ["ReasoningReplies", "answer_only"]


def answer_only(res: GenerateResult) -> GenerateResult:
    """``res`` with any ``<think>`` block of its text moved to ``reasoning`` (after the server's own
    reasoning, when it sent both)."""
    if not res.ok or res.text is None:
        return res
    split = split_reasoning(res.text)
    if split.reasoning is None:
        return res
    parts = [p for p in (res.reasoning, split.reasoning) if p]
    return dataclasses.replace(res, text=split.answer if split.answer is not None else "",
                               reasoning="\n\n".join(parts))


class ReasoningReplies(WrappedModel):
    """A backend whose replies are split into reasoning and answer (`answer_only`); everything
    else — scoring, its usage counters, its identity, its chat checks — is the backend's own."""

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        return await self.inner.score(requests)

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return [answer_only(r) for r in await self.inner.generate(requests)]
