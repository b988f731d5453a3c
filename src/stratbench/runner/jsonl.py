"""JSON Lines files written one record at a time, so a crash loses at most in-flight work.

A process killed mid-write can leave a torn last line; `read_jsonl(repair=True)` cuts the file back
to its last complete record so a resumed run appends cleanly.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

from stratbench.errors import InputError


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

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """A unit's records in one write: a run killed meanwhile keeps all of them or none (a
        torn tail is cut on resume), not the first few of a unit that then looks finished."""
        if records:
            self._fh.write("".join(dumps(r) + "\n" for r in records))
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _oserror(p: Path, e: OSError) -> InputError:
    return InputError(f"{p}: {e.strerror or type(e).__name__}")


def read_jsonl(path: str | Path, repair: bool = False) -> list[dict[str, Any]]:
    """All complete records. With `repair`, a torn tail (no newline or invalid JSON in the last
    line) is truncated away; a corrupt line elsewhere, or a line that is not a JSON object, is an
    InputError naming the file and line — never something to skip."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        return []
    try:
        data = p.read_bytes()
    except OSError as e:
        raise _oserror(p, e) from None
    records: list[dict[str, Any]] = []
    good_end = 0
    pos = 0
    line_no = 0
    while pos < len(data):
        line_no += 1
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        line = data[pos:end]
        try:
            if nl < 0:
                raise ValueError("no newline")
            if line.strip():
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise InputError(f"{p}: line {line_no}: a record must be a JSON object, "
                                     f"not {type(rec).__name__}")
                records.append(rec)
            good_end = end
        except InputError:
            raise
        except (ValueError, RecursionError):
            if end < len(data):
                raise InputError(f"{p}: line {line_no}: not a valid JSON record (corrupt or edited by hand); "
                                 "fix or remove that line") from None
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


def write_json_atomic(path: str | Path, obj: Any) -> None:
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(_clean(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(tmp, p)
