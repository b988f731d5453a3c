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
