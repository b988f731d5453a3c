"""Merging the shards of a `tom run` or `tom baseline` (called by `stratbench merge`).

:func:`stratbench.workflows.merge.merge_runs` has already checked that the folders are the finished
shards 1/n … n/n of one run with one config, created ``out`` and will write its run.json. Here the
records are put back in the unsharded order (episode, then round; baseline: setting, then
episode), checked for completeness (every episode exactly once), written, and the summary and plot
are recomputed from them with the very functions the run commands use - so the merged folder is
the unsharded one, record for record (fields in :data:`results.VOLATILE_KEYS` - timings, cache
hits - aside).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic


def _config(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "run.json").read_text())["config"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"{folder}: not a tom result folder (no readable run.json)") from None


def _records(folder: Path, name: str) -> list[dict[str, Any]]:
    path = folder / name
    if not path.is_file():
        raise InputError(f"{folder}: no {name}; not a finished tom shard")
    try:
        return read_jsonl(path)
    except ValueError as e:
        raise InputError(str(e)) from None


def merge_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Write the merged records, summary and plot of ``folders`` (the shards) into ``out``;
    returns the summary (for a baseline, ``{"settings": rows}``)."""
    from stratbench.suites.tom.results import (
        EPISODES_FILE,
        ROUNDS_FILE,
        canonical_episodes,
        canonical_rounds,
        episode_groups,
    )

    folders = [Path(f) for f in folders]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config = _config(folders[0])
    if config.get("agent") == "tabular-rmax":
        from stratbench.suites.tom.baseline_run import write_baseline_outputs

        records = [r for f in folders for r in _records(f, EPISODES_FILE)]
        keys = [(r["game"], r["partner"], int(r["episode"])) for r in records]
        want = {(g, p, e) for g in config["games"] for p in config["partners"] for e in range(config["episodes"])}
        if len(set(keys)) != len(keys) or set(keys) != want:
            missing = len(want - set(keys))
            raise InputError(f"the shards do not hold every episode exactly once ({missing} missing, "
                             f"{len(keys) - len(set(keys))} duplicated)")
        records = canonical_episodes(records, config["games"], config["partners"])
        write_jsonl_atomic(out / EPISODES_FILE, records)
        return {"settings": write_baseline_outputs(out, records, config)}

    if "prompting" not in config:
        raise InputError(f"{folders[0]}: not a tom run or tom baseline folder")
    from stratbench.suites.tom.model_run import write_run_outputs

    records: list[dict[str, Any]] = []
    seen: list[int] = []
    for f in folders:
        recs = _records(f, ROUNDS_FILE)
        records.extend(recs)
        seen.extend(episode_groups(recs))
    if len(seen) != len(set(seen)):
        raise InputError("an episode appears in more than one shard")
    missing = set(range(int(config["episodes"]))) - set(seen)
    if missing:
        raise InputError(f"the shards lack {len(missing)} episode(s), e.g. episode {min(missing)}; "
                         "finish them with --resume")
    records = canonical_rounds(records)
    write_jsonl_atomic(out / ROUNDS_FILE, records)
    return write_run_outputs(out, records, config)
