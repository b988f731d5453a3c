"""CHBench players: model players under each mechanism (log-prob and sampled answers, advisors)."""

from __future__ import annotations

import asyncio

from stratbench.models.base import GenerateResult, LanguageModel, ScoreResult
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.players import ModelPlayer, ScriptedPlayer, scripted_agent
from stratbench.suites.chbench.repeated import play_match

PD = build_catalogue()[0].game  # prisoner's dilemma, A = [[3, 0], [5, 1]]


class FakeLM(LanguageModel):
    """Deterministic model: scores favour `favour`; generation answers from `answers` in turn."""

    def __init__(self, favour: int = 1, answers: list[str | None] | None = None) -> None:
        super().__init__()
        self.favour = favour
        self.answers = answers or ["2"]
        self.score_prompts: list[str] = []
        self.gen_prompts: list[str] = []

    async def score(self, requests):
        out = []
        for r in requests:
            self.score_prompts.append(r.prompt)
            lp = [-5.0] * len(r.continuations)
            lp[self.favour] = -0.01
            out.append(ScoreResult(lp, [1] * len(lp), tokens_in=10))
        return out

    async def generate(self, requests):
        out = []
        for r in requests:
            self.gen_prompts.append(r.prompt)
            a = self.answers[(len(self.gen_prompts) - 1) % len(self.answers)]
            out.append(GenerateResult(a, tokens_in=10, tokens_out=3) if a is not None
                       else GenerateResult(None, error="server down"))
        return out


def test_model_player_logprob_memory_sees_history_and_stores_policy():
    lm = FakeLM(favour=0)
    p = ModelPlayer("fake", lm, "memory", "logprob")
    opp = ScriptedPlayer("level-k:1", scripted_agent("level-k:1"))
    recs = asyncio.run(play_match(PD, p, opp, 3, seed=1))
    assert [r["row_action"] for r in recs] == [0, 0, 0]  # exact policy puts ~0.99 on action 1
    assert recs[0]["row_policy"][0] > 0.98 and recs[0]["row_status"] == "parsed"
    assert "Round 2: you chose 1 and your opponent chose 2; you received 0 points" in lm.score_prompts[2]


def test_model_player_sample_records_parse_failures_and_errors_without_substitutes():
    lm = FakeLM(answers=["2", "I like turtles", None])
    p = ModelPlayer("fake", lm, "baseline", "sample")
    opp = ScriptedPlayer("random", scripted_agent("random"))
    recs = asyncio.run(play_match(PD, p, opp, 3, seed=1))
    assert [r["row_status"] for r in recs] == ["parsed", "parse_failed", "error"]
    assert [r["row_action"] for r in recs] == [1, None, None]
    assert recs[1]["status"] == "parse_failed" and recs[1]["row_payoff"] is None
    assert recs[1]["row_raw"] == "I like turtles" and recs[2]["status"] == "error"


def test_chat_mechanism_consults_advisor_twice_before_play_and_chat_memory_reviews():
    lm = FakeLM(favour=1, answers=["Hello advisor", "Play 2."])
    p = ModelPlayer("fake", lm, "chat", "logprob")
    recs = asyncio.run(play_match(PD, p, ScriptedPlayer("random", scripted_agent("random")), 2, seed=0))
    assert len(lm.gen_prompts) == 4  # two Q&A exchanges, before round 1 only
    assert [t["speaker"] for t in recs[0]["row_consultation"]] == ["Alex", "Sam", "Alex", "Sam"]
    assert "row_consultation" not in recs[1]
    assert "Alex: Hello advisor\nSam: Play 2." in lm.score_prompts[0]
    lm2 = FakeLM(favour=1, answers=["msg"])
    p2 = ModelPlayer("fake", lm2, "chat_memory", "logprob")
    recs2 = asyncio.run(play_match(PD, p2, ScriptedPlayer("random", scripted_agent("random")), 25, seed=0))
    assert [r["round"] for r in recs2 if "row_consultation" in r] == [11, 21]
    assert len(lm2.gen_prompts) == 8
    assert "Historical Game Records:" in lm2.gen_prompts[0] and "Round 10:" in lm2.gen_prompts[0]
    assert "After 10 rounds:Alex: msg" in lm2.score_prompts[-1] and "After 20 rounds:Alex: msg" in lm2.score_prompts[-1]


# ----------------------------------------------------------------------------- chat, choice, strict/flexible

def test_strict_and_flexible_answers_are_pinned_on_hand_written_replies():
    from stratbench.parsing.actions import parse_action
    from stratbench.suites.chbench.players import answer_form

    labels = ("1", "2", "3")
    cases = [  # reply, finish_reason, action read (0-based) or None, how it was read
        ("2", "stop", 1, "strict"),
        ("  3\n", "stop", 2, "strict"),
        ("2", None, 1, "strict"),  # a backend that does not say: not known to be cut
        ("2", "length", 1, "flexible"),  # cut at the token budget: never strict
        (" 2\n\nRound 2: you chose", "length", 1, "flexible"),  # a raw model running on
        ("2.", "stop", 1, "flexible"),
        ("**2**", "stop", 1, "flexible"),
        ("Your choice is : 2", "stop", 1, "flexible"),
        ("I choose 3 because it pays most.", "stop", 2, "flexible"),
        ("Answer: 1", "stop", 0, "flexible"),
        ("", "stop", None, None),  # an empty answer is never parsed
        ("   \n", "stop", None, None),
        ("1 or 2", "stop", None, None),
        ("4", "stop", None, None),  # not a legal action
        ("answer with 0 as the last line.", "stop", None, None),
        ("Premise: [1] You can only choose", "stop", None, None),
        ("Your choices are: 1, 2", "stop", None, None),
    ]
    for reply, finish, action, kind in cases:
        parsed = parse_action(reply, labels)
        assert (parsed.action, answer_form(reply, parsed, labels, finish)) == (action, kind), reply


class ChatLM(LanguageModel):
    """A chat model double: records every request; replies in turn; scores favour `favour`."""

    supports_chat = supports_chat_scoring = True

    def __init__(self, answers, favour=1, finish="stop"):
        super().__init__()
        self.answers, self.favour, self.finish = answers, favour, finish
        self.gens, self.scores = [], []

    async def generate(self, requests):
        out = []
        for r in requests:
            self.gens.append(r)
            text = self.answers[(len(self.gens) - 1) % len(self.answers)]
            conv = r.messages or (("user", r.prompt),)
            rendered = ("".join(f"<{role}>{c}</{role}>" for role, c in conv) + "<assistant>"
                        if r.chat or r.messages else None)  # raw completions have no template
            out.append(GenerateResult(text, tokens_in=5, tokens_out=2, finish_reason=self.finish, rendered=rendered))
        return out

    async def score(self, requests):
        out = []
        for r in requests:
            self.scores.append(r)
            lp = [-3.0] * len(r.continuations)
            lp[self.favour] = -0.5
            rendered = "".join(f"<{role}>{c}</{role}>" for role, c in r.messages) + "<assistant>" + r.prompt
            out.append(ScoreResult(lp, [1] * len(lp), tokens_in=7, rendered=rendered))
        return out


def test_chat_sample_sends_the_sessions_as_turns_and_records_parse_and_finish_reason():
    lm = ChatLM(["Hi Sam", "Play 2.", "Sure?", "Yes.", "2", "I pick 1 now", "[1] If you choose 1 and your "
                 "opponent chooses 1, you will receive 3 points"])
    p = ModelPlayer("fake", lm, "chat", "sample", chat=True)
    recs = asyncio.run(play_match(PD, p, ScriptedPlayer("random", scripted_agent("random")), 3, seed=0))
    first = lm.gens[0]
    assert first.chat and len(first.messages) == 1 and "Your response:" not in first.messages[0][1]
    adv = lm.gens[3]  # the advisor's second answer: its first answer is an assistant turn
    assert [r for r, _ in adv.messages] == ["user", "assistant", "user"] and adv.messages[1][1] == "Play 2."
    dec = lm.gens[4]
    assert [c for r, c in dec.messages if r == "assistant"] == ["Hi Sam", "Sure?"]
    assert dec.messages[-1][1].startswith("Yes.\n\nQuestion:")
    assert dec.prompt.endswith("Your choice is :") and "Alex: Hi Sam\nSam: Play 2." in dec.prompt  # flattened
    assert recs[0]["row_prompt"].startswith("<user>Game Rules") and "<assistant>Hi Sam</assistant>" in recs[0]["row_prompt"]
    assert [(r["row_status"], r["row_action"], r["row_parse"]) for r in recs] == [
        ("parsed", 1, "strict"), ("parsed", 0, "flexible"), ("parse_failed", None, None)]
    assert "repeats the prompt" in recs[2]["row_error"]  # the rules echoed back are not an answer
    assert all(r["row_finish_reason"] == "stop" for r in recs)
    assert [t["finish_reason"] for t in recs[0]["row_consultation"]] == ["stop"] * 4


def test_choice_scores_the_conversation_with_the_papers_stem():
    lm = ChatLM(["msg"], favour=1)
    p = ModelPlayer("fake", lm, "chat", "choice", chat=True)
    recs = asyncio.run(play_match(PD, p, ScriptedPlayer("random", scripted_agent("random")), 2, seed=4))
    req = lm.scores[0]
    assert req.prompt == "Your choice is :" and req.continuations == (" 1", " 2")
    assert [r for r, _ in req.messages] == ["user", "assistant", "user", "assistant", "user"]
    for r in recs:
        assert abs(sum(r["row_policy"]) - 1) < 1e-12 and r["row_policy"][1] > 0.9 and r["row_status"] == "parsed"
        assert r["row_prompt"].endswith("<assistant>Your choice is :") and "row_parse" not in r
    assert 0 < recs[0]["row_label_mass"] < 1
    import pytest

    from stratbench.errors import InputError

    with pytest.raises(InputError, match="chat"):
        ModelPlayer("fake", lm, "baseline", "choice", chat=False)


def test_raw_requests_are_unchanged_by_chat_support():
    """Without --chat the requests are the flattened prompts with no conversation (cache keys kept)."""
    lm = ChatLM(["Hello", "2"])
    p = ModelPlayer("fake", lm, "chat", "sample")
    recs = asyncio.run(play_match(PD, p, ScriptedPlayer("random", scripted_agent("random")), 1, seed=0))
    assert all(not r.chat and r.messages == () for r in lm.gens)
    assert lm.gens[-1].prompt == recs[0]["row_prompt"] and recs[0]["row_parse"] is None  # "Hello": no number
