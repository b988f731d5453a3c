"""Whether a finished run's summaries are the ones its records give: what the report asks before
it shows a run's numbers.

A summary file is small and easy to edit by hand; the records are what the run measured. The
check recomputes the summaries exactly as a merge would — the suite's own merge of the one folder,
written into a scratch folder (every record read back through the suite's checks, as a resume
reads them) — and compares the two whole: every value, and the keys themselves. A key the
records do not give (a player or a metric added by hand) is shown by the report as if measured,
and one they give that the file lacks (a failure count deleted) hides what was measured: either
is an edit. (A run of an older definition of its suite is not recomputed at all: it is shown as
saved, :func:`check_run`.) run.json's counts that the records give — records, errors and the
suite's own (episodes, matches, settings) — are checked too; calls, tokens and cost are not
countable again from the records.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.runner.merge import merged_counts, suite_counts

__all__ = ["check_run", "check_shard", "is_whole"]

#: relative tolerance between a saved and a recomputed number: the same records summarised on
#: another machine differ in the last bits of a bootstrap or a sum, never by more
REL_TOL = 1e-9
ABS_TOL = 1e-12


def _differs(saved: Any, again: Any) -> bool:
    if isinstance(saved, bool) or isinstance(again, bool):
        return saved is not again
    if isinstance(saved, (int, float)) and isinstance(again, (int, float)):
        return not math.isclose(saved, again, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(saved, dict) and isinstance(again, dict):  # (a key the records do not give: added by hand)
        return saved.keys() != again.keys() or any(_differs(v, again[k]) for k, v in saved.items())
    if isinstance(saved, list) and isinstance(again, list):
        return len(saved) != len(again) or any(_differs(a, b) for a, b in zip(saved, again))
    return bool(saved != again)


def _first_difference(saved: Any, again: Any, path: str = "") -> str:
    if isinstance(saved, dict) and isinstance(again, dict):
        at = f"{path}." if path else ""
        for k, v in saved.items():
            if k not in again:
                return f"{at}{k} is {_short(v)}, a value the records do not give"
            if _differs(v, again[k]):
                return _first_difference(v, again[k], f"{at}{k}")
        for k in again:
            if k not in saved:
                return f"{at}{k} is missing, the records give {_short(again[k])}"
    if isinstance(saved, list) and isinstance(again, list) and len(saved) == len(again):
        for i, (a, b) in enumerate(zip(saved, again)):
            if _differs(a, b):
                return _first_difference(a, b, f"{path}[{i}]")
    return f"{path or 'the file'} is {saved!r}, the records give {again!r}"


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


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
    Every record is read through the suite's checks whatever run.json says of the run; a finished
    run's summaries are also recomputed and compared — a whole run's by the suite's merge of the
    one folder, one finished shard's by its own plan's summary of its records (what the shard wrote
    when it finished). An unfinished run (running, interrupted) has no summary of its records to
    recompute: it is shown as it stands, its status marked. A run of an older version of its suite
    is shown as saved (this code computes that suite differently, so it cannot read its records as
    its own)."""
    from stratbench.suites import suite_for_run

    meta = read_run_json(folder)
    suite = suite_for_run(meta, str(folder))
    from stratbench.runner.folders import suite_version_of

    if suite_version_of(meta, str(folder)) < suite.version:
        return  # measured by an older definition of the suite, which this code cannot recompute: shown as saved
    records = check_shard(folder, meta, suite)
    if meta.get("status") != "finished":
        return  # (an unfinished run: no summary of these records was written)
    if not getattr(suite, "recomputable", True):  # (a CHBench fit of play collected elsewhere)
        return
    with tempfile.TemporaryDirectory(prefix="stratbench-check-") as tmp:
        out = Path(tmp) / "run"
        out.mkdir()
        if not is_whole(meta):  # one shard: its own plan summarises its records as it did when it finished
            plan = suite.folder_plan(folder)
            if plan is None or records is None:
                return
            sort = {s.file: s.sort_key for s in plan.streams()}
            plan.summarise(out, {f: sorted(rs, key=sort[f]) for f, rs in records.items()})
            _compare_summaries(folder, meta, out)
            _compare_derived(folder, out)
            _check_nothing_added(folder, out, {"run.json", "games.json", *sort})
            return
        try:
            merged = suite.merge([folder], out)
        except InputError as e:
            msg = str(e)
            if "the shards hold" in msg:  # (the merge's words for records missing from a finished run)
                msg = msg.replace("the shards hold", "the finished run holds only").split("; merge every")[0]
            raise InputError(_in(folder, msg)) from None
        check_totals(folder, meta, {**suite_counts(merged), **merged_counts(out, merged)})
        _compare_summaries(folder, meta, out)
        _compare_derived(folder, out)
        _check_nothing_added(folder, out, {"run.json"})


def check_shard(folder: Path, meta: dict[str, Any], suite: Any) -> dict[str, list[dict[str, Any]]] | None:
    """InputError naming the file (and line) when a run's records are not what its own run — its
    saved config, its own shard — could have written, whatever run.json says of it; for a finished
    run, also a records file whose last line is cut short (a torn write, a copy cut off), and for a
    finished shard a unit of its plan missing or cut short and a totals.records its records do not
    count (a whole run's are checked by its recomputation, :func:`check_run`). What a merge
    asks of each shard before it merges them (a record moved into another shard's file, an edited
    count), and the report and compare of any run. Returns the records read (None: the suite has
    no plan to read them by)."""
    from stratbench.runner.jsonl import scan_jsonl
    from stratbench.runner.lifecycle import check_finished_units, check_records

    plan = suite.folder_plan(folder)
    try:  # every record as a resume reads it, by the plan of run.json's config (a finished run's too:
        # a config edited to fewer units, or to another player, is named here, not merged around)
        if plan is None:
            suite.check_records(folder)  # (no plan to read them by: their JSON only)
            return None
        records = check_records(plan, folder)
    except InputError as e:
        raise InputError(_in(folder, str(e))) from None
    if meta.get("status") != "finished":
        return records  # (a running run counts none yet, and may end in a torn line: its resume cuts it)
    for path in sorted(folder / s.file for s in plan.streams()):
        done, good_end, size = scan_jsonl(path)
        if good_end < size:
            raise InputError(f"{path}: line {len(done) + 1} is cut short (a torn write, or a copy cut off), "
                             f"though the run finished; finish it again with --resume {folder}")
    if not is_whole(meta):  # (a whole run's merge says the same, in its suite's words: check_run)
        check_finished_units(plan, folder, records)
        n = sum(len(rs) for rs in records.values())
        saved = meta.get("totals", {}).get("records") if isinstance(meta.get("totals"), dict) else None
        if isinstance(saved, int) and not isinstance(saved, bool) and n < saved:  # (a unit that holds many records)
            raise InputError(f"{folder}/run.json: totals.records is {saved}, but the run's records count {n}: records "
                             f"were cut since it finished (or run.json was edited); finish it again with --resume "
                             f"{folder}")
        check_totals(folder, meta, {"records": n})
    return records


#: files a run writes that are not what its summaries say again: its records (read by the suite's
#: checks), run.json, and figures (drawn from the checked tables; pixels differ by matplotlib build)
_NOT_DERIVED = frozenset({".jsonl", ".png", ".svg", ".pdf", ".tmp"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _compare_derived(folder: Path, out: Path) -> None:
    """InputError naming the first other table a run wrote (CHBench's levels.md/.csv and fit.json,
    ToM's curves.json, …: what the report shows or draws its figures from) that the recomputation
    in ``out`` writes otherwise. JSON is compared as the summaries are; text tables number by
    number, each to one unit of the last digit it prints (a number rounded on either side of a
    digit by another machine's last bits is the same number; its digits are not another layout).
    A file the run's folder lacks is not judged (the report shows nothing of it)."""
    done = {p.name for p in out.glob("summary*.json")} | {"grids.json", "run.json"}
    for again in sorted(out.iterdir()):
        saved_file = folder / again.name
        if again.name in done or again.suffix in _NOT_DERIVED or not again.is_file() or not saved_file.is_file():
            continue
        if again.suffix == ".json":
            saved, recomputed = _read(saved_file), _read(again)
            if _differs(saved, recomputed):
                raise InputError(f"{saved_file}: does not agree with the run's records "
                                 f"({_first_difference(saved, recomputed)}): the file or the records were edited by hand")
            continue
        try:
            text, want = saved_file.read_text(encoding="utf-8"), again.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{saved_file}: not readable ({type(e).__name__})") from None
        where = _text_difference(text, want)
        if where is not None:
            raise InputError(f"{saved_file}: does not agree with the run's records ({where}): the file or the "
                             "records were edited by hand")


def _text_difference(saved: str, again: str) -> str | None:
    """Where two text tables differ (None: the same words, and numbers equal to their printed digits)."""
    a_lines, b_lines = saved.splitlines(), again.splitlines()
    if len(a_lines) != len(b_lines):
        return f"{len(a_lines)} lines where the records give {len(b_lines)}"
    for n, (a, b) in enumerate(zip(a_lines, b_lines), 1):
        if a == b:
            continue
        if _NUMBER.split(a) != _NUMBER.split(b):
            return f"line {n} reads {a.strip()[:60]!r}, the records give {b.strip()[:60]!r}"
        for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
            if x != y and not _same_printed(x, y):
                return f"line {n} has {x} where the records give {y}"
    return None


def _same_printed(x: str, y: str) -> bool:
    """Two numbers printed alike (the same decimals, the same exponent form) that differ by at most
    one unit of their last digit — a rounding another machine's last bits tip the other way.
    Integers (counts) are compared exactly, and a number retyped with fewer digits is not the same."""
    def layout(t: str) -> tuple[int, bool]:
        mantissa, _, exp = t.lower().partition("e")
        return (len(mantissa.split(".")[1]) if "." in mantissa else -1), bool(exp)

    places, exponent = layout(x)
    if layout(y) != (places, exponent) or (places < 0 and not exponent):
        return False
    try:
        unit = 10.0 ** (int(x.lower().partition("e")[2] or 0) - max(places, 0))
        return abs(float(x) - float(y)) <= 1.0001 * unit
    except (OverflowError, ValueError):
        return False


#: what the report shows or a reader reads of a run's folder: records, JSON files, tables, figures
_SHOWN = frozenset({".jsonl", ".json", ".md", ".csv", ".png"})


def _check_nothing_added(folder: Path, out: Path, kept: set[str]) -> None:
    """InputError naming the first file of a finished run that the recomputation in ``out`` does
    not write and the run does not keep besides (``kept``: run.json, a shard's records and games):
    a file put there by hand — a second summary, a table of a mechanism never played, another
    run's grids.json, a heat map — was shown or compared as the run's own (fuzz 29 B F1/F2).
    Hidden files and staging files (``*.tmp``) are not the run's results."""
    again = {p.name for p in out.iterdir()}
    for p in sorted(folder.iterdir()):
        if p.name in again or p.name in kept or p.name.startswith(".") or p.suffix not in _SHOWN:
            continue
        raise InputError(f"{p}: a file the run's records do not give (added by hand, or copied from another "
                         "run); remove it")


def _compare_summaries(folder: Path, meta: dict[str, Any], out: Path) -> None:
    """InputError naming the first saved summary (or TMGBench's grids.json, the per-game table
    compare reads) of ``folder`` that is missing, or holds a value the recomputation in ``out``
    does not give."""
    for again in [*sorted(out.glob("summary*.json")), *sorted(out.glob("grids.json"))]:
        saved_file = folder / again.name
        if not saved_file.is_file():
            raise InputError(f"{saved_file}: missing (the run's records give one)")
        saved, recomputed = _read(saved_file), _read(again)
        if isinstance(recomputed, dict) and recomputed:
            missing = [k for k in recomputed if not isinstance(saved, dict) or k not in saved]
            if missing:  # (a failure count deleted hides the failures: fuzz 28 B F5)
                raise InputError(f"{saved_file}: lacks {len(missing)} of the {len(recomputed)} values its run's "
                                 f"records give ({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}): "
                                 "the summary was edited by hand")
        if _differs(saved, recomputed):
            _config_difference(folder, meta, saved_file, saved, recomputed)
            raise InputError(f"{saved_file}: does not agree with the run's records "
                             f"({_first_difference(saved, recomputed)}): the summary or the records were edited by hand")


def check_totals(folder: Path, meta: dict[str, Any], counted: dict[str, int]) -> None:
    """InputError naming run.json when one of its totals that the run's records count
    (``counted``: records, errors, the suite's own counts) is not what they count. The model's
    calls, tokens and cost cannot be counted again from the records (a cached answer costs
    nothing; a retried call counts twice): they stay as saved."""
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
