"""JSON Lines files written one record at a time, so a crash loses at most in-flight work.

A process killed mid-write can leave a torn last line; `read_jsonl(repair=True)` cuts the file back
to its last complete record so a resumed run appends cleanly.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Iterable


def _clean(x: Any) -> Any:
    """JSON has no NaN/Infinity; store them as null rather than emitting invalid JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(_clean(record), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class JsonlWriter:
    """Appends records, each flushed to the OS as soon as it is written."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: str | Path, repair: bool = False) -> list[dict[str, Any]]:
    """All complete records. With `repair`, a torn tail (no newline or invalid JSON in the last
    line) is truncated away; a corrupt line elsewhere is an error, not something to skip."""
    p = Path(path)
    if not p.exists():
        return []
    data = p.read_bytes()
    records: list[dict[str, Any]] = []
    good_end = 0
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        line = data[pos:end]
        try:
            if nl < 0:
                raise ValueError("no newline")
            if line.strip():
                records.append(json.loads(line))
            good_end = end
        except ValueError:
            if end < len(data):
                raise ValueError(f"{p}: corrupt record at byte {pos}") from None
            break  # torn last line
        pos = end
    if repair and good_end < len(data):
        with open(p, "r+b") as fh:
            fh.truncate(good_end)
    return records


def write_jsonl_atomic(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(dumps(r) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)


def rewrite_sorted(path: str | Path, key: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """Put a finished file in canonical order (records arrive in completion order), atomically."""
    records = sorted(read_jsonl(path), key=key)
    write_jsonl_atomic(path, records)
    return records


def write_json_atomic(path: str | Path, obj: Any) -> None:
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(_clean(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(tmp, p)


def resume_records(path: str | Path) -> list[dict[str, Any]]:
    """The finished records of a (possibly interrupted) run file: a torn tail is cut off and
    errored records are dropped (they are retried on resume), so each unit keeps one record."""
    previous = read_jsonl(path, repair=True)
    kept = [r for r in previous if r.get("status") != "error"]
    if len(kept) != len(previous):
        write_jsonl_atomic(path, kept)
    return kept
