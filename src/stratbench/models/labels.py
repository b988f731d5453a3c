"""Exact choice scoring over a set of answer labels, correct for any label set.

A policy read from log-probabilities is the probability of each *answer*. Scored as a plain
continuation, P("1") is the probability that the answer *begins* with "1" — which includes "10",
"11", … So when one label is a prefix of another (Nash gap from 11 actions on: "0" … "10"), the
labels' probabilities overlap: their sum exceeded 1 (1.178 on an 11×2 game, 1.50 on average over
12×12 games with the embedded model) and action "1" took the mass of "10" and "11".

Such a label set is scored **closed** (`ScoreRequest.closed`): P(label, then a token that does
not begin with a letter or digit) — the answer is that label and nothing longer. Measured with the
embedded Gemma 3 270M on Nash-gap prompts, the token after a label is "." (39% of the mass), a
token led by a space (35%), "\\n" (11%), "," (10%), a digit (0.4% on 3×3 games, 36% on 12×12),
anything else ~3%: a single terminator string (as TMGBench's "]") would keep well under half of the
mass and, for the space, depend on how the tokenizer splits " and" — so the end of the answer is
read from the full next-token distribution instead, which local models (llama.cpp, transformers)
have. HTTP endpoints return only their top few next tokens: a run that would need closed scoring
there is refused before it starts (`check_closed`), pointing to ``--policy sample``.

Prefix-free label sets keep plain scoring (P(the answer begins with the label)), so their numbers
and the response cache are unchanged; closed events are disjoint, so a closed label set's mass is
at most 1 by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from stratbench.errors import InputError
from stratbench.models.base import LanguageModel, Message, ScoreRequest

#: a log-probability above this is no probability (a backend's rounding stays far below it)
LOGPROB_MAX = 1e-6


def prefix_free(labels: Iterable[str]) -> bool:
    """No label is a prefix of another (nor repeated). Sorted, a prefix sits right before the
    labels it begins, so neighbours suffice."""
    s = sorted(labels)
    return all(not b.startswith(a) for a, b in zip(s, s[1:]))


def choice_request(prompt: str, labels: Sequence[str], messages: tuple[Message, ...] = ()) -> ScoreRequest:
    """The request that scores each label as a whole answer: plain where the labels are
    prefix-free, closed where they are not."""
    return ScoreRequest(prompt, tuple(labels), messages, closed=not prefix_free(labels))


def check_closed(model: LanguageModel, label_sets: Iterable[Sequence[str]], what: str) -> None:
    """One InputError line before a run whose exact policy would need closed scoring on a
    backend that cannot do it (an HTTP endpoint)."""
    if model.supports_closed_scoring:
        return
    for labels in label_sets:
        if not prefix_free(labels):
            short = next(a for a in sorted(labels) for b in labels if b != a and b.startswith(a))
            longer = next(b for b in sorted(labels) if b != short and b.startswith(short))
            raise InputError(
                f"{model.spec}: {what} has labels that begin other labels ({short!r} begins {longer!r}); "
                "exact scoring then needs the model's whole next-token distribution, which a local model "
                "has (gguf:, hf:, embedded) and an HTTP endpoint does not: use --policy sample here")


@dataclass(frozen=True)
class LabelPolicy:
    """The exact policy over the labels: their probabilities renormalised over the labels, and
    ``mass``, the probability the model put on the labels at all."""

    probs: list[float]
    mass: float


def label_policy(logprobs: Sequence[float]) -> LabelPolicy | str:
    """The policy from the labels' log-probabilities, or why there is none (an error to record,
    never a substitute): NaN, a log-probability above 0, no finite label, a mass above 1."""
    lp = np.asarray(logprobs, dtype=float)
    if lp.size == 0 or np.any(np.isnan(lp)):
        return "a label's log-probability is not a number"
    if np.any(lp > LOGPROB_MAX):
        return f"a label's log-probability is above 0 ({float(lp.max()):.3g}): not a probability"
    finite = np.isfinite(lp)
    if not np.any(finite):
        return "no legal label has finite log-probability"
    m = float(lp[finite].max())
    w = np.where(finite, np.exp(lp - m), 0.0)
    mass = float(np.exp(m) * w.sum())
    if mass > 1.0 + LOGPROB_MAX:
        return f"the labels' probabilities sum to {mass:.6g} > 1: they overlap"
    return LabelPolicy((w / w.sum()).tolist(), mass)
