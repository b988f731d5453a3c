"""Instruction-tuned models end to end (embedded-instruct: SmolLM2-135M-Instruct with its chat
template): `chbench run --chat --mechanism chat --policy sample` (the advisor session as real turns
of each seat's conversation, rendered by the template; answers read strict or flexible, consistent
with the raw text) and `--policy choice` (the action numbers scored after the paper's stem in the
assistant's turn: exact distributions, identical across runs, the default with --chat); refusals
come up front, one line, nothing written.

Tiny budgets keep the module cheap (about 30 s of CPU): 1 game, 2 rounds, the model as the row
player against a scripted ``random`` opponent, advisor messages of 24 tokens. The chat & memory
mechanism (its first review comes after 10 rounds) and memory10 (memory's prompt until round 11)
are covered by the prompt tests with a double, not here."""

from __future__ import annotations

import json

import pytest

from stratbench.errors import InputError
from stratbench.parsing.actions import parse_action
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.chbench import players
from stratbench.suites.chbench.run import ChbenchConfig, run_chbench

pytest.importorskip("llama_cpp")

MODEL = "embedded-instruct"
USER, ASSISTANT, END = "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>"
SEATS = ("row",)  # the model's seat: the column player is scripted


def _cfg(out, **kw):
    base = dict(models=[MODEL], opponents=["random"], self_play=False, games="1", rounds=2, bootstrap=0,
                restarts=1, chat=True, seed=3, output_dir=str(out))
    base.update(kw)
    return ChbenchConfig(**base)


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """`chbench run --models embedded-instruct --chat --mechanism chat --policy sample`, 1 game, 2 rounds."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(players, "MESSAGE_TOKENS", 24)
        res = run_chbench(_cfg(tmp_path_factory.mktemp("sampled"), mechanisms=["chat"], policy="sample"))
    return res, read_jsonl(res.folder / "rounds.jsonl")


@pytest.fixture(scope="module")
def choice_runs(tmp_path_factory):
    """`--policy choice` under baseline and memory, then baseline again by default (--chat, no
    --policy); no cache: both computed."""
    runs = []
    for i, (policy, mechs) in enumerate((("choice", ["baseline", "memory"]), (None, ["baseline"]))):
        res = run_chbench(_cfg(tmp_path_factory.mktemp(f"choice{i}"), policy=policy, mechanisms=mechs, no_cache=True))
        runs.append((res, read_jsonl(res.folder / "rounds.jsonl")))
    return runs


def test_chat_mechanism_sampled_advisor_turns_are_real_turns_of_the_rendered_prompt(sampled):
    res, recs = sampled
    assert res.n_errors == 0 and len(recs) == 2
    assert all(r["status"] != "error" and r[f"{s}_status"] != "error" for r in recs for s in SEATS)
    meta = json.loads((res.folder / "run.json").read_text())
    assert meta["players"][MODEL]["policy"] == "sample" and meta["config"]["chat"] is True
    first = recs[0]
    for s in SEATS:
        turns = first[f"{s}_consultation"]
        assert [t["speaker"] for t in turns] == ["Alex", "Sam", "Alex", "Sam"]
        assert all(t["error"] is None and t["finish_reason"] in ("stop", "length") for t in turns)
        for r in recs:  # the session before play stays in every decision's conversation
            prompt = r[f"{s}_prompt"]
            assert prompt.startswith("<|im_start|>") and prompt.endswith(ASSISTANT)
            assert prompt.count(USER) == 3 and prompt.count(ASSISTANT) == 3  # 2 agent turns + the reply's
            a1, s1, a2, s2 = (t["text"].strip() for t in turns)
            assert f"{ASSISTANT}{a1}{END}" in prompt and f"{ASSISTANT}{a2}{END}" in prompt
            assert f"{USER}{s1}{END}" in prompt and f"{USER}{s2}\n\nQuestion:" in prompt
            assert "Your response:" not in prompt and "Alex: " not in prompt
            assert prompt.index("Game Rules:") < prompt.index(ASSISTANT)
        assert f"{s}_consultation" not in recs[1]


def test_sampled_statuses_and_parse_kinds_follow_the_raw_text(sampled):
    _, recs = sampled
    labels = ("1", "2")
    for r in recs:
        for s in SEATS:
            raw, st, kind, finish = r[f"{s}_raw"], r[f"{s}_status"], r[f"{s}_parse"], r[f"{s}_finish_reason"]
            assert finish in ("stop", "length") and isinstance(raw, str)
            parsed = parse_action(raw.strip(), labels)
            if st == "parsed":
                assert parsed.action == r[f"{s}_action"] is not None  # no silent substitution
                strict = raw.strip() in labels and finish != "length"
                assert kind == ("strict" if strict else "flexible")
            else:
                assert st == "parse_failed" and r[f"{s}_action"] is None and kind is None and r[f"{s}_error"]
            assert (r["status"] == "complete") == (r["row_action"] is not None and r["col_action"] is not None)
    summary = json.loads((sampled[0].folder / "summary.json").read_text())
    row = summary["mechanisms"]["chat"][MODEL]
    n = row["n_moves"]
    kinds = [r[f"{s}_parse"] for r in recs for s in SEATS]
    assert row["strict_parse_rate"] == kinds.count("strict") / n
    assert row["flexible_parse_rate"] == kinds.count("flexible") / n


def test_choice_gives_exact_distributions_identical_across_runs(choice_runs):
    (res1, recs1), (res2, recs2) = choice_runs
    for res, recs in choice_runs:
        assert res.n_errors == 0 and len(recs) == 2 * len({r["mechanism"] for r in recs})
        meta = json.loads((res.folder / "run.json").read_text())
        assert meta["players"][MODEL]["policy"] == "choice"  # the default with --chat
        for r in recs:
            for s in SEATS:
                pol = r[f"{s}_policy"]
                assert len(pol) == 2 and abs(sum(pol) - 1.0) < 1e-9 and r[f"{s}_status"] == "parsed"
                assert 0 < r[f"{s}_label_mass"] <= 1 and f"{s}_parse" not in r
                assert r[f"{s}_prompt"].startswith("<|im_start|>")
                assert r[f"{s}_prompt"].endswith(f"Your choice is :{END}\n{ASSISTANT}Your choice is :")
                assert r[f"{s}_prompt"].count(USER) == 1 and r[f"{s}_prompt"].count(ASSISTANT) == 1
    memory = [r for r in recs1 if r["mechanism"] == "memory"]
    assert "Round 1:" in memory[1]["row_prompt"] and "Round 1:" not in memory[0]["row_prompt"]
    strip = [[{k: v for k, v in r.items() if not k.endswith("latency_s")} for r in recs if r["mechanism"] == "baseline"]
             for _, recs in choice_runs]
    assert strip[0] == strip[1]


def test_chat_and_choice_are_refused_up_front(tmp_path):
    with pytest.raises(InputError, match="--policy choice .* add --chat"):
        run_chbench(_cfg(tmp_path / "a", chat=False, policy="choice"))
    with pytest.raises(InputError, match="embedded: this model has no chat template"):
        run_chbench(_cfg(tmp_path / "b", models=["embedded"]))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
