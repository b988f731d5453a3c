"""The response cache never costs an answer (issue 20).

A cache that cannot be opened, read or written (a full disk, a read-only file or folder, a
database another process keeps locked) is named once on stderr and bypassed: every answer the
model gave reaches the caller, and `usage.cache_failures` counts what the cache failed to serve
or store. A corrupt database is moved aside and started afresh. A cached value is checked like a
server's reply: an invalid one is a miss, recomputed and overwritten — never an error, never a
substitute. All with real SQLite failures (a second connection's lock, a page limit, a read-only
connection, a file where a folder should be, garbage bytes), and once through the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stratbench.models.base import GenerateRequest, GenerateResult, LanguageModel, ScoreRequest, ScoreResult
from stratbench.models.cache import CachedModel, ResponseCache

ROOT = os.geteuid() == 0  # chmod does not stop root: the permission cases are simulated then


class Fake(LanguageModel):
    """A deterministic backend: each continuation's log-prob and each text depend on the prompt
    only; it counts the requests it answered."""

    def __init__(self) -> None:
        super().__init__()
        self.spec, self.answered = "fake", 0

    @staticmethod
    def logprobs(r: ScoreRequest) -> list[float]:
        return [-(1.0 + (len(r.prompt) + j) % 7) for j in range(len(r.continuations))]

    async def score(self, requests: Any) -> list[ScoreResult]:
        self.answered += len(requests)
        return [ScoreResult(self.logprobs(r), [1] * len(r.continuations), tokens_in=len(r.prompt))
                for r in requests]

    async def generate(self, requests: Any) -> list[GenerateResult]:
        self.answered += len(requests)
        return [GenerateResult(f"Action: {len(r.prompt) % 3}", tokens_in=len(r.prompt), tokens_out=3,
                               finish_reason="stop") for r in requests]


def _requests(n: int, start: int = 0) -> list[ScoreRequest]:
    return [ScoreRequest(f"prompt {i}" + "." * (i % 5), (" 0", " 1", " 2")) for i in range(start, start + n)]


def _score(model: CachedModel, requests: list[ScoreRequest]) -> list[ScoreResult]:
    return asyncio.run(model.score(requests))


def _open(path: Path, **kw: Any) -> tuple[CachedModel, Fake]:
    inner = Fake()
    return CachedModel(inner, ResponseCache(path, **kw)), inner


def _close(model: CachedModel) -> None:
    asyncio.run(model.aclose())


def _all_answered(results: list[ScoreResult], requests: list[ScoreRequest]) -> None:
    """Every request has the model's own answer: none an error, none a substitute."""
    assert len(results) == len(requests)
    for res, req in zip(results, requests):
        assert res.ok and res.error is None and res.logprobs == Fake.logprobs(req)


def _warnings(err: str) -> list[str]:
    lines = [x for x in err.splitlines() if x.strip()]
    assert all(x.startswith("warning: response cache ") for x in lines), lines
    return lines


def _stored(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM responses").fetchone()[0])
    finally:
        db.close()


# -- a cache that cannot be written -----------------------------------------------------------


def test_a_full_disk_keeps_all_400_answers_and_names_the_cache_once(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model, inner = _open(path)
    db = model.cache._db
    assert db is not None
    # the database may not grow by a page: SQLite's own SQLITE_FULL, as on a full disk
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
    reqs = _requests(400)
    _all_answered(_score(model, reqs), reqs)
    more = _requests(50, 400)
    _all_answered(_score(model, more), more)  # later calls too, without a second warning
    assert inner.answered == 450 and model.usage.calls == 450 and model.usage.errors == 0
    assert model.usage.cache_failures == 450 and model.usage.as_dict()["cache_failures"] == 450
    (line,) = _warnings(capsys.readouterr().err)
    assert str(path) in line and "database or disk is full" in line and "answers are kept, not cached" in line
    _close(model)


def test_a_read_only_cache_still_replays_its_answers_and_keeps_the_new_ones(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model, _ = _open(path)
    _score(model, _requests(3))
    _close(model)
    model, inner = _open(path)
    assert model.cache._db is not None
    model.cache._db.execute("PRAGMA query_only=ON")  # every write refused: SQLITE_READONLY
    reqs = _requests(6)
    res = _score(model, reqs)
    _all_answered(res, reqs)
    assert [r.cached for r in res] == [True] * 3 + [False] * 3  # the stored three are still hits
    assert inner.answered == 3 and model.usage.cache_hits == 3 and model.usage.cache_failures == 3
    (line,) = _warnings(capsys.readouterr().err)
    assert str(path) in line and "readonly" in line
    _close(model)
    assert _stored(path) == 3


@pytest.mark.skipif(ROOT, reason="chmod does not stop root (simulated in the test above)")
def test_a_read_only_cache_file(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model, _ = _open(path)
    _score(model, _requests(2))
    _close(model)
    path.chmod(stat.S_IRUSR)
    try:
        model, inner = _open(path)
        reqs = _requests(4)
        res = _score(model, reqs)
        _all_answered(res, reqs)
        assert inner.answered == 2 and model.usage.cache_hits == 2 and model.usage.cache_failures == 2
        (line,) = _warnings(capsys.readouterr().err)
        assert str(path) in line
        _close(model)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_file_where_the_cache_folder_should_be_is_named_as_such(tmp_path, capsys, monkeypatch):
    """STRATBENCH_CACHE_DIR naming a file: the warning says so (not an errno's "File exists");
    the answers stand, uncached, and the file is untouched."""
    afile = tmp_path / "cachefile"
    afile.write_text("hi")
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(afile))
    model, _ = _open(afile / "sub" / "c.sqlite")
    reqs = _requests(2)
    _all_answered(_score(model, reqs), reqs)
    (line,) = _warnings(capsys.readouterr().err)
    assert f"{afile} (STRATBENCH_CACHE_DIR) is a file, not a folder; answers are kept, not cached" in line
    assert afile.read_text() == "hi"
    _close(model)


def test_a_cache_path_too_long_for_the_system_is_bypassed(tmp_path, capsys):
    """A folder name past the system's limit (fuzz 10 A E2): named in one warning and bypassed,
    the answers kept — it was a refusal of the whole run (exit 2)."""
    model, _ = _open(tmp_path / ("x" * 300) / "c.sqlite")
    reqs = _requests(2)
    _all_answered(_score(model, reqs), reqs)
    (line,) = _warnings(capsys.readouterr().err)
    assert "name too long" in line.lower() and "answers are kept" in line, line
    _close(model)


def test_a_cache_on_read_only_media_still_replays_its_answers(tmp_path, capsys):
    """A WAL database on a file system mounted read-only cannot make its shared-memory file:
    SQLite answers SQLITE_CANTOPEN ("unable to open database file") to the writable open. It is
    opened for reading (mode=ro, else immutable) and its answers are replayed, not paid again;
    the warning says it opens for reading only. (The mount is simulated: tests cannot mount.)"""
    import sqlite3

    path = tmp_path / "c.sqlite"
    model, _ = _open(path)
    _score(model, _requests(3))
    _close(model)

    class ReadOnlyMedia(ResponseCache):
        def _connect(self, readonly: bool = False) -> sqlite3.Connection:
            if not readonly:
                e = sqlite3.OperationalError("unable to open database file")
                e.sqlite_errorcode = 14  # type: ignore[attr-defined]
                raise e
            return super()._connect(readonly=True)

    inner = Fake()
    model = CachedModel(inner, ReadOnlyMedia(path))
    reqs = _requests(5)
    res = _score(model, reqs)
    _all_answered(res, reqs)
    assert [r.cached for r in res] == [True] * 3 + [False] * 2 and inner.answered == 2
    (line,) = _warnings(capsys.readouterr().err)
    assert "cannot be written (it opens for reading only): unable to open database file" in line, line
    _close(model)


def test_a_link_loop_or_a_foreign_table_is_named_as_such(tmp_path, capsys):
    loop = tmp_path / "loop.sqlite"
    loop.symlink_to(loop)
    model, _ = _open(loop)
    reqs = _requests(2)
    _all_answered(_score(model, reqs), reqs)
    (line,) = _warnings(capsys.readouterr().err)
    assert "a symbolic link to nothing, or a loop of links" in line, line
    _close(model)
    foreign = tmp_path / "foreign.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT)")
    db.commit()
    db.close()
    model, _ = _open(foreign)
    _all_answered(_score(model, reqs), reqs)
    (line,) = _warnings(capsys.readouterr().err)
    assert "no such column: created (its responses table is another program's or another format's" in line, line
    _close(model)


def test_a_cache_path_with_a_line_break_is_named_in_one_line(tmp_path, capsys, monkeypatch):
    """A STRATBENCH_CACHE_DIR holding a line break: the warning stays one line (the break shown
    escaped), so its second half cannot pass for another message."""
    afile = tmp_path / "cachefile"
    afile.write_text("hi")
    odd = afile / "x\nwarning: all is well"
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(odd))
    model, _ = _open(odd / "c.sqlite")
    reqs = _requests(2)
    _all_answered(_score(model, reqs), reqs)
    (line,) = _warnings(capsys.readouterr().err)
    assert "x\\nwarning: all is well" in line and "is a file, not a folder" in line, line
    _close(model)


@pytest.mark.skipif(ROOT, reason="chmod does not stop root (simulated by a file where the folder should be)")
@pytest.mark.parametrize("existing", [False, True])
def test_a_read_only_cache_folder(tmp_path, capsys, existing):
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "c.sqlite"
    if existing:
        model, _ = _open(path)
        _score(model, _requests(2))
        _close(model)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        model, inner = _open(path)
        reqs = _requests(4)
        _all_answered(_score(model, reqs), reqs)
        assert model.usage.errors == 0 and model.usage.cache_failures + model.usage.cache_hits == 4
        (line,) = _warnings(capsys.readouterr().err)
        assert str(path) in line
        _close(model)
    finally:
        folder.chmod(stat.S_IRWXU)


def test_a_cache_that_cannot_be_opened_is_bypassed(tmp_path, capsys):
    (tmp_path / "plain").write_text("a file where the cache's folder should be")
    path = tmp_path / "plain" / "cache" / "c.sqlite"
    model, inner = _open(path)
    reqs = _requests(5)
    for _ in range(2):  # asked twice: nothing was stored, so both times computed
        _all_answered(_score(model, reqs), reqs)
    assert inner.answered == 10 and model.usage.cache_hits == 0 and model.usage.cache_failures == 10
    (line,) = _warnings(capsys.readouterr().err)
    assert str(path) in line and f"{tmp_path / 'plain'} is a file, not a folder" in line
    _close(model)
    assert (tmp_path / "plain").read_text() == "a file where the cache's folder should be"


def test_generation_through_an_unwritable_cache(tmp_path, capsys):
    model, inner = _open(tmp_path / "c.sqlite")
    assert model.cache._db is not None
    model.cache._db.execute("PRAGMA query_only=ON")
    reqs = [GenerateRequest(f"p{i}", sample_index=i) for i in range(4)]
    res = asyncio.run(model.generate(reqs))
    assert [r.text for r in res] == [f"Action: {len(r.prompt) % 3}" for r in reqs]
    assert all(r.ok and not r.cached for r in res) and model.usage.cache_failures == 4
    assert model.usage.tokens_out == 12 and model.usage.errors == 0
    assert len(_warnings(capsys.readouterr().err)) == 1
    _close(model)


def test_models_sharing_a_broken_cache_name_it_once_per_run(tmp_path, capsys):
    (tmp_path / "plain").write_text("")
    path = tmp_path / "plain" / "c.sqlite"
    a, _ = _open(path)
    b, _ = _open(path)  # CHBench's players: one cache, one line
    _score(a, _requests(1))
    _score(b, _requests(1))
    assert len(_warnings(capsys.readouterr().err)) == 1
    _close(a)
    _close(b)
    c, _ = _open(path)  # a later run in the same process is told again
    assert len(_warnings(capsys.readouterr().err)) == 1
    _close(c)


# -- a locked cache -----------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path):
    """Another process's connection holding the database's write lock (BEGIN EXCLUSIVE)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield other
    finally:
        with contextlib.suppress(sqlite3.Error):
            other.execute("ROLLBACK")
        other.close()


def test_a_locked_cache_keeps_the_answers_without_hanging(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model, _ = _open(path)
    _score(model, _requests(3))
    _close(model)
    with _locked(path):
        t0 = time.monotonic()
        model, inner = _open(path, timeout_s=0.3)
        reqs = _requests(6)
        res = _score(model, reqs)
        more = _requests(4, 6)
        _all_answered(_score(model, more), more)  # bypassed now: no second wait
        elapsed = time.monotonic() - t0
    _all_answered(res, reqs)
    assert [r.cached for r in res] == [True] * 3 + [False] * 3  # reads go on beside the writer
    assert inner.answered == 7 and model.usage.cache_failures == 7 and model.usage.errors == 0
    assert elapsed < 3  # one short wait, not one per call
    (line,) = _warnings(capsys.readouterr().err)
    assert str(path) in line and "database is locked" in line
    _close(model)
    assert _stored(path) == 3


def test_a_briefly_locked_cache_still_stores(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model, inner = _open(path)  # the default busy timeout
    with _locked(path) as other:
        threading.Timer(0.3, lambda: other.execute("COMMIT")).start()
        reqs = _requests(5)
        _all_answered(_score(model, reqs), reqs)
    assert model.usage.cache_failures == 0 and "cache_failures" not in model.usage.as_dict()
    assert capsys.readouterr().err == ""
    _close(model)
    assert _stored(path) == 5


# -- a corrupt cache ------------------------------------------------------------------------------


def _filled(path: Path, n: int = 300) -> None:
    model, _ = _open(path)
    _score(model, _requests(n))
    _close(model)


def _truncated(path: Path) -> bytes:
    _filled(path)
    data = path.read_bytes()[: len(path.read_bytes()) // 2]
    path.write_bytes(data)
    return data


def _random_bytes(path: Path) -> bytes:
    data = os.urandom(20000)
    path.write_bytes(data)
    return data


def _a_folder(path: Path) -> bytes:
    path.mkdir()
    (path / "inside.txt").write_bytes(b"kept")
    return b""


def _bad_pages(path: Path) -> bytes:
    """Intact header and table root, garbage in the last pages: found only when they are read."""
    _filled(path)
    data = bytearray(path.read_bytes())
    data[-8192:] = b"\xff" * 8192
    path.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize("damage", [_truncated, _random_bytes, _a_folder, _bad_pages],
                         ids=["truncated", "random-bytes", "folder", "bad-pages"])
def test_a_corrupt_cache_is_moved_aside_and_started_afresh(tmp_path, capsys, damage):
    path = tmp_path / "c.sqlite"
    data = damage(path)
    capsys.readouterr()
    model, inner = _open(path)
    reqs = _requests(300)
    _all_answered(_score(model, reqs), reqs)
    assert model.usage.errors == 0 and inner.answered == 300
    (line,) = _warnings(capsys.readouterr().err)
    (aside,) = tmp_path.glob("c.sqlite.corrupt-*")
    assert str(path) in line and f"moved aside to {aside.name}" in line and "started afresh" in line
    if damage is _a_folder:
        assert (aside / "inside.txt").read_bytes() == b"kept"
    else:
        assert aside.read_bytes() == data  # nothing deleted
    _close(model)
    again, inner = _open(path)  # the fresh cache works: a re-run is all hits
    res = _score(again, reqs)
    assert all(r.cached for r in res) and inner.answered == 0 and again.usage.cache_failures == 0
    assert capsys.readouterr().err == ""
    _close(again)


# -- invalid cached values ------------------------------------------------------------------------


def _tamper(path: Path, value: Any) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE responses SET value = ?", (value if isinstance(value, str) else json.dumps(value),))
    db.commit()
    db.close()


BAD_SCORES = {
    "nan": {"logprobs": [math.nan, -1.0, -2.0], "n_tokens": [1, 1, 1]},
    "positive": {"logprobs": [0.5, -1.0, -2.0], "n_tokens": [1, 1, 1]},
    "plus-infinity": {"logprobs": [math.inf, -1.0, -2.0], "n_tokens": [1, 1, 1]},
    "too-few": {"logprobs": [-1.0, -2.0], "n_tokens": [1, 1]},
    "text": {"logprobs": ["-1", -1.0, -2.0], "n_tokens": [1, 1, 1]},
    "bool": {"logprobs": [True, -1.0, -2.0], "n_tokens": [1, 1, 1]},
    "no-list": {"logprobs": None},
    "bad-token-counts": {"logprobs": [-1.0, -1.0, -2.0], "n_tokens": [1, -1, 1]},
    "unknown-field": {"logprobs": [-1.0, -1.0, -2.0], "error": "x"},
    "rendered-number": {"logprobs": [-1.0, -1.0, -2.0], "rendered": 7},
    "not-an-object": [-1.0, -1.0, -2.0],
    "not-json": "{not json",
    # valid-looking numbers, but disjoint answers cannot have probabilities summing past 1
    "mass-over-one": {"logprobs": [-0.5, -0.5, -0.5], "n_tokens": [1, 1, 1]},
}


@pytest.mark.parametrize("bad", list(BAD_SCORES.values()), ids=list(BAD_SCORES))
def test_an_invalid_cached_score_is_recomputed_and_overwritten(tmp_path, capsys, bad):
    path = tmp_path / "c.sqlite"
    reqs = _requests(4)
    model, _ = _open(path)
    _score(model, reqs)
    _close(model)
    _tamper(path, bad)
    model, inner = _open(path)
    res = _score(model, reqs)
    _all_answered(res, reqs)  # the model's own values: not the cached NaN, not probability 0
    assert not any(r.cached for r in res) and inner.answered == 4 and model.usage.cache_failures == 4
    (line,) = _warnings(capsys.readouterr().err)
    assert str(path) in line and "invalid" in line and "recomputed" in line
    _close(model)
    again, inner = _open(path)  # overwritten: the next run is all hits, with the right values
    res = _score(again, reqs)
    assert all(r.cached for r in res) and inner.answered == 0
    assert [r.logprobs for r in res] == [Fake.logprobs(q) for q in reqs]
    _close(again)


def test_a_cached_minus_infinity_is_a_probability_zero_not_an_error(tmp_path, capsys):
    # a chat endpoint gives -inf to a label outside its top log-probs: a valid answer, replayed
    path = tmp_path / "c.sqlite"
    reqs = _requests(2)
    model, _ = _open(path)
    _score(model, reqs)
    _close(model)
    _tamper(path, {"logprobs": [-math.inf, -0.1, -3.0], "n_tokens": [1, 1, 1]})
    model, inner = _open(path)
    res = _score(model, reqs)
    assert all(r.cached for r in res) and inner.answered == 0
    assert res[0].logprobs == [-math.inf, -0.1, -3.0]
    assert capsys.readouterr().err == ""
    _close(model)


@pytest.mark.parametrize("bad", [{"text": None}, {"text": 5}, {"text": "A", "tokens_out": -1},
                                 {"text": "A", "finish_reason": 3}, {"text": "A", "tokens_in": 1.5}],
                         ids=["none", "number", "negative-count", "reason", "float-count"])
def test_an_invalid_cached_generation_is_recomputed(tmp_path, capsys, bad):
    path = tmp_path / "c.sqlite"
    reqs = [GenerateRequest("a prompt"), GenerateRequest("another prompt")]
    model, _ = _open(path)
    asyncio.run(model.generate(reqs))
    _close(model)
    _tamper(path, bad)
    model, inner = _open(path)
    res = asyncio.run(model.generate(reqs))
    assert [r.text for r in res] == ["Action: 2", "Action: 2"] and not any(r.cached for r in res)
    assert inner.answered == 2 and model.usage.errors == 0
    assert len(_warnings(capsys.readouterr().err)) == 1
    _close(model)


def test_old_entries_without_later_fields_still_hit(tmp_path, capsys):
    # the on-disk format is unchanged: an entry written before `rendered` existed is a hit
    path = tmp_path / "c.sqlite"
    reqs = _requests(2)
    model, _ = _open(path)
    _score(model, reqs)
    _close(model)
    db = sqlite3.connect(path)
    rows = db.execute("SELECT key, value FROM responses").fetchall()
    for k, v in rows:
        value = json.loads(v)
        del value["rendered"], value["n_tokens"]
        db.execute("UPDATE responses SET value = ? WHERE key = ?", (json.dumps(value), k))
    db.commit()
    db.close()
    model, inner = _open(path)
    res = _score(model, reqs)
    assert all(r.cached for r in res) and inner.answered == 0 and capsys.readouterr().err == ""
    _close(model)


# -- through the CLI ----------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    from stratbench.cli.main import main

    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def _run_json(out: Path) -> dict[str, Any]:
    (meta,) = out.glob("*/run.json")
    return dict(json.loads(meta.read_text()))


def _records(out: Path) -> list[dict[str, Any]]:
    (f,) = out.glob("*/trials.jsonl")
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()]


def _named(err: str) -> list[str]:
    """The lines of a run's stderr that warn or report an error (not its summary)."""
    return [x for x in err.splitlines() if x.startswith(("warning", "error", "Traceback"))]


def _page_limited(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """A cache at `path` with small pages, that can never grow by one (SQLite's own SQLITE_FULL,
    as on a full disk): the first answers fit in its pages, the rest do not."""
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)")
    db.commit()
    db.close()
    real = ResponseCache._connect

    def full(self: ResponseCache, readonly: bool = False) -> sqlite3.Connection:
        db = real(self, readonly)
        db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
        return db

    monkeypatch.setattr(ResponseCache, "_connect", full)


@pytest.mark.parametrize("broken", ["unopenable", "full"])
def test_cli_run_with_a_broken_cache_completes_with_every_answer(tmp_path, monkeypatch, capsys, broken):
    from fake_openai_server import FakeOpenAIServer

    monkeypatch.setenv("CI", "1")
    if broken == "unopenable":
        (tmp_path / "plain").write_text("")
        cache_dir = tmp_path / "plain" / "cache"
    else:
        cache_dir = tmp_path / "cache"
        _page_limited(monkeypatch, cache_dir / "responses.sqlite")
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(cache_dir))
    games = 3 if broken == "unopenable" else 8
    out = tmp_path / "out"
    with FakeOpenAIServer() as server:
        code = _cli(["nashgap", "--model", "openai-compatible:fake", "--base-url", server.base_url,
                     "--num-games", str(games), "--seed", "9", "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert len(_named(err)) == 1, err
    (line,) = _named(err)
    assert line.startswith(f"warning: response cache {cache_dir / 'responses.sqlite'}: ")
    assert line.endswith("answers are kept, not cached")
    recs = _records(out)
    assert len(recs) == games and all(r["status"] == "parsed" for r in recs)
    totals = _run_json(out)["totals"]
    assert totals["errors"] == 0 and totals["model_errors"] == 0 and totals["model_calls"] == games
    if broken == "unopenable":
        assert totals["model_cache_failures"] == games
    else:  # the first answers fit the pages the database had; the rest are kept unstored
        assert 0 < totals["model_cache_failures"] <= games, totals


def test_cli_run_over_a_corrupt_cache_recreates_it(tmp_path, monkeypatch, capsys):
    from fake_openai_server import FakeOpenAIServer

    monkeypatch.setenv("CI", "1")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "responses.sqlite").write_bytes(os.urandom(5000))
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(cache_dir))
    with FakeOpenAIServer() as server:  # one server (one base URL) for both runs
        argv = ["nashgap", "--model", "openai-compatible:fake", "--base-url", server.base_url,
                "--num-games", "3", "--seed", "9", "--output-dir"]
        assert _cli([*argv, str(tmp_path / "a")]) == 0
        err = capsys.readouterr().err
        assert len(_named(err)) == 1, err
        (line,) = _named(err)
        assert "file is not a database; moved aside to responses.sqlite.corrupt-" in line
        assert _cli([*argv, str(tmp_path / "b")]) == 0
    assert not _named(capsys.readouterr().err)
    first, second = _run_json(tmp_path / "a")["totals"], _run_json(tmp_path / "b")["totals"]
    assert first["model_calls"] == 3 and "model_cache_failures" not in first
    assert second["model_calls"] == 0 and second["model_cache_hits"] == 3
    assert [r["policy"] for r in _records(tmp_path / "a")] == [r["policy"] for r in _records(tmp_path / "b")]
    assert len(list(cache_dir.glob("responses.sqlite.corrupt-*"))) == 1


@pytest.mark.parametrize("value,where", [(" ", None), ("", None), ("~/c", "HOME/c")])
def test_a_blank_or_tilde_cache_dir_is_unset_or_the_homes(monkeypatch, tmp_path, value, where):
    """STRATBENCH_CACHE_DIR " " made a folder named " " in the working folder, and "~/c" one named
    "~" (fuzz 13 A M): blank is unset, a tilde is the home folder, as a shell reads it."""
    from stratbench.models.cache import default_cache_path

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", value)
    path = default_cache_path()
    if where is None:
        assert path.parent.name != value and path.is_absolute()
    else:
        assert path == tmp_path / "c" / "responses.sqlite"


def test_a_cache_dir_whose_tilde_names_no_user_is_one_line(monkeypatch):
    """"~nouser/x" could not be expanded: an internal error of every cached run (fuzz 14 B T1)."""
    from stratbench.errors import InputError
    from stratbench.models.cache import default_cache_path

    monkeypatch.setenv("STRATBENCH_CACHE_DIR", "~no_such_user_zz9/x")
    with pytest.raises(InputError, match="STRATBENCH_CACHE_DIR '~no_such_user_zz9/x': its ~ names no home folder"):
        default_cache_path()
