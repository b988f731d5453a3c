"""TMGBench with a real instruction-tuned model: `embedded-instruct` (SmolLM2-135M-Instruct, whose
GGUF carries its ChatML template) on a tiny budget. Every prompting strategy with `--chat`, a
sequential task sent as real user/assistant turns, and exact choice scoring (`--policy choice`),
checked record by record: prompts rendered with the template, statuses that agree with the raw
text, nothing substituted."""

from __future__ import annotations

import json
import math

import pytest

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tmgbench.answers import parse_answer_set
from stratbench.suites.tmgbench.complex import complex_messages, sample_tasks
from stratbench.suites.tmgbench.complex_run import ComplexConfig, run_complex
from stratbench.suites.tmgbench.config import METHODS
from stratbench.suites.tmgbench.games import game_by_id
from stratbench.suites.tmgbench.prompts import SYSTEM_PROMPT, build_messages, completion_candidates
from stratbench.suites.tmgbench.run import TmgbenchConfig, parse_kind, run_tmgbench

pytest.importorskip("llama_cpp")

MODEL = "embedded-instruct"


def chatml(*turns: tuple[str, str]) -> str:
    """SmolLM2's ChatML rendering of a conversation, the assistant's turn opened."""
    return "".join(f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in turns) + "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def strategies(tmp_path_factory):
    """One game, one repetition, 12 tokens per strategy: (result, its one record)."""
    root = tmp_path_factory.mktemp("strategies")
    out = {}
    for method in METHODS:
        res = run_tmgbench(TmgbenchConfig(model=MODEL, chat=True, policy="sample", prompting=method, games="111",
                                          repeats=1, max_tokens=12, seed=1, no_cache=True,
                                          output_dir=str(root / method)))
        (rec,) = read_jsonl(res.folder / "answers.jsonl")
        out[method] = (res, rec)
    return out


@pytest.mark.parametrize("method", METHODS)
def test_every_prompting_strategy_runs_with_the_chat_template(strategies, method):
    res, rec = strategies[method]
    g = game_by_id("111")
    system, user = (m["content"] for m in build_messages(g.payoff_A, g.payoff_B, method))
    # the paper's system + user messages, as real messages rendered by the model's own template
    assert rec["rendered_prompt"] == chatml(("system", system), ("user", user))
    assert system == SYSTEM_PROMPT
    # a real call, and a status that agrees with the raw text
    assert rec["usage"]["cached"] is False and rec["usage"]["tokens_out"] > 0
    assert rec["finish_reason"] in ("stop", "length")
    assert rec["status"] in ("parsed", "parse_failed")
    p = parse_answer_set(rec["raw_response"])
    assert p.ok == (rec["status"] == "parsed")
    if p.ok:
        assert rec["answer"] == sorted(p.cells) and rec["parse"] == parse_kind(p.strict, rec["finish_reason"])
    else:
        assert rec["error"] == p.error and "parse" not in rec and "answer" not in rec
    s = res.summary
    assert (s["policy"], s["prompting"], s["error_rate"]) == ("sample", method, 0.0) and res.n_errors == 0
    assert s["strict_parse_rate"] + s["flexible_parse_rate"] + s["parse_failure_rate"] == pytest.approx(1.0)


def test_a_sequential_task_sends_earlier_games_and_answers_as_real_turns(tmp_path):
    cfg = ComplexConfig(model=MODEL, chat=True, policy="sample", form="sequential", k=2, num_tasks=1,
                        max_tokens=10, seed=2, no_cache=True, output_dir=str(tmp_path))
    res = run_complex(cfg)
    (rec,) = read_jsonl(res.folder / "tasks.jsonl")
    replies = rec["raw_responses"]
    assert rec["status"] in ("parsed", "parse_failed") and len(replies) == 2 and all(replies)
    assert len(rec["finish_reasons"]) == 2
    (task,) = sample_tasks("sequential", 2, 1, 2)
    msgs = complex_messages(task, "DA", replies[:1])  # the second turn's conversation
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    # the second call's prompt: the first game, the model's own answer as an assistant turn, the
    # second game — not a flattened "User:/Assistant:" transcript
    assert rec["rendered_prompt"] == chatml(*((m["role"], m["content"]) for m in msgs))
    assert f"<|im_start|>assistant\n{replies[0]}<|im_end|>" in rec["rendered_prompt"]
    assert "Assistant:" not in rec["rendered_prompt"]
    assert res.summary["error_rate"] == 0.0 and res.n_errors == 0


def test_choice_policy_gives_the_exact_answer_distribution(tmp_path):
    res = run_tmgbench(TmgbenchConfig(model=MODEL, policy="choice", games="111", seed=3, no_cache=True,
                                      output_dir=str(tmp_path)))
    (r,) = read_jsonl(res.folder / "answers.jsonl")
    game = game_by_id("111")
    assert (r["status"], r["policy"], r["repeat"]) == ("parsed", "choice", 0)
    assert len(r["distribution"]) == 16 and math.fsum(r["distribution"].values()) == pytest.approx(1, abs=1e-12)
    assert 0 < r["label_mass"] <= 1
    # the label mass is the probability of the 16 answer lines: their log-probs, summed
    assert math.fsum(math.exp(x) for x in r["logprobs"].values()) == pytest.approx(r["label_mass"], rel=1e-9)
    # the conversation up to the assistant's turn, then the raw prompt's answer stem
    system, user = (m["content"] for m in build_messages(game.payoff_A, game.payoff_B, "DA"))
    assert r["rendered_prompt"] == chatml(("system", system), ("user", user)) + "```python\n"
    assert r["usage"]["n_tokens"] and len(r["usage"]["n_tokens"]) == len(completion_candidates())
    assert "raw_response" not in r and "parse" not in r
    s = res.summary
    assert (s["policy"], s["repeats"], s["error_rate"]) == ("choice", 1, 0.0) and 0 < s["mean_label_mass"] <= 1
    assert "strict_parse_rate" not in s
    assert json.loads((res.folder / "run.json").read_text())["agent"]["policy"] == "choice"


def test_a_model_without_a_chat_template_is_refused_in_one_line(tmp_path):
    for kw in ({"chat": True, "policy": "sample"}, {"policy": "choice"}):
        with pytest.raises(InputError, match="no chat template"):
            run_tmgbench(TmgbenchConfig(model="embedded", games="111", seed=1, output_dir=str(tmp_path), **kw))
    assert not any(tmp_path.iterdir())
