"""`stratbench compare`: paired differences over shared games, episodes and models."""

from __future__ import annotations

import json

import pytest


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
    from stratbench.suites.chbench.run import ChbenchConfig, run_chbench
    from stratbench.workflows.compare import compare_runs

    def run(model, out):
        cfg = ChbenchConfig(models=[model], opponents=["random"], self_play=False, rounds=20, games="recoverable",
                            bootstrap=0, restarts=2, output_dir=str(tmp_path / out))
        return run_chbench(cfg).folder

    res = compare_runs(run("level-k:0", "a"), run("level-k:1", "b"))
    rows = {x["part"]: x for x in res["rows"]}
    assert set(rows) == {"baseline/model 1", "baseline/random"}
    m1 = rows["baseline/model 1"]
    # level 1 best-responds to the uniform random player: it earns more than a uniform player
    assert m1["paired"] and m1["n_units"] == 9 and m1["diff"] > 0 and m1["significant"]


def _random_run(tmp_path, cli, name: str):
    r = cli("nashgap", "--num-games", "2", "--num-trials", "2", "--seed", "9", "--llm-type", "random", "--quiet",
            "--output-dir", str(tmp_path / name))
    assert r.returncode == 0, r.stderr
    (f,) = list((tmp_path / name).iterdir())
    return f


def test_runs_without_a_scored_record_are_named_not_said_to_share_no_setting(tmp_path, cli, monkeypatch):
    """fuzz 9 M1: two runs of one mode in which every answer went unparsed were refused with "no
    mode/setting in common", which is untrue."""
    import stratbench.workflows.compare as compare
    from stratbench.errors import InputError

    a, b = _random_run(tmp_path, cli, "a"), _random_run(tmp_path, cli, "b")
    monkeypatch.setattr(compare, "_units", lambda suite, folder: {"pure": {}})  # (nothing scored in either)
    with pytest.raises(InputError, match=f"^{a} and {b}: hold no scored record"):
        compare.compare_runs(a, b)
    monkeypatch.setattr(compare, "_units", lambda suite, folder: {"pure": {}} if folder == b else
                        {"pure": {0: {"nash_gap": 1.0, "exploitability": 1.0}}})
    with pytest.raises(InputError, match=f"^{b}: holds no scored record"):
        compare.compare_runs(a, b)


def test_a_suite_folder_is_compared_run_by_run(tmp_path, cli):
    """fuzz 9 M4: a suite file's folder was "not a result folder (no readable run.json)"."""
    (tmp_path / "s.toml").write_text('seeds = [1]\nmodels = ["random"]\n[nashgap]\nnum_games = 2\nnum_trials = 1\n')
    r = cli("suite", "run", str(tmp_path / "s.toml"), "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    (suite,) = (tmp_path / "o").iterdir()
    r = cli("compare", str(suite), str(suite))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {suite}: a suite file's folder, not one run; suite "
                                                     "folders are compared run by run"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
