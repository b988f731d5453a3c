"""Atomic outputs: what stratbench writes appears whole or not at all, and a write the machine
refuses (disk full, quota, read-only file system) is one line naming the file, exit 2, with no
temporary file left behind and a run that resumes once there is room.

A full disk is simulated by making the write calls fail with ENOSPC for one chosen file (`os.write`
for the records appended as they stream, `open(...).write` in the atomic writer); merges and
reports are stopped midway the same way.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from run_records import records

from stratbench.cli.main import main
from stratbench.errors import InputError, OutputWriteError
from stratbench.runner import jsonl
from stratbench.runner.folders import discard_folder, is_staging, remove_stale_staging, stage_folder, unstaged
from stratbench.runner.jsonl import JsonlWriter, read_jsonl, write_json_atomic
from stratbench.workflows.merge import merge_runs

NASHGAP = ["nashgap", "--num-games", "5", "--num-trials", "2", "--llm-type", "dummy", "--seed", "1", "--quiet"]


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """`stratbench argv` in-process (so a monkeypatched write applies): (exit code, stdout, stderr)."""
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


def one_line(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    assert "Traceback" not in err
    return lines[0]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for folders), hidden ones included."""
    return {p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def only_run(root: Path) -> Path:
    (run_json,) = root.rglob("run.json")
    return run_json.parent


ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch):
    """`disk_full(name, after=k)`: from the (k+1)-th write into a file named `name` on, writes fail
    with ENOSPC — appends through `os.write` and whole files through the atomic writer."""

    def arm(name: str, after: int = 0, error: OSError = ENOSPC) -> None:
        calls = [0]

        def failing() -> bool:
            calls[0] += 1
            return calls[0] > after

        real_write = os.write

        def write(fd: int, data: Any) -> int:
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                path = ""
            if Path(path).name == name and failing():
                raise error
            return real_write(fd, data)

        real_open = open

        def opener(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            fh = real_open(file, mode, *args, **kwargs)
            if "w" in mode and Path(file).name == name + jsonl.TMP_SUFFIX:
                real = fh.write

                def write_text(text: str) -> int:
                    if failing():
                        raise error
                    return real(text)

                fh.write = write_text
            return fh

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(jsonl, "open", opener, raising=False)

    return arm


# -- the writers ---------------------------------------------------------------------------------


def test_atomic_write_refused_leaves_the_old_file_and_no_tmp(tmp_path, disk_full):
    target = tmp_path / "summary.json"
    write_json_atomic(target, {"old": 1})
    before = target.read_bytes()
    disk_full("summary.json")
    with pytest.raises(OutputWriteError, match=rf"^{target}: no space left on device$"):
        write_json_atomic(target, {"new": 2})
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_append_refused_cuts_the_file_back_to_its_last_record(tmp_path, disk_full):
    path = tmp_path / "trials.jsonl"
    with JsonlWriter(path) as w:
        w.write_many([{"a": 1}, {"a": 2}])
    before = path.read_bytes()
    disk_full("trials.jsonl")
    with JsonlWriter(path) as w:
        with pytest.raises(OutputWriteError, match="trials.jsonl: no space left on device"):
            w.write_many([{"a": 3}])
    assert path.read_bytes() == before


@pytest.mark.parametrize("err, words", [(errno.EDQUOT, "disk quota exceeded"), (errno.EROFS, "read-only file system")])
def test_other_refusals_are_named_too(tmp_path, disk_full, err, words):
    disk_full("run.json", error=OSError(err, os.strerror(err)))
    with pytest.raises(OutputWriteError, match=f"run.json: {words}"):
        write_json_atomic(tmp_path / "run.json", {})
    assert not any(tmp_path.iterdir())


# -- a run on a full disk ------------------------------------------------------------------------


def test_full_disk_before_the_first_record_leaves_no_folder(tmp_path, disk_full):
    disk_full("games.json")
    code, _, err = cli([*NASHGAP, "--output-dir", "res"], tmp_path)
    line = one_line(code, err)
    assert line.startswith("error: ") and line.endswith("/games.json: no space left on device"), line
    assert "input" not in line
    assert not any((tmp_path / "res").iterdir())  # the new run folder was removed: nothing to resume


def test_full_disk_mid_run_then_resume_gives_the_uninterrupted_records(tmp_path, disk_full, monkeypatch):
    code, _, err = cli([*NASHGAP, "--output-dir", "whole"], tmp_path)
    assert code == 0, err
    want = records(only_run(tmp_path / "whole"))

    disk_full("trials.jsonl", after=2)  # two units' records are written, then the disk is full
    code, _, err = cli([*NASHGAP, "--output-dir", "cut"], tmp_path)
    monkeypatch.undo()  # room again
    folder = only_run(tmp_path / "cut")
    line = one_line(code, err)
    assert line == f"error: {folder.relative_to(tmp_path)}/trials.jsonl: no space left on device", line
    assert not list(folder.glob("*.tmp"))
    assert len(read_jsonl(folder / "trials.jsonl")) == 2  # the two units written, no torn line
    assert (folder / "trials.jsonl").read_bytes().endswith(b"\n")
    assert json.loads((folder / "run.json").read_text())["status"] == "running"

    (folder / "games.json.tmp").write_text("[{")  # and a temporary file a killed write left
    (folder / "trials.jsonl.tmp").write_text('{"torn"')
    code, _, err = cli(["nashgap", "--resume", str(folder), "--quiet"], tmp_path)
    assert code == 0, err
    assert records(folder) == want
    assert not list(folder.glob("*.tmp"))
    assert json.loads((folder / "run.json").read_text())["status"] == "finished"


CHBENCH = ["chbench", "run", "--models", "level-k:1", "--opponents", "random", "--games", "1", "--rounds", "2",
           "--seed", "0", "--quiet"]


@pytest.mark.parametrize("name", ["levels.md", "levels.csv", "level_distribution.png", "observations_baseline.csv",
                                  "utilities_baseline.md"])
def test_full_disk_while_writing_a_chbench_table_names_that_file(tmp_path, disk_full, name):
    """The suites' tables and figures go through the atomic writer too: a refused write is one line
    naming the table, never "a file stratbench was writing or reading", and no temporary file."""
    disk_full(name)
    code, _, err = cli([*CHBENCH, "--output-dir", "res"], tmp_path)
    line = one_line(code, err)
    folder = only_run(tmp_path / "res")
    assert line == f"error: {folder.relative_to(tmp_path)}/{name}: no space left on device", line
    assert not list(tmp_path.rglob("*.tmp"))


# -- resuming a finished run ---------------------------------------------------------------------


@pytest.fixture
def finished(tmp_path) -> Path:
    code, _, err = cli([*NASHGAP, "--output-dir", "res"], tmp_path)
    assert code == 0, err
    return only_run(tmp_path / "res")


def test_resume_of_a_finished_run_whose_summary_cannot_be_written_keeps_it_finished(finished, tmp_path, disk_full):
    before = tree(finished)
    disk_full("summary.json")
    code, _, err = cli(["nashgap", "--resume", str(finished)], tmp_path)
    assert one_line(code, err) == f"error: {finished}/summary.json: no space left on device"
    assert tree(finished) == before  # run.json still says finished, byte for byte; no summary.json.tmp


def test_resume_of_a_finished_run_with_a_folder_in_the_summary_s_place(finished, tmp_path):
    (finished / "summary.json").unlink()
    (finished / "summary.json").mkdir()
    before = tree(finished)
    code, _, err = cli(["nashgap", "--resume", str(finished)], tmp_path)
    assert "summary.json" in one_line(code, err)
    assert tree(finished) == before


def test_resume_of_a_folder_that_cannot_be_written_is_refused_before_anything_changes(finished, tmp_path,
                                                                                       monkeypatch):
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR) and Path(path).parent == finished:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    before = tree(finished)
    code, _, err = cli(["nashgap", "--resume", str(finished)], tmp_path)
    assert one_line(code, err) == f"error: {finished}: read-only file system"
    assert tree(finished) == before


def test_resume_of_a_finished_run_rewrites_nothing_but_run_json(finished, tmp_path):
    before = tree(finished)
    code, _, err = cli(["nashgap", "--resume", str(finished), "--quiet"], tmp_path)
    assert code == 0, err
    after = tree(finished)
    assert {k for k in after if after[k] != before.get(k)} == {"run.json"}
    assert json.loads(after["run.json"] or b"")["status"] == "finished"


# -- merges --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("shards")
    for i in (1, 2):
        code, _, err = cli([*NASHGAP, "--shard", f"{i}/2", "--output-dir", "s"], root)
        assert code == 0, err
    return sorted((root / "s").iterdir())


@pytest.fixture
def shard_copies(shards, tmp_path) -> list[Path]:
    out = []
    for s in shards:
        shutil.copytree(s, tmp_path / "in" / s.name)
        out.append(tmp_path / "in" / s.name)
    return out


@pytest.mark.parametrize("where", ["{0}", "{0}/merged", "{1}/a/b"])
def test_merge_refuses_to_write_into_one_of_its_inputs(shard_copies, tmp_path, where):
    before = tree(tmp_path)
    out = where.format(*shard_copies)
    code, _, err = cli(["merge", *map(str, shard_copies), "--output-dir", out], tmp_path)
    assert "never into one of its inputs" in one_line(code, err)
    assert tree(tmp_path) == before
    with pytest.raises(InputError, match="inside the shard folder|is the shard folder"):
        merge_runs(shard_copies, out)


@pytest.mark.parametrize("package", ["stratbench", "numpy", "scipy"])
def test_merge_refuses_shards_of_different_versions(shard_copies, tmp_path, package):
    meta = json.loads((shard_copies[1] / "run.json").read_text())
    mine = meta["versions"][package]
    meta["versions"][package] = "0.0.1"
    (shard_copies[1] / "run.json").write_text(json.dumps(meta))
    before = tree(tmp_path)
    code, _, err = cli(["merge", *map(str, shard_copies), "--output-dir", "out"], tmp_path)
    line = one_line(code, err)
    assert f"{package} 0.0.1" in line and f"{package} {mine}" in line, line
    assert tree(tmp_path) == before


def test_merge_refuses_shards_whose_local_model_ran_on_other_llama_kernels(shard_copies, tmp_path):
    """A shard whose llama.cpp build had other instruction sets computed other log-probabilities."""
    for shard, cpu in zip(shard_copies, ("SSE3 AVX AVX2 F16C FMA", "SSE3 AVX AVX2 F16C FMA AVX512")):
        meta = json.loads((shard / "run.json").read_text())
        meta["versions"]["llama_cpp_cpu"] = cpu
        (shard / "run.json").write_text(json.dumps(meta))
    before = tree(tmp_path)
    code, _, err = cli(["merge", *map(str, shard_copies), "--output-dir", "out"], tmp_path)
    assert "llama_cpp_cpu SSE3 AVX AVX2 F16C FMA AVX512" in one_line(code, err)
    assert tree(tmp_path) == before


SUITE_FILE = """
models = ["random"]
seeds = [1, 2]

[nashgap]
num_games = 2
num_trials = 1
"""


@pytest.mark.parametrize("package", ["stratbench", "numpy", "scipy"])
def test_suite_file_merge_refuses_shards_of_different_versions(tmp_path, package):
    (tmp_path / "s.toml").write_text(SUITE_FILE)
    for i in (1, 2):
        code, _, err = cli(["suite", "run", "s.toml", "--shard", f"{i}/2", "--output-dir", f"s{i}", "--no-report",
                            "--quiet"], tmp_path)
        assert code == 0, err
    shards = [next(p for p in (tmp_path / f"s{i}").iterdir() if not p.name.startswith(".")) for i in (1, 2)]
    meta_path = shards[1] / "suite_metadata.json"
    meta = json.loads(meta_path.read_text())
    mine = meta["versions"][package]
    meta["versions"][package] = "0.0.1"
    meta_path.write_text(json.dumps(meta))
    before = tree(tmp_path)
    code, _, err = cli(["merge", *map(str, shards), "--output-dir", "out"], tmp_path)
    line = one_line(code, err)
    assert f"{package} 0.0.1" in line and f"{package} {mine}" in line, line
    assert tree(tmp_path) == before


def test_merge_stopped_midway_leaves_no_folder_and_the_next_one_cleans_up(shard_copies, tmp_path, monkeypatch):
    import stratbench.runner.merge as merge_mod

    def stop(path: Any, obj: Any) -> None:  # run.json is the merge's last file: everything else is written
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(merge_mod, "write_json_atomic", stop)
        with pytest.raises(KeyboardInterrupt):
            merge_runs(shard_copies, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # the staging folder and the output folder it made are gone

    # a staging folder of a merge that was killed (no process holds its lock) is ignored, then removed
    stale = tmp_path / "out" / f".tmp-nashgap_merged_20200101_000000-{2**22 + 7}"
    stale.mkdir(parents=True)
    shutil.copy(shard_copies[0] / "games.json", stale / "games.json")
    code, _, err = cli(["report", str(tmp_path / "out"), "-o", str(tmp_path / "rep"), "--figures", "none"], tmp_path)
    assert code == 0, err
    assert "0 run folder(s)" in err or "1 run folder(s)" in err  # the "unknown" root only, never the stale one
    assert "nashgap_merged" not in (tmp_path / "rep" / "index.html").read_text()
    merged = merge_runs(shard_copies, tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == [merged.name]
    assert not is_staging(merged.name) and (merged / "run.json").is_file()


def test_a_staging_folder_is_never_merged_and_never_recorded(shard_copies, tmp_path):
    stale = tmp_path / f".tmp-nashgap_merged_20200101_000000-{2**22 + 7}"
    shutil.copytree(shard_copies[0], stale)
    with pytest.raises(InputError, match="staging folder of a merge or report that never finished"):
        merge_runs([stale, shard_copies[1]], tmp_path / "out")
    assert unstaged(stale / "models" / "k") == tmp_path / "nashgap_merged_20200101_000000" / "models" / "k"


def test_a_staging_folder_being_written_is_never_removed(tmp_path):
    live = stage_folder(tmp_path, "x_merged")
    assert is_staging(live.name)
    assert remove_stale_staging(tmp_path) == [] and live.is_dir()
    discard_folder(live)
    assert not live.exists()


# -- reports -------------------------------------------------------------------------------------


def test_report_counts_each_real_folder_once(shards, tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(shards[0].parent, root / "runs")
    (root / "runs" / "loop").symlink_to("..")  # a loop back to the top
    (root / "again").symlink_to("runs")  # a second link to one folder
    (root / "self").symlink_to("self")  # a link to itself
    code, out, err = cli(["report", str(root), "--figures", "none"], tmp_path)
    assert code == 0, err
    assert "2 run folder(s)" in err, err


def test_report_withholds_a_run_whose_records_file_cannot_be_read(shards, tmp_path, monkeypatch):
    """A records file the report may not read withholds its run — listed, the file named, one
    warning — and the other runs are reported; never a silently smaller report (fuzz 27 F6)."""
    root = tmp_path / "tree"
    shutil.copytree(shards[0].parent, root)
    victim = sorted(root.rglob("trials.jsonl"))[1]
    real_open = os.open

    def denied(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == victim:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    code, _, err = cli(["report", str(root)], tmp_path)
    (line,) = [x for x in err.splitlines() if x.startswith("warning")]
    assert code == 0 and line.startswith(f"warning: {victim.resolve()}: permission denied"), err
    assert "the report leaves out its numbers" in line
    page = (root / "report" / "index.html").read_text()
    assert page.count("Its numbers are not shown") == 1 and victim.parent.name in page


def test_report_refuses_a_folder_it_cannot_list(shards, tmp_path, monkeypatch):
    root = tmp_path / "tree"
    shutil.copytree(shards[0].parent, root)
    victim = sorted(root.iterdir())[0].resolve()
    real_iterdir = Path.iterdir

    def iterdir(self: Path) -> Any:
        if self == victim:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    before = tree(tmp_path)
    code, _, err = cli(["report", str(root)], tmp_path)
    assert one_line(code, err).startswith(f"error: {victim}: permission denied")
    assert tree(tmp_path) == before


def test_report_on_a_full_disk_leaves_no_half_report(shards, tmp_path, monkeypatch):
    root = tmp_path / "tree"
    shutil.copytree(shards[0].parent, root)
    real = Path.write_text

    def write_text(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name == "index.html":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    before = tree(tmp_path)
    code, _, err = cli(["report", str(root)], tmp_path)
    assert one_line(code, err) == f"error: {root / 'report'}: no space left on device"
    assert tree(tmp_path) == before  # no report/ folder, no PNGs, no staging folder
    monkeypatch.undo()
    code, _, err = cli(["report", str(root)], tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == []
    assert (root / "report" / "index.html").is_file()
    # a second report replaces the first in place (its PNGs too), through a staging folder again
    code, _, err = cli(["report", str(root)], tmp_path)
    assert code == 0, err
    assert not [p for p in (root / "report").iterdir() if p.name.startswith(".")]
