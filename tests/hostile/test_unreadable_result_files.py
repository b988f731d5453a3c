"""A result file the report cannot read (a folder, a pipe, a device, a symlink loop or a dangling
link where a run's records, JSON or table should be): that run is listed withheld with one
warning naming the file, and the other runs are still reported (fuzz 27 F6: the whole report
stopped at exit 2, or a table replaced the same way was skipped without a word). A collection
that holds such a run shows no table, and nothing blocks on a pipe. A collection's own file that
cannot be read is still one line and exit 2: there is nothing of it to show."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_NASHGAP = ["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet"]
_CH = ["chbench", "run", "--models", "level-k:2", "--opponents", "level-k:1", "--rounds", "3", "--games", "1,2",
       "--seed", "5", "--quiet"]
_TOMB = ["tom", "baseline", "--game", "rps", "--partner", "single_action", "--episodes", "3", "--rounds", "5",
         "--seed", "1"]


def _folder(path: Path) -> str:
    path.unlink()
    path.mkdir()
    return "is a directory, not a file"


def _pipe(path: Path) -> str:
    path.unlink()
    os.mkfifo(path)
    return "a named pipe, not a regular file"


def _device(path: Path) -> str:
    path.unlink()
    path.symlink_to("/dev/zero")
    return "a device, not a regular file"


def _loop(path: Path) -> str:
    path.unlink()
    path.symlink_to(path.name)
    return "symlink loop"


def _dangling(path: Path) -> str:
    path.unlink()
    path.symlink_to("gone" + path.suffix)
    return "file not found"


CASES = {
    "nashgap-records-loop": (_NASHGAP, "trials.jsonl", _loop),
    "nashgap-records-dangling": (_NASHGAP, "trials.jsonl", _dangling),
    "nashgap-run-json-folder": (_NASHGAP, "run.json", _folder),
    "chbench-fit-pipe": (_CH, "fit.json", _pipe),
    "chbench-fit-folder": (_CH, "fit.json", _folder),
    "chbench-levels-pipe": (_CH, "levels.md", _pipe),
    "chbench-levels-device": (_CH, "levels.md", _device),
    "chbench-levels-csv-folder": (_CH, "levels.csv", _folder),
    "tom-curves-folder": (_TOMB, "curves.json", _folder),
    "tom-curves-pipe": (_TOMB, "curves.json", _pipe),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_run_with_a_file_the_report_cannot_read_is_withheld_and_the_others_shown(tmp_path, cli, case):
    args, name, damage = case
    parent = tmp_path / "runs"
    r = cli(*args, "--output-dir", str(parent / "a"))
    assert r.returncode == 0, r.stderr
    (good,) = (parent / "a").iterdir()
    bad = parent / "b" / good.name
    shutil.copytree(good, bad)
    why = damage(bad / name)
    r = cli("report", str(parent), "--output", str(tmp_path / "rep"), timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert f"{bad / name}: {why}" in line and "the report leaves out its numbers" in line, line
    page = (tmp_path / "rep" / "index.html").read_text()
    assert page.count("Its numbers are not shown") == 1  # the damaged copy only; the intact run is shown
    assert f"b/{good.name}" in page and f"a/{good.name}" in page


def _scorecard(out: Path, cli) -> Path:
    """A smoke scorecard of a model behind the fake server: its folder."""
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        r = cli("scorecard", "--model", "openai-compatible:fake", "--base-url", server.base_url, "--budget", "smoke",
                "--seed", "2", "--no-report", "--quiet", "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    (folder,) = out.iterdir()
    return folder


def test_a_scorecard_holding_a_run_with_a_pipe_for_records_shows_no_table(tmp_path, cli):
    folder = _scorecard(tmp_path / "o", cli)
    records = sorted(folder.glob("tom/openai-compatible-fake/*/rounds.jsonl"))[0]
    _pipe(records)
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{records}: a named pipe, not a regular file" in r.stderr
    assert "has a result file the report cannot read; the report leaves out the scorecard's table" in r.stderr
    assert "the scorecard is not shown" in (tmp_path / "rep" / "index.html").read_text()


def test_a_collections_own_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, cli):
    folder = _scorecard(tmp_path / "o", cli)
    _folder(folder / "scorecard.json")
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "scorecard.json: is a directory, not a file" in r.stderr
    assert not (tmp_path / "rep").exists()


# -- merge, compare and resume open nothing that is not a regular file (fuzz 28 B F1-F3) ----------

def _snapshot(root: Path) -> dict[str, str]:
    """Every entry under root: a file's bytes, a link's target, or its kind (a pipe is never read)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = ("link:" + os.readlink(p) if p.is_symlink() else "dir" if p.is_dir()
                    else p.read_bytes().hex() if p.is_file() else "special")
    return out


def _stray(path: Path) -> str:
    path.write_text("")
    return _pipe(path)


# (name, what to damage in run A or shard 2, how, the command's words with {a} {b} {s1} {s2})
REFUSED = {
    "compare-records-pipe": ("trials.jsonl", _pipe, ["compare", "{a}", "{b}"]),
    "compare-run-json-device": ("run.json", _device, ["compare", "{a}", "{b}"]),
    "compare-stray-records-pipe": ("stray.jsonl", _stray, ["compare", "{a}", "{b}"]),
    "merge-records-device": ("trials.jsonl", _device, ["merge", "{s1}", "{s2}", "--output-dir", "{out}"]),
    "merge-summary-pipe": ("summary.json", _pipe, ["merge", "{s1}", "{s2}", "--output-dir", "{out}"]),
    "resume-summary-pipe": ("summary.json", _pipe, ["nashgap", "--resume", "{a}"]),
    "resume-records-device": ("trials.jsonl", _device, ["nashgap", "--resume", "{a}"]),
    "resume-shard-run-json-pipe": ("run.json", _pipe, ["nashgap", "--resume", "{s2}"]),
}


@pytest.mark.parametrize("case", list(REFUSED.values()), ids=list(REFUSED))
def test_merge_compare_and_resume_refuse_a_file_that_is_not_a_regular_file(tmp_path, cli, case):
    name, damage, argv = case
    for args, where in ((_NASHGAP, "a"), (_NASHGAP, "b"), (_NASHGAP + ["--shard", "1/2"], "s"),
                        (_NASHGAP + ["--shard", "2/2"], "s")):
        r = cli(*args, "--output-dir", str(tmp_path / where))
        assert r.returncode == 0, r.stderr
    (a,), (b,) = (tmp_path / "a").iterdir(), (tmp_path / "b").iterdir()
    s1, s2 = sorted((tmp_path / "s").iterdir())
    target = s2 if "{s1}" in argv or "{s2}" in argv else a
    why = damage(target / name)
    before = _snapshot(tmp_path)
    words = [w.format(a=a, b=b, s1=s1, s2=s2, out=tmp_path / "merged") for w in argv]
    r = cli(*words, timeout=60)  # (a pipe opened for reading blocks: the test would time out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{target / name}: {why}" in r.stderr and "--resume" not in r.stderr, r.stderr
    assert _snapshot(tmp_path) == before


def test_compare_of_scorecards_refuses_a_pipe_in_one_of_their_runs(tmp_path, cli):
    a = _scorecard(tmp_path / "a", cli)
    b = tmp_path / "b" / a.name
    shutil.copytree(a, b)  # (the same scorecard: compared, every difference would be 0)
    records = sorted(b.glob("tom/openai-compatible-fake/*/rounds.jsonl"))[0]
    _pipe(records)
    r = cli("compare", str(a), str(b), timeout=60)
    assert r.returncode == 2 and f"{records}: a named pipe, not a regular file" in r.stderr, r.stderr


def test_report_opens_no_pipe_of_a_tiered_suite_or_of_its_output_folder(tmp_path, cli):
    """A tiered suite's big table or the output folder's index.html as a pipe blocked the report
    for good (fuzz 29 B F3/F4): one line each, exit 2."""
    r = cli("suite", "tiered", "--use-dummy", "--num-games-per-bucket", "2", "--num-trials", "1", "--seeds", "1",
            "--bucket-ids", "2x2_lowVar_pure", "--providers", "openai", "--output-dir", str(tmp_path / "t"), "--quiet")
    assert r.returncode == 0, r.stderr
    (suite,) = (tmp_path / "t").iterdir()
    _pipe(suite / "big_table_all_runs.csv")
    r = cli("report", str(suite), "-o", str(tmp_path / "rep"), timeout=60)
    assert r.returncode == 2 and "big_table_all_runs.csv: a named pipe, not a regular file" in r.stderr, r.stderr
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "index.html")
    r = cli("report", str(tmp_path / "t"), "-o", str(out), timeout=60)
    assert r.returncode == 2 and "not a stratbench report" in r.stderr, r.stderr
