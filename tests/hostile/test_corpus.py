"""The hostile-input corpus: bad files, bad flags and broken result folders, run through every
command that reads them. Each must end with exit code 2 and ONE line on stderr, `error: ...`,
naming the input and the problem — no traceback, no new folder, and every folder that existed
before (the broken one included) byte-identical afterwards.

Cases: `cases_files.py` (bad files), `cases_flags.py` (bad flags) and `FOLDER_CASES` below
(broken result folders given to --resume, merge and compare). They run in-process through the
CLI's `main` (the same code path as the `stratbench` command, without an interpreter start per
case); a few run as real subprocesses at the end.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stratbench.cli.main import main

HERE = Path(__file__).resolve().parent


def _load_cases(module: str, name: str) -> list[Any]:
    path = HERE / f"{module}.py"
    if not path.exists():
        return []
    spec = importlib.util.spec_from_file_location(f"hostile_{module}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(getattr(mod, name))


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run `stratbench argv` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under root, with a hash of each file."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def assert_one_clean_line(code: int, stdout: str, stderr: str, fragment: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, f"exit {code}\n{stderr}\n{stdout[-2000:]}"
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert "Traceback" not in stderr + stdout


# -- broken result folders ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Finished runs every folder case starts from (scripted players: seconds)."""
    root = tmp_path_factory.mktemp("runs")
    for argv in (
        ["nashgap", "--num-games", "5", "--num-trials", "2", "--llm-type", "dummy", "--seed", "1",
         "--output-dir", "ng", "--quiet"],
        ["nashgap", "--num-games", "5", "--num-trials", "2", "--llm-type", "dummy", "--seed", "1",
         "--shard", "1/2", "--output-dir", "ngs", "--quiet"],
        ["nashgap", "--num-games", "5", "--num-trials", "2", "--llm-type", "dummy", "--seed", "1",
         "--shard", "2/2", "--output-dir", "ngs", "--quiet"],
        ["tmgbench", "run", "--model", "oracle", "--games", "111,222", "--seed", "1", "--output-dir", "tmg",
         "--quiet"],
        ["chbench", "run", "--models", "level-k:1", "--opponents", "random", "--games", "1", "--rounds", "4",
         "--bootstrap", "0", "--restarts", "1", "--output-dir", "ch", "--quiet"],
        ["tom", "baseline", "--episodes", "3", "--rounds", "5", "--output-dir", "tb"],
    ):
        code, _, err = cli(argv, root)
        assert code == 0, err
    return root


def _one(root: Path, pattern: str) -> Path:
    (found,) = sorted(root.glob(pattern))
    return found


def _edit_lines(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    path.write_text("".join(line + "\n" for line in edit(path.read_text().splitlines())))


def _replace(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def _run_json(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((folder / "run.json").read_text())
    change(meta)
    (folder / "run.json").write_text(json.dumps(meta))


def _unfinish(folder: Path) -> None:
    _run_json(folder, lambda m: m.update(status="running"))


def _dir_instead_of(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)


# (name, folder to copy from the base runs, how to break it, argv with {dir} for the broken copy and
# {other} for an untouched copy of the same run, expected fragment of the one error line)
FOLDER_CASES: list[tuple[str, str, Callable[[Path], None], list[str], str]] = [
    ("corrupt record mid-file", "ng/run_*", lambda f: _edit_lines(f / "trials.jsonl", lambda ls: ls[:2] + ["{oops"] + ls[2:]),
     ["nashgap", "--resume", "{dir}"], "line 3: not a valid JSON record"),
    ("record of the wrong JSON type", "ng/run_*", lambda f: _edit_lines(f / "trials.jsonl", lambda ls: ls[:1] + ["[1, 2]"] + ls[1:]),
     ["nashgap", "--resume", "{dir}"], "line 2: a record must be a JSON object"),
    ("record without its game id", "ng/run_*",
     lambda f: _edit_lines(f / "trials.jsonl", lambda ls: [json.dumps({k: v for k, v in json.loads(ls[0]).items() if k != "game_id"})] + ls[1:]),
     ["nashgap", "--resume", "{dir}"], "game_id"),
    ("record for a game the run does not have", "ng/run_*",
     lambda f: _edit_lines(f / "trials.jsonl", lambda ls: [json.dumps({**json.loads(ls[0]), "game_id": 999})] + ls[1:]),
     ["nashgap", "--resume", "{dir}"], "999"),
    ("two different records for one trial", "ng/run_*",
     lambda f: _edit_lines(f / "trials.jsonl", lambda ls: ls + [json.dumps({**json.loads(ls[0]), "prompt_sha256": "0" * 64})]),
     ["nashgap", "--resume", "{dir}"], "two different records"),
    ("a folder where trials.jsonl should be", "ng/run_*", lambda f: _dir_instead_of(f / "trials.jsonl"),
     ["nashgap", "--resume", "{dir}"], "trials.jsonl"),
    ("trials.jsonl a symlink loop", "ng/run_*", lambda f: _loop(f / "trials.jsonl"),
     ["nashgap", "--resume", "{dir}"], "trials.jsonl"),
    ("run.json with wrong types", "ng/run_*", lambda f: _run_json(f, lambda m: m.update(totals={"records": "many"})),
     ["nashgap", "--resume", "{dir}"], "totals.records"),
    ("run.json of binary bytes", "ng/run_*", lambda f: _replace(f / "run.json", b"\x00\xff\xfe binary"),
     ["nashgap", "--resume", "{dir}"], "run.json"),
    ("truncated games.json", "ng/run_*", lambda f: _replace(f / "games.json", (f / "games.json").read_text()[:40]),
     ["nashgap", "--resume", "{dir}"], "games.json"),
    ("a Nash-gap folder resumed as a TMGBench run", "ng/run_*", lambda f: None,
     ["tmgbench", "run", "--resume", "{dir}"], "not tmgbench"),
    ("a Nash-gap folder resumed with a flag the resume would ignore", "ng/run_*", lambda f: None,
     ["tmgbench", "run", "--form", "sequential", "--resume", "{dir}"], "--form: --resume finishes the run"),
    ("a TMGBench folder resumed as a Nash-gap run", "tmg/tmgbench_*", lambda f: None,
     ["nashgap", "--resume", "{dir}"], "not a Nash-gap result folder"),
    ("a chbench folder resumed as tom", "ch/chbench_*", lambda f: None,
     ["tom", "run", "--resume", "{dir}"], "not tom"),
    ("corrupt CHBench round", "ch/chbench_*", lambda f: _edit_lines(f / "rounds.jsonl", lambda ls: ls[:1] + ["not json"] + ls[1:]),
     ["chbench", "run", "--resume", "{dir}"], "line 2"),
    ("compare an unfinished run", "ng/run_*", _unfinish, ["compare", "{dir}", "{other}"], "not finished"),
    ("compare a run with a corrupt record", "ng/run_*",
     lambda f: _edit_lines(f / "trials.jsonl", lambda ls: ls[:1] + ["{"] + ls[1:]), ["compare", "{dir}", "{other}"],
     "line 2"),
    ("compare --output onto a run's summary", "ng/run_*", lambda f: None,
     ["compare", "{dir}", "{other}", "--output", "{dir}/summary.json"], "inside the result folder"),
    ("compare --output to a folder", "ng/run_*", lambda f: None, ["compare", "{dir}", "{other}", "--output", "{dir}"],
     "--output"),
    ("compare --output under a missing folder", "ng/run_*", lambda f: None,
     ["compare", "{dir}", "{other}", "--output", "no/such/folder/cmp.json"], "does not exist"),
    ("compare runs of two suites", "ng/run_*", lambda f: None, ["compare", "{dir}", "{tmg}"], "cannot compare"),
    ("merge an unfinished shard", "ngs", lambda f: _unfinish(_one(f, "*shard1of2")), ["merge", "{dir}/*"],
     "not finished"),
    ("merge a shard with a corrupt record", "ngs",
     lambda f: _edit_lines(_one(f, "*shard1of2") / "trials.jsonl", lambda ls: ls[:1] + ["{"] + ls[1:]),
     ["merge", "{dir}/*"], "line 2"),
    ("merge one shard twice", "ngs", lambda f: None, ["merge", "{dir}/*shard1of2", "{dir}/*shard1of2"], "twice"),
    ("merge shards of two suites", "ngs", lambda f: shutil.copytree(_one(f.parent / "tmg", "tmgbench_*"), f / "zz_tmg"),
     ["merge", "{dir}/*"], "run"),
    ("merge a folder that is not a run", "ngs", lambda f: (f / "empty").mkdir(), ["merge", "{dir}/empty", "{dir}/*shard1of2"],
     "not a result folder"),
    ("merge into one of its shards", "ngs", lambda f: None,
     ["merge", "{dir}/*", "--output-dir", "{dir}/*shard1of2"], "never into one of its inputs"),
    ("merge shards made by different numpy versions", "ngs",
     lambda f: _run_json(_one(f, "*shard2of2"), lambda m: m["versions"].update(numpy="1.0.0")),
     ["merge", "{dir}/*"], "numpy 1.0.0"),
    ("merge shards made by different stratbench versions", "ngs",
     lambda f: _run_json(_one(f, "*shard1of2"), lambda m: m["versions"].update(stratbench="0.0.1")),
     ["merge", "{dir}/*"], "stratbench 0.0.1"),
    ("resume a folder that does not exist", "ng/run_*", lambda f: None, ["nashgap", "--resume", "{dir}/nope"],
     "not a Nash-gap result folder"),
    ("report of a missing folder", "ng/run_*", lambda f: None, ["report", "{dir}/nope"], "no such folder"),
    ("--output-dir that is a file", "ng/run_*", lambda f: None,
     ["nashgap", "--llm-type", "dummy", "--num-games", "2", "--output-dir", "{dir}/games.json"], "--output-dir"),
    ("--output-dir under a file", "ng/run_*", lambda f: None,
     ["nashgap", "--llm-type", "dummy", "--num-games", "2", "--output-dir", "{dir}/games.json/sub"], "--output-dir"),
    ("--output-dir with a name over 255 bytes", "ng/run_*", lambda f: None,
     ["nashgap", "--llm-type", "dummy", "--num-games", "2", "--output-dir", "{dir}/" + "x" * 300], "--output-dir"),
]


@pytest.mark.parametrize("case", FOLDER_CASES, ids=[c[0] for c in FOLDER_CASES])
def test_broken_folder_is_one_line_and_changes_nothing(case, runs, tmp_path):
    name, source, breaks, argv, fragment = case
    work = tmp_path / "work"
    src = runs / source if "*" not in source else _one(runs, source)
    target = work / "broken"
    shutil.copytree(src, target, symlinks=True)
    other = work / "other"
    shutil.copytree(src, other) if src.is_dir() and "*" in source else None
    shutil.copytree(runs / "tmg", work / "tmg")
    breaks(target)
    before = snapshot(work)
    tmg = _one(work / "tmg", "tmgbench_*")
    args = []
    for a in argv:
        a = a.replace("{dir}", str(target)).replace("{other}", str(other)).replace("{tmg}", str(tmg))
        args += sorted(str(p) for p in Path("/").glob(a.lstrip("/"))) if "*" in a else [a]
    code, out, err = cli(args, work)
    assert_one_clean_line(code, out, err, fragment)
    assert snapshot(work) == before, "an earlier folder changed or a new one appeared"


# -- bad files and bad flags (cases from the other corpus modules) ------------------------------

FILE_CASES = _load_cases("cases_files", "FILE_CASES")
FLAG_CASES = _load_cases("cases_flags", "FLAG_CASES")


@pytest.mark.parametrize("case", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_bad_file_is_one_line_and_writes_nothing(case, tmp_path):
    name, argv, fragment = case
    files = HERE / "files"
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").mkdir()
    before = snapshot(work)
    args = [a.replace("{file}", str(files / name)) if "{file}" in a else a for a in argv]
    args = [a.replace("{files}", str(files)) for a in args]
    code, out, err = cli(args, work)
    assert_one_clean_line(code, out, err, fragment)
    assert snapshot(work) == before


@pytest.mark.parametrize("case", FLAG_CASES, ids=[c[0] for c in FLAG_CASES])
def test_bad_flag_is_one_line_and_writes_nothing(case, tmp_path):
    name, argv, fragment = case
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").mkdir()
    before = snapshot(work)
    code, out, err = cli(list(argv), work)
    assert_one_clean_line(code, out, err, fragment)
    assert snapshot(work) == before


def test_the_corpus_covers_every_command_that_reads_input():
    """Every run command, and merge, compare and report, meets at least one hostile case."""
    seen = {tuple(a for a in argv[:2] if not a.startswith("-") and "{" not in a)
            for _, argv, _ in FILE_CASES + FLAG_CASES} | {
        tuple(a for a in c[3][:2] if not a.startswith("-") and "{" not in a) for c in FOLDER_CASES}
    commands = {c[0] if c[0] != "nashgap" else "nashgap" for c in seen}
    for want in ("nashgap", "tmgbench", "chbench", "tom", "suite", "merge", "compare", "report"):
        assert want in commands, want
