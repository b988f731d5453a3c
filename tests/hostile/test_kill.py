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
from run_records import VOLATILE, records, strip

# what a resumed run's records may differ in besides timing and `cached` (docs/results.md, "Runs can't lose
# data"): the prompt tokens a call evaluated, 0 for an answer the response cache served
COST = VOLATILE | {"tokens_in", "row_tokens_in", "col_tokens_in"}


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
@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT", "SIGTERM"])
def test_interrupted_run_resumes_to_the_uninterrupted_records(name, how, server, tmp_path):
    args = commands(server.base_url)[name]
    whole = run([*args, "--output-dir", "whole"], tmp_path, tmp_path / "cache_whole")
    assert whole.returncode == 0, whole.stderr
    want = records(only_folder(tmp_path / "whole"), COST)

    proc = start([*args, "--output-dir", "cut"], tmp_path, tmp_path / "cache_cut")
    wait_for_records(tmp_path / "cut", 3)
    proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=60)
    folder = only_folder(tmp_path / "cut")
    if how != "SIGKILL":  # SIGTERM ends a run as Ctrl-C does
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
    assert records(folder, COST) == want
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "finished"
    if how != "SIGKILL":  # the interrupted session's calls are counted too: the totals cover the whole run
        whole_meta = json.loads((only_folder(tmp_path / "whole") / "run.json").read_text())
        t = meta["totals"]
        assert t["model_calls"] + t["model_cache_hits"] >= whole_meta["totals"]["model_calls"]
        assert t.get("model_http_requests", 0) >= t["model_calls"]


def test_a_second_writer_is_refused_while_a_run_writes_its_folder(server, tmp_path):
    args = commands(server.base_url)["nashgap"]
    server.hold_after("", 4)  # 4 answers, then the run waits: it is certainly still writing, however loaded the machine
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
        server.release()


SUITE_FILE = """
seeds = [1, 2]
models = [{{spec = "openai-compatible:fake", base_url = "{url}"}}]

[nashgap]
num_games = 6
num_trials = 3
policy = "sample"
max_tokens = 16
max_concurrency = 2
"""


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_interrupted_suite_file_resumes_in_place_from_its_saved_plan(how, server, tmp_path):
    (tmp_path / "s.toml").write_text(SUITE_FILE.format(url=server.base_url))
    whole = run(["suite", "run", "s.toml", "--no-report", "--output-dir", "whole"], tmp_path, tmp_path / "c1")
    assert whole.returncode == 0, whole.stderr
    proc = start(["suite", "run", "s.toml", "--no-report", "--output-dir", "cut"], tmp_path, tmp_path / "c2")
    # wait until the second run (seed 2) has started writing
    t0 = time.time()
    while len(list((tmp_path / "cut").rglob("trials.jsonl"))) < 2 and time.time() - t0 < 60:
        time.sleep(0.05)
    wait_for_records(tmp_path / "cut", 1)
    proc.send_signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    (suite,) = (tmp_path / "cut").iterdir()
    if how == "SIGINT":
        assert proc.returncode == 130 and f"stratbench suite run s.toml --resume {suite.relative_to(tmp_path)}" in err, err
    # the file is edited after the interruption: the resumed suite finishes the plan it saved
    (tmp_path / "s.toml").write_text(SUITE_FILE.format(url=server.base_url).replace("num_games = 6", "num_games = 9"))
    edited = run(["suite", "run", "s.toml", "--resume", str(suite)], tmp_path, tmp_path / "c2")
    assert edited.returncode == 2 and "differs from the plan saved" in edited.stderr
    done = run(["suite", "run", "--resume", str(suite), "--no-report"], tmp_path, tmp_path / "c2")
    assert done.returncode == 0, done.stderr
    runs = sorted(p.parent for p in suite.rglob("run.json"))
    assert len(runs) == 2  # the interrupted run was finished in place, not started again beside it
    (whole_suite,) = (tmp_path / "whole").iterdir()
    want = [records(p.parent) for p in sorted(whole_suite.rglob("run.json"))]
    assert [records(p) for p in runs] == want
    strip_folder = lambda text: [line.rsplit(",", 1)[0] for line in text.splitlines()]  # noqa: E731
    assert strip_folder((suite / "runs.csv").read_text()) == strip_folder((whole_suite / "runs.csv").read_text())


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


@pytest.mark.parametrize("name", ["tiered", "stories", "baseline"])
def test_other_run_commands_resume_after_sigkill(name, server, tmp_path):
    (tmp_path / "t.toml").write_text(TIERED_FILE.format(url=server.base_url))
    args, resume_words, tables = {
        "tiered": (["suite", "tiered", "--config", "t.toml", "--quiet"], ["suite", "tiered"],
                   ["big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md"]),
        "stories": (["tmgbench", "stories", "generate", "--model", "openai-compatible:fake", "--base-url",
                     server.base_url, "--games", "111,222,333,444", "--variants", "2", "--max-attempts", "2",
                     "--seed", "1", "--max-tokens", "24", "--max-concurrency", "2"], ["tmgbench", "stories", "generate"],
                    ["summary.json"]),
        "baseline": (["tom", "baseline", "--game", "rps,ibs,ipd", "--partner", "single_action,tit_for_tat",
                      "--episodes", "300", "--rounds", "100"], ["tom", "baseline"], ["summary.json", "curves.json"]),
    }[name]
    whole = run([*args, "--output-dir", "whole"], tmp_path, tmp_path / "c1")
    assert whole.returncode == 0, whole.stderr
    proc = start([*args, "--output-dir", "cut"], tmp_path, tmp_path / "c2")
    wait_for_records(tmp_path / "cut", 1)
    proc.kill()
    proc.communicate(timeout=60)
    (folder,) = (tmp_path / "cut").iterdir()
    done = run([*resume_words, "--resume", str(folder)], tmp_path, tmp_path / "c2")
    assert done.returncode == 0, done.stderr
    (want,) = (tmp_path / "whole").iterdir()
    for f in tables:
        if f.endswith(".json"):
            got, exp = strip(json.loads((folder / f).read_text())), strip(json.loads((want / f).read_text()))
            if name == "stories":
                got.pop("stories_dir"), exp.pop("stories_dir")
            assert got == exp, f
        else:
            assert (folder / f).read_bytes() == (want / f).read_bytes(), f
    got_recs = {p.relative_to(folder): records(p.parent) for p in folder.rglob("*.jsonl")}
    want_recs = {p.relative_to(want): records(p.parent) for p in want.rglob("*.jsonl")}
    if name == "tiered":  # run folders are named by their start time: compare their contents in order
        assert sorted(map(str, got_recs.values())) == sorted(map(str, want_recs.values()))
    else:
        assert got_recs == want_recs


def test_merge_killed_midway_leaves_no_half_folder(tmp_path):
    """A merge killed by SIGKILL after the merged records and summary are written (just before its
    run.json) leaves only its hidden staging folder — no folder that looks like a run — and the
    next merge into the same folder removes it and writes the merged run."""
    for i in (1, 2):
        shard = run(["nashgap", "--num-games", "5", "--num-trials", "2", "--llm-type", "dummy", "--seed", "1",
                     "--shard", f"{i}/2", "--output-dir", "shards", "--quiet"], tmp_path, tmp_path / "cache")
        assert shard.returncode == 0, shard.stderr
    args = ["merge", *sorted(str(p) for p in (tmp_path / "shards").iterdir()), "--output-dir", "merged"]
    script = ("import os, signal, sys\n"
              "import stratbench.runner.merge as m\n"
              "m.write_json_atomic = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
              "from stratbench.cli.main import main\n"
              "main(sys.argv[1:])\n")
    env = dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(tmp_path / "cache"))
    killed = subprocess.run([sys.executable, "-c", script, *args], cwd=tmp_path, env=env, text=True,
                            capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (left,) = (tmp_path / "merged").iterdir()
    assert left.name.startswith(".tmp-nashgap_merged_"), left  # hidden: no reader takes it for a run
    assert (left / "trials.jsonl").is_file() and not (left / "run.json").exists()
    report = run(["report", "merged", "--figures", "none", "-o", "rep"], tmp_path, tmp_path / "cache")
    assert report.returncode == 0 and "nashgap_merged" not in (tmp_path / "rep" / "index.html").read_text()
    done = run([*args, "--quiet"], tmp_path, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    (merged,) = (tmp_path / "merged").iterdir()  # the killed merge's staging folder is gone
    assert Path(done.stdout.strip()).name == merged.name and not merged.name.startswith(".")
    assert json.loads((merged / "run.json").read_text())["status"] == "finished"
    assert records(merged)["trials.jsonl"]
