"""`tom run` result folders: --shard i/n, `stratbench merge` equal to the unsharded run record for
record, resume, the response cache, and input errors - against the fake OpenAI-compatible HTTP
server (tests/helpers/fake_openai_server.py), no model weights."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic
from stratbench.suites.tom.baseline_run import BaselineConfig, run_tom_baseline
from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model
from stratbench.suites.tom.results import VOLATILE_KEYS
from stratbench.workflows.merge import merge_runs


def _no_tokens(x):
    """Without the tokens evaluated: an answer the cache gave (an episode opening like an earlier
    one) evaluated none, the same answer computed afresh in a shard did."""
    if isinstance(x, dict):
        return {k: _no_tokens(v) for k, v in x.items() if not k.startswith("tokens_")}
    if isinstance(x, list):
        return [_no_tokens(v) for v in x]
    return x


def strip(x):
    """A record without the keys that only say how fast it ran or whether the cache answered."""
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in VOLATILE_KEYS}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def load(folder: Path, name: str):
    return json.loads((folder / name).read_text())


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(canned_text=" J") as s:  # every answer is " J": completes "Option:" / "A: Option"
        yield s


@pytest.mark.parametrize("prompting,episodes,rounds", [("LM", 3, 2), ("QA", 5, 4)])
def test_run_shards_merge_to_the_unsharded_run(tmp_path, server, cli, prompting, episodes, rounds):
    # LM prompting scores through the fake server's echo log-probs (slow in pure Python): small, no ToM.
    base = {"model": "openai-compatible:fake", "base_url": server.base_url, "game": "ipd", "partner": "mixed",
                "prompting": prompting, "rounds": rounds, "episodes": episodes, "seed": 11, "predict": prompting != "LM"}
    result = run_tom_model(TomRunConfig(**base, output_dir=str(tmp_path / "whole")))
    whole, s = result.folder, result.summary
    assert s["n_episodes"] == episodes and s["parse_failure_rate"] == 0
    assert result.n_errors == 0 and result.totals == load(whole, "run.json")["totals"]
    # LM shards compute afresh (a cache hit records tokens_in 0 and the summary counts tokens evaluated)
    shards = [run_tom_model(TomRunConfig(**base, shard=f"{i}/2", output_dir=str(tmp_path / "sh"),
                                         no_cache=prompting == "LM")).folder for i in (1, 2)]
    assert sorted({r["episode"] for r in read_jsonl(shards[1] / "rounds.jsonl")}) == list(range(1, episodes, 2))
    if prompting == "QA":  # generation goes through the response cache: the shards replay the whole run's calls
        assert load(shards[0], "run.json")["totals"]["model_cache_hits"] > 0
    else:  # LM prompting too: a re-run of the whole run is served by the cache
        again = run_tom_model(TomRunConfig(**base, output_dir=str(tmp_path / "again")))
        assert again.totals["model_calls"] == 0 and again.totals["model_cache_hits"] > 0
        assert strip(read_jsonl(again.folder / "rounds.jsonl"))[0]["policy"] == strip(
            read_jsonl(whole / "rounds.jsonl"))[0]["policy"]
    if prompting == "QA":  # as a user does it
        r = cli("merge", str(shards[1]), str(shards[0]), "--output-dir", str(tmp_path / "merged"))
        assert r.returncode == 0, r.stderr
        (merged,) = list((tmp_path / "merged").iterdir())
    else:
        merged = merge_runs([shards[1], shards[0]], tmp_path / "merged")
    a, b = read_jsonl(merged / "rounds.jsonl"), read_jsonl(whole / "rounds.jsonl")
    assert len(a) == episodes * rounds and _no_tokens(strip(a)) == _no_tokens(strip(b))
    assert _no_tokens(load(merged, "summary.json")) == _no_tokens(load(whole, "summary.json"))
    assert (merged / "regret_curve.png").is_file()
    partner_moves = {tuple(x["partner_action"] for x in b if x["episode"] == e) for e in range(episodes)}
    assert len(partner_moves) > 1  # episodes really have their own seeds


def test_cli_generation_run_records_parse_failures_and_resumes(tmp_path, cli):
    with FakeOpenAIServer() as garbage:  # the fake model writes pseudo-random characters
        r = cli("tom", "run", "--model", "openai-compatible:fake", "--base-url", garbage.base_url,
                "--prompting", "CoT", "--game", "ipd", "--rounds", "3", "--episodes", "2", "--max-tokens", "20",
                "--output-dir", str(tmp_path / "g"))
        assert r.returncode == 0, r.stderr
        (folder,) = list((tmp_path / "g").iterdir())
        s = load(folder, "summary.json")
        assert s["n_episodes"] == 0 and s["n_parse_failed_episodes"] == 2 and s["parse_failure_rate"] == 1.0
        assert s["regret_per_step"] is None and "parse failure" in r.stdout
        recs = read_jsonl(folder / "rounds.jsonl")
        assert [x["status"] for x in recs] == ["parse_failed", "parse_failed"]
        for x in recs:
            assert len(x["calls"]) == 3 and all(c["text"] is not None and c["reason"] for c in x["calls"])
            assert "my_action" not in x

    with FakeOpenAIServer(canned_text=" F") as good:
        out = tmp_path / "r"
        r = cli("tom", "run", "--model", "openai-compatible:fake", "--base-url", good.base_url, "--prompting", "QA",
                "--game", "ibs", "--partner", "tft", "--rounds", "3", "--episodes", "3", "--output-dir", str(out))
        assert r.returncode == 0, r.stderr
        (folder,) = list(out.iterdir())
        before = read_jsonl(folder / "rounds.jsonl")
        s = load(folder, "summary.json")
        assert s["n_episodes"] == 3 and s["tom_accuracy"] is not None and s["tokens_generated"] > 0
        # interrupt: the last episode never got written
        write_jsonl_atomic(folder / "rounds.jsonl", [x for x in before if x["episode"] < 2])
        meta = load(folder, "run.json")
        meta["status"] = "running"
        (folder / "run.json").write_text(json.dumps(meta))
        n = good.request_count
        r = cli("tom", "run", "--resume", str(folder), "--base-url", good.base_url, "--no-cache")
        assert r.returncode == 0, r.stderr
        assert strip(read_jsonl(folder / "rounds.jsonl")) == strip(before)
        assert good.request_count - n == 6  # only the missing episode: 3 rounds x (action + ToM)
        assert load(folder, "run.json")["status"] == "finished"


def test_bad_tom_input(tmp_path, cli):
    for kw, word in (({"prompting": "Telepathy"}, "Telepathy"), ({"chat": True}, "chat"),
                     ({"shard": "3/2"}, "3/2"), ({"tom_variant": "sideways"}, "tom-variant"),
                     ({"label_set": "emoji"}, "emoji"), ({"episodes": 2, "shard": "3/3"}, "shards"),
                     ({"prompting": "Reflexion", "memory": 0}, "memory")):
        with pytest.raises(InputError, match=word):
            run_tom_model(TomRunConfig(rounds=2, output_dir=str(tmp_path), **kw))
    assert not any(tmp_path.iterdir())  # checked before any folder is made or model loaded
    r = cli("tom", "run", "--prompting", "Telepathy", "--output-dir", str(tmp_path))
    assert r.returncode == 2 and "Telepathy" in r.stderr and "LM" in r.stderr and "Traceback" not in r.stderr


def test_run_merge_needs_every_episode_once(tmp_path, server):
    base = {"model": "openai-compatible:fake", "base_url": server.base_url, "game": "rps", "prompting": "QA",
            "rounds": 2, "episodes": 4, "seed": 3, "output_dir": str(tmp_path / "sh")}
    shards = [run_tom_model(TomRunConfig(**base, shard=f"{i}/2")).folder for i in (1, 2)]
    recs = read_jsonl(shards[0] / "rounds.jsonl")
    write_jsonl_atomic(shards[0] / "rounds.jsonl", [r for r in recs if r["episode"] != 2])
    with pytest.raises(InputError, match=f"{re.escape(str(shards[0]))}/rounds.jsonl: the finished run holds only 1 of "
                                         "the run's 2 episodes"):  # (the shard that lost an episode is named)
        merge_runs(shards, tmp_path / "merged")


def test_resume_refuses_other_folders(tmp_path):
    folder = run_tom_baseline(BaselineConfig(episodes=2, rounds=3, output_dir=str(tmp_path / "b"))).folder
    with pytest.raises(InputError, match="not tom run"):
        run_tom_model(TomRunConfig(), resume_dir=folder)
    with pytest.raises(InputError):
        run_tom_model(TomRunConfig(), resume_dir=tmp_path / "missing")


def test_bad_flag_values_are_refused_before_the_model_loads(tmp_path, cli):
    for kw, needle in (({"seed": -1}, "--seed must be at least 0"), ({"temperature": float("inf")}, "finite"),
                       ({"max_tokens": 0}, "--max-tokens must be at least 1"), ({"model": ""}, "--model must not be empty"),
                       ({"max_concurrency": 0}, "--max-concurrency must be at least 1"),
                       ({"rounds": 10**12}, "--rounds must be at most"),
                       ({"episodes": 100_000, "rounds": 1000}, "units of work")):
        with pytest.raises(InputError, match=needle):
            run_tom_model(TomRunConfig(output_dir=str(tmp_path / "o"), **kw))
    r = cli("tom", "run", "--model", "", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip() == "error: --model must not be empty"
    assert not (tmp_path / "o").exists()
