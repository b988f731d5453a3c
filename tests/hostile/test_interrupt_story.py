"""One interrupt story: Ctrl-C (SIGINT) and `kill` (SIGTERM) end a command the same way — exit
130, one line naming the folder to resume and a command that resumes it, the folders left
resumable — and the printed command, run as printed, finishes the work with the result of an
uninterrupted run. For a collection (a scorecard, a tiered suite) that is the collection's own
folder and command, never one of its runs.

The model is the fake OpenAI-compatible server with a latency per request, so a smoke scorecard
takes a few seconds and is interrupted while its runs are streaming records.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import run_records
from fake_openai_server import FakeOpenAIServer

FAKE = "openai-compatible:fake"
VOLATILE = run_records.VOLATILE | {"output_dir", "base_url", "no_cache", "start_time", "end_time", "folder", "run_id"}


def env(cache: Path) -> dict[str, str]:
    return dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(cache))


def run(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stratbench", *args], cwd=cwd, env=env(cache), text=True,
                          capture_output=True, timeout=300)


def interrupt(args: list[str], cwd: Path, cache: Path, started: str, how: str,
              hold: tuple[FakeOpenAIServer, str, int] | None = None) -> tuple[int, str]:
    """Start the command, wait until a file matching `started` (a glob under cwd) exists, send
    the signal; (exit code, stderr). `hold` = (server, marker, n): the server answers n requests
    holding the marker and holds the rest until the command has ended, so the signal is certain
    to land in the middle of that work however fast or loaded the machine is."""
    if hold is not None:
        hold[0].hold_after(hold[1], hold[2])
    proc = subprocess.Popen([sys.executable, "-m", "stratbench", *args], cwd=cwd, env=env(cache), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.time()
        while not list(cwd.glob(started)):
            assert proc.poll() is None, proc.communicate()
            assert time.time() - t0 < 120, f"nothing matches {started}"
            time.sleep(0.05)
        time.sleep(0.2)  # inside the run, records streaming
        proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if hold is not None:
            hold[0].release()
    return proc.returncode, err


def printed_command(err: str) -> list[str]:
    """The arguments of the "continue with: stratbench ..." line (the last line on stderr)."""
    line = err.strip().splitlines()[-1]
    assert line.startswith("interrupted: ") and "continue with: stratbench " in line, err
    words = shlex.split(line.split("continue with: ", 1)[1])
    assert words[0] == "stratbench"
    return words[1:]


def scorecard_cells(folder: Path) -> object:
    """scorecard.json without what names a time (run folders) or a machine."""
    card = run_records.strip(json.loads((folder / "scorecard.json").read_text()), VOLATILE)
    assert isinstance(card, dict)
    return {**card, "cells": [{k: v for k, v in c.items() if k != "runs"} for c in card["cells"]]}


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(latency_ms=15) as s:
        yield s


@pytest.fixture(scope="module")
def whole(server, tmp_path_factory):
    """The uninterrupted scorecard."""
    root = tmp_path_factory.mktemp("whole")
    r = run(scorecard_args(server.base_url, "out"), root, root / "cache")
    assert r.returncode == 0, r.stderr
    (folder,) = (root / "out").iterdir()
    return folder


def scorecard_args(url: str, out: str) -> list[str]:
    return ["scorecard", "--model", FAKE, "--base-url", url, "--budget", "smoke", "--seed", "3", "--no-cache",
            "--no-report", "--output-dir", out]


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupted_scorecard_names_its_folder_and_the_printed_command_finishes_it(how, server, whole, tmp_path):
    code, err = interrupt(scorecard_args(server.base_url, "cut"), tmp_path, tmp_path / "cache",
                          "cut/scorecard_*/tmgbench/*/*/answers.jsonl", how, hold=(server, "[Scenario]", 2))
    assert code == 130, err
    assert "Traceback" not in err
    (folder,) = (tmp_path / "cut").iterdir()
    args = printed_command(err)
    assert args == ["scorecard", "--resume", str(folder.relative_to(tmp_path))], err  # the scorecard, not a run
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["status"] == "running" and not (folder / "scorecard.json").exists()
    # the interrupted run is left as Ctrl-C leaves a run: running, resumable in place
    assert "running" in {json.loads(p.read_text())["status"] for p in folder.rglob("run.json")}
    done = run(args, tmp_path, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "suite_metadata.json").read_text())["status"] == "finished"
    assert {json.loads(p.read_text())["status"] for p in folder.rglob("run.json")} == {"finished"}
    assert scorecard_cells(folder) == scorecard_cells(whole)
    assert len(list(folder.rglob("run.json"))) == len(list(whole.rglob("run.json")))  # finished in place


TIERED_FILE = """
num_games_per_bucket = 3
num_trials = 2
seeds = [1]
bucket_ids = ["2x2_lowVar_mixed", "3x3_midVar_mixed"]
policy = "sample"
max_tokens = 16
max_concurrency = 2

[[models]]
spec = "openai-compatible:fake"
base_url = "{url}"
tier = "A"
"""


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupted_tiered_suite_names_the_suite_folder(how, server, tmp_path):
    (tmp_path / "t.toml").write_text(TIERED_FILE.format(url=server.base_url))
    args = ["suite", "tiered", "--config", "t.toml", "--quiet"]
    whole = run([*args, "--output-dir", "whole"], tmp_path, tmp_path / "c1")
    assert whole.returncode == 0, whole.stderr
    code, err = interrupt([*args, "--output-dir", "cut"], tmp_path, tmp_path / "c2", "cut/*/models/*/*/trials*.jsonl",
                          how)
    assert code == 130 and "Traceback" not in err, err
    (folder,) = (tmp_path / "cut").iterdir()
    resume = printed_command(err)
    assert resume == ["suite", "tiered", "--resume", str(folder.relative_to(tmp_path))], err
    done = run(resume, tmp_path, tmp_path / "c2")
    assert done.returncode == 0, done.stderr
    (want,) = (tmp_path / "whole").iterdir()
    for f in ("big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md"):
        assert (folder / f).read_bytes() == (want / f).read_bytes(), f


def test_a_run_command_without_resume_says_so(tmp_path):
    """A command that cannot resume (chbench fit) is not told to: no "continue with" line that fails."""
    import typer

    from stratbench.cli.main import _resume_hint, app

    command = typer.main.get_command(app)
    folder = tmp_path / "fit_x"
    hint = _resume_hint(command, ["chbench", "fit", "some/run"], [folder])
    assert "continue with" not in hint and "cannot be resumed" in hint and str(folder) in hint
    # the command words come from the command tree: three words where the command has three
    hint = _resume_hint(command, ["tmgbench", "stories", "generate", "--model", "x"], [folder])
    assert hint.endswith(f"continue with: stratbench tmgbench stories generate --resume {folder}")
    # a folder name a shell would split is quoted
    odd = tmp_path / "my results" / "run_1"
    hint = _resume_hint(command, ["nashgap", "--model", "x"], [odd])
    assert shlex.split(hint.split("continue with: ", 1)[1]) == ["stratbench", "nashgap", "--resume", str(odd)]
    # a collection (suite_metadata.json in the first folder announced) is resumed by its folder
    suite = tmp_path / "suite_1"
    suite.mkdir()
    (suite / "suite_metadata.json").write_text("{}")
    hint = _resume_hint(command, ["suite", "run", "s.toml"], [suite, suite / "nashgap" / "m" / "run_1"])
    # the suite file again: a URL with credentials in it is saved redacted, the file gives it back
    assert hint.endswith(f"continue with: stratbench suite run s.toml --resume {suite}")
    # a --base-url with credentials is named again, redacted, with what to do about it
    hint = _resume_hint(command, ["tmgbench", "run", "--base-url", "http://u:SECRET@h/v1", "--model", "x"], [folder])
    assert "SECRET" not in hint and "put the password where *** is" in hint
    assert hint.endswith(f"continue with: stratbench tmgbench run --resume {folder} --base-url 'http://u:***@h/v1'")
    hint = _resume_hint(command, ["nashgap", "--base-url", "http://h/v1"], [folder])  # nothing to give again
    assert hint.endswith(f"continue with: stratbench nashgap --resume {folder}")


def test_sigterm_is_ctrl_c_only_while_a_command_runs():
    """The handler is installed for the command and removed after it; an error inside passes
    through unchanged; off the main thread (the CLI called from a thread) signals are left alone."""
    import threading

    from stratbench.cli.main import _on_sigterm, _sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    if before is not signal.SIG_DFL:
        pytest.skip("this test process handles SIGTERM itself (a caller's handler is left alone)")
    with _sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is _on_sigterm
        with pytest.raises(KeyboardInterrupt):
            _on_sigterm(signal.SIGTERM, None)  # no event loop: KeyboardInterrupt, as Ctrl-C
    assert signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(ValueError, match="a bug"), _sigterm_as_interrupt():
        raise ValueError("a bug")
    assert signal.getsignal(signal.SIGTERM) is before
    seen = []

    def off_main() -> None:
        with _sigterm_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=off_main)
    t.start()
    t.join()
    assert seen == [before]


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupt_while_the_command_line_is_still_loading_is_one_line(how, tmp_path):
    """Ctrl-C or a kill in the first moments (imports, before a folder exists): exit 130 and one
    line, never a traceback — at every moment tried once stratbench's code runs (a signal during the
    interpreter's own start-up, before any stratbench module, is Python's to report)."""
    ours = 0
    for delay in (0.05, 0.15, 0.3, 0.5):
        proc = subprocess.Popen([sys.executable, "-m", "stratbench", "nashgap", "--model", "random", "--num-games",
                                 "3000", "--seed", "1", "--quiet", "--output-dir", "o"], cwd=tmp_path,
                                env=env(tmp_path / "cache"), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=120)
        in_run = re.search(r'cli/entry\.py", line \d+, in run', err) or "cli/main.py" in err
        started = in_run or not ("Traceback" in err or proc.returncode == -signal.SIGTERM)
        if not started:
            continue  # landed in the interpreter's start-up, before `stratbench.cli.entry.run` runs
        ours += 1
        # 130, or ended by SIGINT itself (CPython re-raises an interrupt that reached the top on
        # its way out under load): a shell reports both as exit status 130
        assert proc.returncode in (130, -signal.SIGINT) and "Traceback" not in err, (delay, err)
        assert err.strip().splitlines()[-1].startswith("interrupted"), (delay, err)
    assert ours >= 2



# The console script, with one import that receives the signal and does what a C extension's
# initialisation can do with it (scipy's HiGHS wrapper did both, CI stop 36): swallow it, so the
# command ran on to the end and exited 0, or turn it into "ImportError: initialization failed",
# reported as a bug.
_LIBRARY_SWALLOWS = """
import builtins, os, signal, sys, time
real = builtins.__import__
done = []

def take(name, *args, **kwargs):
    if name.startswith("scipy") and not done:
        done.append(name)
        try:
            os.kill(os.getpid(), signal.SIG%s)
            time.sleep(5)  # the interrupt lands here
            sys.exit("the signal never came")
        except KeyboardInterrupt:
            %s
    return real(name, *args, **kwargs)

builtins.__import__ = take
from stratbench.cli.entry import run
sys.argv = ["stratbench", "nashgap", "--model", "random", "--num-games", "20", "--seed", "1", "--quiet",
            "--output-dir", "o"]
run()
"""


@pytest.mark.parametrize("how", ["INT", "TERM"])
@pytest.mark.parametrize("library", ["pass", 'raise ImportError("initialization failed") from None'],
                         ids=["swallowed", "made-an-import-error"])
def test_an_interrupt_a_library_swallows_while_loading_still_stops_the_command(library, how, tmp_path):
    """A Ctrl-C (or kill) that lands while a library initialises is not lost with it: exit 130, the
    interrupt's line, no folder — not a finished run with exit 0, nor an internal error."""
    proc = subprocess.run([sys.executable, "-c", _LIBRARY_SWALLOWS % (how, library)], cwd=tmp_path,
                          env=env(tmp_path / "cache"), text=True, capture_output=True, timeout=120)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    assert proc.stderr.strip().splitlines()[-1].startswith("interrupted before any result folder"), proc.stderr
    assert not list(tmp_path.glob("o/*"))



_TASK_SWALLOWS = """
import asyncio, os, signal, sys
real = asyncio.run
done = []

def run_swallowing(main):
    if done:
        return real(main)
    done.append(1)

    async def library():
        work = asyncio.ensure_future(main)
        os.kill(os.getpid(), signal.SIGINT)  # asyncio's handler cancels this task ...
        try:
            await asyncio.sleep(5)
            sys.exit("the signal never came")
        except asyncio.CancelledError:
            pass  # ... which goes on as if nothing came
        return await work

    return real(library())

asyncio.run = run_swallowing
from stratbench.cli.entry import run
sys.argv = ["stratbench", "nashgap", "--model", "random", "--num-games", "20", "--seed", "1", "--quiet",
            "--output-dir", "o"]
run()
"""


def test_an_interrupt_whose_cancellation_a_task_swallows_still_stops_the_run(tmp_path):
    """A Ctrl-C during the run whose cancellation some task swallowed (the run then finished its
    records) stops the command as an interrupt: exit 130, the folder left to resume, not "finished"."""
    proc = subprocess.run([sys.executable, "-c", _TASK_SWALLOWS], cwd=tmp_path, env=env(tmp_path / "cache"),
                          text=True, capture_output=True, timeout=120)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    line = proc.stderr.strip().splitlines()[-1]
    [folder] = tmp_path.glob("o/run_*")
    assert line.startswith("interrupted") and "continue with: stratbench" in line and folder.name in line, line
    assert json.loads((folder / "run.json").read_text())["status"] == "running"
    again = subprocess.run([sys.executable, "-m", "stratbench", *shlex.split(line.partition("continue with: stratbench ")[2])],
                           cwd=tmp_path, env=env(tmp_path / "cache"), text=True, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads((folder / "run.json").read_text())["status"] == "finished"


def with_password(args: list[str], url: str) -> list[str]:
    """The printed command with the password put back where it shows ***."""
    from stratbench.redact import redact_url

    return [url if a == redact_url(url) else a for a in args]


@pytest.mark.parametrize("how", ["SIGINT"])
def test_a_scorecard_with_credentials_in_its_url_resumes_as_printed(how, server, whole, tmp_path):
    """The URL's password is never written, so the printed command asks for it again with
    --base-url; given back, it finishes the scorecard, and still nothing holds the password."""
    url = server.base_url.replace("http://", "http://user:SECRET@")
    code, err = interrupt(scorecard_args(url, "cut"), tmp_path, tmp_path / "cache",
                          "cut/scorecard_*/tmgbench/*/*/answers.jsonl", how, hold=(server, "[Scenario]", 2))
    assert code == 130 and "Traceback" not in err and "SECRET" not in err, err
    (folder,) = (tmp_path / "cut").iterdir()
    args = printed_command(err)
    assert args[-2:] == ["--base-url", url.replace("SECRET", "***")], err
    # without the password: one line saying how to give it, nothing changed
    before = (folder / "suite_metadata.json").read_bytes()
    bare = run(args[:-2], tmp_path, tmp_path / "cache")
    assert bare.returncode == 2 and "--base-url URL" in bare.stderr and "Traceback" not in bare.stderr, bare.stderr
    assert (folder / "suite_metadata.json").read_bytes() == before
    # the printed command as it is (*** where the password goes): one line, nothing changed (another
    # server's URL is taken: a server that moved, a runtime setting as for a resumed run)
    masked = run(args, tmp_path, tmp_path / "cache")
    assert masked.returncode == 2 and "redacted" in masked.stderr and "SECRET" not in masked.stderr, masked.stderr
    assert (folder / "suite_metadata.json").read_bytes() == before
    done = run(with_password(args, url), tmp_path, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert scorecard_cells(folder) == scorecard_cells(whole)
    assert not [p for p in folder.rglob("*") if p.is_file() and b"SECRET" in p.read_bytes()]


SUITE_FILE = """
seeds = [1, 2]
models = [{{spec = "openai-compatible:fake", base_url = "{url}", label = "served"}}]
[nashgap]
num_games = 4
policy = "sample"
max_tokens = 8
"""


def test_a_suite_file_with_credentials_in_a_url_resumes_as_printed(server, tmp_path):
    """The printed command names the suite file again: the file is where the password is."""
    url = server.base_url.replace("http://", "http://user:SECRET@")
    (tmp_path / "s.toml").write_text(SUITE_FILE.format(url=url))
    code, err = interrupt(["suite", "run", "s.toml", "--no-report", "--output-dir", "cut"], tmp_path,
                          tmp_path / "cache", "cut/suite_*/nashgap/*/*/trials*.jsonl", "SIGINT",
                          hold=(server, "Action", 3))
    assert code == 130 and "Traceback" not in err, err
    (folder,) = (tmp_path / "cut").iterdir()
    args = printed_command(err)
    assert args == ["suite", "run", "s.toml", "--resume", str(folder.relative_to(tmp_path))], err
    before = (folder / "suite_metadata.json").read_bytes()
    bare = run(["suite", "run", "--resume", args[-1], "--no-report"], tmp_path, tmp_path / "cache")
    assert bare.returncode == 2 and "the suite file again" in bare.stderr, bare.stderr
    assert (folder / "suite_metadata.json").read_bytes() == before
    done = run([*args, "--no-report"], tmp_path, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["status"] == "finished" and [r["status"] for r in meta["runs"]] == ["finished", "finished"]
    assert not [p for p in folder.rglob("*") if p.is_file() and b"SECRET" in p.read_bytes()]


def test_a_resume_interrupted_before_it_opened_its_folder_names_that_folder():
    """A Ctrl-C in a resume's first moments (before its folder is opened) leaves the folder as it
    was: the line names it and the command that finishes it, not "nothing to resume"."""
    import typer

    from stratbench.cli.main import _resume_hint, app

    command = typer.main.get_command(app)
    for args in (["nashgap", "--resume", "results/run a"], ["tom", "run", "--resume=results/t"]):
        hint = _resume_hint(command, args, [])
        folder = args[-1] if args[-2] == "--resume" else args[-1].partition("=")[2]
        assert hint.startswith(f"interrupted before {folder} was changed; continue with: stratbench "), hint
        assert hint.endswith(f" --resume {shlex.quote(folder)}") and "nothing to resume" not in hint
    assert "nothing to resume" in _resume_hint(command, ["nashgap", "--num-games", "2"], [])


_LATE = """
import atexit, os, signal, sys, time
from stratbench.cli import entry, main as cli_main
def late():  # a signal landing while the interpreter shuts down, after the command finished
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    time.sleep(0.2)
atexit.register(late)
cli_main.main = lambda: sys.exit(0)
entry.run()
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_command_finished_changes_nothing(sig):
    """Once the command's outcome is decided (its exit code and line), a late Ctrl-C or SIGTERM
    neither prints a traceback nor ends the process by the signal."""
    r = subprocess.run([sys.executable, "-c", _LATE, sig], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)


def test_a_resume_interrupted_before_it_began_names_its_folder():
    from stratbench.cli.entry import INTERRUPTED_EARLY, _early_line

    line = _early_line(["nashgap", "--resume", "runs/my run", "--quiet"])
    assert line == "interrupted before runs/my run was changed; continue with: stratbench nashgap --resume 'runs/my run' --quiet"
    assert _early_line(["tom", "run", "--resume=r1"]).startswith("interrupted before r1 was changed")
    assert _early_line(["nashgap", "--num-games", "2"]) == INTERRUPTED_EARLY
