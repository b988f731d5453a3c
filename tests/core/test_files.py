"""stratbench.files: the readers of user files, their limits, and their one-line errors."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from stratbench import files as F
from stratbench.errors import GameFormatError, InputError


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def error_of(fn: Any, *args: Any, **kw: Any) -> str:
    with pytest.raises(InputError) as e:
        fn(*args, **kw)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------ the OS says no


def test_missing_directory_and_not_a_regular_file(tmp_path):
    assert error_of(F.read_text, tmp_path / "nope.json") == f"{tmp_path / 'nope.json'}: file not found"
    assert error_of(F.read_text, tmp_path / "nope.json", "--data") == f"--data {tmp_path / 'nope.json'}: file not found"
    assert error_of(F.read_text, tmp_path) == f"{tmp_path}: is a directory, not a file"
    assert "not a folder" in error_of(F.read_text, write(tmp_path, "f", "x") / "below")
    assert "a device, not a regular file" in error_of(F.read_text, "/dev/null")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert "a named pipe, not a regular file" in error_of(F.read_json, fifo)


def test_symlink_loop_and_long_names_and_nul_in_the_path(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    assert error_of(F.read_text, tmp_path / "a").endswith(": symlink loop (too many levels of symbolic links)")
    assert error_of(F.read_text, tmp_path / ("x" * 300)).endswith(": file name too long")
    assert "NUL character" in error_of(F.read_text, "a\0b")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads everything")
def test_permission_denied(tmp_path):
    p = write(tmp_path, "secret.json", "{}")
    p.chmod(0)
    try:
        assert error_of(F.read_text, p).endswith(": permission denied")
    finally:
        p.chmod(0o600)


def test_size_cap(tmp_path):
    p = write(tmp_path, "big.json", "[" + "1," * 100 + "1]")
    assert F.read_json(p, max_bytes=1000)
    assert "files over 100 bytes are refused" in error_of(F.read_json, p, max_bytes=100)


def test_os_problem_falls_back_to_strerror():
    assert F.os_problem(OSError(5, "Input/output error")) == "input/output error"
    assert F.os_problem(OSError(28, "No space left on device")) == "no space left on device"


def test_error_type_is_the_callers(tmp_path):
    with pytest.raises(GameFormatError):
        F.read_json(tmp_path / "nope.json", error=GameFormatError)


# ------------------------------------------------------------------------------ text


def test_not_utf8_names_byte_offset_and_line(tmp_path):
    p = write(tmp_path, "latin.csv", "a,b\n1,café\n".encode("latin-1"))
    assert error_of(F.read_text, p) == (f"{p}: not UTF-8 text (byte 0xe9 at offset 9, line 2); "
                                        "save the file as UTF-8")
    assert "byte 0xff at offset 0" in error_of(F.read_text, write(tmp_path, "u16", "x".encode("utf-16")))


def test_bom_is_dropped_and_nul_refused(tmp_path):
    assert F.read_text(write(tmp_path, "bom.txt", b"\xef\xbb\xbfhello")) == "hello"
    assert F.read_json(write(tmp_path, "bom.json", b'\xef\xbb\xbf{"a": 1}')) == {"a": 1}
    p = write(tmp_path, "nul.txt", b"line one\nline\x00two")
    assert "contains a NUL byte (line 2)" in error_of(F.read_text, p)
    assert F.read_text(p, allow_nul=True).endswith("\x00two")
    # an offset past a BOM counts the BOM's bytes
    assert "at offset 4" in error_of(F.read_text, write(tmp_path, "bom_bad.txt", b"\xef\xbb\xbfa\xff"))


def test_check_text():
    assert F.check_text("ok", "label") == "ok"
    assert error_of(F.check_text, 3, "label") == "label: expected a string, got 3"
    assert error_of(F.check_text, "a\ud800", "label") == "label: not valid Unicode (a lone surrogate \\ud800)"
    assert error_of(F.check_text, "  ", "label", allow_empty=False) == "label: must not be empty"


# ------------------------------------------------------------------------------ JSON


@pytest.mark.parametrize("text, fragment", [
    ('{"a": NaN}', "NaN is not allowed"),
    ('[Infinity]', "Infinity is not allowed"),
    ('[-Infinity]', "-Infinity is not allowed"),
    ("[1e999]", "the number 1e999 is too large for a float"),
    ("[" + "9" * 5000 + "]", "an integer of 5000 digits (at most 64)"),
    ("[-" + "9" * 65 + "]", "an integer of 65 digits"),
    ('{"a": 1, "a": 2}', "duplicate key 'a' in an object"),
    ('{"a": ["x", "\\udc00"]}', "a[1]: not valid Unicode (a lone surrogate \\udc00)"),
    ('{"\\ud800": 1}', "a key is not valid Unicode"),
    ('{"a": [1, 2', "invalid JSON (line 1 column 12:"),
    ("", "invalid JSON (line 1 column 1: Expecting value)"),
    ("[1] [2]", "invalid JSON"),
])
def test_json_refusals(tmp_path, text, fragment):
    p = write(tmp_path, "f.json", text)
    msg = error_of(F.read_json, p, "--games-file")
    assert msg.startswith(f"--games-file {p}: ")
    assert fragment in msg


def test_json_limits_are_inclusive():
    assert F.parse_json("[" + "9" * 64 + "]", "x") == [int("9" * 64)]
    assert F.parse_json("[" * 64 + "]" * 64, "x")
    msg = error_of(F.parse_json, "[" * 65 + "]" * 65, "x")
    assert msg == "x: [0][0][0][0]...[0][0][0][0]: nested deeper than 64 levels"
    assert error_of(F.parse_json, '{"a": {"b": [[1]]}}', "x", max_depth=3) == "x: a.b[0]: nested deeper than 3 levels"


def test_json_nesting_past_the_recursion_limit(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    assert error_of(F.parse_json, deep, "x") == "x: nested deeper than 64 levels"
    assert error_of(F.parse_json, '{"a": ' * 50_000 + "1" + "}" * 50_000, "x").endswith("nested deeper than 64 levels")


def test_check_tree_is_iterative():
    node: Any = 1
    for _ in range(10 * sys.getrecursionlimit()):
        node = [node]
    assert "nested deeper than 64 levels" in error_of(F.check_tree, node, "x")
    assert F.check_tree(node, "x", max_depth=10**6) is node


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_json_round_trip(value):
    text = json.dumps(value)
    assert F.parse_json(text, "x") == value


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_arbitrary_text_is_json_or_one_input_error(text):
    try:
        F.parse_json(text, "x")
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith("x: ")


@given(st.binary(max_size=300))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_arbitrary_bytes_never_raise_anything_but_input_error(tmp_path, data):
    p = write(tmp_path, "f.json", data)
    for reader in (F.read_json, F.read_csv, F.read_toml, F.read_yaml):
        try:
            reader(p)
        except InputError as e:
            assert "\n" not in str(e)


# ------------------------------------------------------------------------------ TOML and YAML


@pytest.mark.parametrize("name, text, fragment", [
    ("deep.toml", "a = " + "[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ("inf.toml", "[s]\na = inf", "s.a: inf is not a finite number"),
    ("nan.toml", "a = [nan]", "a[0]: nan is not a finite number"),
    ("big.toml", "a = 1" + "0" * 5000, "invalid TOML (an integer of more than 4300 digits)"),
    ("big2.toml", "a = 1" + "0" * 100, "a: an integer of more than 64 digits"),
    ("bad.toml", "a = [1", "invalid TOML"),
    ("laughs.yaml", 'a: &a ["lol"]\nb: [*a, *a]\n', "line 1 column 4: anchors (&name) are not allowed"),
    ("alias.yaml", "a: *nowhere\n", "aliases (*name) are not allowed"),
    ("merge.yaml", "base: &b {x: 1}\nc:\n  <<: *b\n", "anchors (&name) are not allowed"),
    ("flow.yaml", "a: " + "[" * 5000 + "]" * 5000, "line 1 column 67: nested deeper than 64 levels"),
    ("block.yaml", "".join("  " * i + f"k{i}:\n" for i in range(100)), "nested deeper than 64 levels"),
    ("dup.yaml", "a: 1\nb: 2\na: 3\n", "line 3 column 1: duplicate key 'a'"),
    ("key.yaml", "1: one\n", "key 1 is not a string"),
    ("set.yaml", "a: !!set {x, y}\n", "a: unsupported value of type set"),
    ("binary.yaml", "a: !!binary aGVsbG8=\n", "unsupported value of type bytes"),
    ("python.yaml", "a: !!python/object/apply:os.system [echo]\n", "could not determine a constructor"),
    ("inf.yaml", "a: [.inf]\n", "a[0]: inf is not a finite number"),
    ("big.yaml", "a: 1" + "0" * 5000 + "\n", "an integer of more than 4300 digits"),
    ("surrogate.yaml", 'a: "\\ud800"\n', "a: not valid Unicode (a lone surrogate \\ud800)"),
    ("unhashable.yaml", "? [1, 2]\n: x\n", "invalid YAML"),
    ("bad.yaml", "a: [1\n", "invalid YAML (line 2 column 1:"),
    ("list.yaml", "- a\n", "must hold a table/mapping of settings, not a list"),
    ("x.json", "{}", "use a .toml, .yaml or .yml file"),
])
def test_settings_file_refusals(tmp_path, name, text, fragment):
    p = write(tmp_path, name, text)
    msg = error_of(F.read_mapping, p, "--config")
    assert msg.startswith(f"--config {p}: ")
    assert fragment in msg


def test_settings_files_that_are_fine(tmp_path):
    assert F.read_mapping(write(tmp_path, "e.yaml", "")) == {}
    assert F.read_mapping(write(tmp_path, "e.toml", "")) == {}
    y = F.read_mapping(write(tmp_path, "ok.yml", "seeds: [1, 2]\nmodels:\n  - spec: x\n    chat: true\nt: 0.5\n"))
    assert y == {"seeds": [1, 2], "models": [{"spec": "x", "chat": True}], "t": 0.5}
    assert F.read_mapping(write(tmp_path, "ok.toml", '[a]\nb = [1, "x"]\n')) == {"a": {"b": [1, "x"]}}
    assert F.read_mapping(write(tmp_path, "deep_ok.yaml", "a: " + "[" * 63 + "]" * 63)) is not None


# ------------------------------------------------------------------------------ CSV

HEAD = "game_id,round,row_player,col_player,row_action,col_action\n"


def test_csv_reads_rows_with_their_lines(tmp_path):
    p = write(tmp_path, "ok.csv", b"\xef\xbb\xbf" + (HEAD + '1,1,"a\nb",c,A,B\n\n2,2,x,y,B,A\n').encode())
    t = F.read_csv(p, required=("game_id", "col_action"))
    assert t.columns[0] == "game_id"  # the BOM is not part of the first column's name
    assert [ln for ln, _ in t.rows] == [3, 5]
    assert t.rows[0][1]["row_player"] == "a\nb"


def test_csv_cell_cap_is_131072_characters(tmp_path):
    ok = write(tmp_path, "ok.csv", HEAD + "1,1," + "a" * 131_072 + ",b,A,B\n")
    assert len(F.read_csv(ok).rows[0][1]["row_player"]) == 131_072
    bad = write(tmp_path, "bad.csv", HEAD + "1,1,a,b,A,B\n" + "1,1," + "a" * 131_073 + ",b,A,B\n")
    assert error_of(F.read_csv, bad, "--data") == f"--data {bad}: line 3: a cell of more than 131072 characters"
    quoted = write(tmp_path, "q.csv", HEAD + '1,1,"' + "a" * 131_073 + '",b,A,B\n')
    assert "line 2: a cell of more than 131072 characters" in error_of(F.read_csv, quoted)
    assert "line 2: a cell of more than 10 characters" in error_of(F.read_csv, ok, max_cell=10)


def test_csv_cap_holds_even_when_the_csv_module_limit_is_raised(tmp_path):
    old = csv.field_size_limit(10**9)
    try:
        bad = write(tmp_path, "bad.csv", HEAD + "1,1," + "a" * 131_073 + ",b,A,B\n")
        assert "line 2: a cell of more than 131072 characters" in error_of(F.read_csv, bad)
    finally:
        csv.field_size_limit(old)


@pytest.mark.parametrize("content, fragment", [
    (HEAD + "1,1,a,b,A\n", "line 2: 5 cells, but the header has 6 columns"),
    ("a,b,a\n", "line 1: column(s) ['a'] appear twice in the header"),
    ("a,b\n1,2\n", "missing column(s) ['game_id'"),
    ("", "empty file (expected a header row: game_id"),
    ("\n\n", "empty file"),
    (HEAD + '1,1,"a,b,A,B\n', "line 2: unexpected end of data"),
    (HEAD + '1,1,"a"x,b,A,B\n', "line 2: ',' expected after '\"'"),
    ((HEAD + "1,1,André,b,A,B\n").encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 66, line 2)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
    (HEAD.encode() + b"1,1,a\x00,b,A,B\n", "contains a NUL byte (line 2)"),
])
def test_csv_refusals(tmp_path, content, fragment):
    p = write(tmp_path, "f.csv", content)
    msg = error_of(F.read_csv, p, required=("game_id", "round"))
    assert msg.startswith(f"{p}: ") and fragment in msg


def test_csv_row_cap(tmp_path):
    p = write(tmp_path, "rows.csv", "a\n" + "1\n" * 11)
    assert len(F.read_csv(p, max_rows=11).rows) == 11
    assert error_of(F.read_csv, p, max_rows=10) == f"{p}: more than 10 rows"


cells = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)


@given(st.lists(st.lists(cells, min_size=3, max_size=3), max_size=8))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_csv_round_trip(tmp_path, rows):
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["x", "y", "z"])
    w.writerows(rows)
    p = write(tmp_path, "rt.csv", buf.getvalue())
    got = [[r["x"], r["y"], r["z"]] for _, r in F.read_csv(p).rows]
    # a row of three empty cells is written as ",," and read back as such
    assert got == rows


# ------------------------------------------------------------------------------ folders


def test_list_dir(tmp_path):
    for name in ("b", "a", "c"):
        write(tmp_path, name, "")
    assert [p.name for p in F.list_dir(tmp_path)] == ["a", "b", "c"]
    assert error_of(F.list_dir, tmp_path / "a") == f"{tmp_path / 'a'}: not a directory"
    assert error_of(F.list_dir, tmp_path / "z", "--stories-dir") == f"--stories-dir {tmp_path / 'z'}: folder not found"
    assert error_of(F.list_dir, tmp_path, max_entries=2) == f"{tmp_path}: more than 2 entries"


# ------------------------------------------------------------------------------ schemas


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    spec: F.NonEmptyText
    labels: list[F.Text] = []
    count: int = 1
    weight: float = 1.0


class Doc(BaseModel):
    model_config = ConfigDict(strict=True)
    games: list[Item]


@pytest.mark.parametrize("data, message", [
    ({"games": [{"spec": "a"}, {"spec": "b", "labels": ["x", 1]}]}, "games[1].labels[1]: expected a string, got 1"),
    ({"games": [{"spec": " "}]}, "games[0].spec: must not be empty"),
    ({"games": [{"spec": "a\ud800"}]}, "games[0].spec: not valid Unicode (a lone surrogate \\ud800)"),
    ({"games": [{"spec": "a", "count": 2.5}]}, "games[0].count: expected an integer, got 2.5"),
    ({"games": [{"spec": "a", "count": True}]}, "games[0].count: expected an integer, got true"),
    ({"games": [{"spec": "a", "weight": "1"}]}, "games[0].weight: expected a number, got '1'"),
    ({"games": [{"spec": "a", "extra": 1}]}, "games[0].extra: unknown key"),
    ({"games": [{}]}, "games[0].spec: missing (required)"),
    ({"games": {"spec": "a"}}, "games: expected a list, got a table"),
    ({"games": [{"spec": {"a": 1}}]}, "games[0].spec: expected a string, got a table"),
])
def test_validate_gives_one_line_with_the_location(data, message):
    assert error_of(F.validate, Doc, data, "games.json") == f"games.json: {message}"
    assert F.validate(Doc, {"games": [{"spec": "a", "weight": 2}]}, "x").games[0].weight == 2.0


def test_long_values_are_shortened_in_messages():
    msg = error_of(F.validate, Item, {"spec": "a", "count": "9" * 500}, "f")
    assert len(msg) < 100 and msg.endswith("...")


@dataclass
class Config:
    num_games: int = 3
    temperature: float = 1.0
    policy: str | None = None
    chat: bool = False
    games: list[str] = field(default_factory=list)
    shard: Any = None


def test_check_field_types():
    F.check_field_types(Config, {"num_games": 4, "temperature": 1, "policy": None, "chat": True, "games": ["a"],
                                 "shard": object(), "not_a_field": 2.5}, "f: [s]")
    for values, message in (
        ({"num_games": 2.5}, "f: [s] num_games: expected an integer, got 2.5"),
        ({"num_games": True}, "f: [s] num_games: expected an integer, got true"),
        ({"temperature": "hot"}, "f: [s] temperature: expected a number, got 'hot'"),
        ({"policy": 3}, "f: [s] policy: expected a string, got 3"),
        ({"chat": 1}, "f: [s] chat: expected true or false, got 1"),
        ({"games": "a,b"}, "f: [s] games: expected a list, got 'a,b'"),
        ({"games": ["a", 2]}, "f: [s] games[1]: expected a string, got 2"),
    ):
        assert error_of(F.check_field_types, Config, values, "f: [s]") == message


def test_check_field_types_skips_what_it_cannot_resolve():
    @dataclass
    class Unresolvable:
        x: "NoSuchType" = None  # type: ignore[name-defined]  # noqa: F821

    F.check_field_types(Unresolvable, {"x": 2.5}, "f")
    F.check_field_types(dict, {"x": 2.5}, "f")  # not a dataclass: nothing to check


# ------------------------------------------------------------------------------ the hostile corpus


def test_the_committed_hostile_corpus_is_what_cases_files_writes(tmp_path):
    hostile = Path(__file__).resolve().parents[1] / "hostile"
    spec = importlib.util.spec_from_file_location("hostile_cases_files", hostile / "cases_files.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.write_corpus(tmp_path / "files")

    def tree(root: Path) -> dict[str, Any]:
        return {p.relative_to(root).as_posix(): (os.readlink(p) if p.is_symlink() else
                                                 None if p.is_dir() else p.read_bytes())
                for p in sorted(root.rglob("*"))}

    assert tree(tmp_path / "files") == tree(hostile / "files"), "run python tests/hostile/cases_files.py"
    names = {c[0] for c in mod.FILE_CASES}
    assert names == set(mod.CORPUS) - mod.HELPERS, "every corpus file has a case, and every case a file"
