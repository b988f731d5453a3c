"""The paper's "LM prompting" strategy played against a finite-state partner.

Each round the model scores the action labels after Figure 1's ``A: Option`` (one ScoreRequest,
the labels as continuations); the policy is the softmax of those log-probabilities renormalised
over the labels, and the action is drawn from it with ``default_rng(derive_seed(seed, t))``. The
partner acts from its state machine (its own rng, also derived from ``seed``). With ``predict`` the
model also scores the literal-ToM prompt (Figure 2 agent-first by default, Figure 3 partner-first
on request) and its argmax is the predicted partner action.

A model error ends the episode: the round is recorded with ``status="error"`` and the message, no
action is substituted, and the episode is marked incomplete (its regret is None: Δ_F/T is defined
for the full horizon only).

Prefix reuse: with ``tom_variant="agent_first"`` every prompt extends the previous one up to its
query, so a prefix-reusing backend (``load_embedded(prefix_reuse=True)``) evaluates only the new
round line + query each call. ``"partner_first"`` keeps the paper's Figure 3 wording, whose history
lines differ from Figure 1's, so the two prompt streams share only the header and each call
re-evaluates the other stream's history (much more expensive).

Chat models (``chat=True``; `tom run --prompting LM --chat`, policy ``choice``): the same episode
with the chat twin of the prompts (:mod:`prompts`, "Chat models"): each ScoreRequest carries the
conversation as ``messages`` and the answer stem ``A: Option`` as its prompt, the backend scores
the labels after the model's chat template. Records store what LM prompting stores (``policy``,
``tom_policy``, ``prediction``) plus ``label_mass`` / ``tom_label_mass``: the probability the model
put on the legal labels after the stem (the policy is renormalised over them), and with
``keep_prompts`` the scored text as the model saw it (template + stem) — the first round's always,
so the template can be checked without storing every growing history. Prefix reuse applies as
for raw prompts: the agent-first ToM conversation extends the action's, and a round's
conversations share the previous round's up to its history.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from stratbench.models.base import LanguageModel
from stratbench.models.labels import choice_request
from stratbench.players import draw, scored_policy
from stratbench.seeding import derive_seed
from stratbench.suites.tom.games import RepeatedGame, get_game
from stratbench.suites.tom.partners import FiniteStatePartner, make_partner
from stratbench.suites.tom.prompts import ANSWER_STEM, LMPrompts, PromptHistory, flatten
from stratbench.suites.tom.regret import mean_ci, regret_per_step, tom_accuracy

PARTNER_STREAM = (7, 7, 7)
"""Extra keys for the partner's rng seed, distinct from the per-round action seeds (seed, t)."""


async def _score_one(model: LanguageModel, prompt: str, conts: tuple[str, ...],
                     messages: tuple[tuple[str, str], ...] = ()):
    res = await model.score([choice_request(prompt, conts, messages)])
    return res[0]


async def _predict_partner(model: LanguageModel, hist: PromptHistory, conts: tuple[str, ...], my_action: int | None,
                           chat: bool, act_msgs: tuple[tuple[str, str], ...], rec: dict[str, Any],
                           prompts: dict[str, str]) -> bool:
    """The round's ToM prediction (Figure 2 after the agent acted, with ``my_action``; Figure 3
    before), recorded in ``rec``; False when the call failed or its numbers are no probabilities."""
    if chat:
        msgs = hist.chat_tom_messages(my_action, act_msgs)
        r = await _score_one(model, ANSWER_STEM, conts, msgs)
        prompts["tom"] = r.rendered or flatten(msgs, ANSWER_STEM)
    else:
        prompt = hist.tom_prompt(my_action)
        prompts["tom"] = prompt
        r = await _score_one(model, prompt, conts)
    rec["tokens_in"] += r.tokens_in
    rec["latency_s"] += r.latency_s
    tom = scored_policy(r)
    if isinstance(tom, str):
        rec.update(status="error", error=f"tom: {tom}")
        return False
    rec["tom_policy"] = tom.probs
    if chat:
        rec["tom_label_mass"] = tom.mass
    rec["prediction"] = int(np.argmax(r.logprobs))  # type: ignore[arg-type]
    return True


async def arun_lm_episode(
    model: LanguageModel,
    game: RepeatedGame | str,
    partner_name: str | FiniteStatePartner,
    T: int,
    seed: int,
    label_set: str = "neutral",
    predict: bool = True,
    tom_variant: str = "agent_first",
    keep_prompts: bool = False,
    history: bool = True,
    payoffs: bool = True,
    chat: bool = False,
) -> dict[str, Any]:
    """One episode; see :func:`run_lm_episode` (``chat``: the choice policy, module doc)."""
    g = get_game(game)
    partner = make_partner(partner_name, g)
    act_tpl = LMPrompts(g, label_set, T, "agent_first", payoffs=payoffs, history=history)
    conts = act_tpl.continuations
    act_hist = PromptHistory(act_tpl)
    # Figure 2 shares Figure 1's history; Figure 3 needs its own partner-first history.
    tom_hist = act_hist if tom_variant == "agent_first" else PromptHistory(
        LMPrompts(g, label_set, T, tom_variant, payoffs=payoffs, history=history))

    p_rng = np.random.default_rng(derive_seed(seed, *PARTNER_STREAM))
    s0 = partner.reset(p_rng)
    state = s0
    records: list[dict[str, Any]] = []
    mine: list[int] = []
    theirs: list[int] = []
    preds: list[int] = []
    tokens = 0
    t0 = time.perf_counter()
    status_all = "complete"
    for t in range(T):
        rec: dict[str, Any] = {"t": t, "status": "parsed", "tokens_in": 0, "latency_s": 0.0}
        prompts: dict[str, str] = {}
        act_msgs = act_hist.chat_action_messages() if chat else ()
        ok = True
        if predict and tom_variant != "agent_first":  # Figure 3: asked before the agent acts
            ok = await _predict_partner(model, tom_hist, conts, None, chat, act_msgs, rec, prompts)
        if ok:
            if chat:
                r = await _score_one(model, ANSWER_STEM, conts, act_msgs)
                prompts["action"] = r.rendered or flatten(act_msgs, ANSWER_STEM)
            else:
                prompt = act_hist.action_prompt()
                prompts["action"] = prompt
                r = await _score_one(model, prompt, conts)
            rec["tokens_in"] += r.tokens_in
            rec["latency_s"] += r.latency_s
            act = scored_policy(r)
            if isinstance(act, str):  # the call failed, or its numbers are no probabilities
                rec.update(status="error", error=f"action: {act}")
                ok = False
        if ok and not isinstance(act, str):
            a = draw(act.probs, derive_seed(seed, t))
            rec.update(policy=act.probs, my_action=a)
            if chat:
                rec["label_mass"] = act.mass
            if predict and tom_variant == "agent_first":  # Figure 2: asked after the agent acted
                ok = await _predict_partner(model, tom_hist, conts, a, chat, act_msgs, rec, prompts)
        tokens += rec["tokens_in"]
        if keep_prompts or (chat and t == 0):  # chat: the first round's always (the template shows)
            rec["prompts"] = prompts
        if not ok:
            records.append(rec)
            status_all = "error"
            break
        b = partner.act(state, p_rng)
        rec.update(
            partner_action=b,
            payoff_me=float(g.payoff_me[a, b]),
            payoff_partner=float(g.payoff_partner[a, b]),
            partner_state=state,
        )
        state = partner.update(state, a, b)
        act_hist.add_round(a, b)
        if tom_hist is not act_hist:
            tom_hist.add_round(a, b)
        mine.append(a)
        theirs.append(b)
        if predict:
            preds.append(rec["prediction"])
        records.append(rec)

    complete = len(mine) == T
    regret = None
    if complete and T > 0:
        regret = float(regret_per_step(g, partner, mine, theirs, initial_state=s0).mean())
    acc = float(tom_accuracy(preds, theirs)) if predict and complete and T > 0 else None
    return {
        "game": g.name, "partner": partner.name, "label_set": label_set, "T": T, "seed": seed,
        "tom_variant": tom_variant if predict else None, "initial_state": s0,
        "status": status_all, "rounds": len(mine),
        "regret_per_step": regret, "tom_accuracy": acc,
        "return": float(sum(g.payoff_me[a, b] for a, b in zip(mine, theirs))),
        "tokens_in": tokens, "seconds": time.perf_counter() - t0,
        "records": records,
    }


def run_lm_episode(model: LanguageModel, game: RepeatedGame | str, partner_name: str | FiniteStatePartner, T: int,
                   seed: int, **settings: Any) -> dict[str, Any]:
    """Play one LM-prompting episode (sync wrapper; use :func:`arun_lm_episode` inside a loop).

    Returns ``records`` (per round: t, policy, my_action, partner_action, payoffs, prediction,
    tom_policy, tokens_in, status, and the prompts when ``keep_prompts``) and episode metrics:
    regret_per_step (Δ_F/T against the partner's true initial state), tom_accuracy, tokens_in
    (tokens the backend actually evaluated), seconds, status ("complete" / "error").
    Its settings are :func:`arun_lm_episode`'s keywords (label_set, predict, tom_variant, keep_prompts,
    history, payoffs, chat).
    """
    return asyncio.run(arun_lm_episode(model, game, partner_name, T, seed, **settings))


async def arun_lm_episodes(
    model: LanguageModel, game: RepeatedGame | str, partner: str | FiniteStatePartner, T: int,
    episodes: int, seed: int, **kwargs: Any,
) -> dict[str, Any]:
    eps = []
    for e in range(episodes):
        eps.append(await arun_lm_episode(model, game, partner, T, derive_seed(seed, e), **kwargs))
    done = [ep for ep in eps if ep["status"] == "complete"]
    regrets = [ep["regret_per_step"] for ep in done]
    accs = [ep["tom_accuracy"] for ep in done if ep["tom_accuracy"] is not None]
    return {
        "episodes": eps,
        "n_episodes": episodes, "n_complete": len(done), "n_error": episodes - len(done),
        "regret_per_step": mean_ci(regrets, seed=seed),
        "tom_accuracy": mean_ci(accs, seed=seed),
        "tokens_in": int(sum(ep["tokens_in"] for ep in eps)),
        "seconds": float(sum(ep["seconds"] for ep in eps)),
    }


def run_lm_episodes(
    model: LanguageModel, game: RepeatedGame | str, partner: str | FiniteStatePartner, T: int,
    episodes: int, seed: int, **kwargs: Any,
) -> dict[str, Any]:
    """``episodes`` episodes (episode e seeded ``derive_seed(seed, e)``), sequential so a
    prefix-reusing backend keeps its cache; means with 95% bootstrap CIs over complete episodes
    (errored episodes are counted, never averaged in)."""
    return asyncio.run(arun_lm_episodes(model, game, partner, T, episodes, seed, **kwargs))
