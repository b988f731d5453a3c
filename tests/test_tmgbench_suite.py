"""TMGBench end to end: the games command, reference players, the embedded raw model in log-prob
mode, and sampled answers over real HTTP — including an injection attempt that must not run."""

from __future__ import annotations

import json

import pytest

from fake_openai_server import FakeOpenAIServer
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tmgbench import TmgbenchConfig, run_tmgbench


def test_games_command_json(cli):
    r = cli("tmgbench", "games", "--format", "json")
    assert r.returncode == 0, r.stderr
    games = json.loads(r.stdout)
    assert len(games) == 144 and len({g["id"] for g in games}) == 144
    for g in games:
        assert {"id", "row", "col", "payoff_A", "payoff_B", "pure_ne"} <= set(g)
    pd = next(g for g in games if g["id"] == "111")
    assert (pd["row"], pd["col"]) == (6, 7) and pd["pure_ne"] == [["A2", "B1"]]
    assert sorted(len(g["pure_ne"]) for g in games).count(0) == 18


def test_oracle_and_empty_reference_scores(tmp_path):
    oracle = run_tmgbench(TmgbenchConfig(model="oracle", output_dir=str(tmp_path), seed=1))
    s = oracle.summary
    assert (s["par_pct"], s["id_pct"], s["bd_pct"]) == (100.0, 0.0, 0.0)
    for name in ("standard", "practical", "inconsistency", "sister_symmetry"):
        assert (oracle.folder / f"{name}_heatmap.png").stat().st_size > 1000
    empty = run_tmgbench(TmgbenchConfig(model="empty", output_dir=str(tmp_path), seed=1)).summary
    assert empty["par_pct"] == pytest.approx(12.5)
    assert (empty["par_0_pct"], empty["par_1_pct"], empty["par_2_pct"]) == (100.0, 0.0, 0.0)
    assert empty["id_pct"] == pytest.approx(25.0) and empty["id_2_pct"] == pytest.approx(50.0)
    assert empty["bd_pct"] == 0.0


def test_embedded_logprob_answer_distribution_and_cache(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = dict(model="embedded", games="111,444,244", seed=3, output_dir=str(tmp_path))
    first = run_tmgbench(TmgbenchConfig(**cfg))
    recs = read_jsonl(first.folder / "answers.jsonl")
    assert [r["game_id"] for r in recs] == ["444", "111", "244"]  # grid order (3,4), (6,7), (9,10)
    for r in recs:
        assert r["status"] == "parsed" and len(r["distribution"]) == 16
        assert sum(r["distribution"].values()) == pytest.approx(1, abs=1e-12)
        assert 0 < r["label_mass"] <= 1
    s = first.summary
    assert s["policy"] == "logprob" and s["n_grids"] == 3 and s["repeats"] == 1
    assert 0 <= s["par_pct"] <= 100
    assert first.totals["model_calls"] == 3
    again = run_tmgbench(TmgbenchConfig(**cfg))
    assert again.totals["model_calls"] == 0 and again.summary["par_pct"] == s["par_pct"]


def test_sampled_answers_parsed_and_injection_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"```python\nanswer = __import__('os').system('touch {marker}')\n```"
    with FakeOpenAIServer(canned_text=payload) as server:
        res = run_tmgbench(TmgbenchConfig(
            model="openai-compatible:fake", base_url=server.base_url, policy="sample",
            prompting="CoT", games="111,122", repeats=2, seed=1, no_cache=True,
            output_dir=str(tmp_path / "a")))
    assert not marker.exists()
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert len(recs) == 4 and all(r["status"] == "parse_failed" for r in recs)
    assert res.summary["parse_failure_rate"] == 1.0 and res.summary["par_pct"] == 0.0
    good = '```python\nanswer = [("A2", "B1")]\n```'
    with FakeOpenAIServer(canned_text=good) as server:
        res = run_tmgbench(TmgbenchConfig(
            model="openai-compatible:fake", base_url=server.base_url, policy="sample",
            prompting="DA", games="111", repeats=3, seed=1, no_cache=True,
            output_dir=str(tmp_path / "b")))
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert [r["answer"] for r in recs] == [[3], [3], [3]]
    assert res.summary["par_pct"] == 100.0  # (A2, B1) is 111's only equilibrium


@pytest.mark.parametrize("args, needle", [
    (["--prompting", "XYZ"], "XYZ"),
    (["--form", "nested"], "nested"),
    (["--games", "999"], "999"),
    (["--model", "embedded", "--policy", "logprob", "--prompting", "CoT"], "DA"),
])
def test_bad_flags(tmp_path, cli, args, needle):
    r = cli("tmgbench", "run", "--output-dir", str(tmp_path / "o"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
