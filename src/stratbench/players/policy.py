"""The policies a model can play by, and the exact policy from a scored label set.

* ``logprob`` — the raw (completion) prompt is scored: each legal answer label's exact
  log-probability, renormalised over the labels. The way to read a base model.
* ``choice`` — the same over the chat conversation (the model's chat template, the assistant's
  turn opened with the answer stem): exact choice scoring of a chat model.
* ``sample`` — the model generates an answer that is parsed; an unparseable answer is a parse
  failure, never guessed.

Which policy a suite picks by default is the suite's rule (they differ on purpose: TMGBench's
reasoning prompts generate), but the names, the check of a user's choice, and the arithmetic of an
exact policy live here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from stratbench.errors import InputError
from stratbench.models.base import ScoreResult
from stratbench.models.labels import LabelPolicy, label_policy

if TYPE_CHECKING:
    import numpy as np

Policy = Literal["logprob", "choice", "sample"]
POLICIES: tuple[Policy, ...] = ("logprob", "choice", "sample")
#: the policies read from log-probabilities (no sampling, no parsing)
EXACT_POLICIES: tuple[Policy, ...] = ("logprob", "choice")

ExactPolicy = LabelPolicy


def draw(probs: Sequence[float] | np.ndarray, seed: int) -> int:
    """The action a seeded player takes from ``probs`` (numpy's generator seeded with ``seed``).
    One function for the play and for a record read back, so a draw is repeated exactly;
    ValueError where ``probs`` is no distribution numpy draws from."""
    import numpy as np

    return int(np.random.default_rng(seed).choice(len(probs), p=probs))


def check_policy(policy: str | None, where: str = "--policy") -> None:
    """One InputError line for a policy name that is none of `POLICIES` (None: the suite's default)."""
    if policy is not None and policy not in POLICIES:
        raise InputError(f"unknown {where} {policy!r}; use logprob, choice or sample")


def exact_policy(logprobs: Sequence[float] | None) -> ExactPolicy | str:
    """The policy over the labels from their log-probabilities — renormalised over the labels
    with the label mass (the probability the model put on the labels at all) — or why there is
    none, an error to record and never a substitute: no log-probabilities, NaN, a value above 0,
    no finite label, a mass above 1 (labels that overlap)."""
    if logprobs is None:
        return "the backend returned no log-probabilities"
    return label_policy(logprobs)


def scored_policy(result: ScoreResult) -> ExactPolicy | str:
    """The exact policy of a scoring call, or why there is none: the call's own error, or
    `exact_policy`'s reason its numbers are no policy. Either way the suite records an error."""
    if not result.ok:
        return result.error or "the scoring call failed"
    return exact_policy(result.logprobs)
