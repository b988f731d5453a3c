"""The one place the files users give are read: with limits, and every problem one line.

Readers for text, JSON, TOML, YAML and CSV. Each refuses, with one :class:`~stratbench.errors.InputError`
line naming the file (and the flag it came from, when given) and the problem:

- anything the operating system says (missing, a directory, not a regular file such as a FIFO or a
  device, permission denied, a symlink loop, a name too long), and files over a size cap;
- text that is not UTF-8 (the byte offset and line are named; a UTF-8 byte-order mark is accepted and
  dropped) or that holds NUL bytes (a binary file, or UTF-16);
- JSON with NaN/Infinity or numbers that overflow a float, integers of more than
  :data:`MAX_INT_DIGITS` digits, duplicate keys, nesting deeper than :data:`MAX_DEPTH` (the parsers
  recurse: a file of ten thousand ``[`` would otherwise end in a RecursionError);
- YAML anchors and aliases (the "billion laughs" expansion and its cousins; suite files never need
  them), duplicate keys, non-string keys, and the same limits as JSON; TOML's ``inf``/``nan`` too;
- strings that are not valid Unicode (a lone surrogate, which JSON and YAML escapes can produce and
  which cannot be written back as UTF-8);
- CSV cells longer than :data:`MAX_CELL` characters, more than :data:`MAX_ROWS` rows, rows whose
  number of cells differs from the header's, repeated or missing columns (the line is named).

Schemas are pydantic models or types; :func:`validate` turns a ``ValidationError`` into one line
``<file>: <location>: <message>`` (``games.json: game 3: row_labels[0]: expected a string, got 1``).
This module imports nothing of stratbench but its errors, so every layer may use it.
"""

from __future__ import annotations

import codecs
import csv
import errno
import functools
import io
import json
import math
import os
import stat
import tomllib
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, StrictStr, TypeAdapter, ValidationError

from stratbench.errors import InputError

MAX_BYTES = 64 * 2**20  # 64 MiB: far above any games, suite, story or observations file
MAX_DEPTH = 64  # containers inside containers
MAX_INT_DIGITS = 64  # an integer literal longer than this is a mistake or an attack
MAX_CELL = 131_072  # characters in one CSV cell (the csv module's default field limit)
MAX_ROWS = 1_000_000  # CSV data rows
MAX_DIR_ENTRIES = 100_000  # entries of a folder of input files

_INT_LIMIT = 10**MAX_INT_DIGITS
_SCALARS = (str, int, float, bool, type(None), date, datetime, time)

ErrorType = type[InputError]

__all__ = [
    "MAX_BYTES", "MAX_CELL", "MAX_DEPTH", "MAX_DIR_ENTRIES", "MAX_INT_DIGITS", "MAX_ROWS",
    "CsvTable", "NonEmptyText", "Text", "check_field_types", "check_text", "check_tree", "display",
    "file_problem", "format_location", "list_dir", "os_problem", "parse_json", "read_bytes", "read_csv", "read_json", "show",
    "read_mapping", "read_text", "read_toml", "read_yaml", "validate", "validation_message",
]


# ----------------------------------------------------------------------------- names and OS errors


def first_not_utf8(text: str) -> str | None:
    """The first character of ``text`` that stands for a byte that is not UTF-8 (Python keeps such
    bytes of file names, the environment and the command line as lone surrogates U+DC80-U+DCFF),
    or None: no UTF-8 result file can hold it."""
    return next((c for c in text if "\udc80" <= c <= "\udcff"), None)


def display(path: str | Path, label: str = "") -> str:
    """How a message names an input: ``--data obs.csv`` (flag and path) or ``obs.csv``."""
    return f"{label} {path}" if label else str(path)


_OS_PROBLEMS = {
    errno.ENOENT: "file not found",
    errno.ENOTDIR: "not found (a part of the path is not a folder)",
    errno.EISDIR: "is a directory, not a file",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "symlink loop (too many levels of symbolic links)",
    errno.ENAMETOOLONG: "file name too long",
    errno.EIO: "input/output error",
    errno.ENXIO: "no such device",
    errno.ENODEV: "no such device",
    errno.EAGAIN: "not ready to be read (a pipe or device?)",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EFBIG: "file too large",
}


def os_problem(e: OSError) -> str:
    """The problem an OSError names, in a few words."""
    known = _OS_PROBLEMS.get(e.errno) if e.errno is not None else None
    return known or " ".join(str(e.strerror or type(e).__name__).split()).lower()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def _stat(path: Path, name: str, error: ErrorType) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as e:
        raise error(f"{name}: {os_problem(e)}") from None
    except ValueError:  # an embedded NUL character
        raise error(f"{name}: the path contains a NUL character") from None


def file_problem(path: str | Path) -> str | None:
    """What stops ``path`` being read as a regular file, in a few words, or None: it is one, and a
    byte of it can be read. Opened without blocking and checked on the open descriptor, so a named
    pipe never blocks the caller and a link to a device (``/dev/zero``) is never read endlessly."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        return os_problem(e)
    except ValueError:
        return "the path contains a NUL character"
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return "is a directory, not a file"
        if not stat.S_ISREG(mode):
            return f"{_kind(mode)}, not a regular file"
        os.read(fd, 1)
    except OSError as e:
        return os_problem(e)
    finally:
        os.close(fd)
    return None


# ----------------------------------------------------------------------------- bytes and text


def read_bytes(path: str | Path, label: str = "", *, max_bytes: int = MAX_BYTES,
               error: ErrorType = InputError) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes."""
    p = Path(path)
    name = display(p, label)
    st = _stat(p, name, error)
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: {_kind(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise error(f"{name}: {st.st_size} bytes; files over {max_bytes} bytes are refused")
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat must not block the open
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise error(f"{name}: not a regular file")
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise error(f"{name}: {os_problem(e)}") from None
    if len(data) > max_bytes:
        raise error(f"{name}: more than {max_bytes} bytes; larger files are refused")
    return data


def read_text(path: str | Path, label: str = "", *, max_bytes: int = MAX_BYTES, allow_nul: bool = False,
              error: ErrorType = InputError) -> str:
    """A UTF-8 text file (a leading byte-order mark is dropped). Other encodings and NUL bytes are
    refused with the offset and line of the first bad byte."""
    data = read_bytes(path, label, max_bytes=max_bytes, error=error)
    return decode_text(data, display(Path(path), label), allow_nul=allow_nul, error=error)


def decode_text(data: bytes, name: str, *, allow_nul: bool = False, error: ErrorType = InputError) -> str:
    """``data`` as UTF-8 text (see :func:`read_text`); ``name`` names it in messages."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = e.start + skip
        line = data.count(b"\n", 0, at) + 1
        raise error(f"{name}: not UTF-8 text (byte 0x{data[at:at + 1].hex()} at offset {at}, line {line}); "
                    "save the file as UTF-8") from None
    if not allow_nul and "\x00" in text:
        at = text.index("\x00")
        raise error(f"{name}: contains a NUL byte (line {text.count(chr(10), 0, at) + 1}): a binary file, "
                    "or text that is not UTF-8 (UTF-16?)")
    return text


def list_dir(path: str | Path, label: str = "", *, max_entries: int = MAX_DIR_ENTRIES,
             error: ErrorType = InputError) -> list[Path]:
    """The entries of a folder, sorted by name (refused: not a folder, unreadable, too many entries)."""
    p = Path(path)
    name = display(p, label)
    try:
        st = _stat(p, name, error)
    except InputError as e:
        raise error(str(e).replace(": file not found", ": folder not found")) from None
    if not stat.S_ISDIR(st.st_mode):
        raise error(f"{name}: not a directory")
    out: list[Path] = []
    try:
        with os.scandir(p) as it:
            for entry in it:
                out.append(p / entry.name)
                if len(out) > max_entries:
                    raise error(f"{name}: more than {max_entries} entries")
    except OSError as e:
        raise error(f"{name}: {os_problem(e)}") from None
    return sorted(out)


# ----------------------------------------------------------------------------- values in a tree


def format_location(loc: Iterable[Any]) -> str:
    """``("games", 3, "payoff_matrix", 0, 1)`` → ``games[3].payoff_matrix[0][1]`` (a long path is
    shortened in the middle)."""
    parts = list(loc)
    if len(parts) > 12:
        return f"{format_location(parts[:4])}...{format_location(parts[-4:])}"
    out = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _at(name: str, loc: Sequence[Any]) -> str:
    where = format_location(loc)
    return f"{name}: {where}" if where else name


def _lone_surrogate(s: str) -> str | None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"\\u{ord(s[e.start]):04x}"
    return None


def check_text(value: Any, where: str, *, error: ErrorType = InputError, allow_empty: bool = True) -> str:
    """``value`` if it is a string that can be written as UTF-8 (no lone surrogate), else one line."""
    if not isinstance(value, str):
        raise error(f"{where}: expected a string, got {show(value)}")
    bad = _lone_surrogate(value)
    if bad:
        raise error(f"{where}: not valid Unicode (a lone surrogate {bad})")
    if not allow_empty and not value.strip():
        raise error(f"{where}: must not be empty")
    return value


def check_tree(data: Any, name: str, *, max_depth: int = MAX_DEPTH, error: ErrorType = InputError) -> Any:
    """Refuse what no file of ours holds: nesting deeper than ``max_depth``, non-finite floats,
    integers over :data:`MAX_INT_DIGITS` digits, lone surrogates, non-string keys, and values other
    than JSON/TOML scalars (YAML's sets and binary). Iterative: any depth is safe to check."""
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(data, (), 0)]
    while stack:
        node, loc, depth = stack.pop()
        if isinstance(node, dict):
            items: Iterable[tuple[Any, Any]] = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            _check_scalar(node, loc, name, error)
            continue
        if depth >= max_depth:
            raise error(f"{_at(name, loc)}: nested deeper than {max_depth} levels")
        is_map = isinstance(node, dict)
        for k, v in items:
            if is_map:
                if not isinstance(k, str):
                    raise error(f"{_at(name, loc)}: key {show(k)} is not a string")
                if _lone_surrogate(k):
                    raise error(f"{_at(name, loc)}: a key is not valid Unicode (a lone surrogate)")
            if isinstance(v, (dict, list)):
                stack.append((v, loc + (k,), depth + 1))
            else:
                _check_scalar(v, loc + (k,), name, error)
    return data


def _check_scalar(v: Any, loc: tuple[Any, ...], name: str, error: ErrorType) -> None:
    if isinstance(v, str):
        bad = _lone_surrogate(v)
        if bad:
            raise error(f"{_at(name, loc)}: not valid Unicode (a lone surrogate {bad})")
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise error(f"{_at(name, loc)}: {v} is not a finite number")
    elif isinstance(v, int) and not isinstance(v, bool):
        if abs(v) >= _INT_LIMIT:
            raise error(f"{_at(name, loc)}: an integer of more than {MAX_INT_DIGITS} digits")
    elif not isinstance(v, _SCALARS):
        raise error(f"{_at(name, loc)}: unsupported value of type {type(v).__name__}")


def show(v: Any, limit: int = 40) -> str:
    """A short rendering of a user's value for a message: ``'text'`` (quoted, escaped, clipped),
    ``2.5``, ``true``, ``null``, ``a table``, ``a list``."""
    if isinstance(v, bool):
        text = "true" if v else "false"
    elif v is None:
        text = "null"
    elif isinstance(v, dict):
        text = "a table"
    elif isinstance(v, (list, tuple)):
        text = "a list"
    else:
        text = repr(v)  # printable characters as they are; control characters and surrogates escaped
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- JSON


class _Refused(ValueError):
    """Raised from inside the JSON parser's hooks."""


def _json_constant(s: str) -> Any:
    raise _Refused(f"{s} is not allowed (numbers must be finite)")


def _json_int(s: str) -> int:
    if len(s) > MAX_INT_DIGITS + 1:
        raise _Refused(f"an integer of {len(s.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _json_float(s: str) -> float:
    f = float(s)
    if not math.isfinite(f):
        raise _Refused(f"the number {s[:30]} is too large for a float")
    return f


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"duplicate key {show(k)} in an object")
        out[k] = v
    return out


def parse_json(text: str, name: str, *, max_depth: int = MAX_DEPTH, error: ErrorType = InputError) -> Any:
    """JSON text to Python values, with the checks of :func:`check_tree`."""
    try:
        data = json.loads(text, parse_constant=_json_constant, parse_int=_json_int, parse_float=_json_float,
                          object_pairs_hook=_json_object)
    except _Refused as e:
        raise error(f"{name}: {e}") from None
    except RecursionError:
        raise error(f"{name}: nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as e:
        raise error(f"{name}: invalid JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except ValueError as e:
        raise error(f"{name}: invalid JSON ({_one_line(e)})") from None
    return check_tree(data, name, max_depth=max_depth, error=error)


def read_json(path: str | Path, label: str = "", *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
              error: ErrorType = InputError) -> Any:
    """A JSON file (see :func:`parse_json`)."""
    text = read_text(path, label, max_bytes=max_bytes, error=error)
    return parse_json(text, display(Path(path), label), max_depth=max_depth, error=error)


def _one_line(e: BaseException) -> str:
    text = str(e)
    if "integer string conversion" in text:  # Python's own digit limit, with advice for programmers
        return "an integer of more than 4300 digits"
    return " ".join(text.split())


def problem_text(e: BaseException) -> str:
    """An exception's text for a user's one line: Python's advice for programmers (its limit of
    4,300 digits for an integer, `sys.set_int_max_str_digits`) said as what the input holds."""
    return _one_line(e)


# ----------------------------------------------------------------------------- TOML and YAML


def read_toml(path: str | Path, label: str = "", *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
              error: ErrorType = InputError) -> dict[str, Any]:
    """A TOML file; ``inf``/``nan`` and huge integers are refused like JSON's."""
    text = read_text(path, label, max_bytes=max_bytes, error=error)
    name = display(Path(path), label)
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise error(f"{name}: nested deeper than {max_depth} levels") from None
    except ValueError as e:  # TOMLDecodeError, or an integer past Python's digit limit
        raise error(f"{name}: invalid TOML ({_one_line(e)})") from None
    return check_tree(data, name, max_depth=max_depth, error=error)


@functools.lru_cache(maxsize=1)
def _mark(event: Any) -> Any:
    """The event's position, typed loosely: libyaml's C marks and the pure-Python ones differ in
    the stubs but format the same in the error message."""
    return event.start_mark


def _yaml_loader() -> Any:
    import yaml
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError

    class Loader(yaml.SafeLoader):
        """The safe loader without anchors and aliases, with duplicate keys refused and the
        nesting of the composed document limited."""

        max_depth = MAX_DEPTH
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                raise ComposerError(None, None, "aliases (*name) are not allowed", _mark(event))
            if getattr(event, "anchor", None) is not None:
                raise ComposerError(None, None, "anchors (&name) are not allowed", _mark(event))
            self.depth += 1
            try:
                if self.depth > self.max_depth:
                    raise ComposerError(None, None, f"nested deeper than {self.max_depth} levels",
                                        _mark(event))
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        # YAML 1.1 forms that YAML 1.2 and TOML read otherwise (or not at all): ``010`` is 8 here
        # and 10 there, ``1:30`` is 90, ``on`` is true. A settings file means one thing
        # everywhere: these are refused, with the plain form to write
        def construct_yaml_int(self, node: Any) -> Any:
            text = str(node.value).replace("_", "").lstrip("+-")
            if ":" in text or (len(text) > 1 and text[0] == "0" and text[1].isdigit()) or text.startswith("0b"):
                raise ConstructorError(None, None, f"{node.value!r} is a YAML 1.1 number (octal, binary or base 60) "
                                       "that other readers take otherwise; write it in decimal, or quote it",
                                       node.start_mark)
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node: Any) -> Any:
            if ":" in str(node.value):
                raise ConstructorError(None, None, f"{node.value!r} is a YAML 1.1 base-60 number; write it in "
                                       "decimal, or quote it", node.start_mark)
            return super().construct_yaml_float(node)

        def construct_yaml_bool(self, node: Any) -> Any:
            if str(node.value).lower() not in ("true", "false"):
                raise ConstructorError(None, None, f"{node.value!r} is a YAML 1.1 boolean that other readers take "
                                       "as text; write true or false, or quote it", node.start_mark)
            return super().construct_yaml_bool(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                self.flatten_mapping(node)
                seen: set[tuple[str, str]] = set()
                for key_node, _ in node.value:
                    if isinstance(key_node, yaml.ScalarNode):
                        key = (key_node.tag, key_node.value)
                        if key in seen:
                            raise ConstructorError(None, None, f"duplicate key {key_node.value!r}",
                                                   key_node.start_mark)
                        seen.add(key)
            return super().construct_mapping(node, deep=deep)

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    Loader.add_constructor("tag:yaml.org,2002:bool", Loader.construct_yaml_bool)
    return Loader


def read_yaml(path: str | Path, label: str = "", *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
              error: ErrorType = InputError) -> Any:
    """A YAML file through the safe loader, without anchors/aliases (no "billion laughs")."""
    import yaml

    text = read_text(path, label, max_bytes=max_bytes, error=error)
    name = display(Path(path), label)
    loader = None
    try:
        loader = _yaml_loader()(text)  # the reader refuses control characters here
        loader.max_depth = max_depth
        data = loader.get_single_data()
    except yaml.YAMLError as e:
        raise error(f"{name}: invalid YAML ({_yaml_problem(e)})") from None
    except RecursionError:
        raise error(f"{name}: nested deeper than {max_depth} levels") from None
    except (ValueError, TypeError) as e:  # an integer past Python's digit limit, an unhashable key
        raise error(f"{name}: invalid YAML ({_one_line(e)})") from None
    finally:
        if loader is not None:
            loader.dispose()
    return check_tree(data, name, max_depth=max_depth, error=error)


def _yaml_problem(e: Exception) -> str:
    if hasattr(e, "character") and hasattr(e, "position"):  # the reader's ReaderError
        return f"character {e.character!r} at position {e.position} is not allowed in YAML"
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or getattr(e, "context", None)
    if mark is None or not problem:
        return _one_line(e)
    return _one_line(Exception(f"line {mark.line + 1} column {mark.column + 1}: {problem}"))


def read_mapping(path: str | Path, label: str = "", *, max_depth: int = MAX_DEPTH,
                 error: ErrorType = InputError) -> dict[str, Any]:
    """A settings file by its suffix (.toml, .yaml, .yml) holding a table/mapping (an empty YAML
    file is an empty mapping)."""
    p = Path(path)
    name = display(p, label)
    suffix = p.suffix.lower()
    data: Any
    if suffix == ".toml":
        data = read_toml(p, label, max_depth=max_depth, error=error)
    elif suffix in (".yaml", ".yml"):
        data = read_yaml(p, label, max_depth=max_depth, error=error)
    else:
        raise error(f"{name}: use a .toml, .yaml or .yml file")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error(f"{name}: the file must hold a table/mapping of settings, not {show(data)}")
    return data


# ----------------------------------------------------------------------------- CSV


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's header and rows; each row with the line it ends on (for messages)."""

    name: str
    columns: tuple[str, ...]
    rows: list[tuple[int, dict[str, str]]]


def read_csv(path: str | Path, label: str = "", *, required: Sequence[str] = (), max_cell: int = MAX_CELL,
             max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES, error: ErrorType = InputError) -> CsvTable:
    """A UTF-8 CSV file with a header row. Refused with the line: a cell over ``max_cell``
    characters, a row whose cell count differs from the header's, more than ``max_rows`` rows,
    repeated or missing (``required``) columns. Blank lines are skipped."""
    text = read_text(path, label, max_bytes=max_bytes, error=error)
    name = display(Path(path), label)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, dict[str, str]]] = []
    header: list[str] | None = None
    try:
        for cells in reader:
            for c in cells:
                if len(c) > max_cell:
                    raise error(f"{name}: line {reader.line_num}: a cell of more than {max_cell} characters")
            if not cells:
                continue
            if header is None:
                header = [c.strip() for c in cells]
                dup = sorted({c for c in header if header.count(c) > 1})
                if dup:
                    raise error(f"{name}: line {reader.line_num}: column(s) {dup} appear twice in the header")
                missing = [c for c in required if c not in header]
                if missing:
                    raise error(f"{name}: missing column(s) {missing} (the header has {header[:20]})")
                continue
            if len(cells) != len(header):
                raise error(f"{name}: line {reader.line_num}: {len(cells)} cells, but the header has "
                            f"{len(header)} columns")
            if len(rows) >= max_rows:
                raise error(f"{name}: more than {max_rows} rows")
            rows.append((reader.line_num, dict(zip(header, cells))))
    except csv.Error as e:
        msg = str(e)
        if "field larger than field limit" in msg:
            msg = f"a cell of more than {min(max_cell, csv.field_size_limit())} characters"
        raise error(f"{name}: line {max(reader.line_num, 1)}: {_one_line(Exception(msg))}") from None
    if header is None:
        raise error(f"{name}: empty file (expected a header row{': ' + ', '.join(required) if required else ''})")
    return CsvTable(name, tuple(header), rows)


# ----------------------------------------------------------------------------- schemas


def _valid_unicode(s: str) -> str:
    bad = _lone_surrogate(s)
    if bad:
        raise ValueError(f"not valid Unicode (a lone surrogate {bad})")
    return s


def _non_empty(s: str) -> str:
    if not s.strip():
        raise ValueError("must not be empty")
    return s


#: a string that can be written as UTF-8 (no lone surrogate); ints, bytes and the like refused
Text = Annotated[StrictStr, AfterValidator(_valid_unicode)]
#: a :data:`Text` with something besides white space
NonEmptyText = Annotated[StrictStr, AfterValidator(_valid_unicode), AfterValidator(_non_empty)]


@functools.lru_cache(maxsize=128)
def _adapter(schema: Any) -> TypeAdapter[Any]:
    return TypeAdapter(schema)


_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
    "bool_parsing": "true or false", "string_type": "a string", "list_type": "a list",
    "dict_type": "a table/mapping", "model_type": "a table/mapping", "model_attributes_type": "a table/mapping",
    "dataclass_type": "a table/mapping", "tuple_type": "a list",
}


def validation_message(e: ValidationError, data: Any = None, prefix: Sequence[Any] = ()) -> str:
    """The first error of ``e`` as ``<location>: <message>`` (the location after ``prefix``).
    Tags pydantic adds to locations (union members) are dropped when ``data`` shows they are not
    keys."""
    err = e.errors(include_url=False)[0]
    loc = list(prefix) + _data_location(err.get("loc", ()), data)
    kind = err.get("type", "")
    if kind in _EXPECTED:
        msg = f"expected {_EXPECTED[kind]}, got {show(err.get('input'))}"
    elif kind == "missing":
        msg = "missing (required)"
    elif kind == "extra_forbidden":
        msg = "unknown key"
    else:
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
    where = format_location(loc)
    return f"{where}: {_one_line(Exception(msg))}" if where else _one_line(Exception(msg))


def _data_location(loc: Sequence[Any], data: Any) -> list[Any]:
    if data is None:
        return list(loc)
    out: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, (list, tuple)) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
        elif isinstance(node, Mapping) and isinstance(part, str) and not _is_tag(part):
            out.append(part)  # a missing key
            node = None
        # else: a union member's tag, not a place in the data
    return out


def _is_tag(part: str) -> bool:
    return any(ch in part for ch in "[]") or part in {"int", "float", "str", "bool", "none", "list", "dict"}


def validate(schema: Any, data: Any, name: str, *, error: ErrorType = InputError) -> Any:
    """``data`` validated by a pydantic model or type (lax where the schema allows); a failure is
    one line ``<name>: <location>: <message>``."""
    try:
        return _adapter(schema).validate_python(data)
    except ValidationError as e:
        raise error(f"{name}: {validation_message(e, data)}") from None


def check_field_types(cls: type, values: Mapping[str, Any], where: str, *, error: ErrorType = InputError) -> None:
    """Each value of ``values`` whose key is a field of the dataclass ``cls`` must have that field's
    type exactly (strict: ``2.5`` or ``true`` is not an integer, ``"3"`` not a number; an integer is
    a number). Fields whose types pydantic cannot check are skipped. One line:
    ``<where> <key>: expected an integer, got 2.5``."""
    if not is_dataclass(cls):
        return
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve at run time: nothing to check against
        return
    names = {f.name for f in fields(cls)}
    for key, value in values.items():
        hint = hints.get(key)
        if key not in names or hint is None or hint is Any:
            continue
        try:
            adapter = _adapter(hint)
        except Exception:  # pydantic cannot build a schema for this type (an arbitrary class)
            continue
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError as e:
            raise error(f"{where} {validation_message(e, value, prefix=[key])}") from None
