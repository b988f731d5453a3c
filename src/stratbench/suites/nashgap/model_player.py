"""Language models as players, under three policies.

- `logprob` (raw models): the policy *is* the model's distribution over the legal action labels,
  renormalised, read from log-probabilities of a completion prompt in one scoring call: exact, with
  no sampling noise and no parsing. `label_mass` records how much probability the model put on
  legal labels at all. From 11 actions on the labels "0" … "10" begin one another and are scored
  as whole answers (`stratbench.models.labels`).
- `choice` (chat models): the same exact distribution for an instruction-tuned model, as lm-eval
  scores chat models on multiple choice: the instruction prompt is the user's message, the model's
  chat template opens the assistant's turn, the answer stem ``Action: `` follows, and each legal
  label is scored as its continuation. In pure mode an action is drawn from that distribution; in
  mixed mode it is the stated strategy (as with `logprob`).
- `sample`: one generation per decision (with ``--chat``, the instruction prompt as a user message
  rendered by the model's chat template), parsed by the robust parsers; the empirical distribution
  over trials is the policy. Unparseable answers are `parse_failed`, failed calls `error`; a parsed
  answer says whether it followed the requested format exactly (`strict`) or was extracted from
  free text (`flexible`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.models import ModelOptions, open_model
from stratbench.models.base import GenerateRequest, LanguageModel, ScoreRequest
from stratbench.models.labels import choice_request
from stratbench.players import Policy, check_policy, draw, exact_policy, no_answer
from stratbench.suites.nashgap.answers import read_sampled
from stratbench.suites.nashgap.players import SCRIPTED_AGENTS, Agent, Decision, DecisionRequest

#: what the assistant's turn starts with under `--policy choice` (the pure prompt's answer format)
ANSWER_STEM = "Action: "


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
        # logprob: the raw completion prompt; choice: the pure-mode instruction prompt in both modes
        # (its exact distribution over "Action: X" is the policy, as logprob's is); sample: the
        # instruction prompt of the mode
        self.prompt_style = {"logprob": "completion", "choice": "choice"}.get(policy, "instruction")  # type: ignore[assignment]
        self.exact_policy = policy in ("logprob", "choice")

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "policy": self.policy, "model": self.model.describe()}
        if self.policy == "sample":
            d.update(temperature=self.temperature, max_tokens=self.max_tokens, chat=self.chat)
        elif self.policy == "choice":
            d.update(chat=True, answer_stem=ANSWER_STEM)
        return d

    async def decide(self, request: DecisionRequest) -> Decision:
        if self.policy == "logprob":
            return await self._decide_scored(request, choice_request(request.prompt, request.labels))
        if self.policy == "choice":
            return await self._decide_scored(request, choice_request(
                ANSWER_STEM, request.labels, messages=(("user", request.prompt),)))
        return await self._decide_sample(request)

    async def _decide_scored(self, request: DecisionRequest, score: ScoreRequest) -> Decision:
        """An exact policy: the labels' log-probabilities, renormalised over the legal labels."""
        (res,) = await self.model.score([score])
        usage = {"tokens_in": res.tokens_in, "cached": res.cached, "n_tokens": res.n_tokens}
        if res.usage_unknown:  # (its 0 is no count: run.json's model_usage_unknown counts it)
            usage["usage_unknown"] = True
        rendered = res.rendered if score.messages else None
        if not res.ok:
            return Decision("error", error=res.error, latency_s=res.latency_s, usage=usage, rendered=rendered)
        pol = exact_policy(res.logprobs)
        if isinstance(pol, str):
            return Decision("error", error=pol, latency_s=res.latency_s, usage=usage, logprobs=res.logprobs,
                            rendered=rendered)
        probs = np.asarray(pol.probs)
        d = Decision("parsed", policy=pol.probs, latency_s=res.latency_s, usage=usage,
                     label_mass=pol.mass, logprobs=[float(x) for x in res.logprobs], rendered=rendered)  # type: ignore[union-attr]
        if request.mode == "pure":
            d.action = draw(probs, request.seed)
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
        usage: dict[str, Any] = {"tokens_in": res.tokens_in, "tokens_out": res.tokens_out, "cached": res.cached}
        if res.usage_unknown:  # (its 0s are no counts: run.json's model_usage_unknown counts it)
            usage["usage_unknown"] = True
        if res.tokens_reasoning is not None:
            usage["tokens_reasoning"] = res.tokens_reasoning
        common: dict[str, Any] = {"latency_s": res.latency_s, "usage": usage, "reasoning": res.reasoning,
                                  "finish_reason": res.finish_reason, "rendered": res.rendered}
        if not res.ok:
            return Decision("error", error=res.error, **common)
        if (cut := no_answer(res)) is not None:
            return Decision("parse_failed", raw_response=res.text, error=cut, **common)
        a = read_sampled(res.text, request.labels, request.mode, res.finish_reason)
        if a.status != "parsed":
            return Decision("parse_failed", raw_response=res.text, error=a.error, raw_sum=a.raw_sum, **common)
        if request.mode == "pure":
            return Decision("parsed", action=a.action, raw_response=res.text, parse=a.parse, **common)
        return Decision("parsed", strategy=a.strategy, raw_response=res.text, renormalized=a.renormalized,
                        raw_sum=a.raw_sum, parse=a.parse, **common)

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
    check_policy(policy)
    api = _is_api(spec)
    if chat and policy == "logprob" and not api:
        raise InputError(f"{spec}: --policy logprob scores a raw completion prompt and ignores --chat; use "
                         "--policy choice (exact, over the chat template) or --policy sample")
    model = open_model(spec, model_options, no_cache=no_cache, cache_path=cache_path)
    if policy is None:  # exact where the model allows it: choice for a chat model with its template
        if chat and (not api or model.supports_chat_scoring):  # (HTTP: given by --chat-template)
            policy = "choice" if model.supports_chat_scoring else "sample"
        else:
            policy = "logprob" if model.supports_logprobs else "sample"
    elif policy == "logprob" and not model.supports_logprobs:
        raise InputError(f"{spec}: this backend gives no log-probabilities; use --policy sample")
    if policy == "choice" and not model.supports_logprobs:  # (no template can stand in for them)
        raise InputError(f"{spec}: this backend gives no log-probabilities, so no exact choice scoring; use "
                         "--policy sample")
    if policy == "choice":  # one line for a model without chat scoring, before any folder exists
        if not model.supports_chat_scoring and api and model_options is not None and model_options.chat_template:
            raise InputError(f"{spec}: --policy choice (exact choice scoring) needs the model's chat template, and "
                             f"--chat-template {model_options.chat_template} holds none (a GGUF without "
                             "tokenizer.chat_template gives only its tokenizer); give the model's "
                             "tokenizer_config.json or .jinja, or use --policy sample")
        if not model.supports_chat_scoring:
            raise InputError(f"{spec}: --policy choice (exact choice scoring) needs the model's chat template "
                             "here; use a local chat model (embedded-instruct, gguf:/hf: with a template), give "
                             "an HTTP model its template with --chat-template, or use --policy sample")
        model.check_chat(scoring=True)
    elif chat and (not api or (model_options is not None and model_options.chat_template)):
        model.check_chat()  # chat endpoints take conversations by definition; a template given must hold one
    return ModelAgent(model, policy, temperature=temperature, max_tokens=max_tokens, chat=chat)  # type: ignore[arg-type]


def _is_api(spec: str) -> bool:
    """An HTTP API model (its chat endpoint renders conversations on the server)."""
    from stratbench.models import is_http_spec, split_spec

    try:
        split_spec(spec)
    except InputError:
        return False
    return is_http_spec(spec)
