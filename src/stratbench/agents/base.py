"""The policy interface every player implements, scripted or model-backed.

A player gets a `DecisionRequest` (the game, the prompt text built for it, the legal action labels,
the mode, and a seed for any randomness) and returns a `Decision`. A decision is honest about what
happened: `parsed` (a model answer was understood), `parse_failed` (it was not — nothing is
guessed), `error` (no answer at all, with the reason), or `ok` (a scripted player). It keeps the raw
text and timings. When a player knows the exact distribution its choice was drawn from (a Nash
oracle, or a raw model scored by log-probabilities), it reports it as `policy`, and metrics use that
exact distribution instead of the single sampled action.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Literal

from stratbench.games.normal_form import NormalFormGame

Mode = Literal["pure", "mixed"]
Status = Literal["ok", "parsed", "parse_failed", "error"]
SCORED_STATUSES = ("ok", "parsed")


@dataclass(frozen=True)
class DecisionRequest:
    game: NormalFormGame
    mode: Mode
    prompt: str
    labels: tuple[str, ...]
    seed: int
    game_id: int = 0
    trial_id: int = 0
    role: str = "row"


@dataclass
class Decision:
    status: Status
    action: int | None = None  # pure mode: the chosen action index
    strategy: list[float] | None = None  # mixed mode: the stated distribution (normalised)
    policy: list[float] | None = None  # the exact distribution the decision was drawn from, if known
    raw_response: str | None = None
    error: str | None = None  # why it failed (error or parse_failed)
    renormalized: bool = False  # a stated distribution did not sum to 1 and was rescaled
    raw_sum: float | None = None  # its sum before rescaling
    latency_s: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)  # tokens, cache hits, ...
    label_mass: float | None = None  # log-prob policies: probability on legal labels at all
    logprobs: list[float] | None = None  # log-prob policies: raw label log-probabilities

    @property
    def scored(self) -> bool:
        return self.status in SCORED_STATUSES


PromptStyle = Literal["instruction", "completion"]


class Agent(abc.ABC):
    """A player. Subclasses implement `decide`; it must not raise for model failures (return
    status `error` instead), and all randomness must come from `request.seed`.

    `prompt_style` tells suites which prompt to build: "instruction" (answer in a stated format,
    parsed) or "completion" (a raw-model prompt ending where the action label goes, scored by
    log-probabilities). `exact_policy` is True when every decision reports the exact distribution
    it comes from, so repeated trials of one prompt add nothing.
    """

    name: str = "agent"
    prompt_style: PromptStyle = "instruction"
    exact_policy: bool = False

    @abc.abstractmethod
    async def decide(self, request: DecisionRequest) -> Decision: ...

    def describe(self) -> dict[str, Any]:
        """What goes into run.json to identify this player (never secrets)."""
        return {"name": self.name}

    async def aclose(self) -> None:
        """Release resources (connections, models). Default: nothing to release."""
