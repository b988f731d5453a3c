"""LM-prompting episodes (paper's Figure 1-3 prompts) with a fake model and the embedded model."""

from __future__ import annotations

import importlib.util
import time

import pytest

from stratbench.models.base import LanguageModel, ScoreResult
from stratbench.suites.tom.episodes import run_lm_episode, run_lm_episodes
from stratbench.suites.tom.games import IBS, RPS
from stratbench.suites.tom.partners import make_partner
from stratbench.suites.tom.prompts import ANSWER_STEM, LMPrompts, action_prompt, tom_prompt
from stratbench.suites.tom.regret import regret_per_step, tom_accuracy


class FakeLM(LanguageModel):
    """Deterministic: strongly favours continuation `favour`; fails from call `fail_at` on."""

    def __init__(self, favour: int = 0, fail_at: int | None = None) -> None:
        super().__init__()
        self.favour, self.fail_at = favour, fail_at
        self.prompts: list[str] = []

    async def score(self, requests):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            if self.fail_at is not None and len(self.prompts) > self.fail_at:
                out.append(ScoreResult(None, error="boom"))
                continue
            lp = [-8.0] * len(r.continuations)
            lp[self.favour] = -0.001
            out.append(ScoreResult(lp, [1] * len(lp), tokens_in=len(r.prompt)))
        return out

    async def generate(self, requests):  # pragma: no cover - unused
        raise NotImplementedError


def test_prompt_text_matches_figure_1():
    p = action_prompt(IBS, [(0, 0), (1, 0)], T=100)
    assert p.startswith("You are playing a game repeatedly with another player. In this game, you can "
                        "choose between Option J and Option F. You will play 100 rounds in total with "
                        "the same player.\n\nThe rules of the game are as follows:\n\n")
    assert ("If you choose Option J and the other player chooses Option J, then you win 10 points and "
            "the other player wins 7 points.\n\n") in p
    assert ("In round 2, you chose Option F and the other player chose Option J. Thus, you won 0 points "
            "and the other player won 0 points.\n\n") in p
    assert p.endswith("You are currently playing round 3.\n\nQ: Which Option do you choose, Option J or "
                      "Option F?\n\nA: Option")
    assert LMPrompts(RPS).continuations == (" J", " F", " B")
    t2 = tom_prompt(IBS, [(0, 0)], variant="agent_first", my_action=1)
    assert t2.endswith("In round 2, you chose Option F and the other player chose Option")
    t3 = tom_prompt(IBS, [(0, 1)], variant="partner_first")
    assert "In round 1, the other player chose Option F and you chose Option J." in t3
    assert t3.endswith("In round 2, the other player chose Option")


def test_fake_episode_mechanics_and_regret():
    model = FakeLM(favour=1)  # always (almost surely) F = Paper
    ep = run_lm_episode(model, RPS, "single_action", T=20, seed=3, keep_prompts=True)
    recs = ep["records"]
    assert ep["status"] == "complete" and len(recs) == 20
    assert [r["t"] for r in recs] == list(range(20))
    for r in recs:
        assert r["status"] == "parsed" and abs(sum(r["policy"]) - 1) < 1e-12
        assert r["prediction"] == 1
    mine = [r["my_action"] for r in recs]
    theirs = [r["partner_action"] for r in recs]
    partner = make_partner("single_action", RPS)
    want = regret_per_step(RPS, partner, mine, theirs, initial_state=ep["initial_state"]).mean()
    assert ep["regret_per_step"] == pytest.approx(want)
    assert ep["tom_accuracy"] == pytest.approx(tom_accuracy([1] * 20, theirs))
    assert ep["tokens_in"] == sum(r["tokens_in"] for r in recs)
    # determinism
    ep2 = run_lm_episode(FakeLM(favour=1), RPS, "single_action", T=20, seed=3)
    assert [r["my_action"] for r in ep2["records"]] == mine

    # every prompt (minus its query) is a prefix of the next one: action_t, tom_t, action_t+1, ...
    seq = model.prompts
    assert len(seq) == 40
    for prev, nxt in zip(seq, seq[1:]):
        if prev.endswith(ANSWER_STEM):  # action prompt: drop "You are currently playing round t..."
            base = prev[: prev.rindex("You are currently playing round")]
        else:  # agent-first ToM query is itself a prefix of the round line that follows
            base = prev
        assert nxt.startswith(base) and len(nxt) > len(base)
    acts = [r["prompts"]["action"] for r in recs]
    for a, b in zip(acts, acts[1:]):
        assert b.startswith(a[: a.rindex("You are currently playing round")])


def test_partner_first_variant_and_errors():
    ep = run_lm_episode(FakeLM(favour=0), IBS, "tit_for_tat", T=5, seed=1, tom_variant="partner_first",
                        keep_prompts=True)
    assert ep["status"] == "complete" and ep["tom_accuracy"] is not None
    assert ep["records"][1]["prompts"]["tom"].endswith("In round 2, the other player chose Option")

    # call 7 = round 3's action prompt (2 calls per round) fails: the episode stops there
    bad = FakeLM(favour=0, fail_at=6)
    ep = run_lm_episode(bad, RPS, "single_action", T=10, seed=0)
    assert ep["status"] == "error" and ep["rounds"] == 3 and len(ep["records"]) == 4
    last = ep["records"][-1]
    assert last["status"] == "error" and "boom" in last["error"]
    assert "my_action" not in last and "partner_action" not in last
    assert ep["regret_per_step"] is None and ep["tom_accuracy"] is None

    agg = run_lm_episodes(FakeLM(favour=1), RPS, "single_action", T=10, episodes=3, seed=5)
    assert agg["n_complete"] == 3 and agg["regret_per_step"]["n"] == 3
    assert agg["tom_accuracy"]["mean"] is not None


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp not installed")
def test_embedded_rps_prefix_reuse():
    from stratbench.models import ModelOptions, open_model

    model = open_model("embedded", ModelOptions(prefix_reuse=True), no_cache=True)
    t0 = time.perf_counter()
    ep = run_lm_episode(model, RPS, "single_action", T=40, seed=0, keep_prompts=True)
    dt = time.perf_counter() - t0
    recs = ep["records"]
    assert ep["status"] == "complete" and len(recs) == 40
    for r in recs:
        assert abs(sum(r["policy"]) - 1) < 1e-9
    full = sum(len(model.tokenize(p)) for r in recs for p in r["prompts"].values())
    print(f"\nembedded RPS vs single_action T=40 (+ToM): {dt:.1f}s, tokens evaluated "
          f"{ep['tokens_in']} vs {full} prompt tokens; regret/step {ep['regret_per_step']:.3f}, "
          f"ToM {ep['tom_accuracy']:.2f}")
    assert ep["tokens_in"] < full / 5
