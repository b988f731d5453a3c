"""The `tom baseline` and `chbench fit` commands as a user runs them."""

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


def test_chbench_fit_command_recovers_lambda(tmp_path, cli):
    from stratbench.suites.chbench.catalogue import build_catalogue, recoverable
    from stratbench.suites.chbench.fit import CHAgent, simulate_rounds, write_observations_csv

    cat = recoverable(build_catalogue())
    rows = simulate_rounds(cat, CHAgent("poisson-1.5", "poisson", lam=1.5),
                           CHAgent("poisson-1.5b", "poisson", lam=1.5), rounds=200, seed=3)
    data = tmp_path / "play.csv"
    write_observations_csv(data, rows)
    r = cli("chbench", "fit", "--data", str(data), "--restarts", "3", "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    (folder,) = list((tmp_path / "out").iterdir())
    fits = json.loads((folder / "fit.json").read_text())
    assert set(fits) == {"poisson-1.5", "poisson-1.5b"}
    for f in fits.values():
        assert abs(f["poisson"]["lambda"] - 1.5) <= 0.5
        assert len(f["level_k"]["alpha"]) == 4 and f["level_k"]["k_hat"] == 4
    bad = cli("chbench", "fit", "--data", str(tmp_path / "missing.csv"), "--output-dir", str(tmp_path / "y"))
    assert bad.returncode == 2 and "missing.csv" in bad.stderr


def test_compare_paired_over_shared_games(tmp_path, cli):
    for name, player in (("a", "random"), ("b", "nash")):
        r = cli("nashgap", "--num-games", "12", "--num-trials", "5", "--seed", "9", "--llm-type", player,
                "--quiet", "--output-dir", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
    (a,) = list((tmp_path / "a").iterdir())
    (b,) = list((tmp_path / "b").iterdir())
    out = tmp_path / "cmp.json"
    r = cli("compare", str(a), str(b), "--output", str(out))
    assert r.returncode == 0, r.stderr
    rows = {x["metric"]: x for x in json.loads(out.read_text())["rows"]}
    e = rows["exploitability"]
    assert e["paired"] and e["n_units"] == 12 and e["b"] == 0.0
    assert e["diff"] == pytest.approx(-e["a"]) and e["diff_ci95"][1] < 0 and e["significant"]
    # a run compared with itself: zero difference, CI [0, 0]
    r = cli("compare", str(a), str(a), "--output", str(out))
    same = {x["metric"]: x for x in json.loads(out.read_text())["rows"]}
    assert same["nash_gap"]["diff"] == 0.0 and same["nash_gap"]["diff_ci95"] == [0.0, 0.0]


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


def test_compare_tom_baseline_runs_pairs_episodes(tmp_path, cli):
    from stratbench.workflows.compare import compare_runs

    folders = []
    for name in ("a", "b"):
        r = cli("tom", "baseline", "--game", "rps", "--partner", "single_action", "--episodes", "20",
                "--rounds", "30", "--seed", "3", "--output-dir", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        (f,) = list((tmp_path / name).iterdir())
        folders.append(f)
    res = compare_runs(*folders)
    rows = {x["metric"]: x for x in res["rows"]}
    assert res["suite"] == "tom" and set(rows) == {"regret_per_step", "tom_accuracy", "tom_regret_per_step"}
    r = rows["regret_per_step"]  # same seed, same agent: every episode identical
    assert r["paired"] and r["n_units"] == 20 and r["diff"] == 0.0 and r["diff_ci95"] == [0.0, 0.0]
    assert 0 < r["a"] < 1


def test_compare_chbench_runs_pairs_models_by_position(tmp_path):
    from stratbench.workflows.compare import compare_runs
    from stratbench.suites.chbench.run import ChbenchConfig, run_chbench

    def run(model, out):
        cfg = ChbenchConfig(models=[model], opponents=["random"], self_play=False, rounds=20, games="recoverable",
                            bootstrap=0, restarts=2, output_dir=str(tmp_path / out))
        return run_chbench(cfg)[0]

    res = compare_runs(run("level-k:0", "a"), run("level-k:1", "b"))
    rows = {x["part"]: x for x in res["rows"]}
    assert set(rows) == {"baseline/model 1", "baseline/random"}
    m1 = rows["baseline/model 1"]
    # level 1 best-responds to the uniform random player: it earns more than a uniform player
    assert m1["paired"] and m1["n_units"] == 9 and m1["diff"] > 0 and m1["significant"]
