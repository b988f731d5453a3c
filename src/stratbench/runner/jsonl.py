"""JSON Lines files written one record at a time, so a crash loses at most in-flight work.

A process killed mid-write can leave a torn last line; `read_jsonl(repair=True)` cuts the file back
to its last complete record so a resumed run appends cleanly.

Whole files (run.json, summaries, sorted records) are written atomically: to ``<name>.tmp`` beside
them, flushed to disk, then renamed over the old file, so a reader sees the old file or the new one,
never half of one. A write the machine refuses (disk full, quota, read-only file system) removes
its temporary file and raises :class:`~stratbench.errors.OutputWriteError` naming the file — one
line, and the folder is as it was before that write. A ``*.tmp`` left by a killed process is
ignored by every reader and removed when the folder is resumed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from stratbench.errors import InputError, OutputWriteError
from stratbench.files import file_problem, first_not_utf8, os_problem

TMP_SUFFIX = ".tmp"


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


def write_error(path: str | Path, e: OSError) -> OutputWriteError:
    """One line naming the file a write was refused for and why (``…/games.json: no space left on
    device``)."""
    return OutputWriteError(f"{path}: {os_problem(e)}")


class JsonlWriter:
    """Appends records, each handed to the OS as soon as it is written (unbuffered: a failed write
    leaves nothing pending that a later close would try again)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            self._fd: int | None = os.open(self.path, flags, 0o666)
        except OSError as e:
            raise write_error(self.path, e) from None

    def _append(self, data: bytes) -> None:
        """All of ``data`` at the end of the file, or — when the machine refuses (disk full) — the
        file cut back to what it held before and OutputWriteError naming it."""
        assert self._fd is not None, "write after close"
        start = None
        view = memoryview(data)
        try:
            start = os.fstat(self._fd).st_size
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as e:
            if start is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)  # no torn record left behind
            raise write_error(self.path, e) from None

    def write(self, record: dict[str, Any]) -> None:
        self._append((dumps(record) + "\n").encode("utf-8"))

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """A unit's records in one write: a run killed meanwhile keeps all of them or none (a
        torn tail is cut on resume), not the first few of a unit that then looks finished."""
        if records:
            self._append("".join(dumps(r) + "\n" for r in records).encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _oserror(p: Path, e: OSError) -> InputError:
    return InputError(f"{p}: {e.strerror or type(e).__name__}")


def scan_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], int, int]:
    """(complete records, bytes they end at, file size) without changing the file: a torn tail
    (no newline, or invalid JSON, in the last line) lies between the two offsets. A corrupt line
    elsewhere, or a line that is not a JSON object, is an InputError naming the file and line."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        return [], 0, 0
    problem = file_problem(p)  # (a pipe would block the read; a link to /dev/zero never end it)
    if problem is not None:
        raise InputError(f"{p}: {problem}")
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
    return records, good_end, len(data)


def read_jsonl(path: str | Path, repair: bool = False) -> list[dict[str, Any]]:
    """All complete records. With `repair`, a torn tail (no newline or invalid JSON in the last
    line) is truncated away; a corrupt line elsewhere, or a line that is not a JSON object, is an
    InputError naming the file and line — never something to skip."""
    p = Path(path)
    records, good_end, size = scan_jsonl(p)
    if repair and good_end < size:
        try:
            with open(p, "r+b") as fh:
                fh.truncate(good_end)
        except OSError as e:
            raise write_error(p, e) from None
    return records


#: bytes of a records file's first line that :func:`first_record` reads at most
MAX_FIRST_LINE = 64 * 2**20


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first line of a records file as a JSON object, or None (no file, no such line): what a
    config check peeks at to say whether run.json or the records were edited (the records
    themselves are read, and checked, by the caller's reader)."""
    if file_problem(path) is not None:
        return None
    try:
        with open(path, "rb") as fh:
            rec = json.loads(fh.readline(MAX_FIRST_LINE))
    except (OSError, ValueError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


def tmp_path(path: str | Path) -> Path:
    """Where :func:`write_atomic` stages ``path``."""
    p = Path(path)
    return p.with_name(p.name + TMP_SUFFIX)


def write_atomic(path: str | Path, text: str | Iterable[str]) -> None:
    """``path`` replaced by ``text`` (a string or its pieces), all or nothing: written to
    ``<path>.tmp``, flushed to disk and renamed. A refused write (disk full, quota, read-only
    file system, permission) removes the temporary file and raises OutputWriteError naming
    ``path``; the old file, if any, is untouched."""
    p = Path(path)
    tmp = tmp_path(p)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                for piece in text:
                    fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise write_error(p, e) from None


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """``path`` replaced by ``data``, all or nothing, as :func:`write_atomic` does for text (a
    rendered figure, or a CSV table whose exact line endings matter)."""
    p = Path(path)
    tmp = tmp_path(p)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise write_error(p, e) from None


def write_csv_atomic(path: str | Path, write: Callable[[Any], None]) -> None:
    """``path`` replaced by the CSV text ``write`` puts into the file object it is given (a
    ``csv.writer`` target opened with ``newline=""``), byte for byte, all or nothing."""
    buf = io.StringIO(newline="")
    write(buf)
    write_bytes_atomic(path, buf.getvalue().encode("utf-8"))


def write_jsonl_atomic(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, (dumps(r) + "\n" for r in records))


def write_json_atomic(path: str | Path, obj: Any) -> None:
    text = json.dumps(_clean(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    bad = first_not_utf8(text)
    if bad is not None:  # (bytes that are not UTF-8, kept by Python as lone surrogates: no UTF-8 file holds them)
        at = text.index(bad)
        shown = text[max(0, at - 60):at + 20].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise InputError(f"{path}: a value to be written holds bytes that are not UTF-8 text (…{' '.join(shown.split())}…): "
                         "a file or folder name that is not UTF-8 (the folder the command runs in?); use UTF-8 "
                         "names, or give the path from a UTF-8 folder")
    write_atomic(path, text)


def remove_stale_tmp(folder: str | Path) -> list[Path]:
    """Remove the ``*.tmp`` files a killed or refused write left in ``folder`` (not in its
    subfolders); the files removed. Only for a folder this process holds the lock of."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if entry.name.endswith(TMP_SUFFIX) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed
