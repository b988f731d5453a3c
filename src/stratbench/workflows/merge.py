"""`stratbench merge DIR...`: put the shards of one run, one suite-file run or one suite collection
(the tiered suite) back together. Which it is comes from the folders themselves; the suite that
merges them comes from the registry, so this module names no suite."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import check_result_files, is_staging, read_run_json
from stratbench.runner.merge import check_output_outside, merge_run_folders
from stratbench.suites import suite_for_run


def _suite_metadata(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / "suite_metadata.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def merge_runs(folders: Sequence[str | Path], output_dir: str | Path = "results", allow_partial: bool = False) -> Path:
    """Merge the finished shards of one run (or suite) into a new folder under `output_dir`.
    `allow_partial` merges shards whose run.json does not say finished (their records must still
    cover the run; a suite's shards must be finished). `output_dir` must not be (or lie inside) one
    of the folders; the new folder appears under its name only when complete (it is written as a
    hidden `.tmp-<name>-<pid>` staging folder first, see `runner.folders.stage_folder`)."""
    paths = [Path(f) for f in folders]
    if not paths:
        raise InputError("merge needs the shard folders of one run")
    for p in paths:  # "not a result folder" before anything else is said of it
        if p.is_dir() and not is_staging(p.name) and not (p / "run.json").is_file() \
                and not (p / "suite_metadata.json").is_file():
            raise InputError(f"{p}: not a result folder (no run.json or suite_metadata.json)")
    check_output_outside(paths, output_dir)  # before anything is read: never write into an input
    for p in paths:  # (a pipe among a shard's files would block the merge; /dev/zero never end it)
        if p.is_dir() and not is_staging(p.name):
            check_result_files(p, below=True)
    for p in paths:
        if is_staging(p.name):
            raise InputError(f"{p}: the staging folder of a merge or report that never finished (killed?), "
                             "not a result folder; it is removed by the next merge into its folder")
    metas = [_suite_metadata(p) for p in paths]
    if any(m is not None and m.get("suite") == "suite-file" for m in metas):
        # Shards of `stratbench suite run FILE --shard i/n`: whole runs, copied together
        from stratbench.workflows.suite_file import merge_suite_file_shards

        return merge_suite_file_shards(paths, output_dir)
    if any((p / "suite_metadata.json").is_file() for p in paths):
        # A collection of runs with its own tables (the tiered suite): its suite merges each cell
        first = next(m for m in metas if m is not None) if any(metas) else {"suite": None}
        suite = suite_for_run(first, str(paths[0]))
        return suite.merge_collection(paths, output_dir)
    meta = read_run_json(paths[0])
    suite = suite_for_run(meta, str(paths[0]))
    from stratbench.runner.folders import check_suite_version

    for p in paths:  # a merge recomputes the summaries: only this code's definition of the suite can
        check_suite_version(read_run_json(p), suite.version, str(p))
    from stratbench.workflows.verify import check_shard

    return merge_run_folders(paths, output_dir, suite.merge, allow_partial=allow_partial,
                             check_shard=lambda p, m: check_shard(p, m, suite))
