"""Instruction-tuned models end to end (embedded-instruct, SmolLM2-135M-Instruct with its chat
template): `--chat --policy sample` (the prompt as a user message rendered by the template, answers
parsed strict or flexible, records consistent with the raw text) and `--policy choice` (the labels
scored after "Action: " in the assistant's turn: an exact distribution, identical across runs);
refusals come up front, one line, nothing written.

Tiny budgets (2 games × 1 trial of short replies; 1 game per choice run) keep the module around a
minute of CPU on 2 cores."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stratbench.errors import InputError
from stratbench.parsing import parse_action
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.nashgap.answers import parse_distribution, parse_kind
from stratbench.suites.nashgap.games import entries_from_json
from stratbench.suites.nashgap.model_player import ANSWER_STEM, make_agent
from stratbench.suites.nashgap.prompts import nashgap_prompt
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

pytest.importorskip("llama_cpp")

MODEL = "embedded-instruct"
TEMPLATE_START = "<|im_start|>"
ASSISTANT_TURN = "<|im_start|>assistant\n"
FILES = {"pure": "trials_pure_actions.jsonl", "mixed": "trials_mixed_strategy.jsonl"}


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, CI="1"))


def only_folder(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def prompts_of(folder: Path, mode: str, style: str) -> dict[int, str]:
    """game id → the prompt the run built (rotation 0: rows in their own order)."""
    games = entries_from_json(json.loads((folder / "games.json").read_text()))
    return {e.game_id: nashgap_prompt(e.game, mode, 2, style) for e in games}


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """`stratbench nashgap --model embedded-instruct --chat --policy sample`, both modes."""
    out = tmp_path_factory.mktemp("sampled")
    r = run_cli("nashgap", "--model", MODEL, "--chat", "--policy", "sample", "--num-games", "2",
                "--num-trials", "1", "--seed", "7", "--max-tokens", "32", "--combined", "--output-dir",
                str(out), "--quiet", "--no-cache", timeout=300)
    assert r.returncode == 0, r.stderr
    return only_folder(out)


@pytest.mark.parametrize("mode", ["pure", "mixed"])
def test_chat_sample_records_show_the_template_and_match_the_raw_text(sampled, mode):
    records = read_jsonl(sampled / FILES[mode])
    assert len(records) == 2  # 2 games × 1 trial
    prompts = prompts_of(sampled, mode, "instruction")
    labels = ("0", "1", "2")
    for r in records:
        prompt = prompts[r["game_id"]]
        assert r["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
        # the prompt as the model saw it: the instruction prompt as the user's turn of the template
        rendered = r["rendered"]
        assert rendered.startswith(TEMPLATE_START) and rendered.endswith(ASSISTANT_TURN)
        assert f"<|im_start|>user\n{prompt}<|im_end|>" in rendered
        assert r["finish_reason"] in ("stop", "length")
        assert r["status"] != "error", r["error"]  # parse failures are fine, errors are not
        text = r["raw_response"]
        assert isinstance(text, str)
        # the status, the parse and the decision are what the raw text says, nothing substituted
        if mode == "pure":
            p = parse_action(text, labels)
            assert (r["status"] == "parsed") == p.ok, (r, p)
            if p.ok:
                assert r["llm_decision"] == p.action
                assert r["parse"] == parse_kind(text, labels, "pure", p.action, r["finish_reason"])
        else:
            q = parse_distribution(text, labels)
            assert (r["status"] == "parsed") == q.ok, (r, q)
            if q.ok:
                assert r["llm_decision"] == pytest.approx(q.probs)
                assert r["parse"] == parse_kind(text, labels, "mixed", None, r["finish_reason"])
        if r["status"] == "parsed":
            assert r["parse"] in ("strict", "flexible") and r["nash_gap"] is not None
            assert text.strip()  # an empty answer is never parsed
            if r["finish_reason"] == "length":
                assert r["parse"] == "flexible"  # a reply cut at the token limit is never strict
        else:
            assert r["parse"] is None and r["error"]
            assert r["llm_decision"] is None and r["policy"] is None and r["nash_gap"] is None


def test_chat_sample_summary_has_both_readings(sampled):
    meta = json.loads((sampled / "run.json").read_text())
    assert meta["agent"]["policy"] == "sample" and meta["agent"]["chat"] is True
    assert meta["config"]["chat"] is True
    for mode, name in (("pure", "summary_pure_actions.json"), ("mixed", "summary_mixed_strategy.json")):
        s = json.loads((sampled / name).read_text())
        records = read_jsonl(sampled / FILES[mode])
        n = len(records)
        strict = [r for r in records if r["parse"] == "strict"]
        assert s["policy"] == "sample"
        assert s["strict_parse_rate"] == len(strict) / n
        assert s["flexible_parse_rate"] == sum(r["parse"] == "flexible" for r in records) / n
        assert s["strict_parse_rate"] + s["flexible_parse_rate"] + s["parse_failure_rate"] + s["error_rate"] \
            == pytest.approx(1.0)
        assert s["strict_n_trials_scored"] == len(strict)
        assert (s["strict_mean_nash_gap"] is None) == (not strict)
        assert s["status_counts"]["error"] == 0


def _choice_run(out: Path, combined: bool) -> Path:
    cfg = NashgapConfig(model=MODEL, policy="choice", num_games=1, num_trials=2, seed=7, combined=combined,
                        no_cache=True, output_dir=str(out))
    return run_nashgap(cfg).folder


@pytest.fixture(scope="module")
def choice_runs(tmp_path_factory):
    """Both modes, then pure mode again in a second run (scored afresh: no cache)."""
    return (_choice_run(tmp_path_factory.mktemp("choice_a"), combined=True),
            _choice_run(tmp_path_factory.mktemp("choice_b"), combined=False))


@pytest.mark.parametrize("mode", ["pure", "mixed"])
def test_choice_policy_is_an_exact_distribution_with_its_label_mass(choice_runs, mode):
    folder = choice_runs[0]
    records = read_jsonl(folder / FILES[mode])
    assert len(records) == 1  # an exact policy: one call per game (and rotation), not per trial
    prompts = prompts_of(folder, mode, "choice")
    for r in records:
        prompt = prompts[r["game_id"]]
        assert 'in the form "Action: X"' in prompt  # the pure instruction prompt, in both modes
        assert r["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
        assert r["rendered"].startswith(TEMPLATE_START)
        assert r["rendered"].endswith(f"<|im_start|>user\n{prompt}<|im_end|>\n{ASSISTANT_TURN}{ANSWER_STEM}")
        assert r["status"] == "parsed" and r["parse"] is None and r["raw_response"] is None
        assert len(r["policy"]) == 3 and math.fsum(r["policy"]) == pytest.approx(1.0, abs=1e-12)
        lp = r["logprobs"]
        assert len(lp) == 3 and all(x <= 0 for x in lp)
        assert r["label_mass"] == pytest.approx(math.fsum(math.exp(x) for x in lp), rel=1e-9)
        assert 0 < r["label_mass"] <= 1
        assert r["policy"] == pytest.approx([math.exp(x) / r["label_mass"] for x in lp], rel=1e-9)
        if mode == "mixed":
            assert r["llm_decision"] == r["policy"]  # the exact distribution is the stated strategy
        else:
            assert r["llm_decision"] in (0, 1, 2)
    s = json.loads((folder / ("summary_pure_actions.json" if mode == "pure" else "summary_mixed_strategy.json"))
                   .read_text())
    assert s["policy"] == "choice" and s["num_trials_per_game"] == 1
    assert s["mean_label_mass"] is not None
    assert "strict_parse_rate" not in s  # nothing was parsed from text
    meta = json.loads((folder / "run.json").read_text())
    assert meta["agent"]["policy"] == "choice" and meta["agent"]["answer_stem"] == ANSWER_STEM


def test_choice_policy_is_identical_across_runs(choice_runs):
    a, b = choice_runs
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("latency_s", "usage")} for r in rs]  # noqa: E731
    assert strip(read_jsonl(a / FILES["pure"])) == strip(read_jsonl(b / "trials.jsonl"))
    sa = json.loads((a / "summary_pure_actions.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    for k in ("mean_nash_gap", "mean_exploitability", "mean_llm_value", "mean_label_mass", "status_counts"):
        assert sa[k] == sb[k], k


def test_chat_picks_the_exact_chat_policy_by_default():
    assert make_agent(MODEL, None, chat=True, no_cache=True).policy == "choice"  # type: ignore[attr-defined]
    assert make_agent(MODEL, None, no_cache=True).policy == "logprob"  # type: ignore[attr-defined]


@pytest.mark.parametrize("args, needle", [
    (["--model", "embedded", "--policy", "choice"], "--policy choice (exact choice scoring) needs the model's chat template"),
    (["--model", "embedded", "--chat", "--policy", "sample"], "embedded: this model has no chat template"),
    (["--model", MODEL, "--chat", "--policy", "logprob"], "--policy logprob scores a raw completion prompt"),
    (["--model", "openai-compatible:x", "--base-url", "http://127.0.0.1:9/v1", "--policy", "choice"],
     "--policy choice (exact choice scoring) needs the model's chat template"),
])
def test_refusals_are_one_line_before_anything_is_written(tmp_path, cli, args, needle):
    r = cli("nashgap", *args, "--num-games", "1", "--seed", "1", "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not (tmp_path / "out").exists()


def test_make_agent_refuses_choice_without_chat_scoring():
    with pytest.raises(InputError, match="chat template"):
        make_agent("embedded", "choice", no_cache=True)
