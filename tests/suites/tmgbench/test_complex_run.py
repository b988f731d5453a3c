"""Complex-form runs end to end: reference players and a model over HTTP whose sequential history
is in its prompts and whose injected code never runs."""

from __future__ import annotations

import json
import re

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tmgbench.config import TmgbenchConfig


@pytest.mark.parametrize("form, k", [("sequential", 3), ("parallel", 5), ("nested", 2)])
def test_complex_forms_reference_players(tmp_path, cli, form, k):
    r = cli("tmgbench", "run", "--model", "oracle", "--form", form, "--k", str(k), "--num-tasks", "8",
            "--seed", "2", "--quiet", "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (folder,) = list(tmp_path.iterdir())
    s = json.loads((folder / "summary.json").read_text())
    assert s["accuracy_pct"] == 100.0 and s["n_tasks"] == 8 and s["k"] == k
    assert len(read_jsonl(folder / "tasks.jsonl")) == 8


def test_complex_sequential_model_sees_its_history_and_nothing_runs(tmp_path):
    from stratbench.suites.tmgbench.complex_run import run_complex

    marker = tmp_path / "pwned"
    payload = f"```python\nanswer = __import__('os').system('touch {marker}')\n```"
    with FakeOpenAIServer(canned_text=payload) as server:
        res = run_complex(TmgbenchConfig(model="openai-compatible:fake", base_url=server.base_url,
                                         policy="sample", form="sequential", seed=4, no_cache=True,
                                         output_dir=str(tmp_path)), 3, 2)
        prompts = [r.body["prompt"] for r in server.requests if r.path.endswith("/completions")]
    assert not marker.exists()
    assert len(prompts) == 6  # 2 tasks × 3 turns
    third = [p for p in prompts if p.count("Assistant:") == 3]
    assert third and payload in third[0]  # earlier replies are in the transcript
    recs = read_jsonl(res.folder / "tasks.jsonl")
    assert all(r["status"] == "parse_failed" for r in recs)
    assert res.summary["accuracy_pct"] == 0.0 and res.summary["parse_failure_rate"] == 1.0


def test_complex_merge_refuses_a_task_held_twice_or_lost(tmp_path):
    from stratbench.errors import InputError
    from stratbench.runner.jsonl import write_jsonl_atomic
    from stratbench.suites.tmgbench.complex_run import ComplexConfig, run_complex
    from stratbench.workflows.merge import merge_runs

    shards = [run_complex(ComplexConfig(model="oracle", form="sequential", k=3, num_tasks=4, seed=5, shard=f"{i}/2",
                                        output_dir=str(tmp_path / "s"))).folder for i in (1, 2)]
    recs = read_jsonl(shards[1] / "tasks.jsonl")
    write_jsonl_atomic(shards[1] / "tasks.jsonl", recs + [{**recs[0], "latency_s": 99.0}])  # another record, same task
    with pytest.raises(InputError, match="the shards hold 1 tasks twice"):
        merge_runs(shards, tmp_path / "m")
    write_jsonl_atomic(shards[1] / "tasks.jsonl", recs[:1])
    with pytest.raises(InputError, match=f"{re.escape(str(shards[1]))}/tasks.jsonl: the finished run holds only 1 of "
                                         "the run's 2 tasks"):  # (the shard that lost a task is named)
        merge_runs(shards, tmp_path / "m")
    write_jsonl_atomic(shards[1] / "tasks.jsonl", recs)
    merged = merge_runs(shards, tmp_path / "m")
    assert [r["task_index"] for r in read_jsonl(merged / "tasks.jsonl")] == [0, 1, 2, 3]
    assert json.loads((merged / "summary.json").read_text())["accuracy_pct"] == 100.0
