"""Episodes of the text-generation strategies: the bounded re-query, parse-failure and error
recording, and each strategy's use of its extra state - with a small deterministic in-test model
(no HTTP, no weights)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.models.base import GenerateResult, LanguageModel, ScoreResult
from stratbench.suites.tom.games import IBS, IPD, RPS
from stratbench.suites.tom.gen_episodes import (
    REASONING_STOPS,
    GenSettings,
    arun_gen_episode,
)
from stratbench.suites.tom.gen_prompts import GenPrompts
from stratbench.suites.tom.partners import make_partner
from stratbench.suites.tom.regret import regret_per_step
from stratbench.suites.tom.results import summarize_rounds

# the appendix's wording (as pinned in test_gen_prompts.py)
FIGURE_16 = ("Given the game rules and limited interaction history while playing with the other player described "
             "above, extract a concise, unbiased, and self-contained summary that would be useful for deciding "
             "which Option you should choose in the next round.")
FIGURE_17 = ("Given the game rules and limited interaction history while playing with the other player described "
             "above, extract a concise, unbiased, and self-contained summary that would be useful for guessing "
             "which Option the other player will choose in the next round.")
INTRO_IBS = ("You are playing a game repeatedly with another player. In this game, you can choose between Option J "
             "and Option F. You will play 100 rounds in total with the same player.")


class ScriptedLM(LanguageModel):
    """Answers each generation request with ``answer(prompt, request)``; records every request."""

    def __init__(self, answer: Callable[[str, object], str | None], logprobs: list[float] | None = None) -> None:
        super().__init__()
        self.answer = answer
        self.logprobs = logprobs
        self.requests: list = []
        self.scored: list[str] = []

    async def score(self, requests):
        self.scored.extend(r.prompt for r in requests)
        return [ScoreResult(list(self.logprobs[: len(r.continuations)]), tokens_in=3) for r in requests]

    async def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.answer(r.prompt, r)
            if text is None:
                out.append(GenerateResult(None, error="HTTP 500 after retries"))
            else:
                out.append(GenerateResult(text, tokens_in=len(r.prompt) // 4, tokens_out=len(text) // 4 + 1))
        return out


def play(model, game, partner, T, settings, seed=1):
    return asyncio.run(arun_gen_episode(model, game, partner, T, seed, settings))


# ------------------------------------------------------------------------------- episodes
def test_qa_episode_records_parses_and_scores_regret():
    # Completion mode: the prompt ends with the "Option:" stem; the model answers F (Paper) to
    # actions and predicts J (Rock) in ToM prompts.
    def answer(prompt, req):
        assert prompt.endswith("\n\nOption:") and not req.chat and req.stop == ("\n",)
        return " J\n" if "think the other player" in prompt else " F\n"

    m = ScriptedLM(answer)
    ep = play(m, RPS, "single_action", 6, GenSettings(prompting="QA", keep_prompts=True), seed=3)
    recs = ep["records"]
    assert ep["status"] == "complete" and [r["t"] for r in recs] == list(range(6))
    for r in recs:
        assert r["status"] == "parsed" and r["my_action"] == 1 and r["prediction"] == 0
        assert [c["kind"] for c in r["calls"]] == ["action", "tom"]
        assert all(c["status"] == "parsed" and c["text"] and c["tokens_in"] > 0 for c in r["calls"])
        assert "prompt" in r["calls"][0] and r["tokens_in"] == sum(c["tokens_in"] for c in r["calls"])
    # the agent-first ToM prompt is told this round's action
    assert recs[2]["calls"][1]["prompt"].split("\n\n")[-5] == "In round 3, you chose Option F."
    partner = make_partner("single_action", RPS)
    theirs = [r["partner_action"] for r in recs]
    want = regret_per_step(RPS, partner, [1] * 6, theirs, initial_state=ep["initial_state"]).mean()
    rows = [{"episode": 0, "initial_state": ep["initial_state"], **r} for r in recs]
    s, curve = summarize_rounds(rows, {"game": "rps", "partner": "single_action", "rounds": 6, "seed": 0,
                                       "prompting": "QA"})
    assert s["regret_per_step"] == pytest.approx(want) and len(curve) == 6
    assert s["tom_accuracy"] == np.mean([b == 0 for b in theirs])
    assert s["parse_failure_rate"] == 0 and s["n_episodes"] == 1
    # reproducible seeds, one per call; sample_index = attempt
    seeds = [r.seed for r in m.requests]
    assert len(set(seeds)) == len(seeds) and all(r.sample_index == 0 for r in m.requests)
    ep2 = play(ScriptedLM(answer), RPS, "single_action", 6, GenSettings(prompting="QA"), seed=3)
    assert [r["partner_action"] for r in ep2["records"]] == theirs


def test_cot_requery_is_bounded_and_failures_are_recorded():
    calls = {"n": 0}

    def twice_bad(prompt, req):  # the action parses only on the third sample of round 1
        if "think the other player" in prompt:
            return " ...\n\nOption: J"
        calls["n"] += 1
        return " I'm not sure." if calls["n"] <= 2 else " They play J.\n\nOption: F"

    m = ScriptedLM(twice_bad)
    ep = play(m, IBS, "single_action", 2, GenSettings(prompting="CoT", max_tries=3))
    r0 = ep["records"][0]
    acts = [c for c in r0["calls"] if c["kind"] == "action"]
    assert [c["attempt"] for c in acts] == [0, 1, 2]
    assert [c["status"] for c in acts] == ["parse_failed", "parse_failed", "parsed"]
    assert "template" in acts[0]["reason"] and r0["my_action"] == 1
    assert [r.sample_index for r in m.requests[:3]] == [0, 1, 2] and len({r.seed for r in m.requests[:3]}) == 3
    assert m.requests[0].prompt.endswith("Option: <J or F>\n\nThoughts:") and m.requests[0].max_tokens == 384

    never = ScriptedLM(lambda p, r: "Thoughts: hmm, maybe <J or F>?\n\nOption: <J or F>")
    ep = play(never, IBS, "single_action", 5, GenSettings(prompting="CoT", max_tries=3))
    assert ep["status"] == "parse_failed" and ep["rounds"] == 0 and len(ep["records"]) == 1
    rec = ep["records"][0]
    assert rec["status"] == "parse_failed" and rec["failed_call"] == "action"
    assert "my_action" not in rec and "partner_action" not in rec  # nothing substituted
    assert len(never.requests) == 3 and all(c["status"] == "parse_failed" for c in rec["calls"])
    rows = [{"episode": 0, "initial_state": ep["initial_state"], **rec}]
    s, curve = summarize_rounds(rows, {"game": "ibs", "partner": "single_action", "rounds": 5, "seed": 0})
    assert s["n_episodes"] == 0 and s["n_parse_failed_episodes"] == 1 and s["regret_per_step"] is None
    assert s["parse_failure_rate"] == 1.0 and curve is None


def test_tom_parse_failure_keeps_playing_and_model_errors_stop():
    m = ScriptedLM(lambda p, r: " maybe" if "think the other player" in p else " J")
    ep = play(m, IPD, "tit_for_tat", 4, GenSettings(prompting="QA", max_tries=2))
    assert ep["status"] == "complete"
    assert all(r["tom_status"] == "parse_failed" and r["prediction"] is None for r in ep["records"])
    rows = [{"episode": 0, "initial_state": ep["initial_state"], **r} for r in ep["records"]]
    s, _ = summarize_rounds(rows, {"game": "ipd", "partner": "tit_for_tat", "rounds": 4, "seed": 0})
    assert s["n_episodes"] == 1 and s["tom_accuracy"] is None and s["tom_parse_failure_rate"] == 1.0

    n = {"k": 0}

    def dies(prompt, req):
        n["k"] += 1
        return None if n["k"] == 5 else " J"  # round 3's action call fails (2 calls per round)

    ep = play(ScriptedLM(dies), IPD, "single_action", 6, GenSettings(prompting="QA"))
    assert ep["status"] == "error" and ep["rounds"] == 2
    last = ep["records"][-1]
    assert last["status"] == "error" and last["calls"][-1]["error"].startswith("HTTP 500")
    assert len(ep["records"][-1]["calls"]) == 1  # an error is not re-sampled as a parse failure would be


def test_oracle_is_told_the_partners_actual_action():
    labels = RPS.action_labels("neutral")

    def best_response(prompt, req):  # a perfect reasoner given the oracle's information
        b = labels.index(re.search(r"The other player will choose Option (\w+)\.", prompt).group(1))
        return " " + labels[RPS.best_response(b)]

    for prompting in ("Oracle", "OracleMax"):
        m = ScriptedLM(best_response)
        ep = play(m, RPS, "fixed_cycle", 9, GenSettings(prompting=prompting, predict=False))
        recs = ep["records"]
        assert [r["partner_action"] for r in recs] == [0, 1, 2] * 3  # the cycle, so the told action varies
        for r, req in zip(recs, m.requests):
            assert f"The other player will choose Option {labels[r['partner_action']]}." in req.prompt
        assert ("maximize your score" in m.requests[0].prompt) == (prompting == "OracleMax")
        partner = make_partner("fixed_cycle", RPS)
        mine = [r["my_action"] for r in recs]
        assert regret_per_step(RPS, partner, mine, [r["partner_action"] for r in recs], initial_state=0).sum() == 0


def test_social_acts_on_its_own_partner_first_prediction():
    def answer(prompt, req):
        if prompt.endswith("will choose in this round?\n\nYour answer MUST be formatted like:\n\nOption: <J or F>\n\nOption:"):
            return " F"  # the prediction, asked before acting
        m = re.search(r"predict the other player will choose Option (\w)", prompt)
        assert m, "the action prompt must carry the prediction"
        return " " + m.group(1)

    model = ScriptedLM(answer)
    ep = play(model, IBS, "single_action", 3, GenSettings(prompting="Social", tom_variant="agent_first"))
    assert ep["status"] == "complete"
    for r in ep["records"]:
        assert r["prediction"] == 1 and r["my_action"] == 1 and [c["kind"] for c in r["calls"]] == ["tom", "action"]
    # SocialLM: the prediction is the argmax of Figure 3's log-probs
    lm = ScriptedLM(answer, logprobs=[-2.5, -0.1])
    ep = play(lm, IBS, "single_action", 2, GenSettings(prompting="SocialLM"))
    assert ep["status"] == "complete" and all(r["prediction"] == 1 and r["my_action"] == 1 for r in ep["records"])
    b0 = IBS.action_labels()[ep["records"][0]["partner_action"]]
    assert f"In round 1, the other player chose Option {b0} and you chose Option F. Thus, you won" in lm.scored[1]
    assert lm.scored[1].endswith("\n\nIn round 2, the other player chose Option")
    # an unparseable prediction stops the episode: the action prompt would need it
    bad = ScriptedLM(lambda p, r: " dunno")
    ep = play(bad, IBS, "single_action", 3, GenSettings(prompting="Social", max_tries=2))
    assert ep["status"] == "parse_failed" and ep["records"][0]["failed_call"] == "tom" and len(bad.requests) == 2


def test_plans_insights_and_reflexion_carry_their_memory():
    def pi_answer(prompt, req):
        if "think the other player" in prompt:
            return " J"
        t = len(re.findall(r"^In round \d+, you chose", prompt, re.MULTILINE)) + 1
        return f" plan-{t}\n\nInsights: insight-{t}\n\nOption: J"

    m = ScriptedLM(pi_answer)
    ep = play(m, IPD, "tit_for_tat", 3, GenSettings(prompting="PlansInsights", keep_prompts=True))
    recs = ep["records"]
    assert [r["plans"] for r in recs] == ["plan-1", "plan-2", "plan-3"]
    assert [r["insights"] for r in recs] == ["insight-1", "insight-2", "insight-3"]
    act1 = recs[1]["calls"][0]["prompt"]
    assert "Your plans from the last round were: plan-1\n\nYour insights from the last round were: insight-1" in act1
    tom1 = recs[1]["calls"][1]["prompt"]
    assert "Your plans from this round were: plan-2\n\nYour insights from this round were: insight-2" in tom1

    def rx_answer(prompt, req):
        if prompt.endswith("Plan:"):
            return f" plan after {len(re.findall(r'^In round', prompt, re.MULTILINE))} rounds"
        if "think the other player" in prompt:
            return " F"
        return " hmm\n\nOption: F"

    m = ScriptedLM(rx_answer)
    ep = play(m, IPD, "single_action", 4, GenSettings(prompting="Reflexion", memory=2, keep_prompts=True))
    recs = ep["records"]
    assert [c["kind"] for c in recs[0]["calls"]] == ["action", "tom"]  # nothing to reflect on yet
    assert [c["kind"] for c in recs[1]["calls"]] == ["reflection", "action", "tom"]
    assert [r.get("plan") for r in recs] == [None, "plan after 1 rounds", "plan after 2 rounds", "plan after 3 rounds"]
    act3 = recs[3]["calls"][1]["prompt"]
    assert ("Your plan from two rounds ago was: plan after 2 rounds\n\nYour plan from the previous round was: "
            "plan after 3 rounds\n\nYou are currently playing round 4.") in act3
    assert "plan after 1 rounds" not in act3  # memory size 2
    assert "Your plan from the previous round was: plan after 3 rounds" in recs[3]["calls"][2]["prompt"]  # Figure 12


def test_partner_first_tom_and_chat_mode():
    def answer(prompt, req):
        assert req.chat and req.stop == () and prompt.endswith("Option: <J or F>")  # the paper's text, no stem
        return "Thoughts: copy.\n\nOption: J" if "Thoughts:" in prompt else "Option: J"

    m = ScriptedLM(answer)
    ep = play(m, IBS, "tit_for_tat", 3, GenSettings(prompting="CoT", tom_variant="partner_first", chat=True))
    assert ep["status"] == "complete"
    for r in ep["records"]:
        assert [c["kind"] for c in r["calls"]] == ["tom", "action"]  # predicted before acting
    assert "In round 1, the other player chose Option J and you chose Option J." in m.requests[2].prompt
    with pytest.raises(InputError):
        GenSettings(prompting="LM")
    with pytest.raises(InputError):
        GenSettings(prompting="QA", tom_variant="sideways")




def _n_rounds(prompt: str) -> int:
    return len(re.findall(r"^In round \d+, (?:you|the other player) chose Option \w+ and", prompt, re.MULTILINE))


def test_cot3_episode_sends_the_examples_and_bounds_requeries():
    def answer(prompt, req):
        assert "Some example thought processes for superior play in this game include:" in prompt
        assert prompt.endswith("\n\nThoughts:") and req.stop == REASONING_STOPS and req.max_tokens == 384
        return " They copy me.\n\nOption: J"

    m = ScriptedLM(answer)
    ep = play(m, IPD, "tit_for_tat", 3, GenSettings(prompting="CoT3", keep_prompts=True))
    assert ep["status"] == "complete" and ep["prompting"] == "CoT3"
    for r in ep["records"]:
        assert [c["kind"] for c in r["calls"]] == ["action", "tom"] and r["my_action"] == 0 and r["prediction"] == 0
    P = GenPrompts(IPD, T=3)
    rounds = [(r["my_action"], r["partner_action"]) for r in ep["records"]]
    assert ep["records"][2]["calls"][0]["prompt"] == P.cot3(rounds[:2]).render(False)
    assert ep["records"][2]["calls"][1]["prompt"] == P.tom(rounds[:2], 0, "cot", shots=True).render(False)

    never = ScriptedLM(lambda p, r: " I'd pick one.\n\nOption: <J or F>")
    ep = play(never, IPD, "tit_for_tat", 3, GenSettings(prompting="CoT3", max_tries=2))
    rec = ep["records"][0]
    assert ep["status"] == "parse_failed" and rec["failed_call"] == "action" and len(never.requests) == 2
    assert [c["status"] for c in rec["calls"]] == ["parse_failed", "parse_failed"] and "my_action" not in rec


def test_s2a_episode_call_order_records_and_seeds():
    def answer(prompt, req):
        if prompt.endswith("\n\nSummary:"):  # the rewrite: a raw model goes on past its summary
            assert req.stop == REASONING_STOPS and req.max_tokens == 384
            who = "you" if FIGURE_16 in prompt else "them"
            return f" {who}: {_n_rounds(prompt)} rounds seen.\n\nWhich Option do you choose?\n\nOption: F"
        assert "rules of the game" not in prompt and _n_rounds(prompt) == 0  # answered from the rewrite only
        assert req.stop == ("\n",) and req.max_tokens == 32
        return " J"

    m = ScriptedLM(answer)
    ep = play(m, IBS, "single_action", 3, GenSettings(prompting="S2A", keep_prompts=True), seed=5)
    assert ep["status"] == "complete"
    for t, r in enumerate(ep["records"]):
        assert [c["kind"] for c in r["calls"]] == ["s2a_context", "action", "s2a_tom_context", "tom"]
        assert r["s2a_context"] == f"you: {t} rounds seen." and r["s2a_tom_context"] == f"them: {t} rounds seen."
        assert f"\n\nyou: {t} rounds seen.\n\nYou are currently playing round {t + 1}." in r["calls"][1]["prompt"]
        assert f"\n\nthem: {t} rounds seen.\n\nIn round {t + 1}, you chose Option J." in r["calls"][3]["prompt"]
        assert r["calls"][2]["prompt"].endswith(FIGURE_17 + "\n\nSummary:")
        assert all(c["status"] == "parsed" for c in r["calls"]) and r["my_action"] == 0 and r["prediction"] == 0
    seeds = [q.seed for q in m.requests]
    assert len(m.requests) == 12 and len(set(seeds)) == 12
    again = ScriptedLM(answer)
    play(again, IBS, "single_action", 3, GenSettings(prompting="S2A"), seed=5)
    assert [q.seed for q in again.requests] == seeds  # reproducible, so the cache replays it
    rows = [{"episode": 0, "initial_state": ep["initial_state"], **r} for r in ep["records"]]
    s, _ = summarize_rounds(rows, {"game": "ibs", "partner": "single_action", "rounds": 3, "seed": 0})
    assert s["parse_failure_rate"] == 0 and s["n_episodes"] == 1  # rewrites are not action attempts

    # partner-first ToM: the ToM rewrite (history partner first) and prediction come before acting;
    # S2A + CoT answers in CoT format; a chat model's rewrite is its whole reply
    def chat_answer(prompt, req):
        assert req.chat and req.stop == ()
        if prompt.endswith(FIGURE_17):
            assert _n_rounds(prompt) == 0 or "the other player chose Option" in prompt.split("rules")[1]
            return "They play J.\n\nAlways."
        if prompt.endswith(FIGURE_16):
            return "Play J."
        assert prompt.endswith("Thoughts: <paragraph explaining your reasoning>\n\nOption: <J or F>")
        return "Thoughts: ok.\n\nOption: J"

    m = ScriptedLM(chat_answer)
    ep = play(m, IBS, "single_action", 2, GenSettings(prompting="S2ACoT", tom_variant="partner_first", chat=True,
                                                      keep_prompts=True))
    assert ep["status"] == "complete"
    r1 = ep["records"][1]
    assert [c["kind"] for c in r1["calls"]] == ["s2a_tom_context", "tom", "s2a_context", "action"]
    assert r1["s2a_tom_context"] == "They play J.\n\nAlways." and r1["s2a_context"] == "Play J."
    assert "In round 1, the other player chose Option" in r1["calls"][0]["prompt"]
    assert INTRO_IBS.replace("100", "2") + "\n\nThey play J.\n\nAlways.\n\nYou are currently playing round 2." \
        in r1["calls"][1]["prompt"]


def test_s2a_empty_rewrites_errors_and_parse_failures():
    # an empty rewrite is accepted once (never re-sampled), flagged, and the answer is asked without it;
    # an empty reply is never `parsed`: its call is parse_failed with `empty`
    m = ScriptedLM(lambda p, r: " \n" if p.endswith("Summary:") else " F")
    ep = play(m, IPD, "single_action", 2, GenSettings(prompting="S2A", predict=False, keep_prompts=True))
    assert ep["status"] == "complete"
    for r in ep["records"]:
        rw, act = r["calls"]
        assert rw["kind"] == "s2a_context" and rw["empty"] is True and rw["status"] == "parse_failed"
        assert r["s2a_context"] == "" and "prediction" not in r
        assert act["prompt"].startswith(INTRO_IBS.replace("100", "2") + "\n\nYou are currently playing round")
    # a raw model that opens with a blank line still has its first paragraph taken
    m = ScriptedLM(lambda p, r: "\n\nThey play J.\nAlways.\n\nOption: F" if p.endswith("Summary:") else " F")
    ep = play(m, IPD, "single_action", 1, GenSettings(prompting="S2A", predict=False))
    assert ep["records"][0]["s2a_context"] == "They play J.\nAlways." and "empty" not in ep["records"][0]["calls"][0]

    # a failed rewrite (model error) ends the episode as error before the answer is asked
    def dies(prompt, req):
        return None if prompt.endswith("Summary:") and _n_rounds(prompt) == 1 else (" J" if not prompt.endswith("Summary:") else " s")

    m = ScriptedLM(dies)
    ep = play(m, IPD, "single_action", 4, GenSettings(prompting="S2A"))
    assert ep["status"] == "error" and ep["rounds"] == 1
    last = ep["records"][-1]
    assert last["status"] == "error" and last["failed_call"] == "s2a_context"
    assert [c["kind"] for c in last["calls"]] == ["s2a_context"] and "my_action" not in last
    # the ToM rewrite failing ends it too (after the action was chosen, nothing is recorded as played)
    m = ScriptedLM(lambda p, r: None if p.endswith(FIGURE_17 + "\n\nSummary:") else (" s" if p.endswith("Summary:") else " J"))
    ep = play(m, IPD, "single_action", 3, GenSettings(prompting="S2A"))
    assert ep["status"] == "error" and ep["records"][0]["failed_call"] == "s2a_tom_context"

    # an answer that never parses: re-sampled max_tries times on the same rewrite, then parse_failed
    m = ScriptedLM(lambda p, r: " summary" if p.endswith("Summary:") else " maybe")
    ep = play(m, IPD, "single_action", 3, GenSettings(prompting="S2A", max_tries=3))
    rec = ep["records"][0]
    assert ep["status"] == "parse_failed" and rec["failed_call"] == "action"
    assert [(c["kind"], c["attempt"], c["status"]) for c in rec["calls"]] == [
        ("s2a_context", 0, "parsed"), ("action", 0, "parse_failed"), ("action", 1, "parse_failed"),
        ("action", 2, "parse_failed")]
    # a ToM answer that never parses keeps playing (as for every non-Social strategy)
    m = ScriptedLM(lambda p, r: " s" if p.endswith("Summary:") else (" ?" if "think the other" in p else " J"))
    ep = play(m, IPD, "single_action", 2, GenSettings(prompting="S2A", max_tries=2))
    assert ep["status"] == "complete" and all(r["tom_status"] == "parse_failed" for r in ep["records"])
