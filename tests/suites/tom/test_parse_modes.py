"""Strict and flexible reading of generated answers (lm-eval's strict-match / flexible-extract),
pinned on hand-written answers, and how the call records and the summary report them."""

from __future__ import annotations

import asyncio

import pytest

from stratbench.models.base import GenerateResult, LanguageModel, ScoreResult
from stratbench.suites.tom.gen_episodes import GenSettings, arun_gen_episode
from stratbench.suites.tom.results import summarize_rounds
from stratbench.suites.tom.strategies import read_option

RPS = ("J", "F", "B")

STRICT = [
    "Option: B",
    "Option: B.",
    "**Option:** B",
    "Option: **B**",
    "Thoughts: they copy me, so I beat Rock.\n\nOption: B",
    "Option: B\n\nYou are playing a game... Option: J",  # the first Option line is the answer
]
FLEXIBLE = [
    "The answer is: Option B",  # no Option: line, an answer statement (ToM QA used to reject it)
    "I choose B",
    "Option: Option B",
    "Option: B, since they copy me",
    "Option:\nB",  # the label on the next line
    "Thoughts: they copy me.\n\nA: Option B",
]
FAILED = [
    "",  # an empty reply is never an answer
    "   \n",
    "Option: <J or F or B>",  # the template echoed
    "Option: Q",
    "Option:",
    "Option:\nThoughts: B",
    "Option: J or B",  # two labels
    "answer with 0 as the last line.",
    "Thoughts: I am not sure what to do.",
]


@pytest.mark.parametrize("text", STRICT)
def test_strict_answers(text):
    r = read_option(text, RPS)
    assert (r.action, r.parse, r.error) == (2, "strict", None)


@pytest.mark.parametrize("text", FLEXIBLE)
def test_flexible_answers(text):
    r = read_option(text, RPS)
    assert (r.action, r.parse, r.error) == (2, "flexible", None)


@pytest.mark.parametrize("text", FAILED)
def test_failed_answers(text):
    r = read_option(text, RPS)
    assert r.action is None and r.parse is None and r.error
    if not text.strip():
        assert r.error == "empty reply"


def test_a_reply_cut_at_the_token_limit_is_never_strict():
    assert read_option("Option: B", RPS, finish_reason="length").parse == "flexible"
    assert read_option("Option: B", RPS, finish_reason="stop").parse == "strict"


class Replies(LanguageModel):
    """Answers generation requests from a list, in order, with a finish reason each."""

    def __init__(self, replies: list[tuple[str, str]]) -> None:
        super().__init__()
        self.replies = list(replies)

    async def score(self, requests):
        return [ScoreResult(None, error="not used") for _ in requests]

    async def generate(self, requests):
        out = []
        for _ in requests:
            text, finish = self.replies.pop(0)
            out.append(GenerateResult(text, tokens_in=10, tokens_out=3, finish_reason=finish))
        return out


def test_call_records_and_summary_rates():
    # completion mode (stem "Option:" put back in front of the reply); QA with ToM, 3 rounds
    m = Replies([
        ("", "stop"), (" B", "stop"),  # round 1: an empty action reply (never parsed), then strict
        (" J", "stop"),  # its ToM: strict
        (" B, I think", "stop"),  # round 2: flexible action
        (" J", "length"),  # ToM cut by the token limit: flexible
        (" F", "stop"), (" Option F", "stop"),  # round 3: strict action, flexible ToM
    ])
    ep = asyncio.run(arun_gen_episode(m, "rps", "single_action", 3, 1, GenSettings(prompting="QA", max_tries=2)))
    assert ep["status"] == "complete"
    calls = [c for r in ep["records"] for c in r["calls"]]
    assert [(c["kind"], c["status"], c.get("parse"), c["finish_reason"]) for c in calls] == [
        ("action", "parse_failed", None, "stop"), ("action", "parsed", "strict", "stop"),
        ("tom", "parsed", "strict", "stop"),
        ("action", "parsed", "flexible", "stop"), ("tom", "parsed", "flexible", "length"),
        ("action", "parsed", "strict", "stop"), ("tom", "parsed", "flexible", "stop"),
    ]
    assert calls[0]["reason"] == "empty reply" and calls[0]["text"] == ""
    recs = [{**r, "episode": 0, "initial_state": ep["initial_state"]} for r in ep["records"]]
    s, _ = summarize_rounds(recs, {"prompting": "QA", "game": "rps", "partner": "single_action", "rounds": 3,
                                   "episodes": 1, "seed": 1, "model": "x"})
    assert s["policy"] == "generate" and s["action_attempts"] == 4
    assert (s["parse_failure_rate"], s["strict_parse_rate"], s["flexible_parse_rate"]) == (0.25, 0.5, 0.25)
    assert (s["tom_strict_parse_rate"], s["tom_flexible_parse_rate"]) == pytest.approx((1 / 3, 2 / 3))
    # the episode's round-2 action was read flexibly: strict-match counts the episode out
    assert s["n_episodes"] == 1 and s["n_strict_episodes"] == 0 and s["strict_regret_per_step"] is None
