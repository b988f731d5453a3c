"""Language models as players, under two policies.

- `logprob`: the policy *is* the model's distribution over the legal action labels, renormalised,
  read from log-probabilities in one scoring call: exact, with no sampling noise and no parsing.
  `label_mass` records how much probability the model put on legal labels at all.
- `sample`: one generation per decision, parsed by the robust parsers; the empirical distribution
  over trials is the policy. Unparseable answers are `parse_failed`, failed calls `error`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from stratbench.errors import InputError
from stratbench.models import ModelOptions, open_model
from stratbench.models.base import GenerateRequest, LanguageModel, ScoreRequest
from stratbench.parsing import parse_action
from stratbench.suites.nashgap.answers import parse_distribution
from stratbench.suites.nashgap.players import SCRIPTED_AGENTS, Agent, Decision, DecisionRequest

Policy = Literal["logprob", "sample"]


class ModelAgent(Agent):
    def __init__(
        self,
        model: LanguageModel,
        policy: Policy = "logprob",
        temperature: float = 1.0,
        max_tokens: int = 512,
        chat: bool = False,
        system: str | None = None,
    ) -> None:
        self.model = model
        self.policy = policy
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.chat = chat
        self.system = system
        self.name = model.spec
        self.prompt_style = "completion" if policy == "logprob" else "instruction"
        self.exact_policy = policy == "logprob"

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "policy": self.policy, "model": self.model.describe()}
        if self.policy == "sample":
            d.update(temperature=self.temperature, max_tokens=self.max_tokens, chat=self.chat)
        return d

    async def decide(self, request: DecisionRequest) -> Decision:
        if self.policy == "logprob":
            return await self._decide_logprob(request)
        return await self._decide_sample(request)

    async def _decide_logprob(self, request: DecisionRequest) -> Decision:
        (res,) = await self.model.score([ScoreRequest(request.prompt, tuple(request.labels))])
        usage = {"tokens_in": res.tokens_in, "cached": res.cached, "n_tokens": res.n_tokens}
        if not res.ok:
            return Decision("error", error=res.error, latency_s=res.latency_s, usage=usage)
        lp = np.asarray(res.logprobs, dtype=float)
        if not np.any(np.isfinite(lp)):
            return Decision("error", error="no legal label has finite log-probability",
                            latency_s=res.latency_s, usage=usage, logprobs=res.logprobs)
        m = lp[np.isfinite(lp)].max()
        w = np.where(np.isfinite(lp), np.exp(lp - m), 0.0)
        probs = w / w.sum()
        mass = float(math.exp(m) * w.sum())
        rng = np.random.default_rng(request.seed)
        d = Decision("parsed", policy=probs.tolist(), latency_s=res.latency_s, usage=usage,
                     label_mass=mass, logprobs=[float(x) for x in lp])
        if request.mode == "pure":
            d.action = int(rng.choice(len(probs), p=probs))
        else:
            d.strategy = probs.tolist()
        return d

    async def _decide_sample(self, request: DecisionRequest) -> Decision:
        (res,) = await self.model.generate([
            GenerateRequest(
                request.prompt, max_tokens=self.max_tokens, temperature=self.temperature,
                seed=request.seed, sample_index=request.trial_id, chat=self.chat, system=self.system,
            )
        ])
        usage = {"tokens_in": res.tokens_in, "tokens_out": res.tokens_out, "cached": res.cached}
        if not res.ok:
            return Decision("error", error=res.error, latency_s=res.latency_s, usage=usage)
        if request.mode == "pure":
            p = parse_action(res.text, request.labels)
            if not p.ok:
                return Decision("parse_failed", raw_response=res.text, error=p.error,
                                latency_s=res.latency_s, usage=usage)
            return Decision("parsed", action=p.action, raw_response=res.text,
                            latency_s=res.latency_s, usage=usage)
        q = parse_distribution(res.text, request.labels)
        if not q.ok:
            return Decision("parse_failed", raw_response=res.text, error=q.error,
                            latency_s=res.latency_s, usage=usage)
        return Decision("parsed", strategy=q.probs, raw_response=res.text, renormalized=q.renormalized,
                        raw_sum=q.raw_sum, latency_s=res.latency_s, usage=usage)

    async def aclose(self) -> None:
        await self.model.aclose()


def make_agent(
    spec: str,
    policy: str | None = None,
    *,
    model_options: ModelOptions | None = None,
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
    model = open_model(spec, model_options, no_cache=no_cache, cache_path=cache_path)
    if policy is None:
        policy = "logprob" if model.supports_logprobs else "sample"
    elif policy == "logprob" and not model.supports_logprobs:
        raise InputError(f"{spec}: this backend gives no log-probabilities; use --policy sample")
    return ModelAgent(model, policy, temperature=temperature, max_tokens=max_tokens, chat=chat)  # type: ignore[arg-type]
