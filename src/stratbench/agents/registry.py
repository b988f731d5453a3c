"""Player specs → players: scripted reference agents, or a language model under a policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from stratbench.agents.base import Agent
from stratbench.agents.scripted import FirstActionAgent, MaximinPureAgent, NashAgent, RandomAgent
from stratbench.errors import InputError

if TYPE_CHECKING:
    from stratbench.models.base import LanguageModel

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


def make_agent(
    spec: str,
    policy: str | None = None,
    *,
    model_options: object | None = None,
    no_cache: bool = False,
    cache_path: str | None = None,
    temperature: float = 1.0,
    max_tokens: int = 512,
    chat: bool = False,
) -> Agent:
    """Build the player named by `spec` (scripted name or model spec)."""
    key = spec.strip().lower()
    if key in SCRIPTED_AGENTS:  # scripted players have no policy choice
        return SCRIPTED_AGENTS[key]()
    if policy not in (None, "logprob", "sample"):
        raise InputError(f"unknown --policy {policy!r}; use logprob or sample")
    from stratbench.agents.model_agent import ModelAgent

    model = open_model(spec, model_options, no_cache=no_cache, cache_path=cache_path)
    if policy is None:
        policy = "logprob" if model.supports_logprobs else "sample"
    elif policy == "logprob" and not model.supports_logprobs:
        raise InputError(f"{spec}: this backend gives no log-probabilities; use --policy sample")
    return ModelAgent(model, policy, temperature=temperature, max_tokens=max_tokens, chat=chat)  # type: ignore[arg-type]


def open_model(
    spec: str, model_options: object | None = None, *, no_cache: bool = False,
    cache_path: str | None = None,
) -> "LanguageModel":
    """Load a model backend by spec, behind the response cache unless `no_cache`."""
    from stratbench.models.cache import CachedModel, ResponseCache
    from stratbench.models.registry import ModelOptions, load_model, split_spec

    split_spec(spec)  # validate before loading anything
    model = load_model(spec, model_options if isinstance(model_options, ModelOptions) else None)
    if not no_cache:
        model = CachedModel(model, ResponseCache(cache_path))
    return model
