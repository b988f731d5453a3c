"""Name → player. The model layer registers its backends here too."""

from __future__ import annotations

from typing import Callable

from stratbench.agents.base import Agent
from stratbench.agents.scripted import FirstActionAgent, MaximinPureAgent, NashAgent, RandomAgent
from stratbench.errors import InputError

SCRIPTED_AGENTS: dict[str, Callable[[], Agent]] = {
    "random": RandomAgent,
    "dummy": RandomAgent,  # the original benchmark's name for the random player
    "nash": NashAgent,
    "maximin-pure": MaximinPureAgent,
    "first-action": FirstActionAgent,
}

MODEL_TYPES = ("together", "openai")


def make_agent(llm_type: str, llm_model: str | None = None) -> Agent:
    """Build the player named by `--llm-type` (and `--llm-model` for model backends)."""
    key = llm_type.strip().lower()
    if key in SCRIPTED_AGENTS:
        return SCRIPTED_AGENTS[key]()
    if key in MODEL_TYPES:
        raise InputError(
            f"--llm-type {llm_type}: model backends are not available in this version "
            f"(scripted players: {', '.join(SCRIPTED_AGENTS)})"
        )
    raise InputError(f"unknown --llm-type {llm_type!r}; known: {', '.join(SCRIPTED_AGENTS)}")
