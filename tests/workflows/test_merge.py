"""Scale-out: `--shard i/n` splits a run deterministically and `stratbench merge` of all shards gives
the unsharded run back, record for record and summary for summary."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_json_atomic, write_jsonl_atomic
from stratbench.runner.shard import (
    Shard,
    as_shard,
    check_complete,
    parse_shard,
    shard_from_json,
)
from stratbench.suites import get_suite, suite_for_run
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap
from stratbench.suites.tmgbench.complex_run import run_complex
from stratbench.suites.tmgbench.run import TmgbenchConfig, run_tmgbench
from stratbench.workflows.merge import merge_runs

FIXTURES = Path(__file__).parents[1] / "data" / "tmgbench_stories"


# --- parsing and splitting -------------------------------------------------------------------

@pytest.mark.parametrize("spec, want", [("1/3", Shard(1, 3)), (" 2 / 3 ", Shard(2, 3)), ("3/3", Shard(3, 3)),
                                        ("1/1", Shard(1, 1)), (None, Shard(1, 1))])
def test_parse_shard_accepts(spec, want):
    assert parse_shard(spec) == want


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1/0", "0/0", "-1/3", "3", "a/b", "1/3/5", "", "1.5/3"])
def test_parse_shard_rejects(spec):
    with pytest.raises(InputError, match="--shard"):
        parse_shard(spec)


def test_shard_round_trip_and_round_robin():
    s = parse_shard("2/3")
    assert str(s) == "2/3" and as_shard(s.to_json()) == s and shard_from_json(s.to_json()) == s
    assert as_shard("2/3") == s and as_shard(None).whole and parse_shard("1/1").to_json() is None
    units = list(range(10))
    parts = [parse_shard(f"{i}/3").select(units) for i in (1, 2, 3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert sorted(u for p in parts for u in p) == units


def test_check_complete():
    assert check_complete([Shard(2, 3), Shard(1, 3), Shard(3, 3)]) == 3
    with pytest.raises(InputError, match="missing 2/3"):
        check_complete([Shard(1, 3), Shard(3, 3)])
    with pytest.raises(InputError, match="duplicated 1/3"):
        check_complete([Shard(1, 3), Shard(1, 3), Shard(2, 3), Shard(3, 3)])
    with pytest.raises(InputError, match="different splits"):
        check_complete([Shard(1, 2), Shard(2, 3)])


# --- sharded + merged == unsharded ----------------------------------------------------------

def _records(path: Path) -> list[dict]:
    """A result file's records without the timing fields (the only thing allowed to differ)."""
    out = []
    for r in read_jsonl(path):
        r = dict(r)
        r.pop("latency_s", None)
        out.append(r)
    return out


def _assert_same_run(full: Path, merged: Path, data_files: list[str], same_files: list[str]) -> None:
    for name in data_files:
        a, b = _records(full / name), _records(merged / name)
        assert a and a == b, name
    for name in same_files:
        assert (full / name).read_bytes() == (merged / name).read_bytes(), name
    ma, mb = json.loads((full / "run.json").read_text()), json.loads((merged / "run.json").read_text())
    ca, cb = dict(ma["config"]), dict(mb["config"])
    ca.pop("output_dir"), cb.pop("output_dir")
    assert ca == cb and cb["shard"] is None
    assert ma["totals"] == mb["totals"]
    assert len(mb["merged_from"]) == 3


NASHGAP_CASES = {
    # mode: (config flags, player, files)
    "pure": ({}, "random", ["trials.jsonl"], ["summary.json"]),
    "mixed": ({"mixed_strategy": True}, "nash", ["trials.jsonl"], ["summary.json"]),
    "combined": ({"combined": True}, "random",
                 ["trials_pure_actions.jsonl", "trials_mixed_strategy.jsonl"],
                 ["summary_pure_actions.json", "summary_mixed_strategy.json"]),
}


@pytest.mark.parametrize("mode", list(NASHGAP_CASES))
def test_nashgap_sharded_then_merged_equals_unsharded(tmp_path, mode):
    flags, player, data, sums = NASHGAP_CASES[mode]
    base = dict(model=player, num_games=7, num_trials=4, order_rotations=2, seed=11, **flags)
    full = run_nashgap(NashgapConfig(output_dir=str(tmp_path / "full"), **base))
    shards = [run_nashgap(NashgapConfig(output_dir=str(tmp_path / "shards"), shard=f"{i}/3", **base))
              for i in (3, 1, 2)]
    # each shard plays whole games (all trials and rotations), round-robin over the full list
    games = [sorted({r["game_id"] for r in read_jsonl(s.folder / data[0])}) for s in shards]
    assert games == [[2, 5], [0, 3, 6], [1, 4]]
    assert all(s.folder.name.endswith(f"_shard{i}of3") for s, i in zip(shards, (3, 1, 2)))
    meta = json.loads((shards[1].folder / "run.json").read_text())
    assert meta["config"]["shard"] == {"index": 1, "count": 3}
    merged = merge_runs([s.folder for s in shards], tmp_path / "merged")
    _assert_same_run(full.folder, merged, data, sums + ["games.json"])


def test_nashgap_shard_resume_keeps_the_shard(tmp_path):
    base = dict(model="random", num_games=6, num_trials=3, seed=2)
    full = run_nashgap(NashgapConfig(output_dir=str(tmp_path / "full"), **base))
    shards = [run_nashgap(NashgapConfig(output_dir=str(tmp_path / "s"), shard=f"{i}/3", **base)) for i in (1, 2, 3)]
    # interrupt shard 2: half its records lost, run.json still "running"
    folder = shards[1].folder
    recs = read_jsonl(folder / "trials.jsonl")
    write_jsonl_atomic(folder / "trials.jsonl", recs[: len(recs) // 2])
    (folder / "summary.json").unlink()
    meta = json.loads((folder / "run.json").read_text())
    write_json_atomic(folder / "run.json", {**meta, "status": "running"})
    with pytest.raises(InputError, match="not finished"):
        merge_runs([s.folder for s in shards], tmp_path / "m0")
    assert not (tmp_path / "m0").exists() or not any((tmp_path / "m0").iterdir())
    with pytest.raises(InputError, match="shard 2/3, not 1/3"):
        run_nashgap(NashgapConfig(shard="1/3"), resume_dir=folder)
    again = run_nashgap(NashgapConfig(), resume_dir=folder)
    assert json.loads((again.folder / "run.json").read_text())["config"]["shard"] == {"index": 2, "count": 3}
    assert {r["game_id"] for r in read_jsonl(folder / "trials.jsonl")} == {1, 4}
    merged = merge_runs([s.folder for s in shards], tmp_path / "m")
    assert _records(merged / "trials.jsonl") == _records(full.folder / "trials.jsonl")
    assert (merged / "summary.json").read_text() == (full.folder / "summary.json").read_text()


def test_tmgbench_classic_sharded_then_merged_equals_unsharded(tmp_path):
    full = run_tmgbench(TmgbenchConfig(model="uniform", seed=3, output_dir=str(tmp_path / "full")))
    shards = [run_tmgbench(TmgbenchConfig(model="uniform", seed=3, shard=f"{i}/3",
                                          output_dir=str(tmp_path / "s"))) for i in (1, 2, 3)]
    assert [len(read_jsonl(s.folder / "answers.jsonl")) for s in shards] == [48, 48, 48]
    assert not (shards[0].folder / "standard_heatmap.png").exists()  # a shard has no full grid
    merged = merge_runs([s.folder for s in shards], tmp_path / "merged")
    _assert_same_run(full.folder, merged, ["answers.jsonl"], ["summary.json", "grids.json"])
    assert (merged / "standard_heatmap.png").is_file()


def test_tmgbench_story_and_complex_sharded_then_merged(tmp_path):
    stories = tmp_path / "stories"
    stories.mkdir()
    for f in FIXTURES.glob("*_0.txt"):
        for k in (0, 1):
            (stories / f.name.replace("_0.txt", f"_{k}.txt")).write_text(f.read_text())
    story = dict(model="empty", setting="story", stories_dir=str(stories), seed=1)
    full = run_tmgbench(TmgbenchConfig(output_dir=str(tmp_path / "full"), **story))
    shards = [run_tmgbench(TmgbenchConfig(output_dir=str(tmp_path / "s"), shard=f"{i}/3", **story))
              for i in (1, 2, 3)]
    merged = merge_runs([s.folder for s in shards], tmp_path / "merged")
    _assert_same_run(full.folder, merged, ["answers.jsonl"], ["summary.json"])

    def cfg(out: str, shard: str | None = None) -> TmgbenchConfig:
        return TmgbenchConfig(model="oracle", form="parallel", seed=4, output_dir=str(tmp_path / out), shard=shard)

    full = run_complex(cfg("cfull"), 3, 8)
    shards = [run_complex(cfg("cs", f"{i}/3"), 3, 8) for i in (1, 2, 3)]
    assert [len(read_jsonl(s.folder / "tasks.jsonl")) for s in shards] == [3, 3, 2]
    merged = merge_runs([s.folder for s in shards], tmp_path / "cmerged")
    _assert_same_run(full.folder, merged, ["tasks.jsonl"], ["summary.json"])


# --- refusals -------------------------------------------------------------------------------

def test_merge_finds_the_suite_in_the_registry_and_refuses_unknown_ones():
    with pytest.raises(InputError, match="no registered suite reads 'foo' runs"):
        suite_for_run({"suite": "foo", "config": {}})
    with pytest.raises(InputError, match="merging chbench fit runs is not supported"):
        get_suite("chbench-fit").merge([], Path("."))
    assert suite_for_run({"suite": "tmgbench", "kind": "complex", "config": {}}).name == "tmgbench-complex"
    assert suite_for_run({"suite": "tmgbench", "config": {"form": "nested"}}).name == "tmgbench-complex"


def test_merge_refuses_bad_sets_of_shards(tmp_path, cli):
    def shard(i: int, n: int = 3, seed: int = 5, out: str = "s") -> Path:
        return run_nashgap(NashgapConfig(model="random", num_games=4, num_trials=2, seed=seed,
                                         shard=f"{i}/{n}", output_dir=str(tmp_path / out))).folder

    s1, s2, s3 = shard(1), shard(2), shard(3)
    other_seed = shard(3, seed=6, out="o")
    copy1 = tmp_path / "copy_of_1"
    shutil.copytree(s1, copy1)
    half = shard(2, n=2, out="h")
    whole, whole2 = (run_nashgap(NashgapConfig(model="random", num_games=4, num_trials=2, seed=5,
                                               output_dir=str(tmp_path / "w"))).folder for _ in range(2))
    out = tmp_path / "merged"
    for folders, needle in [((s1, s2), "missing 3/3"), ((s1, s2, other_seed), "differ in config key 'llm_seed': 6 vs 5")]:
        r = cli("merge", *map(str, folders), "--output-dir", str(out))
        assert r.returncode == 2, (needle, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    cases = [
        ((s1, s2, s3, copy1), "duplicated 1/3"),
        ((s1, s1, s2, s3), f"{re.escape(str(s1))}: the same folder is given twice$"),  # (fuzz 25 B F4: which?)
        ((s1, s2, s3, s1.parent / ".." / s1.parent.name / s1.name), "the same folder is given twice \\(as "),
        ((s1, s2, half), "different splits"),
        ((s1, tmp_path / "nothing"), "not a result folder"),
        ((whole, whole2), "unsharded runs"),
    ]
    for folders, needle in cases:
        with pytest.raises(InputError, match=needle):
            merge_runs(folders, out)
    # a shard that says "finished" but lost records is named (each shard is read as its own run first)
    lost = read_jsonl(s2 / "trials.jsonl")
    write_jsonl_atomic(s2 / "trials.jsonl", lost[1:])
    with pytest.raises(InputError, match=f"^{re.escape(str(s2))}/trials.jsonl: the finished run holds only 1 of the "
                                         "run's 2 trials"):
        merge_runs([s1, s2, s3], out)
    write_jsonl_atomic(s2 / "trials.jsonl", lost)
    assert not out.exists() or not any(out.iterdir())  # nothing written by a refused merge
    r = cli("merge", str(s3), str(s1), str(s2), "--output-dir", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).parent == out


def test_shard_flags_on_the_command_line(tmp_path, cli):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--shard", "1/3", "--output-dir", str(tmp_path))
    assert r.returncode == 2 and "--seed" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(InputError, match="more shards than games"):
        run_nashgap(NashgapConfig(model="random", num_games=2, seed=1, shard="1/3", output_dir=str(tmp_path)))
    with pytest.raises(InputError, match="more shards than tasks"):
        run_complex(TmgbenchConfig(model="oracle", form="nested", seed=1, shard="3/3", output_dir=str(tmp_path)), 2, 2)
    r = cli("tmgbench", "run", "--model", "oracle", "--seed", "1", "--shard", "4/3", "--output-dir", str(tmp_path))
    assert r.returncode == 2 and "need 1 <= i <= n" in r.stderr
    assert not any(tmp_path.iterdir())
    # several players in one command: each gets its own shard folder; shards of each merge alone
    out = tmp_path / "runs"
    for i in (1, 2):
        r = cli("nashgap", "--model", "random", "--model", "nash", "--num-games", "5", "--num-trials", "2",
                "--seed", "9", "--shard", f"{i}/2", "--output-dir", str(out), "--quiet")
        assert r.returncode == 0, r.stderr
    folders = {f.name.split("_", 3)[-1]: f for f in out.iterdir()}
    assert sorted(folders) == ["nash_shard1of2", "nash_shard2of2", "random_shard1of2", "random_shard2of2"]
    r = cli("merge", str(folders["random_shard2of2"]), str(folders["random_shard1of2"]),
            "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 0 and "merged from 2 shards" in r.stdout, r.stderr
    (merged,) = (tmp_path / "m").iterdir()
    assert merged.name.endswith("_random")
    assert len(read_jsonl(merged / "trials.jsonl")) == 10
    r = cli("merge", str(folders["nash_shard1of2"]), str(folders["random_shard2of2"]),
            "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and "config key 'model'" in r.stderr


def test_shards_over_http_equal_the_unsharded_run(tmp_path):
    """The scale-out recipe with a real HTTP backend: each shard calls the server itself (no cache),
    log-prob Nash-gap and sampled TMGBench (several repetitions per game) merge to the unsharded run."""
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        model = dict(model="openai-compatible:fake", base_url=server.base_url, no_cache=True)
        base = dict(num_games=5, order_rotations=2, seed=8, policy="logprob", **model)
        full = run_nashgap(NashgapConfig(output_dir=str(tmp_path / "full"), **base))
        shards = [run_nashgap(NashgapConfig(output_dir=str(tmp_path / "s"), shard=f"{i}/3", **base))
                  for i in (1, 2, 3)]
        assert full.totals["model_calls"] > 0 and full.summaries["pure"]["status_counts"]["parsed"] == 10
        merged = merge_runs([s.folder for s in shards], tmp_path / "m")
        _assert_same_run(full.folder, merged, ["trials.jsonl"], ["summary.json", "games.json"])

        tmg = dict(policy="sample", repeats=2, games="111,122,444,213", max_tokens=16, seed=8, **model)
        full = run_tmgbench(TmgbenchConfig(output_dir=str(tmp_path / "tfull"), **tmg))
        shards = [run_tmgbench(TmgbenchConfig(output_dir=str(tmp_path / "ts"), shard=f"{i}/3", **tmg))
                  for i in (1, 2, 3)]
        merged = merge_runs([s.folder for s in shards], tmp_path / "tm")
        _assert_same_run(full.folder, merged, ["answers.jsonl"], ["summary.json"])
        assert len(read_jsonl(merged / "answers.jsonl")) == 8


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_shard_record_edited_to_a_non_finite_number_is_refused(tmp_path, cli, value):
    """stratbench writes an undefined number as null: a NaN read back is a hand edit, and merged it
    would turn the run's headline mean into null. One line naming the file and line; nothing written."""
    for s in ("1/2", "2/2"):
        r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--shard", s,
                "--quiet", "--output-dir", str(tmp_path / "A"))
        assert r.returncode == 0, r.stderr
    shard = sorted((tmp_path / "A").iterdir())[1]
    lines = (shard / "trials.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    assert isinstance(rec["exploitability"], float)
    lines[0] = json.dumps({**rec, "exploitability": "__X__"}).replace('"__X__"', value)
    (shard / "trials.jsonl").write_text("\n".join(lines) + "\n")
    r = cli("merge", *map(str, sorted((tmp_path / "A").iterdir())), "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"error: {shard}/trials.jsonl: line 1: exploitability: ")
    assert "is not a finite number" in r.stderr and not (tmp_path / "out").exists()


def test_merge_names_an_input_that_is_no_result_folder_first(tmp_path, cli):
    """`merge SHARD /tmp --output-dir x`: /tmp is not a result folder — said of /tmp, not that the
    output lies inside "the shard folder /tmp"."""
    other = tmp_path / "plain"
    (other / "sub").mkdir(parents=True)
    r = cli("merge", str(other), "--output-dir", str(other / "sub" / "out"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {other}: not a result folder (no run.json or suite_metadata.json)"
    assert not (other / "sub" / "out").exists()


def _nashgap_shards(tmp_path: Path) -> list[Path]:
    for i in (1, 2):
        run_nashgap(NashgapConfig(num_games=4, num_trials=2, llm_type="random", seed=1, shard=f"{i}/2",
                                  output_dir=str(tmp_path / "s")))
    return sorted((tmp_path / "s").iterdir())


def test_an_interrupt_as_the_merged_folder_is_renamed_names_the_complete_folder(tmp_path, monkeypatch, capsys):
    """fuzz pass 8, M1: a Ctrl-C landing just after the rename is held back until the folder is
    named, and the command says the merged run is complete (not that nothing was written)."""
    import signal
    import threading

    from stratbench.cli.main import main
    from stratbench.runner import merge as merging

    shards = _nashgap_shards(tmp_path)
    real = merging.publish_folder
    # (Ctrl-C as a command-line process has it, whatever an earlier in-process test left installed)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(signal, "_test_previous_sigint", previous, raising=False)

    def publish(staged: Path) -> Path:
        final = real(staged)
        # between the rename and the command hearing of it: delivered to another thread (as the
        # kernel may deliver a signal sent to the process) and to the main thread; both held back
        idle = threading.Event()
        other = threading.Thread(target=idle.wait)
        other.start()
        signal.pthread_kill(other.ident, signal.SIGINT)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        idle.set()
        other.join()
        return final

    monkeypatch.setattr(merging, "publish_folder", publish)
    with pytest.raises(SystemExit) as e:
        main(["merge", *map(str, shards), "--output-dir", str(tmp_path / "m"), "--quiet"])
    (merged,) = (tmp_path / "m").iterdir()
    err = capsys.readouterr().err.strip()
    signal.signal(signal.SIGINT, previous)
    assert e.value.code == 130 and err == f"interrupted after {merged} was written whole (status finished); nothing is lost"
    assert json.loads((merged / "run.json").read_text())["status"] == "finished"


def test_merge_names_a_merged_run_given_as_a_shard(tmp_path):
    """fuzz pass 8, M2 and M3: one line that says what the folder is."""
    shards = _nashgap_shards(tmp_path)
    merged = merge_runs(shards, tmp_path / "m")
    with pytest.raises(InputError) as e:
        merge_runs([merged, shards[1]], tmp_path / "m2")
    assert str(e.value) == (f"{merged} is a merged run, not a shard; merge combines the shards (--shard i/n) of "
                            "one run")
    cfg = TmgbenchConfig(model="oracle", games="421,431", seed=2, shard="2/2", output_dir=str(tmp_path / "t"))
    other = Path(run_tmgbench(cfg).folder)
    with pytest.raises(InputError) as e:
        merge_runs([shards[0], other], tmp_path / "m3")
    assert str(e.value) == f"{other} is a tmgbench atomic run but {shards[0]} is a nashgap run"


def test_shards_of_one_run_scored_with_two_chat_templates_are_not_merged(tmp_path):
    """The template file named by both shards' configs changed between them: their run.json's
    template digests differ, and the merge refuses them (fuzz 24 D1: it kept shard 1's digest over
    records half made with the other template)."""
    from fake_openai_server import FakeOpenAIServer

    tpl = tmp_path / "t.jinja"
    body = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>"
    folders = []
    with FakeOpenAIServer(canned_text="Action: 1") as server:
        for i, tail in ((1, ""), (2, "Answer:")):
            tpl.write_text(body + tail)
            out = tmp_path / f"sh{i}"
            r = subprocess.run([sys.executable, "-m", "stratbench", "nashgap", "--model", "openai-compatible:fake",
                                "--base-url", server.base_url, "--chat", "--chat-template", str(tpl), "--policy",
                                "sample", "--num-games", "4", "--num-trials", "1", "--seed", "1", "--no-cache",
                                "--shard", f"{i}/2", "--output-dir", str(out), "--quiet"],
                               capture_output=True, text=True, timeout=300, env=dict(os.environ, CI="1"))
            assert r.returncode == 0, r.stderr
            (folder,) = out.iterdir()
            folders.append(folder)
    with pytest.raises(InputError, match="another chat template"):
        merge_runs(folders, tmp_path / "m")
    assert not (tmp_path / "m").exists()
