"""`tom baseline` result folders: --shard i/n, `stratbench merge` equal to the unsharded run record
for record, and input errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic
from stratbench.suites import get_suite
from stratbench.suites.tom.baseline_run import BaselineConfig, run_tom_baseline
from stratbench.workflows.merge import merge_runs


def load(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def test_baseline_shards_merge_to_the_unsharded_run(tmp_path):
    def config(out, shard=None):
        return BaselineConfig(["rps", "ipd"], ["single_action", "tit_for_tat", "mixed"], 7, 15, 3, str(out), shard)

    result = run_tom_baseline(config(tmp_path / "whole"))
    whole, rows = result.folder, result.summary["settings"]
    assert result.n_errors == 0 and result.totals["records"] == 42 and result.totals["settings"] == 6
    shards = [run_tom_baseline(config(tmp_path / "shards", f"{i}/3")).folder for i in (3, 1, 2)]
    eps = read_jsonl(shards[1] / "episodes.jsonl")  # shard 1/3: episodes 0, 3, 6 of each setting
    assert sorted({r["episode"] for r in eps}) == [0, 3, 6] and len(eps) == 18
    assert load(shards[1], "summary.json")["shard"] == "1/3"
    merged = merge_runs(shards, tmp_path / "merged")
    assert read_jsonl(merged / "episodes.jsonl") == read_jsonl(whole / "episodes.jsonl")
    assert load(merged, "summary.json") == load(whole, "summary.json")
    assert load(merged, "curves.json") == load(whole, "curves.json")
    assert (merged / "regret_curve.png").stat().st_size > 1000
    assert load(merged, "run.json")["config"]["shard"] is None
    # the summary is the records' summary: a row's mean is the mean of its episodes
    first = [r for r in read_jsonl(whole / "episodes.jsonl") if r["game"] == "rps" and r["partner"] == "single_action"]
    assert rows[0]["regret_per_step"] == pytest.approx(sum(r["regret_per_step"] for r in first) / 7)
    with pytest.raises(InputError, match="missing 2/3"):
        merge_runs([shards[0], shards[1]], tmp_path / "bad")


def test_baseline_merge_needs_every_episode_once(tmp_path):
    shards = [run_tom_baseline(BaselineConfig(["ibs"], ["tit_for_tat"], 4, 5, 2, str(tmp_path / "sh"), f"{i}/2")).folder
              for i in (1, 2)]
    recs = read_jsonl(shards[1] / "episodes.jsonl")
    write_jsonl_atomic(shards[1] / "episodes.jsonl", recs[:-1])
    # (each shard is read as its own run first: the shard that lost a record is named)
    with pytest.raises(InputError, match=f"^{re.escape(str(shards[1]))}/run.json: totals.records is 2, but the run.s "
                                         "records count 1: records were cut since it finished"):
        merge_runs(shards, tmp_path / "merged")
    write_jsonl_atomic(shards[1] / "episodes.jsonl", recs + recs[:1])
    with pytest.raises(InputError, match="the shards hold 4 of the run.s 4 episodes and 1 twice;"):
        merge_runs(shards, tmp_path / "merged")
    merged = tmp_path / "merged"
    assert not merged.exists() or not any(merged.iterdir())  # a failed merge leaves nothing behind


def test_bad_baseline_input(tmp_path):
    with pytest.raises(InputError, match="more shards than episodes"):
        run_tom_baseline(BaselineConfig(["rps"], ["single_action"], 2, 10, 0, str(tmp_path), "1/3"))
    for kw, word in (({"games": ["chess"]}, "chess"), ({"partners": ["nobody"]}, "nobody"),
                     ({"rounds": 0}, "rounds"), ({"shard": "3/2"}, "3/2")):
        with pytest.raises(InputError, match=word):
            run_tom_baseline(BaselineConfig(**{"output_dir": str(tmp_path), **kw}))
    with pytest.raises(InputError, match="not a result folder"):
        get_suite("tom-baseline").run(BaselineConfig(output_dir=str(tmp_path)), resume_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # checked before any folder is made


@pytest.mark.parametrize("extra", [0, 1, 3])  # killed between settings, or while a setting was being written
def test_an_interrupted_baseline_resumes_to_the_whole_run(tmp_path, extra):
    cfg = BaselineConfig(["rps", "ipd"], ["single_action", "tit_for_tat"], 4, 12, 3, str(tmp_path / "a"))
    whole = run_tom_baseline(cfg)
    cut = run_tom_baseline(BaselineConfig(**{**cfg.__dict__, "output_dir": str(tmp_path / "b")}))
    recs = read_jsonl(cut.folder / "episodes.jsonl")
    write_jsonl_atomic(cut.folder / "episodes.jsonl", recs[: len(recs) // 2 + extra])  # settings lost
    meta = json.loads((cut.folder / "run.json").read_text())
    (cut.folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    done = get_suite("tom-baseline").run(BaselineConfig(), resume_dir=cut.folder)
    assert read_jsonl(done.folder / "episodes.jsonl") == read_jsonl(whole.folder / "episodes.jsonl")
    assert done.summary == whole.summary


def test_each_setting_once_and_counts_bounded(tmp_path, cli):
    for kw, needle in (({"games": ["rps", "rps"]}, "--game: 'rps' is listed twice"),
                       ({"partners": ["single_action", "single_action"]}, "--partner: 'single_action' is listed twice"),
                       ({"games": []}, "--game: give at least one value"),
                       ({"seed": -1}, "--seed must be at least 0"),
                       ({"episodes": 10**12}, "--episodes must be at most"),
                       ({"episodes": 100_000, "rounds": 10_000}, "units of work"),
                       ({"rounds": 1.5}, "--rounds must be an integer")):
        with pytest.raises(InputError, match=needle):
            run_tom_baseline(BaselineConfig(**{"output_dir": str(tmp_path / "o"), **kw}))
    r = cli("tom", "baseline", "--game", "rps,rps", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip() == "error: --game: 'rps' is listed twice"
    assert not (tmp_path / "o").exists()
