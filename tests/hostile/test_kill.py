"""Kill tests: every run command, stopped by SIGKILL or Ctrl-C (SIGINT) in the middle of its work,
then finished with `--resume`, ends with exactly the records of an uninterrupted run. A Ctrl-C
exits 130 and says, in one line, which folder to resume and how.

The player is the fake OpenAI-compatible server with a latency per request, so each run takes a
few seconds and is interrupted while records are streaming.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer

VOLATILE = frozenset({"latency_s", "row_latency_s", "col_latency_s", "seconds", "cached", "usage"})


def strip(x: object) -> object:
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def records(folder: Path) -> dict[str, list[object]]:
    return {p.name: [strip(json.loads(line)) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted(folder.glob("*.jsonl"))}


def start(args: list[str], cwd: Path, cache: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, "-m", "stratbench", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "stratbench", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def only_folder(root: Path) -> Path:
    found = [p for p in root.rglob("run.json")]
    assert len(found) == 1, found
    return found[0].parent


def wait_for_records(root: Path, n: int, timeout: float = 60.0) -> None:
    """Until some records file under root holds at least n lines."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        for p in root.rglob("*.jsonl"):
            try:
                if p.read_text().count("\n") >= n:
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"no records under {root} after {timeout} s")


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(latency_ms=40) as s:
        yield s


def commands(url: str) -> dict[str, list[str]]:
    fake = ["--model", "openai-compatible:fake", "--base-url", url]
    return {
        "nashgap": ["nashgap", *fake, "--policy", "sample", "--num-games", "12", "--num-trials", "4", "--seed", "3",
                    "--max-tokens", "16", "--max-concurrency", "2", "--combined"],
        "tmgbench": ["tmgbench", "run", *fake, "--policy", "sample", "--games", "111,122,133,144,211,222,233,244",
                     "--repeats", "3", "--seed", "4", "--max-tokens", "24", "--max-concurrency", "2"],
        "tmgbench-complex": ["tmgbench", "run", *fake, "--form", "sequential", "--k", "3", "--num-tasks", "8",
                             "--seed", "5", "--max-tokens", "24", "--max-concurrency", "2"],
        "chbench": ["chbench", "run", "--models", "openai-compatible:fake", "--base-url", url, "--policy", "sample",
                    "--opponents", "level-k:1,random", "--games", "1,2,3", "--rounds", "6", "--seed", "6",
                    "--bootstrap", "0", "--restarts", "1", "--max-concurrency", "2"],
        "tom": ["tom", "run", *fake, "--prompting", "QA", "--rounds", "6", "--episodes", "6", "--seed", "7",
                "--max-concurrency", "2"],
    }


@pytest.mark.parametrize("name", ["nashgap", "tmgbench", "tmgbench-complex", "chbench", "tom"])
@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_interrupted_run_resumes_to_the_uninterrupted_records(name, how, server, tmp_path):
    args = commands(server.base_url)[name]
    whole = run([*args, "--output-dir", "whole"], tmp_path, tmp_path / "cache_whole")
    assert whole.returncode == 0, whole.stderr
    want = records(only_folder(tmp_path / "whole"))

    proc = start([*args, "--output-dir", "cut"], tmp_path, tmp_path / "cache_cut")
    wait_for_records(tmp_path / "cut", 3)
    proc.send_signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    folder = only_folder(tmp_path / "cut")
    if how == "SIGINT":
        assert proc.returncode == 130, err
        line = err.strip().splitlines()[-1]
        assert f"--resume {folder.relative_to(tmp_path)}" in line or f"--resume {folder}" in line, err
        assert "Traceback" not in err
        resume_cmd = line.split("continue with: ", 1)[1].split()[1:]  # drop "stratbench"
    else:
        assert proc.returncode == -signal.SIGKILL
        resume_cmd = [*args[: 2 if args[0] != "nashgap" else 1], "--resume", str(folder)]
    assert json.loads((folder / "run.json").read_text())["status"] == "running"
    done = run([*resume_cmd, "--max-concurrency", "2"], tmp_path,
               tmp_path / "cache_cut")
    assert done.returncode == 0, done.stderr
    assert records(folder) == want
    assert json.loads((folder / "run.json").read_text())["status"] == "finished"


def test_a_second_writer_is_refused_while_a_run_writes_its_folder(server, tmp_path):
    args = commands(server.base_url)["nashgap"]
    proc = start([*args, "--output-dir", "cut"], tmp_path, tmp_path / "cache")
    try:
        wait_for_records(tmp_path / "cut", 2)
        folder = only_folder(tmp_path / "cut")
        second = run(["nashgap", "--resume", str(folder)], tmp_path, tmp_path / "cache")
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"error: {folder}: another stratbench process is writing this folder; wait for it to finish "
            "(or stop it), then try again"]
    finally:
        proc.kill()
        proc.communicate()
