"""Episodes with the paper's text-generation strategies (QA, CoT, CoT 3-Shot, Social,
Plans+Insights, Reflexion, Oracle, Oracle+Max, S2A, S2A + CoT) against a finite-state partner.

One round, in call order:

1. Reflexion only, from round 2 on: the reflection prompt (Figure 10) over the history so far; its
   ``Plan:`` joins the memory (the last ``memory`` plans are shown, the paper's best was 1).
2. Social: the prediction of the partner's action (partner-first QA prompt; SocialLM: log-probs of
   Figure 3's prompt); it is also the round's literal-ToM prediction. Other strategies with
   ``tom_variant="partner_first"`` ask their ToM prompt here, before acting.
3. The action prompt (Oracle: told the partner's actual action of this round, drawn before the
   agent acts - the partner's action never depends on the agent's current action).
4. With ``tom_variant="agent_first"`` (default, as the paper's Figures 5, 7, 9, 12): the ToM
   prompt, told the agent's action of this round.

S2A / S2A + CoT make two calls for each answer: the rewrite of the rules and history (Figure 16,
kind ``s2a_context``, before the action; Figure 17, kind ``s2a_tom_context``, before a ToM
prediction), then the answer prompt built on that rewrite (kind ``action`` / ``tom``). So an
agent-first round is ``s2a_context, action, s2a_tom_context, tom``. The rewrites are kept in the
round record (``s2a_context``, ``s2a_tom_context``). CoT 3-Shot is CoT with Figure 13's worked
examples in its action and ToM prompts (same calls as CoT).

Each generated answer is accepted when it matches the template (:mod:`strategies`); otherwise the
same prompt is sampled again, at most ``max_tries`` times in all (the paper re-samples "until" it
matches; a bound keeps a model that never follows the template from looping forever). Rules, so
nothing is ever invented:

* the action never parses → the round is recorded ``parse_failed`` (every attempt's raw text and
  reason kept) and the **episode stops** there: without an action the game cannot go on, and no
  action is substituted. The episode has no regret (Δ_F/T is defined for the full horizon only)
  and is counted in ``n_parse_failed_episodes``;
* Social's prediction never parses → the same (its action prompt needs the prediction);
* a ToM prediction (other strategies) never parses → the round goes on with ``prediction`` None
  and ``tom_status="parse_failed"``; ToM metrics are over parsed predictions, and the summary
  reports ``tom_parse_failure_rate``;
* a reflection never parses → the memory is left unchanged (``reflection_status``);
* an S2A rewrite is accepted whatever it says ("We accept the LLM's output for this prompt in all
  cases", Figures 16-17), so it is never re-sampled; an empty one is recorded (``"empty": true``
  on its call) and the answer prompt is built on it as is - with no summary paragraph - rather
  than asking again, which would depart from the paper. A rewrite that fails with a model error
  ends the episode as ``error`` like any other call;
* a model error (after the backend's own retries) → the round is ``error`` and the episode stops
  (errored episodes are run again by ``--resume``).

Sampling: every call is seeded by ``derive_seed(episode_seed, t, kind, attempt)`` and carries
``sample_index=attempt``, so re-queries are distinct samples, runs are reproducible, and the
response cache (which keys on prompt, seed and sample index) replays a finished run for free.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, LanguageModel, Message
from stratbench.models.costs import planning
from stratbench.models.labels import choice_request
from stratbench.players import scored_policy
from stratbench.seeding import derive_seed
from stratbench.suites.tom.episodes import PARTNER_STREAM
from stratbench.suites.tom.games import RepeatedGame, get_game
from stratbench.suites.tom.gen_prompts import S2A_STEM, GenPrompts, Prompt, memory_lines
from stratbench.suites.tom.partners import FiniteStatePartner, make_partner
from stratbench.suites.tom.prompts import ANSWER_STEM, TOM_VARIANTS, LMPrompts, flatten
from stratbench.suites.tom.strategies import (
    GENERATION_PROMPTINGS,
    ParseMode,
    extract_field,
    read_option,
)

KIND_CODES = {"action": 1, "tom": 2, "reflection": 3, "s2a_context": 4, "s2a_tom_context": 5}
"""Seed keys per call kind, so an action and a prediction of one round never share a sample."""

REASONING_STOPS = ("\n\nYou are currently playing", "\n\nYou are playing a game", "\n\nIn round ")
"""Completion-mode stops for reasoning answers: where a raw model starts writing a new prompt."""


@dataclass(frozen=True)
class GenSettings:
    """How a generation strategy is run (everything but the model, game, partner and seed)."""

    prompting: str = "QA"
    label_set: str = "neutral"
    predict: bool = True
    tom_variant: str = "agent_first"
    history: bool = True
    payoffs: bool = True
    chat: bool = False
    temperature: float = 0.7
    max_tries: int = 3
    max_tokens: int = 384
    qa_max_tokens: int = 32
    memory: int = 1
    keep_prompts: bool = False

    def __post_init__(self) -> None:
        if self.prompting not in GENERATION_PROMPTINGS:
            raise InputError(f"{self.prompting!r} is not a generation strategy; known: {', '.join(GENERATION_PROMPTINGS)}")
        if self.tom_variant not in TOM_VARIANTS:
            raise InputError(f"--tom-variant must be one of {', '.join(TOM_VARIANTS)}")
        if self.max_tries < 1 or self.max_tokens < 1 or self.qa_max_tokens < 1:
            raise InputError("--max-tries and --max-tokens must be at least 1")
        if not 1 <= self.memory <= 9:
            raise InputError("--memory (Reflexion) must be between 1 and 9")
        if self.temperature < 0:
            raise InputError("--temperature must be >= 0")
        if self.prompting == "CoT3" and not self.payoffs:
            raise InputError("--prompting CoT3 with --no-payoffs: its worked examples (Figure 13) state the "
                             "payoffs and best responses, which would put the payoff table back")

    @property
    def social(self) -> bool:
        return self.prompting in ("Social", "SocialLM")

    @property
    def s2a(self) -> bool:
        return self.prompting in ("S2A", "S2ACoT")


Parser = Callable[[str], tuple[Any, str | None, ParseMode | None]]
"""Answer text (stem included) → (value or None, reason when None, strict / flexible when read)."""


@dataclass(frozen=True)
class Answer:
    """How a call ended: ``status`` (parsed / parse_failed / error), the value read, and in chat
    mode the conversation it ended (the accepted reply as its last, assistant turn) for the calls
    that follow it up (:mod:`gen_prompts`, "Chat conversations")."""

    status: str
    value: Any = None
    conversation: tuple[Message, ...] = ()


class _Caller:
    """Sends one prompt with bounded re-queries and records every attempt."""

    def __init__(self, model: LanguageModel, s: GenSettings, ep_seed: int, labels: tuple[str, ...] = ()) -> None:
        self.model, self.s, self.seed, self.labels = model, s, ep_seed, labels

    def _dry_reply(self, parse: Parser, stem: str) -> str | None:
        """A dry run's reply (`stratbench.models.costs`): the first of a few plain replies that
        ``parse`` reads, so the planned episode asks what a real one asks."""
        if not planning():
            return None
        first = self.labels[0] if self.labels else "0"
        for reply in (f" {first}", f" none\nOption: {first}", " none"):
            if parse(stem + reply)[0] is not None:
                return reply
        return None

    async def ask(self, t: int, kind: str, prompt: Prompt, parse: Parser, reasoning: bool,
                  calls: list[dict[str, Any]], prior: tuple[Message, ...] = (), tries: int | None = None) -> Answer:
        """``prompt`` as a completion-style prompt (raw models) or, in chat mode, as the user's
        message - after ``prior``, the conversation it follows up, when given. ``tries``: at most
        this many samples (default ``max_tries``)."""
        s = self.s
        text = prompt.render(s.chat)
        stem = "" if s.chat else prompt.stem
        sent: tuple[Message, ...] = (*prior, ("user", text)) if s.chat else ()
        # one user message is sent as `prompt` (its cache key as before); a longer conversation as
        # `messages`, with its flattened text as `prompt`
        messages = sent if prior else ()
        req_text = flatten(messages) if messages else text
        if s.chat:
            stop: tuple[str, ...] = ()
        elif kind == "reflection":
            stop = ("\n\n",)
        else:
            stop = REASONING_STOPS if reasoning else ("\n",)
        dry = self._dry_reply(parse, stem)
        for attempt in range(s.max_tries if tries is None else tries):
            req = GenerateRequest(
                prompt=req_text, max_tokens=s.max_tokens if reasoning else s.qa_max_tokens,
                temperature=s.temperature, stop=stop, chat=s.chat, messages=messages,
                seed=derive_seed(self.seed, t, KIND_CODES[kind], attempt) % (2**31), sample_index=attempt,
                dry_reply=dry,
            )
            r = (await self.model.generate([req]))[0]
            call: dict[str, Any] = {
                "kind": kind, "attempt": attempt, "text": r.text, "tokens_in": r.tokens_in,
                "tokens_out": r.tokens_out, "latency_s": r.latency_s, "cached": r.cached,
                "finish_reason": r.finish_reason,
            }
            if r.reasoning is not None:  # a reasoning model's thinking: never parsed
                call["reasoning"] = r.reasoning
            if r.usage_unknown:  # (its 0s are no counts: run.json's model_usage_unknown counts it)
                call["usage_unknown"] = True
            if r.tokens_reasoning is not None:
                call["tokens_reasoning"] = r.tokens_reasoning
            if attempt == 0 and (s.keep_prompts or (s.chat and t == 0)):
                # chat: as the model saw it, with its template (the first round's always, so the
                # template can be checked without storing every growing history)
                call["prompt"] = r.rendered or req_text
            calls.append(call)
            if not r.ok:
                call.update(status="error", error=r.error)
                return Answer("error")
            reply = r.text or ""
            if not reply.strip():  # never an answer, whatever a stem would make of it
                call.update(status="parse_failed", reason="empty reply")
                continue
            value, reason, mode = parse(stem + reply)
            if value is not None:
                call.update(status="parsed", parse="flexible" if r.finish_reason == "length" else mode)
                return Answer("parsed", value, (*sent, ("assistant", reply)) if s.chat else ())
            call.update(status="parse_failed", reason=reason)
        return Answer("parse_failed")


def _option_parser(labels: tuple[str, ...]) -> Parser:
    def parse(text: str) -> tuple[Any, str | None, ParseMode | None]:
        res = read_option(text, labels)
        return res.action, res.error, res.parse
    return parse


def _plans_insights_parser(labels: tuple[str, ...]) -> Parser:
    """The action, with the answer's plans and insights (empty when the model left them out)."""
    def parse(text: str) -> tuple[Any, str | None, ParseMode | None]:
        res = read_option(text, labels)
        if not res.ok:
            return None, res.error, None
        return (res.action, extract_field(text, "plans") or "", extract_field(text, "insights") or ""), None, res.parse
    return parse


def _s2a_parser(chat: bool) -> Parser:
    """S2A's rewrite, accepted as it is (strict: the figures ask for no template; an empty reply
    never gets here). Completion mode: the text after our ``Summary:`` stem, up to its first blank
    line (a raw model goes on to write the next question and answer it); chat: the whole reply."""
    def parse(text: str) -> tuple[Any, str | None, ParseMode | None]:
        if chat:
            return text.strip(), None, "strict"
        return text.removeprefix(S2A_STEM).strip().split("\n\n")[0].strip(), None, "strict"
    return parse


def _plan_parser(text: str) -> tuple[Any, str | None, ParseMode | None]:
    """The reflection's ``Plan:`` field (strict); a reply with no ``Plan:`` field at all is taken
    whole as the plan (flexible: Figure 10 asks for free text)."""
    plan = extract_field(text, "plan")
    if plan:
        return plan, None, "strict"
    if plan is None and text.strip():
        return text.strip(), None, "flexible"
    return None, "empty 'Plan:' field", None


def answer_stem(s: GenSettings, kind: str) -> str:
    """The answer stem a call's reply followed (raw models; chat replies have none): what
    :func:`arun_gen_episode` put before the reply when it parsed it."""
    if s.chat:
        return ""
    cot = s.prompting in ("CoT", "CoT3", "S2ACoT")
    if kind == "tom":
        return "Thoughts:" if cot else "Option:"
    if s.prompting == "PlansInsights":
        return "Plans:"
    return "Thoughts:" if cot or s.prompting == "Reflexion" else "Option:"


def read_call_again(s: GenSettings, labels: tuple[str, ...], call: dict[str, Any]) -> int | None:
    """The action (or, for a ``tom`` call, the predicted action) a recorded ``action``/``tom``
    call's text gives when read again as the episode read it; None when it gives none. A record
    read back is checked with it, so an answer edited into a record is refused, never counted."""
    text = call.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    parse = _plans_insights_parser(labels) if (call.get("kind") == "action" and s.prompting == "PlansInsights") \
        else _option_parser(labels)
    value = parse(answer_stem(s, str(call.get("kind"))) + text)[0]
    if isinstance(value, tuple):
        value = value[0]
    return value if isinstance(value, int) else None


async def arun_gen_episode(
    model: LanguageModel,
    game: RepeatedGame | str,
    partner_name: str | FiniteStatePartner,
    T: int,
    seed: int,
    settings: GenSettings,
) -> dict[str, Any]:
    """One episode of a generation strategy; same result shape as the LM-prompting episode
    (``records`` per round, ``status`` complete / parse_failed / error, ``initial_state``)."""
    return await _GenEpisode(model, game, partner_name, T, seed, settings).run()


@dataclass
class _Round:
    """One round in progress: its record and calls, and what its steps hand on to the next ones."""

    t: int
    partner_action: int
    rec: dict[str, Any]
    calls: list[dict[str, Any]]
    prediction: int | None = None
    stop: str | None = None  # the status that ends the episode at this round
    # chat: the conversation the action follows up (this round's reflection, Social's prediction)
    lead: tuple[Message, ...] = ()


class _GenEpisode:
    """One episode: the strategy's settings and the episode's state (partner, history, Reflexion's
    memory, Plans+Insights' plans), a method per step of a round in the module docstring's order."""

    def __init__(self, model: LanguageModel, game: RepeatedGame | str, partner_name: str | FiniteStatePartner,
                 T: int, seed: int, settings: GenSettings) -> None:
        s = self.s = settings
        self.model, self.T, self.seed = model, T, seed
        self.g = g = get_game(game)
        self.partner = make_partner(partner_name, g)
        self.P = GenPrompts(g, s.label_set, T, payoffs=s.payoffs, history=s.history)
        self.labels = self.P.labels
        self.option = _option_parser(self.labels)
        self.caller = _Caller(model, s, seed, tuple(self.P.labels))
        self.reasoning_action = s.prompting in ("CoT", "CoT3", "PlansInsights", "Reflexion", "S2ACoT")
        self.tom_style = "cot" if s.prompting in ("CoT", "CoT3", "S2ACoT") else "qa"
        self.shots = s.prompting == "CoT3"
        self.s2a_parse = _s2a_parser(s.chat)
        self.lm_tom = LMPrompts(g, s.label_set, T, "partner_first", s.payoffs, s.history)
        self.p_rng = np.random.default_rng(derive_seed(seed, *PARTNER_STREAM))
        self.s0 = self.partner.reset(self.p_rng)
        self.state = self.s0
        self.rounds: list[tuple[int, int]] = []
        self.records: list[dict[str, Any]] = []
        self.memory: collections.deque[str] = collections.deque(maxlen=s.memory)
        self.plans: str | None = None
        self.insights: str | None = None

    async def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        status_all = "complete"
        for t in range(self.T):
            stop = await self._round(t)
            if stop is not None:
                status_all = stop
                break
        return {
            "game": self.g.name, "partner": self.partner.name, "prompting": self.s.prompting,
            "label_set": self.s.label_set, "T": self.T, "seed": self.seed, "initial_state": self.s0,
            "status": status_all, "rounds": len(self.rounds),
            "tokens_in": int(sum(r["tokens_in"] for r in self.records)),
            "tokens_out": int(sum(r["tokens_out"] for r in self.records)),
            "seconds": time.perf_counter() - t0, "records": self.records,
        }

    async def _round(self, t: int) -> str | None:
        """Play round ``t`` and record it; the status that ends the episode, or None to go on."""
        s = self.s
        b = self.partner.act(self.state, self.p_rng)
        r = _Round(t, b, {"t": t, "status": "parsed", "partner_state": self.state}, [])
        if s.prompting == "Reflexion" and t > 0:
            await self._reflect(r)
        if r.stop is None and s.prompting == "SocialLM":
            await self._score_social_prediction(r)
        elif r.stop is None and (s.prompting == "Social" or (s.predict and s.tom_variant == "partner_first")):
            ans = await self._ask_tom(r, None)
            r.prediction = ans.value
            r.rec["tom_status"] = ans.status
            if ans.status == "error" or (ans.status == "parse_failed" and s.prompting == "Social"):
                r.stop = ans.status  # Social's action prompt needs the prediction
            elif s.prompting == "Social":
                r.lead = ans.conversation
        a, action_talk = await self._act(r)
        if r.stop is None and s.predict and not s.social and s.tom_variant == "agent_first":
            ans = await self._ask_tom(r, a, after=action_talk)
            r.prediction = ans.value
            r.rec["tom_status"] = ans.status
            if ans.status == "error":
                r.stop = "error"
        return self._close(r, a)

    async def _reflect(self, r: _Round) -> None:
        """Reflexion, from round 2 on: the reflection's plan joins the memory."""
        ans = await self.caller.ask(r.t, "reflection", self.P.reflection(self.rounds), _plan_parser, True, r.calls)
        r.rec["reflection_status"] = ans.status
        if ans.status == "error":
            r.stop = "error"
        elif ans.status == "parsed":
            self.memory.append(ans.value)
            r.rec["plan"] = ans.value
            r.lead = ans.conversation

    async def _score_social_prediction(self, r: _Round) -> None:
        """SocialLM: the prediction read from the log-probabilities of Figure 3's prompt."""
        s, lm_tom = self.s, self.lm_tom
        if s.chat:  # the chat twin of Figure 3 (prompts.py, "Chat models")
            msgs: tuple[Message, ...] = (
                ("user", lm_tom.header() + lm_tom.history_text(self.rounds) + lm_tom.chat_tom_question(r.t)),)
            req = choice_request(ANSWER_STEM, lm_tom.continuations, msgs)
        else:
            req = choice_request(lm_tom.header() + lm_tom.history_text(self.rounds) + lm_tom.tom_query(r.t),
                                 lm_tom.continuations)
        res = (await self.model.score([req]))[0]
        call: dict[str, Any] = {"kind": "tom", "attempt": 0, "tokens_in": res.tokens_in, "tokens_out": 0,
                                "latency_s": res.latency_s, "cached": res.cached}
        if s.keep_prompts or (s.chat and r.t == 0):
            call["prompt"] = res.rendered or (flatten(msgs, ANSWER_STEM) if s.chat else req.prompt)
        r.calls.append(call)
        pol = scored_policy(res)
        if not isinstance(pol, str):
            r.prediction = int(np.argmax(res.logprobs))  # type: ignore[arg-type]
            call.update(status="parsed", logprobs=list(res.logprobs or ()), tom_policy=pol.probs)
            if s.chat:
                call["label_mass"] = pol.mass
                r.lead = (*msgs, ("assistant", lm_tom.chat_answer(r.prediction)))
            r.rec["tom_status"] = "parsed"
        else:  # the call failed, or its numbers are no probabilities
            call.update(status="error", error=pol)
            r.rec["tom_status"] = r.stop = "error"

    async def _rewrite(self, r: _Round, kind: str, prompt: Prompt) -> str | None:
        """S2A's rewrite (asked once: always accepted, an empty reply as an empty rewrite, which
        its call records as ``parse_failed`` with ``empty``); None on a model error."""
        ans = await self.caller.ask(r.t, kind, prompt, self.s2a_parse, True, r.calls, tries=1)
        if ans.status == "error":
            return None
        summary = ans.value if ans.status == "parsed" else ""
        if not summary:
            r.calls[-1]["empty"] = True
        r.rec[kind] = summary
        return summary

    async def _ask_tom(self, r: _Round, my_action: int | None, after: tuple[Message, ...] = ()) -> Answer:
        """The strategy's literal-ToM prompt; agent-first when ``my_action`` is given; in chat
        mode the turn after ``after`` (the action's conversation) when given."""
        s, P, style = self.s, self.P, self.tom_style
        if after:
            assert my_action is not None
            return await self.caller.ask(r.t, "tom", P.tom_turn(self.rounds, my_action, style), self.option,
                                         style == "cot", r.calls, prior=after)
        if s.prompting == "PlansInsights":
            extra = P.plans_insights_extra(self.plans, self.insights, current=my_action is not None)
        elif s.prompting == "Reflexion":
            extra = memory_lines(list(self.memory))
        else:
            extra = []
        summary = None
        if s.s2a:
            order = "agent_first" if my_action is not None else "partner_first"
            summary = await self._rewrite(r, "s2a_tom_context", P.s2a_rewrite(self.rounds, "tom", order))
            if summary is None:
                return Answer("error")
        return await self.caller.ask(r.t, "tom", P.tom(self.rounds, my_action, style, extra, self.shots, summary),
                                     self.option, style == "cot", r.calls)

    def _action_prompt(self, r: _Round, summary: str | None) -> Prompt:
        s, P, rounds = self.s, self.P, self.rounds
        if s.prompting == "QA":
            return P.qa(rounds)
        if s.prompting == "CoT":
            return P.cot(rounds)
        if s.prompting == "CoT3":
            return P.cot3(rounds)
        if s.s2a:
            assert summary is not None
            return P.s2a_action(rounds, summary, self.tom_style)
        if s.prompting == "PlansInsights":
            return P.plans_insights(rounds, self.plans, self.insights)
        if s.prompting == "Reflexion":
            return P.reflexion_turn(rounds, list(self.memory)) if r.lead else P.reflexion(rounds, list(self.memory))
        if s.prompting in ("Oracle", "OracleMax"):
            return P.oracle(rounds, r.partner_action, maximize=s.prompting == "OracleMax")
        assert r.prediction is not None  # Social, SocialLM
        return P.social_turn(rounds, r.prediction) if r.lead else P.social(rounds, r.prediction)

    async def _act(self, r: _Round) -> tuple[int | None, tuple[Message, ...]]:
        """The action (None when the round stops) and, in chat mode, the conversation an
        agent-first ToM prompt follows up."""
        s = self.s
        summary: str | None = None
        if r.stop is None and s.s2a:
            summary = await self._rewrite(r, "s2a_context", self.P.s2a_rewrite(self.rounds, "action"))
            if summary is None:
                r.stop = "error"
        if r.stop is not None:
            return None, ()
        parser = _plans_insights_parser(self.labels) if s.prompting == "PlansInsights" else self.option
        ans = await self.caller.ask(r.t, "action", self._action_prompt(r, summary), parser, self.reasoning_action,
                                    r.calls, prior=r.lead)
        follow_up = s.chat and s.prompting in ("QA", "CoT", "CoT3", "PlansInsights", "Reflexion")
        action_talk = ans.conversation if follow_up else ()
        if ans.status != "parsed":
            r.stop = ans.status
            return None, action_talk
        if s.prompting == "PlansInsights":
            a, self.plans, self.insights = ans.value
            r.rec.update(plans=self.plans, insights=self.insights)
            return a, action_talk
        return ans.value, action_talk

    def _close(self, r: _Round, a: int | None) -> str | None:
        """The round's record, completed and kept; the partner moves on after a played round."""
        s, rec, calls = self.s, r.rec, r.calls
        rec["calls"] = calls
        rec["tokens_in"] = int(sum(c.get("tokens_in", 0) or 0 for c in calls))
        rec["tokens_out"] = int(sum(c.get("tokens_out", 0) or 0 for c in calls))
        rec["latency_s"] = float(sum(c.get("latency_s", 0.0) or 0.0 for c in calls))
        if s.predict or s.social:
            rec["prediction"] = r.prediction
        if r.stop is not None:
            rec["status"] = r.stop
            bad = [c for c in calls if c.get("status") == r.stop]
            if bad:
                rec["failed_call"] = bad[-1]["kind"]
            self.records.append(rec)
            return r.stop
        assert a is not None
        b = r.partner_action
        rec.update(my_action=a, partner_action=b, payoff_me=float(self.g.payoff_me[a, b]),
                   payoff_partner=float(self.g.payoff_partner[a, b]))
        self.state = self.partner.update(self.state, a, b)
        self.rounds.append((a, b))
        self.records.append(rec)
        return None
