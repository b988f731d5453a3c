"""Whether a finished run's summaries are the ones its records give: what the report asks before
it shows a run's numbers.

A summary file is small and easy to edit by hand; the records are what the run measured. The
check recomputes the summaries exactly as a merge would — the suite's own merge of the one folder,
written into a scratch folder (every record read back through the suite's checks, as a resume
reads them) — and compares every value the saved summary holds with the recomputed one. A value
the recomputation does not have (a summary written by an older release with keys since removed)
is not judged: only what both hold can disagree.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.runner.merge import merged_counts

__all__ = ["check_run", "is_whole"]

#: relative tolerance between a saved and a recomputed number: the same records summarised on
#: another machine differ in the last bits of a bootstrap or a sum, never by more
REL_TOL = 1e-9
ABS_TOL = 1e-12


def _differs(saved: Any, again: Any) -> bool:
    if isinstance(saved, bool) or isinstance(again, bool):
        return saved is not again
    if isinstance(saved, (int, float)) and isinstance(again, (int, float)):
        return not math.isclose(saved, again, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(saved, dict) and isinstance(again, dict):
        return any(k in again and _differs(v, again[k]) for k, v in saved.items())
    if isinstance(saved, list) and isinstance(again, list):
        return len(saved) != len(again) or any(_differs(a, b) for a, b in zip(saved, again))
    return bool(saved != again)


def _first_difference(saved: Any, again: Any, path: str = "") -> str:
    if isinstance(saved, dict) and isinstance(again, dict):
        for k, v in saved.items():
            if k in again and _differs(v, again[k]):
                return _first_difference(v, again[k], f"{path}.{k}" if path else str(k))
    if isinstance(saved, list) and isinstance(again, list) and len(saved) == len(again):
        for i, (a, b) in enumerate(zip(saved, again)):
            if _differs(a, b):
                return _first_difference(a, b, f"{path}[{i}]")
    return f"{path or 'the file'} is {saved!r}, the records give {again!r}"


def is_whole(meta: dict[str, Any]) -> bool:
    """Whether run.json's config is the whole run (no shard, as an unsharded or a merged run saves
    it), not one shard of it; an unreadable shard counts as a shard (its records then say why)."""
    from stratbench.runner.shard import as_shard

    try:
        return as_shard(meta["config"].get("shard")).whole
    except (InputError, KeyError, TypeError, ValueError, AttributeError):
        return False


def check_run(folder: Path) -> None:
    """InputError naming the file when a run's run.json, records or summaries are not what the
    run wrote (a newer format, a record no run writes, a summary value the records do not give).
    Every record is read through the suite's checks whatever run.json says of the run; a finished,
    whole run's summaries are also recomputed and compared. An unfinished run (running,
    interrupted) and one shard of a run have no summary of the whole run to recompute: they are
    shown as they stand, their status marked. A run of an older version of its suite is shown as
    saved (this code computes that suite differently, so it cannot read its records as its own)."""
    from stratbench.suites import suite_for_run

    meta = read_run_json(folder)
    suite = suite_for_run(meta, str(folder))
    from stratbench.runner.folders import suite_version_of

    if suite_version_of(meta, str(folder)) < suite.version:
        return  # measured by an older definition of the suite, which this code cannot recompute: shown as saved
    try:  # every record as a resume reads it, by the plan of run.json's config (a finished run's too:
        # a config edited to fewer units, or to another player, is named here, not merged around)
        n_records = suite.check_records(folder)
    except InputError as e:
        raise InputError(_in(folder, str(e))) from None
    if meta.get("status") != "finished" or not is_whole(meta):
        # (one shard alone is no run a merge can recompute, nor is an unfinished run)
        if meta.get("status") == "finished" and n_records is not None:  # (a running run counts none yet)
            check_totals(folder, meta, {"records": n_records})
        return
    with tempfile.TemporaryDirectory(prefix="stratbench-check-") as tmp:
        out = Path(tmp) / "run"
        out.mkdir()
        try:
            merged = suite.merge([folder], out)
        except InputError as e:
            msg = str(e)
            if "the shards hold" in msg:  # (the merge's words for records missing from a finished run)
                msg = msg.replace("the shards hold", "the finished run holds only").split("; merge every")[0]
            raise InputError(_in(folder, msg)) from None
        check_totals(folder, meta, merged_counts(out, merged))
        # the summaries, and the per-game table compare reads (TMGBench's grids.json)
        for again in [*sorted(out.glob("summary*.json")), *sorted(out.glob("grids.json"))]:
            saved_file = folder / again.name
            if not saved_file.is_file():
                raise InputError(f"{saved_file}: missing (the run's records give one)")
            saved, recomputed = _read(saved_file), _read(again)
            if isinstance(recomputed, dict) and recomputed:
                # (an older release's summary may lack a key or two; one that lacks most is no summary)
                missing = [k for k in recomputed if not isinstance(saved, dict) or k not in saved]
                if 2 * len(missing) > len(recomputed):
                    raise InputError(f"{saved_file}: lacks {len(missing)} of the {len(recomputed)} values its run's "
                                     f"records give ({', '.join(missing[:3])}, …): the summary was edited by hand")
            if _differs(saved, recomputed):
                _config_difference(folder, meta, saved_file, saved, recomputed)
                raise InputError(f"{saved_file}: does not agree with the run's records "
                                 f"({_first_difference(saved, recomputed)}): the summary or the records were edited by hand")


def check_totals(folder: Path, meta: dict[str, Any], counted: dict[str, int]) -> None:
    """InputError naming run.json when its totals.records or totals.errors are not what the run's
    records count (``counted``). The model's calls, tokens and cost cannot be counted again from
    the records (a cached answer costs nothing; a retried call counts twice): they stay as saved."""
    totals = meta.get("totals")
    if not isinstance(totals, dict):
        return
    for key, n in counted.items():
        if key in totals and totals[key] != n:
            raise InputError(f"{folder}/run.json: totals.{key} is {totals[key]!r}, but the run's records count {n}: "
                             "run.json was edited")


def _config_difference(folder: Path, meta: dict[str, Any], saved_file: Path, saved: Any, again: Any) -> None:
    """InputError naming run.json when the first value on which a summary and its recomputation
    differ is a config key the summary repeats: the recomputation took it from run.json, so either
    file may have been edited (the records have not been shown to be)."""
    config = meta.get("config")
    if not isinstance(saved, dict) or not isinstance(again, dict) or not isinstance(config, dict):
        return
    key = next((k for k, v in saved.items() if k in again and _differs(v, again[k])), None)
    if key is not None and key in config and not _differs(config[key], again[key]):
        raise InputError(f"{folder}/run.json: config.{key} is {config[key]!r}, but {saved_file.name} says "
                         f"{saved[key]!r}: run.json or the summary was edited")


def _in(folder: Path, msg: str) -> str:
    """A message about a run's files, naming the folder once (run.json's saved config: the file)."""
    if str(folder) in msg:
        return msg
    return f"{folder}/{msg}" if msg.startswith("run.json") else f"{folder}: {msg}"


def _read(path: Path) -> Any:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise InputError(f"{path}: not readable JSON ({type(e).__name__})") from None
