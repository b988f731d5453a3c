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
    no_count = [a for i, a in enumerate(BASE) if a != "--num-games" and BASE[i - 1] != "--num-games"]  # (the file's)
    r = cli(*no_count, "--games-file", str(f), "--output-dir", str(out))
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
        (["--resume", "/nonexistent/folder"], "--num-games, --seed, --output-dir: --resume finishes the run"),
        (["--seed", "-1"], "--seed must be at least 0 (got -1)"),
        (["--llm-seed", "-1"], "--llm-seed must be at least 0 (got -1)"),
        (["--seed", str(2**63)], "--seed must be at most"),
        (["--temperature", "nan"], "--temperature must be a finite number"),
        (["--temperature", "inf"], "--temperature must be a finite number"),
        (["--temperature", "-1"], "--temperature must be at least 0"),
        (["--max-tokens", "0"], "--max-tokens must be at least 1 (got 0)"),
        (["--max-tokens", "-1"], "--max-tokens must be at least 1 (got -1)"),
        (["--max-concurrency", "0"], "--max-concurrency must be at least 1 (got 0)"),
        (["--model", ""], "--model must not be empty"),
        (["--num-games", "1000000000000"], "--num-games must be at most 100000 (got 1000000000000)"),
        (["--num-trials", "1000000000000"], "--num-trials must be at most 100000 (got 1000000000000)"),
        (["--num-games", "100000", "--num-trials", "1000"], "units of work"),
        (["--decimals", "11"], "--decimals must be at most 10"),
        (["--payoff-min", "-1e300", "--payoff-max", "1e300"], "--payoff-min must be at least"),
        (["--order-rotations", "0"], "--order-rotations must be at least 1"),
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


def test_games_file_beyond_ten_decimals_one_line_exit_2(tmp_path, cli):
    f = tmp_path / "g.json"
    f.write_text('[{"payoff_matrix": [[0.33333333333333331, 0], [0, 1]]}]')
    out = tmp_path / "out"
    r = cli("nashgap", "--games-file", str(f), "--llm-type", "random", "--output-dir", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert str(f) in line and "more than 10 decimals" in line and "--decimals N" in line
    assert not out.exists()
    r = cli("nashgap", "--games-file", str(f), "--decimals", "3", "--llm-type", "random", "--num-trials", "1",
            "--quiet", "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    games = json.loads((only_folder(out) / "games.json").read_text())
    assert games[0]["payoff_matrix"] == [[0.333, 0.0], [0.0, 1.0]]


def test_help_names_the_originals_payoff_range_and_decimals_default(cli):
    r = cli("nashgap", "--help")
    text = " ".join(r.stdout.split())
    assert "default: -100.0" in text and "default: 100.0" in text and "-100 to 100" in text
    assert "a games file's own precision" in text
