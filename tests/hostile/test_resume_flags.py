"""Flags beside --resume on a run command: the resumed run keeps the settings saved in its folder,
so a flag that would change what it plays is one line naming it, exit 2, the folder unchanged —
never silently ignored. The flags a resume does take (the server, timeouts, concurrency, the cache,
--quiet, --dry-run, --max-cost, --price-table) still pass."""

from __future__ import annotations

import json

import pytest
import typer

from stratbench.cli.main import app
from stratbench.cli.resume_flags import GUARDED, TAKEN, guard_run_commands


def _tree() -> dict[str, list[str]]:
    """Every command with a --resume: its words → its parameters' names."""
    out: dict[str, list[str]] = {}

    def walk(cmd, words):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*words, name])
        elif any(p.name == "resume" for p in cmd.params):
            out[" ".join(words)] = [p.name for p in cmd.params]

    from stratbench.cli import suite as _suite  # noqa: F401 - registers the suite commands

    walk(typer.main.get_command(app), [])
    return out


def test_every_run_command_with_resume_is_guarded_or_refuses_its_own_flags():
    """A new run command must be added to GUARDED (or refuse its flags itself, as these do)."""
    own = {"scorecard", "trend", "suite run", "suite tiered"}  # refuse or take their own: tests of their own
    assert set(_tree()) == {" ".join(w) for w in GUARDED} | own


def test_the_guard_wraps_each_guarded_command_once():
    root = typer.main.get_command(app)
    guard_run_commands(root)
    guard_run_commands(root)
    for words in GUARDED:
        cmd = root
        for w in words:
            cmd = cmd.commands[w]
        assert cmd._resume_guarded


@pytest.mark.parametrize("words, flags, named", [
    (["nashgap"], ["--num-games", "5", "--seed", "3"], "--num-games, --seed:"),
    (["nashgap", "run"], ["--model", "random"], "--model:"),
    (["tmgbench", "run"], ["--repeats", "2"], "--repeats:"),
    (["tmgbench", "stories", "generate"], ["--variants", "2"], "--variants:"),
    (["chbench", "run"], ["--rounds", "3"], "--rounds:"),
    (["tom", "run"], ["--rounds", "3", "--output-dir", "elsewhere"], "--rounds, --output-dir:"),
    (["tom", "baseline"], ["--episodes", "3"], "--episodes:"),
])
def test_a_flag_the_resume_would_ignore_is_one_line_exit_2(cli, tmp_path, words, flags, named):
    r = cli(*words, "--resume", str(tmp_path / "no_such_run"), *flags, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"error: {named} --resume finishes the run in its folder"), line
    assert "would be ignored; drop" in line and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_real_run_resumed_with_an_ignored_flag_is_unchanged_and_a_taken_flag_resumes(cli, tmp_path):
    r = cli("nashgap", "--model", "random", "--num-games", "2", "--num-trials", "2", "--quiet", "--output-dir", "r",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "r").iterdir()
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    r = cli("nashgap", "--resume", str(folder), "--num-games", "50", cwd=tmp_path)
    assert r.returncode == 2 and "--num-games:" in r.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    r = cli("nashgap", "--resume", str(folder), "--timeout", "5", "--max-concurrency", "2", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_the_flags_a_resume_takes_are_runtime_settings():
    from stratbench.runner.lifecycle import RUNTIME_KEYS

    assert set(RUNTIME_KEYS) <= TAKEN
    assert TAKEN - set(RUNTIME_KEYS) == {"resume", "quiet", "dry_run", "max_cost", "price_table", "chat_template"}


@pytest.mark.parametrize("args", [
    ("scorecard", "--resume", "S", "--output-dir", "elsewhere"),
    ("trend", "--resume", "T", "--output-dir", "elsewhere"),
    ("trend", "--add", "T", "--model", "random", "--step", "9", "--output-dir", "elsewhere"),
])
def test_output_dir_beside_a_folder_the_command_continues_is_refused(tmp_path, cli, args):
    """(fuzz 13 A E2: taken and ignored, exit 0)"""
    (tmp_path / args[2]).mkdir()
    r = cli(*args, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--output-dir" in r.stderr and "drop it" in r.stderr, r.stderr
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("args", [("scorecard", "--resume", "S"), ("trend", "--resume", "T")])
def test_a_resumes_base_url_is_checked_even_with_nothing_left_to_run(tmp_path, cli, args):
    """A finished folder opens no model: the URL is checked as a run checks it (fuzz 13 A E2)."""
    (tmp_path / args[2]).mkdir()
    r = cli(*args, "--base-url", "http://127.0.0.1:0/v1", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "port 0 is outside 1-65535" in r.stderr, r.stderr


def test_a_price_table_beside_a_resume_is_read_and_refused_where_it_would_be_ignored(tmp_path, cli):
    """Without --max-cost too (fuzz 13 A E1: a missing, broken or other table was taken and ignored)."""
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"random": {"input_per_million": 1, "output_per_million": 1}}))
    (tmp_path / "other.json").write_text(prices.read_text())
    (tmp_path / "bad.json").write_text("{")
    for name, extra in (("with", ["--price-table", str(prices)]), ("without", [])):
        r = cli("nashgap", "--model", "random", "--num-games", "1", "--num-trials", "1", "--quiet", *extra,
                "--output-dir", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
    (with_table,) = (tmp_path / "with").iterdir()
    (without,) = (tmp_path / "without").iterdir()
    for table, said in (("nope.json", "file not found"), ("bad.json", "invalid JSON"),
                        ("other.json", f"prices its cost with {prices}")):
        r = cli("nashgap", "--resume", str(with_table), "--price-table", table, "--quiet", cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and said in r.stderr, (table, r.stderr)
    r = cli("nashgap", "--resume", str(without), "--price-table", "other.json", "--quiet", cwd=tmp_path)
    assert r.returncode == 2 and "saved no price table" in r.stderr, r.stderr
    r = cli("nashgap", "--resume", str(with_table), "--price-table", str(prices), "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
