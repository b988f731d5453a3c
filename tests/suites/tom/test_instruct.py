"""ToM with a real instruction-tuned model: `embedded-instruct` (SmolLM2-135M-Instruct, whose GGUF
carries its ChatML template) on a tiny budget. Every prompting strategy with `--chat` (LM prompting
as its chat twin, the `choice` policy), checked record by record: prompts rendered with the
template, follow-up questions sent as real user/assistant turns, statuses that agree with the raw
text, nothing substituted."""

from __future__ import annotations

import json
import math

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tom.games import get_game
from stratbench.suites.tom.gen_prompts import GenPrompts
from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model
from stratbench.suites.tom.strategies import PROMPTINGS, read_option

pytest.importorskip("llama_cpp")

MODEL = "embedded-instruct"
LABELS = GenPrompts(get_game("ipd"), "neutral", 2).labels
FOLLOW_UPS = ("QA", "CoT", "CoT3", "PlansInsights", "Reflexion")  # ToM asked as the turn after the action


def user_turn(text: str) -> str:
    return f"<|im_start|>user\n{text}<|im_end|>\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One episode per strategy, one round (Reflexion two: it reflects from round 2), short answers."""
    root = tmp_path_factory.mktemp("tom_instruct")
    out = {}
    for p in PROMPTINGS:
        long = p == "Reflexion"
        res = run_tom_model(TomRunConfig(model=MODEL, chat=True, prompting=p, game="ipd", partner="tit_for_tat",
                                         rounds=2 if long else 1, episodes=1, seed=1, max_tokens=24 if long else 12,
                                         max_tries=1,
                                         temperature=0.0, keep_prompts=True, no_cache=True,
                                         output_dir=str(root / p)))
        out[p] = (res, read_jsonl(res.folder / "rounds.jsonl"), json.loads((res.folder / "run.json").read_text()))
    return out


@pytest.mark.parametrize("prompting", PROMPTINGS)
def test_every_strategy_runs_with_the_chat_template(runs, prompting):
    res, recs, meta = runs[prompting]
    s = res.summary
    assert res.n_errors == 0 and s["n_error_episodes"] == 0 and recs
    assert all(r["status"] != "error" for r in recs)
    assert meta["config"]["chat"] is True
    if prompting == "LM":  # the choice policy: exact scores after the template and "A: Option"
        assert s["policy"] == meta["agent"]["policy"] == "choice" and s["strict_parse_rate"] is None
        for r in recs:
            assert r["prompts"]["action"].startswith("<|im_start|>")
            assert r["prompts"]["action"].endswith("<|im_end|>\n<|im_start|>assistant\nA: Option")
            assert math.isclose(sum(r["policy"]), 1.0) and 0 < r["label_mass"] <= 1.0 + 1e-6
            assert 0 < r["tom_label_mass"] <= 1.0 + 1e-6 and r["prediction"] == max(range(2), key=r["tom_policy"].__getitem__)
            # the agent-first ToM question is the turn after the agent's own answer
            tom = r["prompts"]["tom"]
            own = LABELS[r["my_action"]]
            assert r["prompts"]["action"].removesuffix("A: Option") + f"A: Option {own}<|im_end|>\n" in tom
            assert tom.endswith("Q: Which Option did you think the other player chose?<|im_end|>\n"
                                "<|im_start|>assistant\nA: Option")
        return
    assert s["policy"] == meta["agent"]["policy"] == "generate"
    for r in recs:
        calls = r["calls"]
        for i, c in enumerate(calls):
            if "logprobs" in c:  # SocialLM's prediction: scored after the template
                assert c["prompt"].endswith("<|im_start|>assistant\nA: Option") and 0 < c["label_mass"] <= 1 + 1e-6
                continue
            # a real generation, its prompt as the model saw it (the template), its finish reason kept
            assert c["cached"] is False and c["finish_reason"] in ("stop", "length")
            assert c["prompt"].startswith("<|im_start|>") and c["prompt"].endswith("<|im_start|>assistant\n")
            text = c["text"] or ""
            if c["kind"] in ("action", "tom"):
                p = read_option(text, LABELS, c["finish_reason"])
                if c["status"] == "parsed":
                    assert text.strip() and p.ok and c["parse"] == p.parse
                    if c["kind"] == "action":
                        assert r["my_action"] == p.action
                    else:
                        assert r["prediction"] == p.action
                else:
                    assert c["status"] == "parse_failed" and not p.ok and "parse" not in c
            elif not text.strip():
                assert c["status"] == "parse_failed"  # an empty reply is never parsed
            # follow-ups: the question after the model's own accepted answer, verbatim
            if c["kind"] == "tom" and prompting in FOLLOW_UPS and i and calls[i - 1]["status"] == "parsed":
                prev = calls[i - 1]
                assert prev["kind"] == "action"
                assert f"<|im_start|>assistant\n{prev['text']}<|im_end|>\n<|im_start|>user\nIn round" in c["prompt"]
        if r["status"] == "parsed":
            assert r["my_action"] in (0, 1)
        else:
            assert r["status"] == "parse_failed" and "my_action" not in r
    act = s["action_attempts"]
    assert act > 0
    assert s["strict_parse_rate"] + s["flexible_parse_rate"] + s["parse_failure_rate"] == pytest.approx(1.0)


def test_a_model_without_a_chat_template_is_refused_up_front(tmp_path):
    with pytest.raises(InputError, match="chat template"):
        run_tom_model(TomRunConfig(model="embedded", chat=True, prompting="QA", rounds=1,
                                   output_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


def test_choice_needs_chat_scoring(tmp_path):
    # an HTTP chat endpoint takes conversations but cannot score options after a known template
    with FakeOpenAIServer() as server, pytest.raises(InputError, match="chat template"):
        run_tom_model(TomRunConfig(model="openai-compatible:fake", base_url=server.base_url, chat=True,
                                   prompting="LM", rounds=1, output_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("prompting", ["QA", "LM"])
def test_chat_runs_keep_the_first_rounds_prompts_without_keep_prompts(tmp_path, prompting):
    """Without --keep-prompts a chat run still stores round 0's prompts as the model saw them (the
    template shows), and no later round's (histories grow with every round)."""
    res = run_tom_model(TomRunConfig(model=MODEL, chat=True, prompting=prompting, game="ipd", partner="tit_for_tat",
                                     rounds=2, episodes=1, seed=1, max_tokens=8, max_tries=1, temperature=0.0,
                                     no_cache=True, output_dir=str(tmp_path)))
    rounds = read_jsonl(res.folder / "rounds.jsonl")
    assert [r["t"] for r in rounds] == [0, 1]
    first = [c.get("prompt") for c in rounds[0].get("calls", [])] or list(rounds[0]["prompts"].values())
    assert first and all(p and p.startswith("<|im_start|>") and "<|im_start|>assistant\n" in p for p in first)
    for r in rounds[1:]:
        assert "prompts" not in r and all("prompt" not in c for c in r.get("calls", []))
