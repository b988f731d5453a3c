"""`stratbench trend`: one scorecard per checkpoint, a curve per suite, emergence and regressions.

The checkpoints are the fake OpenAI-compatible server with a planted skill in every suite
(tests/helpers/planted_skill.py): for the model ``ckpt-<step>`` a weight w (its WEIGHTS: 0, 0.9,
0.9, 0.2, 0 by step) mixes a skilled answer worked out from the prompt alone — the maximin strategy
of a Nash-gap game, the pure equilibria of a TMGBench game, CHBench's level-2 action, the best
response to a ToM partner's predicted action — with chance. So every suite's curve is known:
emergence at step 1000, a regression at 100000 — at the smoke budget, in every suite (CHBench's
"above chance" against the level fitted to simulated uniform play, its differences unpaired).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from chromium import chromium, console_lines, run_chromium
from fake_openai_server import FakeOpenAIServer
from planted_skill import planted, planted_text

from stratbench.api import trend
from stratbench.errors import InputError
from stratbench.scoring import UnitScores, normalized_score, paired_difference
from stratbench.workflows.trend_analysis import (
    StepScore,
    difference,
    emergence,
    holm,
    p_value_from_ci,
    regressions,
    suite_trend,
    unpaired_ci,
)

SEED = 0
FIRST = ["ckpt-100", "ckpt-1000", "ckpt-10000", "ckpt-100000"]
ADDED = "ckpt-1000000"


def _spec(name: str) -> str:
    return f"openai-compatible:{name}"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(next_token=planted, planted_text=planted_text) as s:
        yield s


@pytest.fixture(scope="module")
def first(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("trend")
    return trend([_spec(m) for m in FIRST], step_from=r"ckpt-(\d+)", budget="smoke", seed=SEED, output_dir=out,
                 base_url=server.base_url, no_cache=True, report=True)


def _suite(t: dict, name: str) -> dict:
    (s,) = [s for s in t["suites"] if s["suite"] == name]
    return s


def test_the_planted_curve_gives_emergence_and_the_regression(first):
    nash = _suite(first.trend, "nashgap")
    steps = [p["step"] for p in nash["points"]]
    assert steps == [100, 1000, 10000, 100000]
    scores = [p["score"] for p in nash["points"]]
    assert scores[0] == pytest.approx(0.0, abs=1e-9)  # w = 0: the uniform strategy, exactly chance
    assert nash["points"][0]["above_chance"] == "no"
    assert scores[1] > 60 and scores[1] == pytest.approx(scores[2])
    assert 0 < scores[3] < scores[1]
    assert all(p["ci95"] is not None for p in nash["points"])
    assert nash["emergence"] == {"decision": "emerged", "step": 1000, "stays_above": "yes"}
    assert nash["regressions"] == [100000]
    diffs = {d["step_b"]: d for d in nash["differences"]}
    assert diffs[1000]["regression"] == "no" and diffs[1000]["diff"] > 0
    assert diffs[10000]["diff"] == pytest.approx(0.0, abs=1e-9) and diffs[10000]["regression"] == "no"
    assert diffs[100000]["p_holm"] < 0.05 and diffs[100000]["ci95"][1] < 0


@pytest.mark.parametrize("name", ["tmgbench", "tom"])
def test_every_suites_planted_curve_gives_emergence_and_the_regression(first, name):
    suite = _suite(first.trend, name)
    scores = [p["score"] for p in suite["points"]]
    assert [p["above_chance"] for p in suite["points"]] == ["no", "yes", "yes", "no"]
    assert scores[1] > 40 and scores[1] == pytest.approx(scores[2]) and scores[3] < scores[1]
    assert suite["emergence"] == {"decision": "emerged", "step": 1000, "stays_above": "no"}
    assert suite["regressions"] == [100000]
    diffs = {d["step_b"]: d for d in suite["differences"]}
    assert diffs[10000]["diff"] == pytest.approx(0.0, abs=1e-9) and diffs[10000]["regression"] == "no"
    assert all(d["paired"] and d["ci95"] is not None for d in suite["differences"])


def test_chbench_planted_curve_against_its_uniform_play_reference_with_unpaired_differences(first):
    ch = _suite(first.trend, "chbench")  # one fit per scorecard: the fits' CIs combined as independent
    chances = {p["chance"] for p in ch["points"]}
    assert len(chances) == 1 and 0 < chances.pop() < 50  # the same games and rounds: one reference
    assert [p["above_chance"] for p in ch["points"]] == ["no", "yes", "yes", "no"]
    assert ch["emergence"] == {"decision": "emerged", "step": 1000, "stays_above": "no"}
    assert ch["regressions"] == [100000]
    for d, (a, b) in zip(ch["differences"], zip(ch["points"], ch["points"][1:])):
        assert not d["paired"] and d["diff"] == pytest.approx(b["score"] - a["score"])
        assert d["ci95"] == pytest.approx(unpaired_ci(d["diff"], a["ci95"], b["ci95"]))
        assert d["p_value"] is not None
    rows = [r for r in csv.DictReader((first.folder / "trend.csv").open()) if r["suite"] == "chbench"]
    assert [float(r["chance"]) for r in rows] == [p["chance"] for p in ch["points"]]
    assert all(r["chance"] == "" for r in csv.DictReader((first.folder / "trend.csv").open())
               if r["suite"] != "chbench")


def test_a_fitted_levels_chance_reference_decides_above_chance_not_its_ci():
    """(a CHBench point: uniform play's fitted level can have a CI above 0; the reference decides)"""
    from stratbench.workflows.trend_analysis import above_chance

    assert above_chance(6.7, [0.2, 9.8], "ok") == "yes"
    assert above_chance(6.7, [0.2, 9.8], "ok", chance=8.1) == "no"
    assert above_chance(9.0, [0.0, 100.0], "ok", chance=8.1) == "yes"
    assert above_chance(None, None, "failed", chance=8.1) == "undetermined"


def test_unpaired_differences_combine_the_two_cis_and_failed_cells_stay_undetermined():
    assert unpaired_ci(-10.0, [20.0, 40.0], [5.0, 20.0]) == pytest.approx(
        [-10.0 - 1.959964 * 25.0 / 3.919928, -10.0 + 1.959964 * 25.0 / 3.919928], rel=1e-6)
    row = {"diff": -30.0, "paired": False, "n_units": 3, "a_ci95": [50.0, 70.0], "b_ci95": [10.0, 30.0],
           "a_status": "ok", "b_status": "ok"}
    d = difference(1, 2, row)
    assert not d.paired and d.ci95 is not None and d.ci95[1] < 0 and d.p_value is not None and d.p_value < 0.05
    assert difference(1, 2, {**row, "b_status": "failed"}).ci95 is None
    assert difference(1, 2, {**row, "b_ci95": None}).p_value is None

    def pt(step, score, ci, status="ok"):
        return StepScore(step, None, f"m{step}", status, score, ci, 5)

    t = suite_trend({"suite": "x", "title": "X"}, [pt(1, 60, [50, 70]), pt(2, None, None, "failed"), pt(3, 20, [10, 30])],
                    [{**row, "diff": None, "b_ci95": None, "b_status": "failed"},
                     {**row, "diff": None, "a_ci95": None, "a_status": "failed"}])
    assert t["undetermined_pairs"] == [2, 3] and t["regressions"] == []
    assert t["points"][1]["above_chance"] == "undetermined"


def test_the_folder_holds_scorecards_files_and_the_report(first):
    f = first.folder
    meta = json.loads((f / "trend_metadata.json").read_text())
    assert meta["status"] == "finished" and meta["config"]["budget"] == "smoke"
    assert [c["step"] for c in meta["checkpoints"]] == [100, 1000, 10000, 100000]
    for c in meta["checkpoints"]:
        assert c["status"] == "finished" and (f / c["scorecard"] / "scorecard.json").is_file()
        assert c["scorecard"].startswith(f"ckpt_{c['step']}/scorecard_")
    saved = json.loads((f / "trend.json").read_text())
    assert saved == json.loads(json.dumps(first.trend)) and saved["multiple_comparisons"] == "holm"
    rows = list(csv.DictReader((f / "trend.csv").open()))
    assert len(rows) == 4 * 4 and len(first.table) == 16
    nash = [r for r in rows if r["suite"] == "nashgap"]
    assert [r["regression"] for r in nash] == ["", "no", "no", "yes"]
    assert {r["emergence_step"] for r in nash} == {"1000"}
    html = (f / "report" / "index.html").read_text()
    assert html.index('id="curves"') < html.index('id="decisions"') < html.index('id="steps"')
    assert "data:image/png;base64" in html and (f / "report" / "trend.png").is_file()
    assert "<script" not in html


def _compare(a: Path, b: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stratbench", "compare", str(a), str(b)], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env=dict(os.environ, CI="1"))


def test_compare_of_a_trend_folder_names_it_and_where_its_scorecards_are(first, tmp_path):
    p = _compare(first.folder, first.folder, tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "a trend folder" in p.stderr and "ckpt_<step>/scorecard_<time>" in p.stderr, p.stderr
    a, b = (first.folder / c["scorecard"] for c in json.loads(
        (first.folder / "trend_metadata.json").read_text())["checkpoints"][:2])
    p = _compare(a, b, tmp_path)  # what the line points to works
    assert p.returncode == 0, p.stderr


def test_add_runs_only_the_new_checkpoint(first, server, tmp_path):
    copy = tmp_path / first.folder.name
    shutil.copytree(first.folder, copy)
    server.reset()
    res = trend([_spec(ADDED)], step_from=r"ckpt-(\d+)", add_to=copy, base_url=server.base_url, report=False)
    models = {r.body.get("model") for r in server.requests if isinstance(r.body, dict)}
    assert models == {ADDED} and server.request_count > 0  # the earlier checkpoints made 0 model calls
    nash = _suite(res.trend, "nashgap")
    assert [p["step"] for p in nash["points"]] == [100, 1000, 10000, 100000, 1000000]
    assert nash["emergence"] == {"decision": "emerged", "step": 1000, "stays_above": "no"}
    assert 100000 in nash["regressions"]
    meta = json.loads((copy / "trend_metadata.json").read_text())
    assert [c["step"] for c in meta["checkpoints"]] == [100, 1000, 10000, 100000, 1000000]
    # the earlier scorecards are the copied ones, untouched
    for c in meta["checkpoints"][:4]:
        assert (copy / c["scorecard"] / "scorecard.json").read_bytes() == (
            first.folder / c["scorecard"] / "scorecard.json").read_bytes()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1")
    return subprocess.run([sys.executable, "-m", "stratbench", "trend", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env=env)


M1, M2 = "openai-compatible:ckpt-1", "openai-compatible:ckpt-2"
URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("args, message", [
    (["--model", M1, "--model", M2, "--step", "5", "--step", "5"], "--step 5 is given twice"),
    # a step of 260 digits named a folder no file system takes, after the first checkpoint ran (fuzz 11 A L2)
    (["--model", M1, "--model", M2, "--step", "1", "--step", "1" + "0" * 259],
     "--step a number of 260 digits: a step of at most 18 digits"),
    (["--model", M1, "--step", str(10**18)], f"--step {10**18}: a step of at most 18 digits"),
    (["--model", M1, "--model", "openai-compatible:ckpt-01", "--step-from", r"ckpt-(\d+)"],
     f"reads step 1 from {M1} and openai-compatible:ckpt-01"),
    (["--model", M1, "--model", M2, "--step", "5"], "--step: 1 given for 2 --model"),
    (["--model", M1, "--model", M2], "--step: no step given"),
    (["--model", M1, "--model", "openai-compatible:final", "--step-from", r"ckpt-(\d+)"],
     "openai-compatible:final has no step in it"),
    (["--model", M1, "--step-from", "ckpt-("], "not a regular expression"),
    (["--model", M1, "--step", "-3"], "--step -3: give a number >= 0"),
    (["--model", M1, "--step", "1", "--budget", "huge"], "unknown --budget"),
    (["--model", M1, "--step", "1", "--step-from", "x"], "--step and --step-from"),
    (["--resume", "nowhere"], "not a trend folder"),
    (["--add", "nowhere", "--model", M1, "--step", "1"], "not a trend folder"),
])
def test_bad_inputs_are_one_line_exit_2_and_leave_no_folder(tmp_path, args, message):
    out = tmp_path / "out"
    base = [] if args[0] in ("--resume", "--add") else ["--base-url", URL]
    p = _cli(*args, *base, "--output-dir", str(out), cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr and not out.exists()


def test_add_refuses_a_step_or_model_already_there_and_changes_nothing(first, tmp_path):
    before = (first.folder / "trend_metadata.json").read_bytes()
    with pytest.raises(InputError, match="--step 1000 is given twice"):
        trend([_spec("ckpt-other")], steps=[1000], add_to=first.folder)
    with pytest.raises(InputError, match="already a checkpoint"):
        trend([_spec("ckpt-100")], steps=[7], add_to=first.folder)
    with pytest.raises(InputError, match="--budget"):
        trend([_spec("ckpt-7")], steps=[7], add_to=first.folder, budget="quick")
    assert (first.folder / "trend_metadata.json").read_bytes() == before


# -- the analysis alone --------------------------------------------------------------------------


def test_holm_adjusts_step_down_and_keeps_undetermined():
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert holm([]) == []
    assert p_value_from_ci(None, [1, 2], 5) is None and p_value_from_ci(-3.0, None, 5) is None
    assert p_value_from_ci(-3.0, [-4, -2], 1) is None  # one shared unit decides nothing
    assert p_value_from_ci(0.0, [0.0, 0.0], 6) == 1.0
    assert p_value_from_ci(-1.96, [-3.92, 0.0], 6) == pytest.approx(0.05, rel=1e-3)


def test_emergence_needs_every_earlier_step_decided():
    def pt(step, score, ci, status="ok"):
        return StepScore(step, None, f"m{step}", status, score, ci, 5)

    assert emergence([pt(1, 5, [-2, 9]), pt(2, 30, [10, 50]), pt(3, 40, [20, 60])]).decision == "emerged"
    e = emergence([pt(1, None, None, "failed"), pt(2, 30, [10, 50])])
    assert e.decision == "undetermined" and e.step is None
    e = emergence([pt(1, 30, [10, 50]), pt(2, None, None, "failed")])
    assert (e.decision, e.step, e.stays_above) == ("emerged", 1, "undetermined")
    assert emergence([pt(1, 1, [-5, 6]), pt(2, 0, [-4, 4])]).decision == "never"


def _flat_series(rng: np.random.Generator, n_steps: int, n_units: int) -> tuple[list[StepScore], list[dict]]:
    """Checkpoints at chance: per unit, chance 0.5 and optimal 0, the value chance + noise (shared
    per unit across steps, as one model's games are)."""
    chance, optimal = np.full(n_units, 0.5), np.zeros(n_units)
    unit_effect = rng.normal(0, 0.1, n_units)
    series = [UnitScores(tuple(range(n_units)), chance + unit_effect + rng.normal(0, 0.05, n_units), chance,
                         optimal) for _ in range(n_steps)]
    points = []
    for k, u in enumerate(series):
        s, ci = normalized_score(u, seed=k)
        points.append(StepScore(k + 1, None, f"m{k}", "ok", s, ci, n_units))
    rows = []
    for a, b in zip(series, series[1:]):
        d, ci, n = paired_difference(a, b, seed=0)
        rows.append({"diff": d, "diff_ci95": ci, "n_units": n, "paired": True})
    return points, rows


def test_flat_series_rarely_emerge_or_regress_across_seeds():
    """At chance, a step is called above chance about 2.5% of the time (its CI's lower tail), so a
    5-step series about 12%; Holm keeps false regressions near 5% per series or below."""
    emerged = regressed = 0
    n = 200
    for seed in range(n):
        points, rows = _flat_series(np.random.default_rng(seed), 5, 12)
        emerged += emergence(points).decision == "emerged"
        diffs = regressions([difference(a.step, b.step, r) for a, b, r in zip(points, points[1:], rows)])
        regressed += any(d.regression == "yes" for d in diffs)
    assert emerged / n < 0.25 and regressed / n < 0.10


def test_a_planted_rise_and_fall_is_found_in_synthetic_series():
    rng = np.random.default_rng(1)
    n_units, chance, optimal = 20, np.full(20, 0.5), np.zeros(20)
    noise = rng.normal(0, 0.03, n_units)
    noise -= noise.mean()  # at w = 0 exactly chance on average
    levels = [0.0, 0.0, 0.6, 0.6, 0.0]  # the share of the way to optimal
    series = [UnitScores(tuple(range(n_units)), chance * (1 - w) + noise, chance, optimal) for w in levels]
    points = [StepScore(k, None, "m", "ok", *normalized_score(u, seed=k), n_units) for k, u in enumerate(series)]
    rows = [dict(zip(("diff", "diff_ci95", "n_units"), paired_difference(a, b)), paired=True)
            for a, b in zip(series, series[1:])]
    diffs = regressions([difference(a.step, b.step, r) for a, b, r in zip(points, points[1:], rows)])
    assert emergence(points).step == 2 and emergence(points).stays_above == "no"
    assert [d.step_b for d in diffs if d.regression == "yes"] == [4]



def test_an_interrupted_trend_names_its_resume_and_resumes(server, tmp_path):
    """Ctrl-C in the first checkpoint: one line naming `stratbench trend --resume DIR`; the resume
    finishes the interrupted scorecard in place and runs the rest."""
    args = ["--model", _spec("ckpt-100"), "--model", _spec("ckpt-1000"), "--step-from", r"ckpt-(\d+)", "--budget",
            "smoke", "--base-url", server.base_url, "--output-dir", str(tmp_path), "--no-report", "--quiet"]
    env = dict(os.environ, CI="1")
    server.reset()
    p = subprocess.Popen([sys.executable, "-m", "stratbench", "trend", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120
    while server.count() < 40 and time.monotonic() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    (folder,) = tmp_path.glob("trend_*")
    assert p.returncode == 130 and f"continue with: stratbench trend --resume {folder}" in err, err
    meta = json.loads((folder / "trend_metadata.json").read_text())
    assert meta["status"] == "running" and meta["checkpoints"][0]["status"] == "running"
    first_card = meta["checkpoints"][0]["scorecard"]
    assert first_card is not None
    done = _cli("--resume", str(folder), "--no-report", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta = json.loads((folder / "trend_metadata.json").read_text())
    assert meta["status"] == "finished" and meta["checkpoints"][0]["scorecard"] == first_card
    assert [c["status"] for c in meta["checkpoints"]] == ["finished", "finished"]
    assert (folder / "trend.json").is_file()


# -- the two embedded models as a two-point series, offline ------------------------------------


# -- SIGKILL, then --resume -----------------------------------------------------------------------

KILLED = ["ckpt-100", "ckpt-1000"]


def _no_folders(t: dict) -> dict:
    """trend.json without its scorecard folders' names (they carry the time they were made)."""
    return {**t, "checkpoints": [{k: v for k, v in c.items() if k != "scorecard"} for c in t["checkpoints"]]}


def _kill_when(p: subprocess.Popen, ready, what: str) -> None:
    deadline = time.monotonic() + 300
    while not ready() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert p.poll() is None, f"the trend finished before {what}"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)


def test_a_killed_trend_resumes_to_the_same_trend_and_finished_checkpoints_make_no_calls(server, tmp_path):
    """SIGKILL once inside the first checkpoint's scorecard and once inside the second's; the last
    --resume gives the trend.json of an uninterrupted run, and the finished first checkpoint makes
    no model call."""
    want = trend([_spec(m) for m in KILLED], step_from=r"ckpt-(\d+)", budget="smoke", seed=SEED,
                 output_dir=tmp_path / "whole", base_url=server.base_url, no_cache=True, report=False)
    out = tmp_path / "killed"
    env = dict(os.environ, CI="1")
    with FakeOpenAIServer(next_token=planted, planted_text=planted_text, latency_ms=15) as slow:
        args = [a for m in KILLED for a in ("--model", _spec(m))] + [
            "--step-from", r"ckpt-(\d+)", "--budget", "smoke", "--seed", str(SEED), "--base-url", slow.base_url,
            "--no-cache", "--no-report", "--quiet", "--output-dir", str(out)]
        p = subprocess.Popen([sys.executable, "-m", "stratbench", "trend", *args], cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _kill_when(p, lambda: any(out.glob("trend_*/ckpt_100/scorecard_*/suite_metadata.json")),
                   "the first checkpoint's scorecard began")
        (folder,) = out.glob("trend_*")
        assert not (folder / "trend.json").exists()
        meta = json.loads((folder / "trend_metadata.json").read_text())
        assert [c["status"] for c in meta["checkpoints"]] == ["running", "pending"]

        p = subprocess.Popen([sys.executable, "-m", "stratbench", "trend", "--resume", str(folder), "--no-report",
                              "--quiet"], cwd=tmp_path, env=env, text=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _kill_when(p, lambda: any(folder.glob("ckpt_1000/scorecard_*/suite_metadata.json")),
                   "the second checkpoint's scorecard began")
        meta = json.loads((folder / "trend_metadata.json").read_text())
        assert [c["status"] for c in meta["checkpoints"]] == ["finished", "running"]
        assert not (folder / "trend.json").exists()

        slow.reset()
        done = subprocess.run([sys.executable, "-m", "stratbench", "trend", "--resume", str(folder), "--no-report",
                               "--quiet"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        models = {r.body.get("model") for r in slow.requests if isinstance(r.body, dict)}
        assert models == {"ckpt-1000"}  # the finished checkpoint made 0 model calls
    meta = json.loads((folder / "trend_metadata.json").read_text())
    assert meta["status"] == "finished" and [c["status"] for c in meta["checkpoints"]] == ["finished", "finished"]
    got = json.loads((folder / "trend.json").read_text())
    assert _no_folders(got) == _no_folders(json.loads(json.dumps(want.trend)))
    assert list(csv.DictReader((folder / "trend.csv").open()))[0].keys() == want.table[0].keys()


# -- a damaged or edited trend_metadata.json, given to --resume and --add --------------------------


def _set(path: str, value):
    """An edit of the saved metadata: ``path`` (dotted, list indices as numbers) set to ``value``."""
    def edit(meta: dict, folder: Path) -> None:
        *head, last = [int(k) if k.isdigit() else k for k in path.split(".")]
        node = meta
        for k in head:
            node = node[k]
        node[last] = value(meta, folder) if callable(value) else value
    return edit


def _link_out(meta: dict, folder: Path) -> None:
    """ckpt_100 made a link to a copy of itself outside the trend folder."""
    outside = folder.parent / "outside"
    shutil.move(str(folder / "ckpt_100"), str(outside))
    (folder / "ckpt_100").symlink_to(outside, target_is_directory=True)


def _rm_scorecard(meta: dict, folder: Path) -> None:
    shutil.rmtree(folder / meta["checkpoints"][1]["scorecard"])


HOSTILE = {
    "not JSON": (None, "not valid JSON"),
    "a list": (lambda m, f: [m], "not a trend folder"),
    "format version": (_set("format_version", 99), "written in result format 99 by a newer stratbench"),
    "trend version": (_set("trend_version", 2), "trend_version 2 is not 1"),
    "step a string": (_set("checkpoints.1.step", "1000"), "checkpoints[1]: step must be a whole number >= 0 (got str '1000')"),
    "step a bool": (_set("checkpoints.0.step", True), "checkpoints[0]: step must be a whole number"),
    "tokens negative": (_set("checkpoints.2.tokens", -5), "checkpoints[2]: tokens must be a whole number >= 0 or null"),
    "status": (_set("checkpoints.0.status", "done"), "checkpoints[0]: status 'done' is none of"),
    "checkpoints an object": (_set("checkpoints", {}), "checkpoints must be a non-empty list (got dict {})"),
    "no checkpoints": (_set("checkpoints", []), "checkpoints must be a non-empty list"),
    "label": (_set("checkpoints.1.label", "someone else"), "checkpoints[1]: label 'someone else' is not its spec"),
    "seed a string": (_set("config.seed", "x"), "config.seed must be a whole number >= 0 (got str 'x')"),
    "seed too large": (_set("config.seed", 2**70), "config.seed must be at most"),
    "budget": (_set("config.budget", 5), "config.budget 5 is none of smoke, quick, standard, paper"),
    "chat": (_set("config.chat", "yes"), "config.chat must be true, false or null"),
    "config a list": (_set("config", []), "config must be an object"),
    "duplicate steps": (_set("checkpoints.1.step", 100), "step 100 is given to 2 checkpoints"),
    "steps out of order": (_set("checkpoints.1.step", 5), "not in step order (100, 5, 10000, 100000)"),
    "duplicate models": (_set("checkpoints.1", lambda m, f: {**m["checkpoints"][0], "step": 1000,
                                                             "scorecard": m["checkpoints"][1]["scorecard"]}),
                         "model openai-compatible:ckpt-100 is given to 2 checkpoints"),
    "folder outside by ..": (_set("checkpoints.0.scorecard", "../../elsewhere"),
                             "checkpoints[0]: scorecard '../../elsewhere' is not a folder ckpt_100/scorecard_<time>"),
    "folder absolute": (_set("checkpoints.0.scorecard", "/tmp/scorecard_x"), "is not a folder ckpt_100/"),
    "another checkpoint's folder": (_set("checkpoints.0.scorecard", lambda m, f: m["checkpoints"][1]["scorecard"]),
                                    "checkpoints[0]: scorecard 'ckpt_1000/scorecard_"),
    "folder a link out": (_link_out, "checkpoints[0]: scorecard 'ckpt_100/scorecard_"),
    "folder missing": (_rm_scorecard, "checkpoints[1]: scorecard 'ckpt_1000/scorecard_"),
    "scorecards at another budget": (_set("config.budget", "quick"),
                                     "checkpoints[0]: its scorecard ckpt_100/scorecard_"),
    "finished without folder": (_set("checkpoints.3.scorecard", None),
                                "checkpoints[3]: finished, but no scorecard folder is recorded"),
    # (fuzz 10 B D4, D5: how the checkpoints were read, edited after they ran; a checkpoint dropped)
    "chat edited": (_set("config.chat", True), "checkpoints[0]: config.chat reads the checkpoint as True, but its "
                                               "scorecard ckpt_100/scorecard_"),
    "max tokens added": (_set("config.max_tokens", 4000), "config.max_tokens reads the checkpoint as 4000"),
    "checkpoint dropped": (_set("checkpoints", lambda m, f: m["checkpoints"][:-1]),
                           "ckpt_100000 holds a scorecard but no checkpoint of the trend is at step 100000"),
}
EXTRA = {"folder a link out": "leads out of the trend folder", "folder missing": "is missing",
         "scorecards at another budget": "is at budget 'smoke', seed 0, not the trend's 'quick', 0"}


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else
                                         f"link {os.readlink(p)}" if p.is_symlink() else "dir")
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("verb", ["--resume", "--add"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_damaged_trend_metadata_is_one_line_exit_2_and_changes_nothing(first, tmp_path, case, verb):
    folder = tmp_path / "trend"
    shutil.copytree(first.folder, folder, symlinks=True)
    path = folder / "trend_metadata.json"
    edit, message = HOSTILE[case]
    if edit is None:
        path.write_text(path.read_text()[:-20])  # cut short
    else:
        meta = json.loads(path.read_text())
        got = edit(meta, folder)
        path.write_text(json.dumps(got if got is not None else meta))
    before = _snapshot(folder)
    extra = ["--model", _spec("ckpt-7"), "--step", "7", "--base-url", URL] if verb == "--add" else []
    p = _cli(verb, str(folder), *extra, "--no-report", cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in p.stderr, p.stderr
    named = str(folder) if message == "not a trend folder" else str(path)
    assert named in lines[0] and message in lines[0] and EXTRA.get(case, "") in lines[0], lines[0]
    assert _snapshot(folder) == before


def test_an_edited_checkpoint_scorecard_is_refused_by_add_before_anything_and_rewritten_by_resume(first, tmp_path):
    """An edited scorecard.json: --add refuses in one line before its new checkpoint runs (it ran
    and listed it, then refused: fuzz 29 A F5), naming trend --resume, which rewrites it from its
    records (the scorecard's own --resume is refused inside a trend; the lines sent the user round
    in a loop). The refusal leaves trend_metadata.json as it was (fuzz 10 B LEFT)."""
    folder = tmp_path / "trend"
    shutil.copytree(first.folder, folder, symlinks=True)
    (card,) = folder.glob("ckpt_1000/scorecard_*/scorecard.json")
    data = json.loads(card.read_text())
    data["cells"][0]["value"] = 0.0
    card.write_text(json.dumps(data))
    before = _snapshot(folder)
    p = _cli("--add", str(folder), "--model", _spec("ckpt-7"), "--step", "7", "--base-url", URL, "--no-report",
             cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "disagrees with its records" in p.stderr and f"stratbench trend --resume {folder} first" in p.stderr
    assert _snapshot(folder) == before
    p = _cli("--resume", str(folder), "--no-report", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    saved = json.loads((first.folder / card.relative_to(folder)).read_text())
    assert json.loads(card.read_text())["cells"] == saved["cells"]
    assert json.loads((folder / "trend.json").read_text())["suites"] == first.trend["suites"]


# -- the report in a browser ----------------------------------------------------------------------


@pytest.mark.skipif(chromium() is None, reason="no chromium binary (Debian: apt-get install -y chromium; "
                    "`make test` installs it where it can)")
def test_the_trend_report_opens_in_headless_chromium_on_the_curves(first, tmp_path):
    """The page loads without a console error or a blocked resource, its first screen is the
    curves' figure (drawn, in colour), and its links to the checkpoints' reports lead to files."""
    from PIL import Image

    index = first.report
    assert index is not None and index.is_file()
    binary = chromium()
    assert binary is not None
    dom = run_chromium(binary, "--dump-dom", index.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    console = console_lines(dom.stderr)
    assert not console, console
    assert html.index('id="curves"') < html.index('id="decisions"') < html.index('id="steps"')
    assert "<script" not in html.lower() and "data:image/png;base64" in html
    links = re.findall(r'href="([^"#:]+)"', html)
    assert len([x for x in links if x.endswith("index.html")]) == 4, links
    for rel in links:
        assert (index.parent / rel).resolve().is_file(), rel

    shot = tmp_path / "shot.png"
    r = run_chromium(binary, "--window-size=1280,900", f"--screenshot={shot}", index.resolve().as_uri())
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape[:2] == (900, 1280)
    assert (img.min(axis=2) < 128).mean() > 0.01  # text and the figure drawn, not a blank page
    packed = (img[..., 0].astype(np.uint32) << 16) | (img[..., 1].astype(np.uint32) << 8) | img[..., 2]
    assert np.unique(packed).size > 50  # the curves, in colour, on the first screen


def test_think_tags_and_max_tokens_are_every_checkpoints_and_saved(tmp_path):
    """--think-tags and --max-tokens reach every checkpoint's scorecard as the scorecard's flags do,
    are saved with the trend (an --add uses them and refuses the flags) — a reasoning checkpoint's
    thinking is kept apart and given room."""
    reply = "<reasoning>If I choose Action: 0 they answer 1</reasoning>\n\nAction: 1"
    with FakeOpenAIServer(canned_text=reply) as s:
        res = trend([_spec("r-1")], steps=[1], budget="smoke", seed=SEED, output_dir=tmp_path, base_url=s.base_url,
                    no_cache=True, report=False, chat=True, think_tags="<reasoning>,</reasoning>", max_tokens=2000)
        asked = {r.body.get("max_tokens") for r in s.requests if r.path.endswith("/chat/completions")}
    assert asked == {2000}, asked
    meta = json.loads((res.folder / "trend_metadata.json").read_text())
    assert meta["config"]["think_tags"] == "<reasoning>,</reasoning>" and meta["config"]["max_tokens"] == 2000
    (card,) = res.folder.glob("ckpt_*/scorecard_*/suite_metadata.json")
    (m,) = json.loads(card.read_text())["config"]["models"]
    assert m["think_tags"] == "<reasoning>,</reasoning>" and m["max_tokens"] == 2000
    for flag, value in (("--think-tags", "<a>,</a>"), ("--max-tokens", "10")):
        p = _cli("--add", str(res.folder), "--model", _spec("r-2"), "--step", "2", flag, value, cwd=tmp_path)
        assert p.returncode == 2 and flag in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_an_add_to_a_trend_saved_with_credentials_prints_the_add_that_works(tmp_path):
    """The base URL's password is never saved: --add without --base-url says to give it again, as
    the --add command it needs (fuzz 10 A M1: it printed a --resume, which adds nothing)."""
    with FakeOpenAIServer() as s:
        url = s.base_url.replace("http://", "http://user:pw-secret-42@")
        res = trend([_spec("c-1")], steps=[1], budget="smoke", seed=SEED, output_dir=tmp_path, base_url=url,
                    no_cache=True, report=False)
        p = _cli("--add", str(res.folder), "--model", _spec("c-2"), "--step", "2", "--no-report", cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        printed = p.stderr.strip().split("give it again: ")[1]
        assert printed.startswith(f"stratbench trend --add {res.folder} --model {_spec('c-2')} --step 2 --base-url URL")
        args = printed.replace("URL", url).split()[2:]
        p = _cli(*args, "--no-report", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [c["step"] for c in json.loads((res.folder / "trend_metadata.json").read_text())["checkpoints"]] == [1, 2]
    assert "pw-secret-42" not in (res.folder / "trend_metadata.json").read_text()
