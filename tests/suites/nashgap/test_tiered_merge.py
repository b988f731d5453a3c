"""`stratbench merge` of tiered-suite shards (`suite tiered --shard i/n`): the merged suite's tables
are byte-identical to an unsharded suite's, and bad sets of shards are refused before anything is
written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_json_atomic, write_jsonl_atomic
from stratbench.suites.nashgap.tiered import TieredConfig, find_cell_folder, run_tiered_suite
from stratbench.workflows.merge import merge_runs

TABLES = ("big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md")
BUCKETS = ("2x2_lowVar_pure", "3x3_midVar_mixed")
SUITE_ARGS = ("suite", "tiered", "--use-dummy", "--num-games-per-bucket", "4", "--num-trials", "2",
              "--seeds", "42", "--bucket-ids", *BUCKETS, "--providers", "openai", "--quiet")


def _one_folder(parent: Path) -> Path:
    (folder,) = list(parent.iterdir())
    return folder


def test_sharded_suite_merged_equals_unsharded(cli, tmp_path):
    shards = []
    for i in (1, 2, 3):
        r = cli(*SUITE_ARGS, "--shard", f"{i}/3", "--output-dir", str(tmp_path / f"s{i}"))
        assert r.returncode == 0, r.stderr
        shards.append(_one_folder(tmp_path / f"s{i}"))
    r = cli(*SUITE_ARGS, "--output-dir", str(tmp_path / "full"))
    assert r.returncode == 0, r.stderr
    full = _one_folder(tmp_path / "full")
    # Each shard's tables cover a third of the games only, so they differ from the whole suite's.
    assert all((s / TABLES[0]).read_bytes() != (full / TABLES[0]).read_bytes() for s in shards)

    # Shards in any order; the summary line names the suite.
    r = cli("merge", str(shards[2]), str(shards[0]), str(shards[1]), "--output-dir", str(tmp_path / "merged"))
    assert r.returncode == 0, r.stderr
    assert "tiered suite of 4 runs merged from 3 shards" in " ".join(r.stdout.split())
    merged = _one_folder(tmp_path / "merged")
    for name in TABLES:
        assert (merged / name).read_bytes() == (full / name).read_bytes(), name
    for s in (42,):
        for b in BUCKETS:
            g = Path("games") / f"seed_{s}" / f"{b}.json"
            assert (merged / g).read_bytes() == (full / g).read_bytes()

    meta = json.loads((merged / "suite_metadata.json").read_text())
    assert meta["status"] == "finished" and meta["suite"] == "tiered"
    assert meta["merged_from"] == [str(s) for s in shards]
    assert [r["shard"] for r in meta["shard_runs"]] == ["1/3", "2/3", "3/3"]
    assert meta["config"]["shard"] is None and meta["shard"] is None
    assert meta["config"]["output_dir"] == str(tmp_path / "merged")
    assert meta["totals"]["runs"] == 4 and meta["totals"]["errors"] == 0
    full_meta = json.loads((full / "suite_metadata.json").read_text())
    assert meta["totals"]["records"] == full_meta["totals"]["records"] == 4 * 2 * 4 * 2
    assert [(r["seed"], r["bucket_id"], r["model_folder"]) for r in meta["runs"]] == \
        [(r["seed"], r["bucket_id"], r["model_folder"]) for r in full_meta["runs"]]
    # Every cell is a merged Nash-gap run folder, with the unsharded run's summaries.
    for run in meta["runs"]:
        cell = merged / run["folder"]
        run_json = json.loads((cell / "run.json").read_text())
        assert len(run_json["merged_from"]) == 3 and run_json["config"]["shard"] is None
        twin = full / next(f["folder"] for f in full_meta["runs"]
                           if (f["seed"], f["bucket_id"], f["model_folder"]) ==
                           (run["seed"], run["bucket_id"], run["model_folder"]))
        for name in ("summary_pure_actions.json", "summary_mixed_strategy.json", "games.json"):
            assert (cell / name).read_bytes() == (twin / name).read_bytes(), (run["folder"], name)

    # The merged folder is a complete suite: resuming it runs nothing and rebuilds the same tables.
    again = run_tiered_suite(TieredConfig(), resume_dir=merged)
    assert again.folder == merged
    for name in TABLES:
        assert (merged / name).read_bytes() == (full / name).read_bytes(), name

    # A missing shard: one line, exit 2, no output folder.
    r = cli("merge", str(shards[0]), str(shards[1]), "--output-dir", str(tmp_path / "refused"))
    assert r.returncode == 2
    assert r.stderr.strip() == "error: cannot merge: missing 3/3", r.stderr
    assert not (tmp_path / "refused").exists()


def _shards(tmp_path: Path, n: int = 2, overrides: dict[int, dict[str, object]] | None = None) -> list[Path]:
    out = []
    for i in range(1, n + 1):
        kw = dict(use_dummy=True, num_games_per_bucket=4, num_trials=2, seeds=[7],
                  bucket_ids=["2x2_lowVar_pure"], providers=["openai"], shard=f"{i}/{n}",
                  output_dir=str(tmp_path / f"shard{i}"))
        kw.update((overrides or {}).get(i, {}))
        out.append(run_tiered_suite(TieredConfig(**kw)).folder)  # type: ignore[arg-type]
    return out


def test_merge_refuses_bad_suite_shards(tmp_path):
    s1, s2 = _shards(tmp_path)
    out = tmp_path / "merged"
    odd = _shards(tmp_path / "odd", overrides={2: {"num_trials": 3}})
    whole = run_tiered_suite(TieredConfig(use_dummy=True, num_games_per_bucket=4, num_trials=2,
                                          seeds=[7], bucket_ids=["2x2_lowVar_pure"],
                                          providers=["openai"], output_dir=str(tmp_path / "w"))).folder
    cell_run = next((s1 / "models" / "openai__A__gpt-4o").iterdir())
    cases = [
        ((s1,), "missing 2/2"),
        ((odd[0], odd[1]), "differ in config key 'num_trials': 3 vs 2"),
        ((s1, s2, whole), "is a whole suite \\(made without --shard\\), not a shard"),
        ((whole,), "unsharded suites"),
        ((s1, cell_run), "not a tiered suite folder"),
        ((cell_run, s1), "not a tiered suite folder"),
    ]
    for folders, needle in cases:
        with pytest.raises(InputError, match=needle):
            merge_runs(folders, out)
    assert not out.exists()

    # An unfinished shard, and a shard that lost a cell's run folder.
    meta = json.loads((s2 / "suite_metadata.json").read_text())
    write_json_atomic(s2 / "suite_metadata.json", {**meta, "status": "running"})
    with pytest.raises(InputError, match="not finished.*--resume"):
        merge_runs([s1, s2], out)
    write_json_atomic(s2 / "suite_metadata.json", meta)
    cell, _ = find_cell_folder(s2 / "models" / "openai__B__gpt-4o-mini", "seed7_2x2_lowVar_pure")
    assert cell is not None
    shutil.move(cell, tmp_path / "aside")
    with pytest.raises(InputError, match="has no run for openai__B__gpt-4o-mini seed 7"):
        merge_runs([s1, s2], out)
    shutil.move(tmp_path / "aside", cell)
    assert not out.exists()

    # A cell that lost records is caught by the Nash-gap merger midway: the merge removes its folder.
    trials = cell / "trials_pure_actions.jsonl"
    kept = read_jsonl(trials)
    write_jsonl_atomic(trials, kept[1:])
    with pytest.raises(InputError, match="of the run's 8 trials"):
        merge_runs([s2, s1], out)
    assert not any(out.iterdir())
    write_jsonl_atomic(trials, kept)
    merged = merge_runs([s2, s1], out)
    assert json.loads((merged / "suite_metadata.json").read_text())["merged_from"] == [str(s1), str(s2)]
