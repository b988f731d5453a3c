"""The command line as a user meets it: flags, exit codes, one-line errors, no partial folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratbench.runner.jsonl import read_jsonl

BASE = ["nashgap", "--num-games", "10", "--num-trials", "10", "--seed", "42", "--quiet"]


def decisions(folder: Path, name: str):
    return [(r["game_id"], r["trial_id"], r["llm_decision"], r["nash_gap"], r["exploitability"])
            for r in read_jsonl(folder / name)]


def only_folder(out: Path) -> Path:
    (folder,) = list(out.iterdir())
    return folder


def test_dummy_runs_and_is_reproducible_across_workers(tmp_path, cli):
    runs = {}
    for name, extra in {"serial": [], "parallel": ["--parallel", "--num-workers", "8"]}.items():
        out = tmp_path / name
        r = cli(*BASE, "--llm-type", "dummy", "--output-dir", str(out))
        assert r.returncode == 0, r.stderr
        runs[name] = only_folder(out)
        assert runs[name].name.startswith("run_")
        assert str(runs[name]) in r.stdout
    assert decisions(runs["serial"], "trials.jsonl") == decisions(runs["parallel"], "trials.jsonl")


def test_combined_mixed_and_run_verb(tmp_path, cli):
    r = cli(*BASE, "--llm-type", "dummy", "--combined", "--output-dir", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    folder = only_folder(tmp_path / "c")
    assert (folder / "trials_mixed_strategy.jsonl").exists()
    r = cli("nashgap", "run", *BASE[1:], "--llm-type", "dummy", "--mixed-strategy",
            "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    recs = read_jsonl(only_folder(tmp_path / "m") / "trials.jsonl")
    assert all(isinstance(x["llm_decision"], list) for x in recs)


def test_table_printed_without_quiet(tmp_path, cli):
    r = cli("nashgap", "--num-games", "5", "--num-trials", "2", "--seed", "1", "--llm-type", "nash",
            "--output-dir", str(tmp_path))
    assert r.returncode == 0
    assert "exploitability" in r.stdout and "nash" in r.stdout


BAD_GAMES = {
    "nan": '[{"payoff_matrix": [[1, NaN], [0, 1]]}]',
    "ragged": '[{"payoff_matrix": [[1, 2], [3]]}]',
    "text": '[{"payoff_matrix": [[1, "two"], [3, 4]]}]',
    "zero_actions": '[{"payoff_matrix": []}]',
    "zero_cols": '[{"payoff_matrix": [[], []]}]',
    "not_json": "payoff_matrix: [[1, 2]]",
}


@pytest.mark.parametrize("kind", sorted(BAD_GAMES))
def test_bad_games_file_one_line_exit_2_no_folder(tmp_path, cli, kind):
    f = tmp_path / f"{kind}.json"
    f.write_text(BAD_GAMES[kind])
    out = tmp_path / "out"
    r = cli(*BASE, "--games-file", str(f), "--output-dir", str(out))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and str(f) in lines[0]
    assert "Traceback" not in r.stderr + r.stdout
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--num-trials", "0"], "--num-trials"),
        (["--llm-type", "bogus"], "bogus"),
        (["--bucket", "5x5_huge"], "5x5_huge"),
        (["--num-rows", "0"], "--num-rows"),
        (["--frobnicate"], "--frobnicate"),
        (["--num-games", "ten"], "--num-games"),
        (["--resume", "/nonexistent/folder"], "/nonexistent/folder"),
    ],
)
def test_bad_flags_one_line_exit_2(tmp_path, cli, args, needle):
    out = tmp_path / "out"
    r = cli("nashgap", "--num-games", "3", "--seed", "1", "--output-dir", str(out), *args)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists() or not any(out.iterdir())


def test_bad_input_does_not_touch_earlier_results(tmp_path, cli):
    out = tmp_path / "out"
    assert cli(*BASE, "--llm-type", "nash", "--combined", "--overwrite", "--output-dir", str(out)).returncode == 0
    latest = out / "pure_and_mixed_latest"
    before = {p.name: p.read_bytes() for p in latest.iterdir()}
    r = cli(*BASE, "--llm-type", "nope", "--combined", "--overwrite", "--output-dir", str(out))
    assert r.returncode == 2
    assert {p.name: p.read_bytes() for p in latest.iterdir()} == before


def test_games_file_roundtrip(tmp_path, cli):
    out = tmp_path / "a"
    assert cli(*BASE, "--llm-type", "nash", "--output-dir", str(out)).returncode == 0
    games = only_folder(out) / "games.json"
    r = cli("nashgap", "--games-file", str(games), "--num-trials", "2", "--llm-type", "nash",
            "--quiet", "--output-dir", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    again = json.loads((only_folder(tmp_path / "b") / "games.json").read_text())
    first = json.loads(games.read_text())
    assert [g["payoff_matrix"] for g in again] == [g["payoff_matrix"] for g in first]
    assert [g["value"] for g in again] == pytest.approx([g["value"] for g in first], abs=1e-12)


def test_resume_finished_run_is_noop(tmp_path, cli):
    out = tmp_path / "out"
    assert cli(*BASE, "--llm-type", "random", "--output-dir", str(out)).returncode == 0
    folder = only_folder(out)
    before = decisions(folder, "trials.jsonl")
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    assert decisions(folder, "trials.jsonl") == before
