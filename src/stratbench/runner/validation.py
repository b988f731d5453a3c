"""Checking records read back from a result folder before anything is computed from them: every
record matches its suite's written schema (a TypedDict in the suite's `records` module), and every
record key appears once. A bad record is one line naming its file and line; an exact duplicate (a
line written twice) is dropped with a note; two different records for one key are refused, since
nothing says which is right."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.schema import Record

# Keys that say how fast a record was made or where it came from, not what it is: two records
# that differ only in them are the same record.
VOLATILE_KEYS = frozenset({"latency_s", "seconds", "cached", "row_latency_s", "col_latency_s"})


@functools.lru_cache(maxsize=64)
def _adapter(schema: type) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


def check_schema(records: Sequence[Record], schema: type | None, path: str | Path, numbered: bool = True) -> None:
    """InputError at the first record that does not match `schema` (file, line, field, problem);
    `numbered=False` for a file holding one object (no line number in the message)."""
    if schema is None:
        return
    from pydantic import ValidationError

    adapter = _adapter(schema)
    for line, rec in enumerate(records, 1):
        try:
            adapter.validate_python(rec, strict=False)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ())) or "record"
            at = f"line {line}: " if numbered else ""
            raise InputError(f"{path}: {at}{where}: {err.get('msg', 'invalid')}") from None


def _essence(rec: Record) -> str:
    return json.dumps({k: v for k, v in rec.items() if k not in VOLATILE_KEYS}, sort_keys=True, default=str)


def dedupe(records: Sequence[Record], key: Callable[[Record], Hashable] | None, path: str | Path,
           note: Callable[[str], None] | None = None) -> list[Record]:
    """The records with exact duplicates (same key, same content but timings) dropped; InputError
    when one key has two different records."""
    if key is None:
        return list(records)
    first: dict[Hashable, tuple[int, str]] = {}
    out: list[Record] = []
    dropped = 0
    for line, rec in enumerate(records, 1):
        try:
            k = key(rec)
        except (KeyError, TypeError) as e:
            raise InputError(f"{path}: line {line}: record has no usable id ({type(e).__name__}: {e})") from None
        essence = _essence(rec)
        if k in first:
            if first[k][1] != essence:
                raise InputError(f"{path}: lines {first[k][0]} and {line} are two different records for {k!r}; "
                                 "remove the wrong one")
            dropped += 1
            continue
        first[k] = (line, essence)
        out.append(rec)
    if dropped:
        (note or _stderr_note)(f"{path}: {dropped} duplicated record line(s) dropped")
    return out


def _stderr_note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)
