"""Merging the shards of one tiered suite (`suite tiered --shard i/n`, one machine each) into one
suite folder whose tables are byte-identical to an unsharded suite's (`stratbench merge`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

from stratbench.errors import InputError
from stratbench.runner.folders import discard_folder, now_iso, publish_folder, stage_folder
from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.merge import (
    IGNORED_CONFIG_KEYS,
    check_distinct,
    check_same_run,
    finished_shards,
    merge_run_folders,
)
from stratbench.suites.nashgap.run import merge_shards
from stratbench.suites.nashgap.tiered import (
    SUITE,
    TieredConfig,
    _cells,
    aggregate,
    check_cells_are_the_plans,
    collect_cell,
    find_cell_folder,
    suite_totals,
    write_tables,
)

# Suite config keys that may differ between the shards of one suite: where and how fast each shard
# ran (as for single runs, see stratbench.runner.merge) and where its suite file lay.
SUITE_IGNORED_CONFIG_KEYS = frozenset({"config_file"})


def _read_suite_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / "suite_metadata.json").read_text())
    except (OSError, ValueError):
        raise InputError(f"{folder}: not a tiered suite folder (no readable suite_metadata.json)") from None
    if not isinstance(meta, dict) or meta.get("suite") != SUITE or not isinstance(meta.get("config"), dict):
        raise InputError(f"{folder}/suite_metadata.json: not a tiered suite")
    return meta


def merge_suite_shards(folders: Sequence[str | Path], output_dir: str | Path = "results") -> Path:
    """Merge the finished shards ``1/n … n/n`` of one tiered suite (``suite tiered --shard i/n``,
    one machine each) into a new suite folder under `output_dir`; returns it.

    Every cell's n shard run folders are merged with the Nash-gap merger (`stratbench merge` of
    that cell) into ``models/<key>/``, the games files are copied, and the tables are rebuilt from
    the merged runs with the same code a suite run uses — so they are byte-identical to an
    unsharded suite's. Everything that can be checked is checked before the folder is created, and
    a merge that fails midway removes its folder; the shards are only read.
    """
    paths = [Path(f) for f in folders]
    if not paths:
        raise InputError("merge needs the shard folders of one tiered suite")
    check_distinct(paths)
    metas = [_read_suite_meta(p) for p in paths]
    ignored = IGNORED_CONFIG_KEYS | SUITE_IGNORED_CONFIG_KEYS
    check_same_run(paths, [{"suite": m["suite"],
                            "config": {k: v for k, v in m["config"].items() if k not in ignored}}
                           for m in metas])
    shards = finished_shards(paths, metas, "suite_metadata.json", "suite", "suite shard",
                             "stratbench suite tiered --resume")
    order = sorted(range(len(paths)), key=lambda i: shards[i].index)
    paths, metas, shards = [paths[i] for i in order], [metas[i] for i in order], [shards[i] for i in order]

    for p, m in zip(paths, metas):  # (each shard's saved plan is the one its cells ran)
        own = TieredConfig.from_json(m["config"])
        check_cells_are_the_plans(own, _cells(own, own.model_entries()), p / "models", str(p))
    config = TieredConfig.from_json(metas[0]["config"])
    config.shard = None
    config.output_dir = str(output_dir)
    # The model list and cells as the suite defined them (no key preflight: merging calls nothing).
    entries = config.model_entries()
    cells = _cells(config, entries)
    cell_folders: list[list[Path]] = []
    for cell in cells:
        found = []
        for p in paths:
            f, finished = find_cell_folder(p / "models" / cell.key, cell.tag)
            if f is None or not finished:
                what = "has no" if f is None else "has an unfinished"
                raise InputError(f"{p} {what} run for {cell.key} seed {cell.seed} bucket {cell.bucket.id}; "
                                 f"finish it with stratbench suite tiered --resume {p}")
            found.append(f)
        cell_folders.append(found)
    games = [Path("games") / f"seed_{s}" / f"{b.id}.json" for s in config.seeds for b in config.buckets()]
    for g in games:
        texts = []
        for p in paths:
            try:
                texts.append(json.loads((p / g).read_text()))
            except (OSError, ValueError):
                raise InputError(f"{p}: no readable {g}") from None
        for p, t in zip(paths[1:], texts[1:]):
            if t != texts[0]:
                raise InputError(f"{p / g} differs from {paths[0] / g}: the shards played different games")

    folder = stage_folder(output_dir, "tiered_suite_merged")  # renamed when complete
    try:
        for g in games:
            (folder / g).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(paths[0] / g, folder / g)
        meta = json.loads(json.dumps(metas[0]))  # a deep copy
        meta["config"] = config.to_json()
        meta["shard"] = None
        meta["merged_from"] = [str(p) for p in paths]
        meta["shard_runs"] = [
            {"folder": str(p), "shard": str(s), "start_time": m.get("start_time"),
             "end_time": m.get("end_time"), "git": m.get("git"), "platform": m.get("platform"),
             "versions": m.get("versions")}
            for p, s, m in zip(paths, shards, metas)
        ]
        meta["start_time"] = min(m.get("start_time") or "" for m in metas) or None
        meta["created_at"] = meta["start_time"]
        meta["end_time"] = max(m.get("end_time") or "" for m in metas) or None
        meta["merged_at"] = now_iso()
        meta["command"] = sys.argv
        meta.pop("resumed_at", None)

        all_rows: list[dict[str, Any]] = []
        per_game: dict[tuple[Any, ...], dict[str, list[float]]] = {}
        runs: list[dict[str, Any]] = []
        n_errors = 0
        for cell, found in zip(cells, cell_folders):
            run_folder = merge_run_folders(found, folder / "models" / cell.key, merge_shards)
            rows, entry = collect_cell(cell, run_folder, folder, per_game)
            all_rows += rows
            n_errors += entry["errors"]
            runs.append(entry)
        write_tables(folder, all_rows, aggregate(all_rows, per_game))
        meta["runs"] = runs
        meta["status"] = "finished"
        meta["totals"] = suite_totals(runs, len(cells), n_errors)
        write_json_atomic(folder / "suite_metadata.json", meta)
    except BaseException:
        discard_folder(folder)
        raise
    return publish_folder(folder)
