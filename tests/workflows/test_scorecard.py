"""`stratbench scorecard`: every suite for one model next to its references, in one folder.

The model is the fake OpenAI-compatible server (deterministic), at the `smoke` budget: the same
pipeline as `quick`, a few units per suite. What is pinned: the scorecard's runs are the runs a
user gets by hand from the suites' own commands with the same settings and seed (records and
summaries equal), its cells are those runs' numbers, a killed scorecard resumed gives the same
scorecard.json, a failing model is reported as failed (never scored), compare pairs two
scorecards, and the report opens with the scorecard.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import run_records
from fake_openai_server import FakeOpenAIServer

from stratbench.api import scorecard
from stratbench.errors import InputError
from stratbench.scoring import read_scorecard
from stratbench.suites import SUITES

SEED = 3
FAKE = "openai-compatible:fake"
# besides timings and cache flags: where and when a run was made
VOLATILE = run_records.VOLATILE | {"output_dir", "base_url", "no_cache", "start_time", "end_time", "folder", "run_id"}


def strip(x: object) -> object:
    return run_records.strip(x, VOLATILE)


def records(folder: Path) -> dict[str, list[object]]:
    return run_records.records(folder, VOLATILE)


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1")
    return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture(scope="module")
def card(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("scorecard")
    res = scorecard([FAKE], budget="smoke", seed=SEED, output_dir=out, base_url=server.base_url, no_cache=True)
    return res


def _run_of(res, suite: str, player: str, setting: str = "") -> Path:
    meta = json.loads((res.folder / "suite_metadata.json").read_text())
    (run,) = [r for r in meta["runs"] if r["suite"] == suite and r["player"] == player
              and (r.get("setting") or "") == setting]
    return res.folder / run["folder"]


def _cell(res, player: str, suite: str) -> dict:
    (c,) = [c for c in res.scorecard["cells"] if c["player"] == player and c["suite"] == suite]
    return c


def test_the_folder_holds_ordinary_runs_a_table_and_a_report(card):
    f = card.folder
    assert f.name.startswith("scorecard_")
    assert {p.name for p in f.iterdir()} >= {"suite_metadata.json", "scorecard.json", "scorecard.csv", "cost.json",
                                            "report", "nashgap", "tmgbench", "chbench", "tom"}
    card_json = read_scorecard(f)
    assert card_json == card.scorecard
    assert [s["suite"] for s in card_json["suites"]] == ["nashgap", "tmgbench", "chbench", "tom"]
    roles = {p["player"]: p["role"] for p in card_json["players"]}
    assert roles[FAKE] == "model" and roles["chance"] == "chance" and roles["optimal"] == "optimal"
    for suite in ("nashgap", "tmgbench", "chbench", "tom"):  # every suite has its floor and its ceiling
        assert _cell(card, "chance", suite)["normalized"] == pytest.approx(0.0)
        assert _cell(card, "optimal", suite)["normalized"] == pytest.approx(100.0)
        c = _cell(card, FAKE, suite)
        assert c["counts"]["error"] == 0
        if suite == "tmgbench":  # the fake's sampled answers are random characters: none parses
            assert c["status"] == "failed" and c["counts"]["scored"] == 0 and c["normalized"] is None
        else:
            assert c["status"] in ("ok", "errors") and c["normalized"] is not None
    rows = list(csv.DictReader((f / "scorecard.csv").open()))
    assert len(rows) == len(card_json["cells"])
    mine = [r for r in rows if r["player"] == FAKE]
    assert {r["suite"] for r in mine} == {"nashgap", "tmgbench", "chbench", "tom"}
    assert all(int(r["model_calls"]) > 0 for r in mine)
    html = (f / "report" / "index.html").read_text()
    # the first screen is the scorecard: its heading comes before every other section
    assert html.index('id="scorecard"') < html.index('id="overview"')
    assert "0 = chance, 100 = optimal" in html and "data:image/png;base64" in html


def test_runs_equal_the_suites_run_by_hand(card, server, tmp_path):
    """The same settings and seed through each suite's own command give the same records and summary."""
    hand = {
        ("nashgap", FAKE, "3x3_midVar_pure"): [
            "nashgap", "--model", FAKE, "--base-url", server.base_url, "--bucket", "3x3_midVar_pure",
            "--num-games", "1", "--num-trials", "1", "--policy", "logprob", "--order-rotations", "3",
            "--seed", str(SEED), "--no-cache"],
        ("tmgbench", "uniform", ""): [
            "tmgbench", "run", "--model", "uniform", "--prompting", "DA", "--seed", str(SEED),
            "--games", "421,431,441,451,461,411,321,331,341,351,361,311"],
        ("tom", "tabular R-max", ""): [
            "tom", "baseline", "--game", "rps,ibs,ipd", "--partner", "single_action,tit_for_tat",
            "--episodes", "3", "--rounds", "4", "--seed", str(SEED)],
    }
    for i, ((suite, player, setting), args) in enumerate(hand.items()):
        out = tmp_path / str(i)
        r = cli(*args, "--output-dir", str(out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        (mine,) = [p.parent for p in out.rglob("run.json")]
        theirs = _run_of(card, suite, player, setting)
        assert records(mine) == records(theirs), (suite, player)
        assert strip(json.loads((mine / "summary.json").read_text())) == strip(
            json.loads((theirs / "summary.json").read_text())), (suite, player)
    # and the cells read those runs: the uniform player's PAR is the mean of its grids' PAR
    grids = json.loads((_run_of(card, "tmgbench", "uniform") / "grids.json").read_text())
    c = _cell(card, "chance", "tmgbench")
    assert c["value"] == pytest.approx(100 * sum(g["par"] for g in grids) / len(grids))
    assert c["n_units"] == len(grids) == 12


def test_a_finished_scorecard_resumed_is_unchanged_and_compares_to_zero(card, tmp_path):
    before = (card.folder / "scorecard.json").read_bytes()
    again = scorecard([], resume_dir=card.folder, report=False)
    assert (card.folder / "scorecard.json").read_bytes() == before
    assert again.scorecard == card.scorecard
    r = cli("compare", str(card.folder), str(card.folder), "--output", str(tmp_path / "cmp.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "cmp.json").read_text())["rows"]
    assert {r["suite"] for r in rows} == {"nashgap", "tmgbench", "chbench", "tom"}
    for row in rows:
        if row["a_status"] == "failed":  # nothing scored (the fake's TMGBench answers): no score, no difference
            assert row["diff"] is None and row["a"] is None
            continue
        assert row["diff"] == pytest.approx(0.0)
        if row["paired"]:
            assert row["diff_ci95"] == pytest.approx([0.0, 0.0]) and row["n_units"] > 0


def test_a_failing_model_is_failed_never_scored(tmp_path, cli_port_closed):
    r = cli("scorecard", "--model", FAKE, "--base-url", cli_port_closed, "--budget", "smoke", "--retries", "0",
            "--no-report", "--output-dir", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    (folder,) = list(tmp_path.glob("scorecard_*"))
    card = read_scorecard(folder)
    for c in card["cells"]:
        if c["player"] == FAKE:
            assert c["status"] == "failed" and c["counts"]["error"] > 0 and c["counts"]["scored"] == 0
            assert c["value"] is None and c["normalized"] is None
        elif c["player"] in ("chance", "optimal"):  # the references do not need the model
            assert c["normalized"] is not None
    assert "errors" in r.stderr


@pytest.fixture
def cli_port_closed():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}/v1"


def test_killed_scorecard_resumes_to_the_same_scorecard(card, tmp_path):
    with FakeOpenAIServer(latency_ms=15) as slow:
        env = dict(os.environ, CI="1")
        args = [sys.executable, "-m", "stratbench", "scorecard", "--model", FAKE, "--base-url", slow.base_url,
                "--budget", "smoke", "--seed", str(SEED), "--no-cache", "--no-report", "--output-dir", str(tmp_path)]
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        t0 = time.time()
        while time.time() - t0 < 120 and not list(tmp_path.glob("scorecard_*/tmgbench")):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        (folder,) = list(tmp_path.glob("scorecard_*"))
        assert not (folder / "scorecard.json").exists()
        # the URL is the resuming command's runtime setting only where the plan allows; the plan
        # (models, budget, seed) is the folder's
        r = cli("scorecard", "--resume", str(folder), "--no-report", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    want = strip(json.loads((card.folder / "scorecard.json").read_text()))
    got = strip(json.loads((folder / "scorecard.json").read_text()))
    assert _no_runs(got) == _no_runs(want)


def _no_runs(card: object) -> object:
    """Cells without their run folders' names (those carry the time they were made)."""
    assert isinstance(card, dict)
    return {**card, "cells": [{k: v for k, v in c.items() if k != "runs"} for c in card["cells"]]}


@pytest.mark.parametrize("args, message", [
    (["--budget", "huge"], "unknown --budget 'huge'"),
    (["--seed", "-1"], "--seed must be at least 0"),
    (["--model", "embedded", "--model", "embedded"], "twice"),
    (["--model", "nosuchkind:x"], "nosuchkind"),
    (["--model", "nash"], "--model 'nash' is a reference (scripted) player: the scorecard runs the reference players"),
    (["--model", "level-k:2"], "--model 'level-k:2' is a reference (scripted) player"),
    (["--resume", "/nonexistent/folder"], "not a scorecard folder"),
    (["--resume", ".", "--budget", "quick"], "drop --model"),
])
def test_bad_flags_are_one_line_and_leave_no_folder(tmp_path, args, message):
    r = cli("scorecard", *args, "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists()


def test_compare_refuses_a_scorecard_against_a_run(card, tmp_path):
    run = _run_of(card, "tmgbench", "uniform")
    r = cli("compare", str(card.folder), str(run), cwd=tmp_path)
    assert r.returncode == 2 and "not a scorecard folder" in r.stderr


def test_python_api_refuses_bad_budget_before_any_folder(tmp_path):
    with pytest.raises(InputError, match="budget"):
        scorecard(["embedded"], budget="nope", output_dir=tmp_path / "x")
    assert not (tmp_path / "x").exists()


# -- issue 20: refusals leave nothing, failed cells are never scored, compare checks the records ---


@pytest.mark.parametrize("args, env_drop, message", [
    (["--model", "gguf:/nonexistent.gguf"], None, "no such GGUF file /nonexistent.gguf"),
    (["--model", "openai-compatible:x"], None, "--base-url is required"),
    (["--model", "openai:gpt-4o"], "OPENAI_API_KEY", "set OPENAI_API_KEY"),
    (["--model", "embedded", "--model", "gguf:/nonexistent.gguf"], None, "no such GGUF file"),
])
def test_a_model_that_cannot_be_opened_is_one_line_and_leaves_no_folder(tmp_path, args, env_drop, message):
    env = {k: v for k, v in os.environ.items() if k != env_drop}
    r = subprocess.run([sys.executable, "-m", "stratbench", "scorecard", *args, "--budget", "smoke",
                        "--output-dir", str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120, env=dict(env, CI="1"))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and message in r.stderr, r.stderr
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("model, message", [
    ('"gguf:/nonexistent.gguf"', "no such GGUF file"),
    ('"openai-compatible:x"', "--base-url is required"),
])
def test_a_suite_file_whose_model_cannot_be_opened_leaves_no_folder(tmp_path, model, message):
    (tmp_path / "s.toml").write_text(f'models = ["embedded", {model}]\n\n[nashgap]\nnum_games = 2\n')
    r = cli("suite", "run", "s.toml", "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    assert r.stderr.startswith("error: s.toml: models: "), r.stderr  # the file whose models they are
    assert not (tmp_path / "out").exists()


def test_a_refusal_after_the_folder_exists_removes_it(tmp_path, monkeypatch):
    """Belt and braces: should a run refuse before it has a folder of its own (a check only the run
    makes), the scorecard's new folder goes too; nothing is left that could not be resumed."""
    import stratbench.workflows.scorecard as sc

    def refuse(*a, **k):
        raise InputError("refused by the run")

    monkeypatch.setattr(sc, "check_job_models", lambda jobs: None)
    monkeypatch.setattr(sc, "run_jobs", refuse)
    with pytest.raises(InputError, match="refused by the run"):
        scorecard(["embedded"], budget="smoke", output_dir=tmp_path / "out", report=None)
    assert not (tmp_path / "out").exists()  # nor the output folder the scorecard made for it


def test_a_model_that_answers_nothing_parseable_is_failed_not_scored(card, tmp_path):
    """The fake model's sampled TMGBench answers are random characters: none parses. The cell is
    `failed` — no value, no score, no CI, no units — in scorecard.json, scorecard.csv, the table,
    the report and compare (never a score computed from unread answers counted as wrong)."""
    c = _cell(card, FAKE, "tmgbench")
    assert c["counts"] == {"scored": 0, "parse_failed": 12, "error": 0}
    assert c["status"] == "failed" and c["n_units"] == 0
    assert c["value"] is None and c["ci95"] is None and c["normalized"] is None and c["normalized_ci95"] is None
    (row,) = [row for row in csv.DictReader((card.folder / "scorecard.csv").open())
              if row["player"] == FAKE and row["suite"] == "tmgbench"]
    assert row["status"] == "failed" and row["value"] == row["normalized"] == row["normalized_ci95_low"] == ""
    html = (card.folder / "report" / "index.html").read_text()
    assert "failed (0 errors, 12 unparsed)" in html
    out = tmp_path / "cmp.json"
    r = cli("compare", str(card.folder), str(card.folder), "--output", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "failed" in r.stdout
    (cmp_row,) = [x for x in json.loads(out.read_text())["rows"] if x["suite"] == "tmgbench"]
    assert cmp_row["a"] is None and cmp_row["diff"] is None and cmp_row["a_status"] == "failed"
    assert not cmp_row["paired"] and cmp_row["n_units"] == 0
    # the command's table says so, and parse failures alone (no failed call) keep exit code 0
    r = cli("scorecard", "--resume", str(card.folder), "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"cells failed (nothing scored, no score): {FAKE} on tmgbench" in " ".join(r.stderr.split())
    assert "failed" in r.stdout


def _edited(card, tmp_path: Path, edit) -> Path:
    """A copy of the card's folder whose scorecard.json is edited by `edit(cells)`."""
    import shutil

    copy = tmp_path / "edited"
    shutil.copytree(card.folder, copy)
    data = json.loads((copy / "scorecard.json").read_text())
    edit(data)
    (copy / "scorecard.json").write_text(json.dumps(data))
    return copy


def _model_cell(data: dict, suite: str = "nashgap") -> dict:
    (c,) = [c for c in data["cells"] if c["player"] == FAKE and c["suite"] == suite]
    return c


def _set(key, value, suite="nashgap"):
    def edit(data):
        _model_cell(data, suite)[key] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("normalized", 99.0), "normalized 99.0 disagrees with its records"),
    (_set("normalized_ci95", [-50.0, 150.0], "tom"), "normalized_ci95 [-50.0, 150.0] disagrees with its records"),
    (_set("status", "errors", "chbench"), "status 'errors' disagrees with its records ('ok')"),
    (lambda d: _model_cell(d, "tmgbench").update(status="errors", value=7.0, normalized=-7.0),
     "status 'errors' disagrees with its records ('failed')"),
    (_set("normalized", float("nan")), "normalized nan is not a finite number"),
    (_set("value", float("inf")), "value inf is not a finite number"),
    (_set("normalized", "42"), "normalized '42' is not a finite number"),
    (_set("ci95", ["a", "b"]), "is not two finite numbers"),
    (_set("n_units", -3), "n_units -3 is not a count"),
    (lambda d: d["cells"].clear(), "no cell for"),
    (lambda d: d["cells"].pop(), "no cell for"),
    (lambda d: d["cells"].append(dict(d["cells"][0])), "a cell is given twice"),
    (lambda d: _model_cell(d).pop("normalized"), "has no 'normalized'"),
    (lambda d: d["cells"].__setitem__(0, {}), "has no 'player'"),
])
def test_compare_refuses_a_scorecard_json_that_is_not_its_records(card, tmp_path, edit, message):
    copy = _edited(card, tmp_path, edit)
    for a, b in ((copy, card.folder), (card.folder, copy)):
        r = cli("compare", str(a), str(b), "--output", str(tmp_path / "cmp.json"), cwd=tmp_path)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "cmp.json").exists()


def test_compare_takes_a_scorecard_within_float_tolerance_and_shows_the_records(card, tmp_path):
    copy = _edited(card, tmp_path, lambda d: _model_cell(d).update(normalized=_model_cell(d)["normalized"] * (1 + 1e-9)))
    out = tmp_path / "cmp.json"
    r = cli("compare", str(card.folder), str(copy), "--output", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (row,) = [x for x in json.loads(out.read_text())["rows"] if x["suite"] == "nashgap"]
    assert row["a"] == row["b"] == _cell(card, FAKE, "nashgap")["normalized"]  # the records' number, not the file's


def test_an_edited_scorecard_json_is_rewritten_from_its_records_by_resume(card, tmp_path):
    copy = _edited(card, tmp_path, _set("normalized", 99.0))
    r = cli("scorecard", "--resume", str(copy), "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((copy / "scorecard.json").read_text()) == json.loads((card.folder / "scorecard.json").read_text())
    r = cli("compare", str(card.folder), str(copy), cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_compare_allow_partial_is_refused_for_scorecards(card, tmp_path):
    r = cli("compare", str(card.folder), str(card.folder), "--allow-partial", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: --allow-partial: compares unfinished runs of one suite, not scorecards; finish a scorecard with "
        "stratbench scorecard --resume FOLDER, then compare"]


def test_think_tags_reach_every_suites_runs_of_the_model_and_are_saved(tmp_path):
    """--think-tags on the scorecard: each suite's runs of the model read its answers after the
    given tags (the thinking in the records' reasoning, never parsed), the scorecard's saved models
    hold them (a resume keeps them and refuses the flag), and a bad value is one line, no folder."""
    reply = "<reasoning>If I choose Action: 0 they answer 1</reasoning>\n\nAction: 1"
    with FakeOpenAIServer(canned_text=reply) as s:
        res = scorecard([FAKE], budget="smoke", seed=SEED, output_dir=tmp_path, base_url=s.base_url, no_cache=True,
                        chat=True, think_tags="<reasoning>,</reasoning>", report=False)
    meta = json.loads((res.folder / "suite_metadata.json").read_text())
    assert meta["config"]["models"][0]["think_tags"] == "<reasoning>,</reasoning>"
    runs = [r for r in meta["runs"] if r["player"] == FAKE]
    assert {SUITES.get(r["registry"]).family for r in runs} >= {"nashgap", "tmgbench", "chbench", "tom"}
    for r in runs:
        assert json.loads((res.folder / r["folder"] / "run.json").read_text())["config"]["think_tags"] == \
            "<reasoning>,</reasoning>"
    ng = [r for r in runs if SUITES.get(r["registry"]).family == "nashgap"]
    recs = [json.loads(x) for r in ng for f in (res.folder / r["folder"]).glob("trials*.jsonl")
            for x in f.read_text().splitlines()]
    assert recs and all(x["raw_response"] == "Action: 1" and x["reasoning"].startswith("If I choose") for x in recs)
    r = cli("scorecard", "--resume", str(res.folder), "--think-tags", "<a>,</a>", cwd=tmp_path)
    assert r.returncode == 2 and "--think-tags" in r.stderr, r.stderr
    r = cli("scorecard", "--model", FAKE, "--base-url", "http://127.0.0.1:9/v1", "--think-tags", "<a>",
            "--output-dir", str(tmp_path / "x"), cwd=tmp_path)
    assert r.returncode == 2 and "--think-tags" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "x").exists()


def test_reasoning_effort_reaches_every_generation_request_of_the_model_and_is_saved(tmp_path):
    """--reasoning-effort on the scorecard: the HTTP model's generation requests carry it in every
    suite, the scorecard's saved models hold it (a resume keeps it and refuses another), and a
    scorecard of local models only refuses it in one line before any folder."""
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        res = scorecard([FAKE], budget="smoke", seed=SEED, output_dir=tmp_path, base_url=s.base_url, no_cache=True,
                        chat=True, reasoning_effort="low", report=False)
        gen = [q.body for q in s.requests if q.path.endswith("chat/completions")]
    assert gen and all(b.get("reasoning_effort") == "low" for b in gen)
    assert {SUITES.get(r["registry"]).family for r in json.loads((res.folder / "suite_metadata.json").read_text())["runs"]
            if r["player"] == FAKE} >= {"nashgap", "tmgbench", "chbench", "tom"}
    meta = json.loads((res.folder / "suite_metadata.json").read_text())
    assert meta["config"]["models"][0]["reasoning_effort"] == "low"
    runs = [r for r in meta["runs"] if r["player"] == FAKE]
    for r in runs:
        assert json.loads((res.folder / r["folder"] / "run.json").read_text())["config"]["reasoning_effort"] == "low"
    r = cli("scorecard", "--resume", str(res.folder), "--reasoning-effort", "high", cwd=tmp_path)
    assert r.returncode == 2 and "--reasoning-effort" in r.stderr, r.stderr
    r = cli("scorecard", "--model", "embedded", "--reasoning-effort", "high", "--output-dir", str(tmp_path / "x"),
            cwd=tmp_path)
    assert r.returncode == 2 and "--reasoning-effort applies to HTTP models" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_a_scorecard_resumes_against_a_server_that_moved(card, tmp_path):
    """--base-url given to a resumed scorecard says where its models are served now (a runtime
    setting, as for a resumed run): the scorecard stopped mid-way (the server refused a key) finishes
    against the new server with the scorecard of an uninterrupted run. The URL is not saved: an
    interruption of that resume names it again in its "continue with" line."""
    with FakeOpenAIServer() as old:
        old_url = old.base_url
        old.script(*["ok"] * 10, *["401"] * 60)
        r = cli("scorecard", "--model", FAKE, "--base-url", old.base_url, "--budget", "smoke", "--seed", str(SEED),
                "--no-cache", "--no-report", "--retries", "0", "--output-dir", str(tmp_path), cwd=tmp_path)
        assert r.returncode == 2 and "HTTP 401" in r.stderr, r.stderr
    (folder,) = list(tmp_path.glob("scorecard_*"))
    assert not (folder / "scorecard.json").exists()
    with FakeOpenAIServer() as new:
        r = cli("scorecard", "--resume", str(folder), "--base-url", new.base_url, "--no-report", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert new.requests
    want = strip(json.loads((card.folder / "scorecard.json").read_text()))
    got = strip(json.loads((folder / "scorecard.json").read_text()))
    assert _no_runs(got) == _no_runs(want)
    saved = json.loads((folder / "suite_metadata.json").read_text())["config"]["models"]
    assert [m["base_url"] for m in saved] == [old_url]


def test_the_continue_line_of_a_resume_names_its_new_base_url(tmp_path):
    import typer

    from stratbench.cli.main import _resume_hint, app

    command = typer.main.get_command(app)
    folder = tmp_path / "scorecard_1"
    folder.mkdir()
    (folder / "suite_metadata.json").write_text("{}")
    hint = _resume_hint(command, ["scorecard", "--resume", str(folder), "--base-url", "http://h2:81/v1"], [folder])
    assert hint.endswith(f"continue with: stratbench scorecard --resume {folder} --base-url http://h2:81/v1"), hint
    assert "credentials" not in hint
    hint = _resume_hint(command, ["scorecard", "--model", "m", "--base-url", "http://h2:81/v1"], [folder])
    assert hint.endswith(f"continue with: stratbench scorecard --resume {folder}"), hint


def test_max_tokens_is_every_suites_output_budget_for_the_model_and_is_saved(tmp_path):
    """--max-tokens on the scorecard: every generated answer of the model (each suite's own default
    otherwise: 384-1024, too little for a reasoning model's thinking) is asked with it; the
    scorecard saves it (a resume keeps it and refuses the flag); a bad value is one line, no folder."""
    with FakeOpenAIServer() as s:
        res = scorecard([FAKE], budget="smoke", seed=SEED, output_dir=tmp_path, base_url=s.base_url, no_cache=True,
                        chat=True, max_tokens=3000, report=False)
        asked = [r.body.get("max_tokens") or r.body.get("max_completion_tokens") for r in s.requests
                 if r.path.endswith("/chat/completions") and isinstance(r.body, dict)]
    assert asked and set(asked) == {3000}, sorted(set(asked))
    meta = json.loads((res.folder / "suite_metadata.json").read_text())
    assert meta["config"]["models"][0]["max_tokens"] == 3000
    runs = [r for r in meta["runs"] if r["player"] == FAKE]
    assert {SUITES.get(r["registry"]).family for r in runs} >= {"nashgap", "tmgbench", "chbench", "tom"}
    r = cli("scorecard", "--resume", str(res.folder), "--max-tokens", "10", cwd=tmp_path)
    assert r.returncode == 2 and "--max-tokens" in r.stderr, r.stderr
    r = cli("scorecard", "--model", FAKE, "--base-url", "http://127.0.0.1:9/v1", "--max-tokens", "0",
            "--output-dir", str(tmp_path / "x"), cwd=tmp_path)
    assert r.returncode == 2 and "--max-tokens" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "x").exists()
