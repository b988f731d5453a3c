"""Folders written by the previous release (result format 1: run.json without ``format_version``)
still resume, merge, compare and report — read through `runner.folders.migrate_run_json`, not by
sniffing keys. The folders in data/v1_folders were written by stratbench before format 2 (a
scripted Nash-gap run: two shards, the whole run, and a copy of it cut after 3 of its 8 records
with its status set back to running, as a kill leaves it). A newer format is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import run_records
from scenarios import DATA

from stratbench.runner.schema import FORMAT_VERSION

V1 = DATA / "v1_folders"


@pytest.fixture
def old(tmp_path: Path) -> Path:
    shutil.copytree(V1, tmp_path / "v1")
    for run_json in (tmp_path / "v1").rglob("run.json"):
        assert "format_version" not in json.loads(run_json.read_text())  # what the old release wrote
    return tmp_path / "v1"


def _one(folder: Path) -> Path:
    (run,) = folder.iterdir()
    return run


def test_an_interrupted_old_run_resumes_to_the_uninterrupted_records(old, cli):
    cut, whole = _one(old / "interrupted"), _one(old / "whole")
    r = cli("nashgap", "--resume", str(cut), "--quiet")
    assert r.returncode == 0, r.stderr
    assert run_records.records(cut) == run_records.records(whole)
    meta = json.loads((cut / "run.json").read_text())
    assert meta["status"] == "finished" and meta["format_version"] == FORMAT_VERSION


def test_old_shards_merge_compare_and_report(old, cli, tmp_path):
    r = cli("merge", *map(str, sorted((old / "shards").iterdir())), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    merged = Path(r.stdout.strip().splitlines()[-1])
    assert run_records.records(merged) == run_records.records(_one(old / "whole"))
    r = cli("compare", str(_one(old / "whole")), str(merged))
    assert r.returncode == 0, r.stderr
    r = cli("report", str(old), "--output", str(tmp_path / "report"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr  # old summaries agree with their records
    assert (tmp_path / "report" / "index.html").is_file()


def test_a_newer_format_is_refused_in_one_line(old, cli):
    run = _one(old / "whole")
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "format_version": FORMAT_VERSION + 1}))
    r = cli("compare", str(run), str(_one(old / "interrupted")))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"error: {run}/run.json: written in result format {FORMAT_VERSION + 1} by a newer "
                                f"stratbench; this one reads formats up to {FORMAT_VERSION} (upgrade stratbench)")
