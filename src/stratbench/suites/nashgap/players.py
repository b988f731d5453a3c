"""Nash-gap players behind one policy interface, scripted or model-backed.

A player gets a `DecisionRequest` (the game, the prompt text built for it, the legal action labels,
the mode, and a seed for any randomness) and returns a `Decision`. A decision is honest about what
happened: `parsed` (a model answer was understood), `parse_failed` (it was not — nothing is
guessed), `error` (no answer at all, with the reason), or `ok` (a scripted player). It keeps the raw
text and timings. When a player knows the exact distribution its choice was drawn from (a Nash
oracle, or a raw model scored by log-probabilities), it reports it as `policy`, and metrics use that
exact distribution instead of the single sampled action.

Scripted reference players answer from the game itself and never look at the prompt, so they
measure the game, not the wording. `random` is the original benchmark's dummy (uniform action,
Dirichlet(1) strategy). Player specs resolve here: a scripted name, or a language model under a
policy (:mod:`.model_player`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, cast

import numpy as np

from stratbench.errors import InputError
from stratbench.games.normal_form import NormalFormGame
from stratbench.runner.schema import SCORED_STATUSES, Status
from stratbench.solvers.zerosum import solve_zero_sum

Mode = Literal["pure", "mixed"]


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
    # generated answers: "strict" (the requested format exactly) or "flexible" (extracted from
    # free text); None when nothing was parsed from text
    parse: str | None = None
    finish_reason: str | None = None  # generated answers: "stop", or "length" (cut by the budget)
    rendered: str | None = None  # chat: the text the model saw, after its chat template
    reasoning: str | None = None  # generated answers: a reasoning model's thinking, apart from raw_response

    @property
    def scored(self) -> bool:
        return self.status in SCORED_STATUSES


PromptStyle = Literal["instruction", "completion", "choice"]


class Agent(abc.ABC):
    """A player. Subclasses implement `decide`; it must not raise for model failures (return
    status `error` instead), and all randomness must come from `request.seed`.

    `prompt_style` tells suites which prompt to build: "instruction" (answer in a stated format,
    parsed), "completion" (a raw-model prompt ending where the action label goes, scored by
    log-probabilities) or "choice" (the pure-mode instruction prompt in every mode: a chat model's
    exact distribution over its "Action: X" answer is the policy). `exact_policy` is True when every decision reports the exact distribution
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


def settled(decision: Any) -> Decision:
    """The result of a scripted player's ``decide`` coroutine, which never waits on anything (it
    computes from the request alone): run to its end here, outside any event loop, so a record
    read back can be played again where it is read."""
    try:
        decision.send(None)
    except StopIteration as done:
        return cast(Decision, done.value)
    decision.close()
    raise RuntimeError("a scripted player waited on something")


# -- scripted reference players ------------------------------------------------------------


def _one_hot(i: int, n: int) -> list[float]:
    v = [0.0] * n
    v[i] = 1.0
    return v


class RandomAgent(Agent):
    """Uniform random action, or a Dirichlet(1) mixed strategy; behaves like a sampled black box
    (it does not report its exact policy), as the original's dummy did."""

    name = "random"

    async def decide(self, request: DecisionRequest) -> Decision:
        rng = np.random.default_rng(request.seed)
        m = request.game.shape[0]
        if request.mode == "pure":
            return Decision("ok", action=int(rng.integers(m)))
        return Decision("ok", strategy=rng.dirichlet(np.ones(m)).tolist())


class NashAgent(Agent):
    """Plays the row equilibrium strategy: samples an action from it in pure mode, states it in
    mixed mode, and reports it as its exact policy in both."""

    name = "nash"

    def __init__(self) -> None:
        self._cache: dict[bytes, np.ndarray] = {}  # trials of one game share one solve

    def _strategy(self, payoff: np.ndarray) -> np.ndarray:
        key = payoff.shape[0].to_bytes(4, "little") + payoff.tobytes()
        if key not in self._cache:
            self._cache[key] = solve_zero_sum(payoff).row_strategy
        return self._cache[key]

    async def decide(self, request: DecisionRequest) -> Decision:
        p = self._strategy(request.game.payoff_row)
        if request.mode == "pure":
            rng = np.random.default_rng(request.seed)
            return Decision("ok", action=int(rng.choice(len(p), p=p)), policy=p.tolist())
        return Decision("ok", strategy=p.tolist(), policy=p.tolist())


class MaximinPureAgent(Agent):
    """The pure action with the best worst case (lowest index on ties): optimal in saddle-point
    games, exploitable in mixed ones."""

    name = "maximin-pure"

    async def decide(self, request: DecisionRequest) -> Decision:
        a = request.game.payoff_row
        i = int(np.argmax(a.min(axis=1)))
        if request.mode == "pure":
            return Decision("ok", action=i, policy=_one_hot(i, a.shape[0]))
        return Decision("ok", strategy=_one_hot(i, a.shape[0]), policy=_one_hot(i, a.shape[0]))


class FirstActionAgent(Agent):
    """Always the first listed action: the floor a position-biased model falls to."""

    name = "first-action"

    async def decide(self, request: DecisionRequest) -> Decision:
        m = request.game.shape[0]
        if request.mode == "pure":
            return Decision("ok", action=0, policy=_one_hot(0, m))
        return Decision("ok", strategy=_one_hot(0, m), policy=_one_hot(0, m))


# -- specs → players ----------------------------------------------------------------------


SCRIPTED_AGENTS: dict[str, Callable[[], Agent]] = {
    "random": RandomAgent,
    "dummy": RandomAgent,  # the original benchmark's name for the random player
    "nash": NashAgent,
    "maximin-pure": MaximinPureAgent,
    "first-action": FirstActionAgent,
}

# The original's --llm-type values for model backends, mapped to model specs.
LLM_TYPE_PROVIDERS = {"together": "together", "openai": "openai",
                      "openai-compatible": "openai-compatible", "hf": "hf", "gguf": "gguf"}
ORIGINAL_DEFAULT_MODELS = {
    "together": "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
    "openai": "gpt-4o-mini",
}


def resolve_player_spec(model: str | None, llm_type: str | None, llm_model: str | None) -> str:
    """`--model SPEC` wins; `--llm-type/--llm-model` are the original's aliases; default embedded."""
    if model:
        return model.strip()
    if llm_type is None:
        return "embedded"
    key = llm_type.strip().lower()
    if key in SCRIPTED_AGENTS or key == "embedded":
        return key
    if key in LLM_TYPE_PROVIDERS:
        name = llm_model or ORIGINAL_DEFAULT_MODELS.get(key)
        if not name:
            raise InputError(f"--llm-type {llm_type} needs --llm-model")
        return f"{LLM_TYPE_PROVIDERS[key]}:{name}"
    raise InputError(
        f"unknown --llm-type {llm_type!r}; known: {', '.join(SCRIPTED_AGENTS)}, embedded, "
        + ", ".join(LLM_TYPE_PROVIDERS)
    )
