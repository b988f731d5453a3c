"""A collection's failed calls are tried again by its own resume, as a run's are by the run's
resume (fuzz 26 A F1: `scorecard --resume` kept them, and the one command that retried them — the
inner run's own --resume — left the scorecard refused as "edited" for good)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture()
def flaky_server():
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(fault_rate=0.3, fault_kinds=("500",), fault_seed=1) as s:
        yield s


def _errors(folder: Path) -> int:
    return sum(json.loads(line).get("status") == "error" for f in folder.rglob("*.jsonl")
               for line in f.read_text().splitlines() if line.strip())


def _listed(folder: Path) -> list[dict]:
    return json.loads((folder / "suite_metadata.json").read_text())["runs"]


def test_a_scorecards_resume_tries_its_failed_calls_again(tmp_path, cli, flaky_server):
    args = ["scorecard", "--model", "openai-compatible:m", "--base-url", flaky_server.base_url, "--budget", "smoke",
            "--seed", "2", "--retries", "0", "--no-report", "--quiet"]
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    (folder,) = (tmp_path / "o").iterdir()
    assert r.returncode == 1 and _errors(folder) > 0, r.stderr
    assert f"stratbench scorecard --resume {folder} tries them again" in r.stderr, r.stderr
    errored = next(e for e in _listed(folder) if e.get("errors") and e["suite"] == "nashgap")
    inner = folder / errored["folder"]
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    # the run on its own: refused (the scorecard's table and entry would no longer be its records')
    r = cli("nashgap", "--resume", str(inner))
    assert r.returncode == 2 and r.stderr == (
        f"error: --resume {inner}: a finished run of the scorecard {folder}, which lists it as finished; resume the "
        f"scorecard instead (stratbench scorecard --resume {folder}: it tries the run's failed calls again and writes "
        "its tables anew); the folder is left as it is\n"), r.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    for link, target in (("to-run", inner), ("to-scorecard", folder)):  # (found by where it is: fuzz 27 F4)
        (tmp_path / link).symlink_to(target)
    for via in (tmp_path / "to-run", tmp_path / "to-scorecard" / errored["folder"]):
        r = cli("nashgap", "--resume", str(via))
        assert r.returncode == 2 and "a finished run of the scorecard " in r.stderr, r.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    flaky_server.fault_rate = 0.0  # the server is well again
    r = cli("scorecard", "--resume", str(folder), "--quiet")
    assert r.returncode == 0 and "errored records are tried again" in r.stderr, r.stderr
    assert _errors(folder) == 0 and not any(e.get("errors") for e in _listed(folder))
    card = json.loads((folder / "scorecard.json").read_text())
    assert all(c["counts"]["error"] == 0 for c in card["cells"])
    # the same as a scorecard that never failed (records and cells, but for times)
    r = cli(*args, "--output-dir", str(tmp_path / "clean"))
    assert r.returncode == 0, r.stderr
    (clean,) = (tmp_path / "clean").iterdir()
    import run_records

    def cells(f: Path) -> list[dict]:  # (but for the run folders' names, which hold their start times)
        card = run_records.strip(json.loads((f / "scorecard.json").read_text()), run_records.VOLATILE)
        return [{k: v for k, v in c.items() if k != "runs"} for c in card["cells"]]

    assert cells(folder) == cells(clean)
    r = cli("compare", str(folder), str(clean))
    assert r.returncode == 0, r.stderr


def test_a_suite_files_resume_tries_its_failed_calls_again(tmp_path, cli, flaky_server):
    (tmp_path / "s.toml").write_text(f'seeds = [1]\nmodels = ["openai-compatible:m"]\n[nashgap]\nnum_games = 4\n'
                                     f'num_trials = 2\nbase_url = "{flaky_server.base_url}"\nretries = 0\n')
    r = cli("suite", "run", str(tmp_path / "s.toml"), "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
    (folder,) = (tmp_path / "o").iterdir()
    assert r.returncode == 1 and _errors(folder) > 0, r.stderr
    assert f"stratbench suite run --resume {folder} tries them again" in r.stderr, r.stderr
    flaky_server.fault_rate = 0.0
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 0 and _errors(folder) == 0, r.stderr
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["status"] == "finished" and meta["totals"]["errors"] == 0 and (folder / "runs.csv").is_file(), meta
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_trends_resume_tries_its_checkpoints_failed_calls_again(tmp_path, cli, flaky_server):
    """(fuzz 27 F5: a checkpoint's scorecard resumed on its own left trend.json's numbers stale, and
    `trend --resume` kept the failed calls, exit 0)"""
    r = cli("trend", "--model", "openai-compatible:ckpt-1000", "--model", "openai-compatible:ckpt-2000",
            "--step-from", r"ckpt-(\d+)", "--base-url", flaky_server.base_url, "--retries", "0", "--budget", "smoke",
            "--no-report", "--quiet", "--output-dir", str(tmp_path / "o"))
    (trend,) = (tmp_path / "o").iterdir()
    assert r.returncode == 1 and f"stratbench trend --resume {trend} tries them again" in r.stderr, r.stderr
    (card,) = (trend / "ckpt_1000").iterdir()
    before = {p: p.read_bytes() for p in trend.rglob("*") if p.is_file()}
    r = cli("scorecard", "--resume", str(card), "--base-url", flaky_server.base_url)
    assert r.returncode == 2 and r.stderr == (
        f"error: --resume {card}: a finished scorecard of the trend {trend}, which lists it as finished; resume the "
        f"trend instead (stratbench trend --resume {trend}: it tries the scorecard's failed calls again and writes "
        "its tables anew); the folder is left as it is\n"), r.stderr
    assert {p: p.read_bytes() for p in trend.rglob("*") if p.is_file()} == before
    flaky_server.fault_rate = 0.0
    r = cli("trend", "--resume", str(trend), "--base-url", flaky_server.base_url, "--no-report", "--quiet")
    assert r.returncode == 0 and _errors(trend) == 0, r.stderr
    saved = json.loads((trend / "trend.json").read_text())
    cells = [c for f in trend.glob("ckpt_*/scorecard_*/scorecard.json") for c in json.loads(f.read_text())["cells"]]
    assert all(c["counts"]["error"] == 0 for c in cells)
    points = [p for suite in saved["suites"] for p in suite["points"]]
    assert points and all(p["status"] != "errors" for p in points), points  # (trend.json written from the retried cells)
    r = cli("report", str(trend), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_tiered_suites_finished_run_is_not_resumed_on_its_own(tmp_path, cli):
    """(fuzz 27 F3: accepted, and the report then withheld the whole tiered suite as edited by hand)"""
    r = cli("suite", "tiered", "--use-dummy", "--num-games-per-bucket", "2", "--num-trials", "2", "--seeds", "42",
            "--bucket-ids", "2x2_lowVar_pure", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (suite,) = (tmp_path / "o").iterdir()
    run = suite / _listed(suite)[0]["folder"]
    before = {p: p.read_bytes() for p in suite.rglob("*") if p.is_file()}
    r = cli("nashgap", "--resume", str(run))
    assert r.returncode == 2 and r.stderr == (
        f"error: --resume {run}: a finished run of the tiered suite {suite}, which lists it as finished; resume the "
        f"tiered suite instead (stratbench suite tiered --resume {suite}); the folder is left as it is\n"), r.stderr
    assert {p: p.read_bytes() for p in suite.rglob("*") if p.is_file()} == before
