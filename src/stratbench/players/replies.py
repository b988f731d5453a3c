"""Generated replies as the suites read them: the answer only (a reasoning model's thinking is in
`GenerateResult.reasoning`, split off by `stratbench.models.reasoning`)."""

from __future__ import annotations

from stratbench.models.base import GenerateResult

NO_ANSWER = "the reply ended inside its reasoning: no answer after it"


def no_answer(res: GenerateResult) -> str | None:
    """Why a successful reply holds no answer to parse when it is a reasoning model's cut inside
    its thinking (its parse failure names that, never an action read out of the reasoning)."""
    if res.ok and res.reasoning is not None and not (res.text or "").strip():
        return NO_ANSWER + (" (cut at the token limit)" if res.finish_reason == "length" else "")
    return None
