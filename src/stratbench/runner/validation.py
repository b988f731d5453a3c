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


#: a key a scripted record must not hold at all (see :func:`scripted_problem`)
ABSENT: tuple[Any, ...] = ()


def scripted_problem(rec: Record, fields: dict[str, tuple[Any, ...]], player: str) -> str | None:
    """Why a scripted (reference) player's record holds what only a model's call writes: each key
    of ``fields`` is absent, or holds one of the values given for it (a reference player's record
    writes None, 0 or {} there; :data:`ABSENT`: never written). A raw reply, an error, log-probs,
    a parse kind, token counts or a prompt on a player that never wrote text would be shown by the
    report as if it had."""
    for key, allowed in fields.items():
        if key in rec and not any(type(rec[key]) is type(v) and rec[key] == v for v in allowed):
            text = json.dumps(rec[key], default=str)
            text = text if len(text) <= 60 else text[:57] + "..."
            return f"{key} {text} on a record of {player}, a scripted player, which makes no model call"
    return None


class _Bad(Exception):
    def __init__(self, loc: list[str], msg: str) -> None:
        super().__init__(msg)
        self.loc, self.msg = loc, msg


@functools.lru_cache(maxsize=256)
def _hints(schema: type) -> dict[str, Any]:
    import typing

    return typing.get_type_hints(schema, include_extras=True)


@functools.lru_cache(maxsize=512)
def _adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


def _check_value(tp: Any, value: Any, loc: list[str]) -> None:
    """`value` against the declared type `tp`: TypedDicts field by field (the fields present),
    lists and unions of them item by item, anything else by pydantic in strict mode: a record's
    numbers are JSON numbers, so "1", true or 1.0 where an int is declared (or "1.0" for a float) is a
    hand edit, and a reader comparing or indexing with it would fail far from the file (an int is
    still a float)."""
    import types
    import typing

    from pydantic import ValidationError

    while typing.get_origin(tp) in (typing.Required, typing.NotRequired) or (
            typing.get_origin(tp) is typing.Annotated and typing.is_typeddict(typing.get_args(tp)[0])):
        tp = typing.get_args(tp)[0]  # (other Annotated types keep their constraints for pydantic)
    if typing.is_typeddict(tp):
        if not isinstance(value, dict):
            raise _Bad(loc, f"expected an object, got {type(value).__name__}")
        hints = _hints(tp)
        for k, v in value.items():
            if k in hints:
                _check_value(hints[k], v, [*loc, str(k)])
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and any(typing.is_typeddict(a) for a in args):
        if value is None and type(None) in args:
            return
        problems = []
        for arm in args:
            try:
                _check_value(arm, value, loc)
                return
            except _Bad as e:
                problems.append(e)
        raise problems[0]
    if origin in (list, tuple) and args and typing.is_typeddict(args[0]):
        if not isinstance(value, (list, tuple)):
            raise _Bad(loc, f"expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            _check_value(args[0], item, [*loc, str(i)])
        return
    try:
        _adapter(tp).validate_python(value, strict=True)
    except ValidationError as e:
        err = e.errors()[0]
        raise _Bad([*loc, *(str(x) for x in err.get("loc", ()))], str(err.get("msg", "invalid"))) from None


def _finite(value: Any, loc: list[str]) -> None:
    """No NaN or infinity anywhere in a record: stratbench writes an undefined number as null, so
    one read back is a hand-edited file, and a mean over it would silently become null."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Bad(loc, f"{value} is not a finite number")
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite(v, [*loc, str(k)])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(v, [*loc, str(i)])


def check_schema(records: Sequence[Record], schema: type | None, path: str | Path, numbered: bool = True) -> None:
    """InputError at the first record whose fields do not match `schema` (a TypedDict): file,
    line, field, problem. Every field a record holds is checked against its declared type; which
    fields a record must hold is the reader's business (a failed unit's record holds fewer), so
    missing ones are not errors here. `numbered=False` for a file holding one object."""
    if schema is None:
        return
    for line, rec in enumerate(records, 1):
        try:
            _finite(rec, [])
            _check_value(schema, rec, [])
        except _Bad as e:
            at = f"line {line}: " if numbered else ""
            raise InputError(f"{path}: {at}{'.'.join(e.loc) or 'record'}: {e.msg}") from None


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


_NOTED: set[str] = set()


def _stderr_note(text: str) -> None:
    """A note on stderr, once per process (a resume reads its records twice: checked, then kept)."""
    if text not in _NOTED:
        _NOTED.add(text)
        print(f"note: {text}", file=sys.stderr)
