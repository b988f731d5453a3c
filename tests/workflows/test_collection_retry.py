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
