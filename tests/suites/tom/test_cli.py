"""`stratbench tom baseline` and `tom run` as a user runs them."""

from __future__ import annotations

import json

import pytest


def test_tom_baseline_command(tmp_path, cli):
    r = cli("tom", "baseline", "--game", "rps,ipd", "--partner", "single_action", "--episodes", "60",
            "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (folder,) = list(tmp_path.iterdir())
    rows = json.loads((folder / "summary.json").read_text())["settings"]
    assert [(x["game"], x["partner"]) for x in rows] == [("rps", "single_action"), ("ipd", "single_action")]
    for x in rows:
        assert {"regret_per_step", "tom_accuracy", "tom_regret_per_step", "n_episodes"} <= set(x)
        assert x["n_episodes"] == 60 and 0 <= x["tom_accuracy"] <= 1
        lo, hi = x["regret_per_step_ci95"]
        assert lo <= x["regret_per_step"] <= hi
    assert rows[0]["regret_per_step"] == pytest.approx(0.083, abs=0.04)  # the paper's RPS row
    assert (folder / "regret_curve.png").stat().st_size > 1000
    assert sum(1 for _ in open(folder / "episodes.jsonl")) == 120
    bad = cli("tom", "baseline", "--game", "chess", "--output-dir", str(tmp_path / "x"))
    assert bad.returncode == 2 and "chess" in bad.stderr and "Traceback" not in bad.stderr


def test_tom_commands_take_quiet_as_every_run_command_does(tmp_path, cli):
    """(fuzz 26 A F2: the docs list --quiet for every run command; tom's had none)"""
    from fake_openai_server import FakeOpenAIServer

    r = cli("tom", "baseline", "--episodes", "3", "--rounds", "5", "--quiet", "--output-dir", str(tmp_path / "b"))
    (folder,) = (tmp_path / "b").iterdir()
    assert r.returncode == 0 and r.stdout == f"{folder}\n", r.stdout
    with FakeOpenAIServer() as s:
        r = cli("tom", "run", "--model", "openai-compatible:fake", "--base-url", s.base_url, "--prompting", "QA",
                "--rounds", "4", "--quiet", "--output-dir", str(tmp_path / "r"))
    (folder,) = (tmp_path / "r").iterdir()
    assert r.returncode == 0 and r.stdout == f"{folder}\n", r.stdout


def test_tom_run_embedded_lm_prompting(tmp_path, cli):
    pytest.importorskip("llama_cpp")
    r = cli("tom", "run", "--game", "rps", "--partner", "single_action", "--rounds", "12",
            "--episodes", "2", "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (folder,) = list(tmp_path.iterdir())
    s = json.loads((folder / "summary.json").read_text())
    assert s["n_episodes"] == 2 and s["n_error_episodes"] == 0
    assert 0 <= s["regret_per_step"] <= 2 and 0 <= s["tom_accuracy"] <= 1
    rows = [json.loads(x) for x in open(folder / "rounds.jsonl")]
    assert len(rows) == 24 and all(abs(sum(x["policy"]) - 1) < 1e-9 for x in rows)
    # prefix reuse: far fewer tokens evaluated than the prompts contain
    assert s["tokens_evaluated_per_episode"] < 2000
    bad = cli("tom", "run", "--prompting", "Telepathy", "--output-dir", str(tmp_path / "x"))
    assert bad.returncode == 2 and "LM" in bad.stderr and "Reflexion" in bad.stderr and "Traceback" not in bad.stderr
