"""Generated replies as the suites read them: the answer only (a reasoning model's thinking is in
`GenerateResult.reasoning`, split off by `stratbench.models.reasoning`)."""

from __future__ import annotations

from stratbench.models.base import GenerateResult

NO_ANSWER = "the reply ended inside its reasoning: no answer after it"
#: a reply that closed its reasoning and then said nothing (not cut: it stopped)
NOTHING_AFTER = "the reply holds no answer after its reasoning"


def no_answer(res: GenerateResult) -> str | None:
    """Why a successful reply holds no answer to parse when it is a reasoning model's that gave
    none after its thinking — cut inside it at the token limit, or stopped after it (its parse
    failure names that, never an action read out of the reasoning)."""
    if res.ok and res.reasoning is not None and not (res.text or "").strip():
        return NO_ANSWER + " (cut at the token limit)" if res.finish_reason == "length" else NOTHING_AFTER
    return None
