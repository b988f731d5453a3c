"""CHBench players: scripted cognitive-hierarchy agents and language models under a mechanism.

Scripted specs (baselines and tests, never stand-ins for models):
``random`` (level 0, uniform), ``level-k:K`` (a pure level-K reasoner, K = 0..3), ``poisson:LAMBDA``
(plays the Poisson-CH population strategy), ``first-action``.

A model player sees the paper's prompts (`prompts.py`). Policies:

- ``logprob`` (raw models): the action is drawn from the exact renormalised distribution over the
  continuations " 1", " 2", ... after ``Your choice is :`` with the round's seed, and the
  distribution is stored;
- ``choice`` (chat models, ``--chat``): its chat twin — the conversation (:func:`decision_messages`)
  rendered with the model's chat template up to the assistant's turn, then the same stem
  ``Your choice is :`` and the same continuations scored exactly; drawn and stored the same way;
- ``sample``: the model generates and the number is parsed (failures are recorded, never replaced).
  A parsed answer is ``strict`` when the reply, stripped of surrounding whitespace, is exactly one
  of the numbers the prompt asks for ("returning only one number from (1, 2, ...)"; "Do **not**
  include any additional text ...") and was not cut at the token limit (``finish_reason !=
  "length"``); anything else the parser reads is ``flexible`` (:func:`answer_form`). Raw models
  continue the text past their answer, so their replies run to the budget and are flexible unless
  the model ends its text right after the number. A flexible reading whose line is a line of the
  prompt repeated (SmolLM2 echoes the rules: "[1] If you choose 1 and your opponent chooses 2 ...",
  which the parser would read as "choose 1") is not an answer: ``parse_failed``.

Advisor turns are always generated text (the advisor is a second instance of the same model: the
same backend). Without ``--chat`` a message is the reply up to its first blank line (raw models run
on); with ``--chat`` it is the whole reply, and the sessions are real turns of each speaker's
conversation (:func:`consultation_messages`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.games.normal_form import NormalFormGame
from stratbench.models.base import GenerateRequest, GenerateResult, LanguageModel, Message
from stratbench.models.labels import choice_request
from stratbench.parsing.actions import ActionParse, parse_action
from stratbench.players import check_policy, draw, no_answer, scored_policy
from stratbench.suites.chbench.fit import CHAgent
from stratbench.suites.chbench.hierarchy import GameBatch
from stratbench.suites.chbench.prompts import (
    ADVISOR_NAME,
    AGENT_NAME,
    DECISION_STEM,
    MECHANISMS,
    REVIEW_EVERY,
    Conversations,
    consultation_messages,
    consultation_prompt,
    decision_messages,
    decision_prompt,
)
from stratbench.suites.chbench.repeated import Move, RoundView

CHAT_EXCHANGES = 2
MESSAGE_TOKENS = 96  # "within 50 words"
ANSWER_TOKENS = 16
ECHO_MIN_WORDS = 3  # a parsed line this long found verbatim in the prompt is the prompt echoed


# ----------------------------------------------------------------------------- scripted players

# (a level of 10 digits or more, or a λ of 20, cannot be a scripted player: refused as a bad spec
# before any int()/float() of a 5,000-digit number)
_LEVEL_RE = re.compile(r"^level-k:0*(\d{1,9})$")
_POISSON_RE = re.compile(r"^poisson:([0-9]{0,9}\.?[0-9]{1,30})$")
MAX_LAMBDA = 100.0  # Poisson-CH's λ: past it the level distribution is all at level 3 (and e^-λ underflows)
SCRIPTED_HELP = "random, first-action, level-k:K (K=0..3), poisson:LAMBDA"


def player_key(spec: str) -> str:
    """One name per player, for telling two specs of one player apart from two players: a
    scripted spec as its agent reads it (``level-k:01`` is ``level-k:1``, ``poisson:1.50`` is
    ``poisson:1.5``, ``Random`` is ``random``); a model spec as given."""
    s = spec.strip().lower()
    m = _LEVEL_RE.match(s)
    if m:
        return f"level-k:{int(m.group(1))}"
    m = _POISSON_RE.match(s)
    if m:
        return f"poisson:{float(m.group(1))!r}"
    return s if s in ("random", "level-0", "first-action") else spec.strip()


def scripted_agent(spec: str) -> CHAgent | str | None:
    """The CHAgent (or "first-action") behind a scripted spec; None when `spec` is not scripted."""
    s = spec.strip().lower()
    if s in ("random", "level-0"):
        return CHAgent(s, "level_k", alpha=(1.0, 0.0, 0.0, 0.0), epsilon=(0.0, 0.0, 0.0))
    if s == "first-action":
        return s
    m = _LEVEL_RE.match(s)
    if m:
        k = int(m.group(1))
        if k > 3:
            raise InputError(f"{spec}: scripted levels are 0..3 (k̂ = 4)")
        alpha = tuple(1.0 if i == k else 0.0 for i in range(4))
        return CHAgent(s, "level_k", alpha=alpha, epsilon=(0.0, 0.0, 0.0))
    m = _POISSON_RE.match(s)
    if m:
        lam = float(m.group(1))
        if not 0 <= lam <= MAX_LAMBDA:
            raise InputError(f"{spec}: a scripted Poisson-CH player's λ is in [0, {MAX_LAMBDA:g}]")
        return CHAgent(s, "poisson", lam=lam)
    if s.startswith(("level-k", "poisson")):
        raise InputError(f"bad scripted player {spec[:60]!r}{'…' if len(spec) > 60 else ''}; known: {SCRIPTED_HELP}")
    return None


@dataclass
class ScriptedPlayer:
    """Plays a fixed mixed strategy per game and seat (its CH model's prediction), drawn per round."""

    name: str
    agent: CHAgent | str
    _cache: dict[tuple[int, bytes], np.ndarray] = field(default_factory=dict)

    def strategy(self, view_game: NormalFormGame, seat: int) -> np.ndarray:
        n = view_game.shape[0]
        if self.agent == "first-action":
            s = np.zeros(n)
            s[0] = 1.0
            return s
        key = (n, view_game.payoff_row.tobytes() + view_game.payoff_col.tobytes())
        if key not in self._cache:
            # the view is this seat's side as a row player: role 0 of the view game
            batch = GameBatch.from_games([view_game])
            self._cache[key] = self.agent.strategies(batch)[0, 0, :n]  # type: ignore[union-attr]
        return self._cache[key]

    async def act(self, view: RoundView) -> Move:
        p = self.strategy(view.game, view.seat)
        a = draw(p, view.seed)
        return Move(a, "ok", policy=[float(x) for x in p])


# ----------------------------------------------------------------------------- model players


def answer_form(reply: str | None, parsed: ActionParse, labels: tuple[str, ...],
                finish_reason: str | None) -> str | None:
    """How a generated decision was read: "strict" when the whole reply (surrounding whitespace
    aside) is exactly one of `labels` and it was not cut at the token limit, "flexible" for any
    other reply the parser read an action from, None when nothing was parsed."""
    if not parsed.ok:
        return None
    if reply is not None and reply.strip() in labels and finish_reason != "length":
        return "strict"
    return "flexible"


def message_text(raw: str, chat: bool) -> str:
    """What a generated reply says: a chat model's whole reply; a raw model's text up to its first
    blank line (it runs on). Also how a move read back is read again."""
    return raw.strip() if chat else raw.strip().split("\n\n")[0].strip()


def echoed_line(parsed: ActionParse, shown: tuple[str, ...]) -> str | None:
    """The parsed line when it is a line of what the model was shown, repeated (not an answer)."""
    line = parsed.line
    if not parsed.ok or parsed.tier == "whole" or not line or len(line.split()) < ECHO_MIN_WORDS:
        return None
    return line if any(line in text for text in shown) else None


@dataclass
class ModelPlayer:
    """A language model playing one match under one mechanism (keeps its advisor conversations)."""

    name: str
    model: LanguageModel
    mechanism: str
    policy: str = "logprob"
    temperature: float = 1.0
    chat: bool = False
    conv: Conversations = field(default_factory=Conversations)
    max_tokens: int | None = None  # every generation's budget; None: ANSWER_TOKENS / MESSAGE_TOKENS
    _sessions_done: int = 0

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise InputError(f"unknown mechanism {self.mechanism!r}; known: {', '.join(MECHANISMS)}")
        check_policy(self.policy, "policy")
        if self.policy == "choice" and not self.chat:
            raise InputError("policy choice scores the chat conversation: it needs chat=True")

    async def _generate(self, prompt: str, seed: int, max_tokens: int, idx: int,
                        messages: tuple[Message, ...] = ()) -> tuple[str | None, GenerateResult]:
        # No stop sequence: raw models often open with a blank line, which a "\n\n" stop would turn
        # into an empty answer. The message is the text up to its first blank line instead; a chat
        # model's message is its whole reply. `messages` is the conversation (chat), `prompt` its
        # flattened text; a conversation of one user turn holding `prompt` is sent as `prompt`
        # alone, so its request (and cache key) is the one single-turn chat has always sent.
        if len(messages) == 1 and messages[0] == ("user", prompt):
            messages = ()
        req = GenerateRequest(prompt=prompt, max_tokens=max_tokens, temperature=self.temperature,
                              seed=seed, sample_index=idx, chat=self.chat, messages=messages)
        r = (await self.model.generate([req]))[0]
        if not r.ok or r.text is None:
            return None, r
        return message_text(r.text, self.chat), r

    async def _session(self, view: RoundView, review: bool) -> tuple[list[dict[str, Any]], str | None, dict[str, int],
                                                                     str]:
        """Two question-and-answer exchanges with the advisor; returns the turns, any error and the
        status a failed session gives the move ("error": a call failed; "parse_failed": a reasoning
        model's message cut inside its thinking, which holds no message to pass on)."""
        turns: list[tuple[str, str]] = []
        log: list[dict[str, Any]] = []
        used = {"tokens_in": 0, "tokens_out": 0}
        own, opp = view.game.payoff_row, view.game.payoff_col
        for k in range(CHAT_EXCHANGES):
            for advisor in (False, True):
                conv = (Conversations(reviews=self.conv.reviews + (tuple(turns),)) if review
                        else Conversations(before=tuple(turns)))
                prompt = consultation_prompt(own, opp, view.rounds, self.mechanism, view.history, conv, advisor)
                messages = (consultation_messages(own, opp, view.rounds, self.mechanism, view.history, conv, advisor)
                            if self.chat else ())
                text, r = await self._generate(prompt, view.seed, self.max_tokens or MESSAGE_TOKENS, 2 * k + advisor,
                                                     messages)
                used["tokens_in"] += r.tokens_in
                used["tokens_out"] += r.tokens_out
                if r.usage_unknown:  # (its 0s are no counts: run.json's model_usage_unknown counts it)
                    used["usage_unknown"] = 1
                who = ADVISOR_NAME if advisor else AGENT_NAME
                turn: dict[str, Any] = {"speaker": who, "text": r.text, "error": r.error, "finish_reason": r.finish_reason}
                if r.reasoning is not None:  # a reasoning model's thinking, kept apart from its message
                    turn["reasoning"] = r.reasoning
                log.append(turn)
                if text is None:
                    return log, f"advisor session: {r.error or 'empty message'}", used, "error"
                cut = no_answer(r)
                if cut is not None:  # never passed on as an empty message
                    return log, f"advisor session: {who}'s message: {cut}", used, "parse_failed"
                turns.append((who, text))
        if review:
            self.conv = Conversations(reviews=self.conv.reviews + (tuple(turns),))
        else:
            self.conv = Conversations(before=tuple(turns))
        return log, None, used, "ok"

    async def act(self, view: RoundView) -> Move:
        t0 = time.perf_counter()
        extra: dict[str, Any] = {}
        if self.policy == "sample":  # every sampled move says how its answer was read (None: not at all)
            extra.update(parse=None, finish_reason=None)
        tokens_in = tokens_out = 0
        session_due = (
            (self.mechanism == "chat" and self._sessions_done == 0)
            or (self.mechanism == "chat_memory" and view.round > 1 and (view.round - 1) % REVIEW_EVERY == 0
                and self._sessions_done < (view.round - 1) // REVIEW_EVERY and self._sessions_done < 2)
        )
        if session_due:
            log, err, used, failed = await self._session(view, review=self.mechanism == "chat_memory")
            self._sessions_done += 1
            extra["consultation"] = log
            tokens_in, tokens_out = used["tokens_in"], used["tokens_out"]
            if used.get("usage_unknown"):
                extra["usage_unknown"] = True
            if err:
                return Move(None, failed, error=err, extra=extra, tokens_in=tokens_in,
                            tokens_out=tokens_out, latency_s=time.perf_counter() - t0)
        own, opp = view.game.payoff_row, view.game.payoff_col
        args = (own, opp, view.rounds, view.round, self.mechanism, view.history, self.conv)
        prompt = decision_prompt(*args)
        messages = decision_messages(*args) if self.chat else ()
        n = own.shape[0]
        labels = tuple(str(i + 1) for i in range(n))
        if self.policy in ("logprob", "choice"):
            conts = [" " + x for x in labels]
            req = (choice_request(DECISION_STEM, conts, messages) if self.policy == "choice"
                   else choice_request(prompt, conts))
            r = (await self.model.score([req]))[0]
            tokens_in += r.tokens_in
            if r.usage_unknown:
                extra["usage_unknown"] = True
            shown = r.rendered or prompt
            pol = scored_policy(r)
            if isinstance(pol, str):  # the call failed, or its numbers are no probabilities
                return Move(None, "error", prompt=shown, error=pol, extra=extra, tokens_in=tokens_in,
                            tokens_out=tokens_out, latency_s=time.perf_counter() - t0)
            a = draw(pol.probs, view.seed)
            extra["label_mass"] = pol.mass
            return Move(a, "parsed", policy=pol.probs, prompt=shown, extra=extra,
                        tokens_in=tokens_in, tokens_out=tokens_out, latency_s=time.perf_counter() - t0)
        text, g = await self._generate(prompt, view.seed, self.max_tokens or ANSWER_TOKENS, 0, messages)
        tokens_in += g.tokens_in
        tokens_out += g.tokens_out
        if g.usage_unknown:
            extra["usage_unknown"] = True
        shown = g.rendered or prompt
        extra["finish_reason"] = g.finish_reason
        if g.reasoning is not None:  # a reasoning model's thinking: never parsed
            extra["reasoning"] = g.reasoning
        if not g.ok:
            return Move(None, "error", prompt=shown, error=g.error, extra=extra, tokens_in=tokens_in,
                        tokens_out=tokens_out, latency_s=time.perf_counter() - t0)
        cut = no_answer(g)  # a reasoning model cut inside its thinking: no answer, never one read from it
        parsed = ActionParse(None, cut) if cut else parse_action(text, labels)
        echo = echoed_line(parsed, (prompt, *(c for _, c in messages)))
        if echo is not None:
            parsed = ActionParse(None, f"the answer's line repeats the prompt ({echo!r}): not an answer")
        extra["parse"] = answer_form(g.text, parsed, labels, g.finish_reason)
        return Move(parsed.action, "parsed" if parsed.ok else "parse_failed", raw=g.text, prompt=shown,
                    error=parsed.error, extra=extra, tokens_in=tokens_in, tokens_out=tokens_out,
                    latency_s=time.perf_counter() - t0)
