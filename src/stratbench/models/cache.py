"""A persistent response cache (SQLite) that makes re-running a finished run free.

The key covers everything that can change an answer: the backend's identity (spec, model file or
name, base URL — never keys), the full prompt, every generation parameter, and the sample index, so
repeated samples of one prompt stay distinct. Only successful results are stored: a failed call is
retried on the next run rather than replayed.

The cache never costs an answer. One that cannot be opened, read or written (a full disk, a
read-only file or folder, a database another process keeps locked) is named once on stderr and
bypassed: every answer the model gave is returned, only not stored (`UsageTotals.cache_failures`
counts the requests the cache failed to serve or store). A corrupt database (not SQLite, truncated,
a folder in its place) is moved aside, never deleted, and started afresh. A cached answer is checked
like a server's reply (log-probabilities are numbers no higher than 0, one per continuation; texts
are strings; counts are counts): an invalid one is a miss, recomputed and overwritten.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import os
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from stratbench.files import first_not_utf8
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
)
from stratbench.models.labels import LOGPROB_MAX, prefix_free
from stratbench.models.notices import warn

CACHE_VERSION = 1

#: how long an operation waits for a database another process holds locked before the cache is
#: bypassed (a writer holds it for milliseconds; a longer lock would stall the run)
BUSY_TIMEOUT_S = 5.0

_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)
_READONLY_CODE = 8  # SQLITE_READONLY
_CANTOPEN_CODE = 14  # SQLITE_CANTOPEN: e.g. a WAL database whose -shm file cannot be made (read-only media)

# the caches already named on stderr in this process, and how many instances hold each open: a
# problem is named once for all the models sharing a cache (CHBench's players), and again in a
# later run in the same process
_named: set[str] = set()
_open_count: Counter[str] = Counter()


def _not_utf8(text: str) -> bool:
    """Whether a path text holds bytes that are not UTF-8 (kept by Python as lone surrogates)."""
    return first_not_utf8(text) is not None


def shown_path(path: Path) -> str:
    """A path as text a UTF-8 file can hold: bytes that are not UTF-8 shown as U+FFFD."""
    text = str(path)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if _not_utf8(text) else text


def default_cache_path() -> Path:
    base = os.environ.get("STRATBENCH_CACHE_DIR")
    if base and base.strip():  # (blank: unset, never a folder named " "; "~/c" is the home's, as a shell's)
        try:
            return Path(base).expanduser() / "responses.sqlite"
        except RuntimeError:  # ("~nouser/x": no such user's home)
            from stratbench.errors import InputError

            raise InputError(f"STRATBENCH_CACHE_DIR {base!r}: its ~ names no home folder here; give the cache "
                             "folder's full path") from None
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("stratbench")) / "responses.sqlite"


def _code(e: BaseException) -> int:
    return int(getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF


def _is_corrupt(e: BaseException) -> bool:
    return isinstance(e, sqlite3.DatabaseError) and _code(e) in _CORRUPT_CODES


def _say(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}{f' ({e.filename})' if e.filename else ''}"
    text = " ".join(str(e).split()) or type(e).__name__
    if getattr(e, "sqlite_errorname", "") == "SQLITE_READONLY_DIRECTORY":
        text += " (its folder is read-only)"
    return text


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


class _NotAFile(Exception):
    """Something other than a file (a folder) stands where the database should be."""


class _NotAFolder(Exception):
    """A file stands where the database's folder (or one above it) should be: nothing to move aside."""


class ResponseCache:
    """A thread-safe key → JSON store in one SQLite file (WAL mode, safe across processes).

    Never raises for the cache's own failures: `get_many` answers None when the cache cannot be
    read and `put_many` False when it cannot be written; the first failure names the cache on
    stderr (once) and turns that side off for the rest of the session."""

    def __init__(self, path: str | Path | None = None, timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._file_id: tuple[int, int] | None = None  # the file the connection opened
        self.readable = self.writable = False
        self.problem: str | None = None  # why the cache is (partly) bypassed, once it is
        self._name = str(self.path.absolute())
        _open_count[self._name] += 1
        self._closed = False
        if _not_utf8(str(self.path)):  # (a HOME or cache folder named in Latin-1: every result file is UTF-8)
            self.problem = "its path holds bytes that are not UTF-8 text (set STRATBENCH_CACHE_DIR to a UTF-8 path)"
            if self._name not in _named:
                _named.add(self._name)
                warn(f"response cache {shown_path(self.path)}: {self.problem}; answers are kept, not cached")
            return
        self._open()

    # -- opening -----------------------------------------------------------------------------

    def _connect(self, readonly: bool = False) -> sqlite3.Connection:
        if self.path.exists() and not self.path.is_file():
            raise _NotAFile("a folder (or another non-file) stands where the database should be")
        if not readonly:
            for up in (self.path.parent, *self.path.parent.parents):  # a file where a folder must be
                if up.exists():
                    if not up.is_dir():
                        named = os.environ.get("STRATBENCH_CACHE_DIR")
                        env = " (STRATBENCH_CACHE_DIR)" if named and up in (Path(named), *Path(named).parents) else ""
                        raise _NotAFolder(f"{up}{env} is a file, not a folder")
                    break
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if readonly:
            return self._connect_readonly()
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.timeout_s)
        try:
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS responses "
                           "(key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)")
                db.commit()
            db.execute("SELECT key, value, created FROM responses LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        self._file_id = _file_id(self.path)
        return db

    def _connect_readonly(self) -> sqlite3.Connection:
        """The database opened for reading only: ``mode=ro``, else (a WAL database on read-only
        media, whose shared-memory file cannot be made) ``immutable=1``, which reads the file as
        it stands (a cache's writer checkpoints its WAL into it when it closes)."""
        last: sqlite3.Error | None = None
        for flags in ("mode=ro", "immutable=1"):
            uri = f"{self.path.absolute().as_uri()}?{flags}"
            try:
                db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=self.timeout_s)
            except sqlite3.Error as e:
                last = e
                continue
            try:
                db.execute("SELECT key, value, created FROM responses LIMIT 1").fetchall()
            except sqlite3.Error as e:
                db.close()
                last = e
                continue
            self._file_id = _file_id(self.path)
            return db
        assert last is not None
        raise last

    def _open(self) -> None:
        try:
            try:
                self._db = self._connect()
            except sqlite3.Error as e:
                # read-only: the file or folder (SQLITE_READONLY), or the media (a WAL database
                # cannot open its shared memory: SQLITE_CANTOPEN): its answers can still be replayed
                if not (_code(e) == _READONLY_CODE or (_code(e) == _CANTOPEN_CODE and self.path.is_file())):
                    raise
                try:
                    self._db = self._connect(readonly=True)
                except sqlite3.Error:
                    if _code(e) != _READONLY_CODE:
                        raise e from None  # not read-only after all: named below
                    raise
                self.readable = True
                self._bypass(e, "cannot be written" if _code(e) == _READONLY_CODE else
                             "cannot be written (it opens for reading only)")
                return
        except (_NotAFile, sqlite3.Error) as e:
            if not (isinstance(e, _NotAFile) or _is_corrupt(e)):
                self._bypass(e)
                return
            if not self._move_aside(_say(e)):
                return
            try:
                self._db = self._connect()
            except (sqlite3.Error, OSError, _NotAFile) as e2:
                self._bypass(e2)
                return
        except (OSError, _NotAFolder) as e:
            self._bypass(e)
            return
        self.readable = self.writable = True

    def _move_aside(self, why: str) -> bool:
        """Rename a corrupt database (and its WAL files) to `<name>.corrupt-<time>`; False (the
        cache bypassed) when that fails."""
        if self._db is not None:
            self._db.close()
            self._db = None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists() or target.is_symlink():
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        try:
            self.path.rename(target)
        except FileNotFoundError:
            return True  # another process moved it aside first
        except OSError as e:
            self._bypass(OSError(e.errno, f"{why}, and it could not be moved aside: {e.strerror}"))
            return False
        for side in ("-wal", "-shm"):  # a stale WAL must never be replayed into the new database
            old = self.path.with_name(self.path.name + side)
            if old.exists():
                try:
                    old.rename(target.with_name(target.name + side))
                except OSError:
                    old.unlink(missing_ok=True)
        warn(f"response cache {self.path}: {why}; moved aside to {target.name} and started afresh")
        return True

    def _explain(self, e: BaseException) -> str:
        """`_say(e)` with what SQLite's own words leave out: a link to nothing (or a loop of links)
        in the database's place, or a ``responses`` table that is not the cache's."""
        text = _say(e)
        try:
            dangling = self.path.is_symlink() and not self.path.exists()
        except OSError:  # (a path the system cannot look at, e.g. a name too long: said by `text`)
            dangling = False
        if dangling:
            return f"{text} (it is a symbolic link to nothing, or a loop of links)"
        if isinstance(e, sqlite3.OperationalError) and str(e).startswith("no such column"):
            return f"{text} (its responses table is another program's or another format's, not this cache's)"
        return text

    def _bypass(self, e: BaseException, what: str = "") -> None:
        """Name the cache's problem on stderr, once, and stop using the side that failed (the
        caller sets `readable`/`writable`)."""
        if self.problem is None:
            self.problem = f"{what}: {self._explain(e)}" if what else self._explain(e)
        if self._name in _named:
            return
        _named.add(self._name)
        warn(f"response cache {self.path}: {self.problem}; answers are kept, not cached")

    def _recover(self, e: sqlite3.Error) -> bool:
        """After a corruption found in use: move the database aside and start afresh."""
        self.readable = self.writable = False
        if _file_id(self.path) != self._file_id:
            # another cache (a model beside this one, another process) has already moved it aside
            if self._db is not None:
                self._db.close()
                self._db = None
        elif not self._move_aside(_say(e)):
            return False
        try:
            self._db = self._connect()
        except (sqlite3.Error, OSError, _NotAFile) as e2:
            self._bypass(e2)
            return False
        self.readable = self.writable = True
        return True

    # -- use ---------------------------------------------------------------------------------

    def get_many(self, keys: Sequence[str], created_before: float | None = None) -> dict[str, Any] | None:
        """The stored values of `keys` (only those stored before `created_before`, when given),
        as decoded JSON (None where a value is not JSON); None when the cache cannot be read."""
        if not keys:
            return {}
        with self._lock:
            if not self.readable or self._db is None:
                return None
            try:
                return self._select(self._db, keys, created_before)
            except sqlite3.Error as e:
                if _is_corrupt(e):
                    self._recover(e)
                else:
                    self.readable = False
                    self._bypass(e, "cannot be read")
                return None

    @staticmethod
    def _select(db: sqlite3.Connection, keys: Sequence[str], created_before: float | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            q = f"SELECT key, value FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
            args: list[Any] = chunk
            if created_before is not None:
                q += " AND created < ?"
                args = [*chunk, created_before]
            for k, v in db.execute(q, args):
                try:
                    out[k] = json.loads(v)
                except (ValueError, TypeError, RecursionError):
                    out[k] = None  # not JSON (or nested past the parser's depth): invalid, recomputed
        return out

    def put_many(self, items: dict[str, dict[str, Any]]) -> bool:
        """Store `items`; False (nothing lost: the caller keeps its answers) when the cache
        cannot be written."""
        if not items:
            return True
        rows = [(k, json.dumps(v), time.time()) for k, v in items.items()]
        with self._lock:
            for attempt in range(2):
                if not self.writable or self._db is None:
                    return False
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)", rows)
                    self._db.commit()
                    return True
                except sqlite3.Error as e:
                    try:
                        self._db.rollback()
                    except sqlite3.Error:
                        pass
                    if _is_corrupt(e) and attempt == 0:
                        if self._recover(e):
                            continue  # into the fresh database
                        return False
                    self.writable = False
                    self._bypass(e, "cannot be written")
                    return False
        return False  # pragma: no cover - the loop always returns

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _open_count[self._name] -= 1
            if _open_count[self._name] <= 0:
                del _open_count[self._name]
                _named.discard(self._name)
            if self._db is not None:
                try:
                    self._db.close()
                except sqlite3.Error:
                    pass
                self._db = None
            self.readable = self.writable = False


# Request fields added after a cache format was fixed: left out of the key while they hold their
# default, so every answer cached before they existed is still found.
_ADDED_FIELDS: dict[str, Any] = {"messages": (), "closed": False}
_NOT_KEYS = ("dry_reply",)  # what the caller says of a request, not what is sent


def request_key(kind: str, model: dict[str, Any], request: Any, reader: int = 1) -> str:
    """The cache key of `request` to `model` (its describe()). ``reader``: the backend's
    `reply_reader` for a generation, its `score_reader` for a score (left out at 1, so the entries
    of backends whose reading never changed are still found)."""
    fields = {k: v for k, v in dataclasses.asdict(request).items()
              if k not in _NOT_KEYS and not (k in _ADDED_FIELDS and v == _ADDED_FIELDS[k])}
    payload = {
        "v": CACHE_VERSION,
        "kind": kind,
        "model": model,
        "request": fields,
        **({"reader": reader} if reader != 1 else {}),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


_SCORE_FIELDS = ("logprobs", "n_tokens", "rendered")
_GEN_FIELDS = ("text", "tokens_in", "tokens_out", "finish_reason", "rendered", "reasoning", "tokens_reasoning")


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _invalid_score(v: dict[str, Any], request: ScoreRequest) -> str | None:
    lps, n = v.get("logprobs"), len(request.continuations)
    if not isinstance(lps, list) or len(lps) != n:
        return f"not {n} log-probabilities"
    for x in lps:
        # -inf is a probability (0: a chat endpoint's label outside its top log-probs); NaN, a
        # positive value or +inf is none, as from a server
        if not isinstance(x, (int, float)) or isinstance(x, bool) or math.isnan(x) or x > LOGPROB_MAX:
            return f"log-probability {x!r}"
    # the answers of a closed or prefix-free label set are disjoint events: probabilities summing
    # past 1 are no model's (a server's would be an error, `labels.label_policy`), so such a cached
    # value is recomputed rather than served as an error on every resume
    if (request.closed or prefix_free(request.continuations)) and lps:
        m = max(lps)
        if math.isfinite(m) and m + math.log(sum(math.exp(x - m) for x in lps)) > math.log1p(LOGPROB_MAX):
            return "log-probabilities of disjoint answers summing to more than 1"
    nt = v.get("n_tokens")
    if nt is not None and not (isinstance(nt, list) and len(nt) == n and all(_is_count(t) for t in nt)):
        return f"token counts {nt!r}"
    return None


def _invalid_generate(v: dict[str, Any], request: GenerateRequest) -> str | None:
    if not isinstance(v.get("text"), str):
        return "no text"
    for k in ("tokens_in", "tokens_out"):
        if k in v and not _is_count(v[k]):
            return f"{k} {v[k]!r}"
    if v.get("finish_reason") is not None and not isinstance(v["finish_reason"], str):
        return f"finish_reason {v['finish_reason']!r}"
    if v.get("reasoning") is not None and not isinstance(v["reasoning"], str):
        return f"reasoning {v['reasoning']!r}"
    if v.get("tokens_reasoning") is not None and not _is_count(v["tokens_reasoning"]):
        return f"tokens_reasoning {v['tokens_reasoning']!r}"
    return None


def invalid_entry(kind: str, value: Any, request: Any) -> str | None:
    """Why a cached value cannot stand for the answer to `request` (checked as a server's reply
    is), or None when it can."""
    fields = _SCORE_FIELDS if kind == "score" else _GEN_FIELDS
    if not isinstance(value, dict):
        return "not a JSON object"
    if not set(value) <= set(fields):
        return f"unknown fields {sorted(set(value) - set(fields))}"
    if value.get("rendered") is not None and not isinstance(value["rendered"], str):
        return "rendered prompt is not text"
    return _invalid_score(value, request) if kind == "score" else _invalid_generate(value, request)


class CachedModel(LanguageModel):
    """Wraps any backend; hits return instantly with `cached=True` and cost no call.

    `earlier_only`: serve only answers stored before this model was opened, and store the n-th
    asking of a request in a session as its own entry. A prefix-reusing backend needs it: its
    scores depend on the sequence of calls (llama.cpp rounds differently by a token's place in the
    KV cache), so the same prompt asked twice in a session (two episodes opening alike) can score
    differently, and a hit skips a call, which would change every later score. With it a first run
    equals an uncached run exactly, and a re-run of the same work is all hits with the same values.

    The cache never costs an answer: when it cannot be read the requests are computed, when it
    cannot be written the answers are returned unstored, and an invalid entry is recomputed and
    overwritten; each such request counts once in `usage.cache_failures`.
    """

    def __init__(self, inner: LanguageModel, cache: ResponseCache, earlier_only: bool = False) -> None:
        super().__init__()
        self.inner = inner
        self.cache = cache
        self._before = time.time() if earlier_only else None
        self._seen: dict[str, int] = {}  # earlier_only: how often each request was asked this session
        self.take_traits(inner)
        # the backend's own counters (HTTP requests, retries) show in this model's usage too
        self.usage.extra = inner.usage.extra
        self._identity = inner.describe()
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._invalid_named = False

    def _name_invalid(self, why: str) -> None:
        if not self._invalid_named:
            self._invalid_named = True
            warn(f"response cache {self.cache.path}: a cached answer is invalid ({why}); "
                  "it is recomputed and overwritten")

    async def _through(self, kind: str, requests: Sequence[Any], call: Any, fields: tuple[str, ...],
                       make: Any) -> list[Any]:
        reader = self.reply_reader if kind == "generate" else self.score_reader
        keys = [request_key(kind, self._identity, r, reader) for r in requests]
        if self._before is not None:
            # the n-th asking of a request in a session is its own entry: under prefix reuse the
            # same prompt can score differently the second time (another KV state before it), and
            # a re-run of the same sequence must find each occurrence's own answer
            for i, k in enumerate(keys):
                n = self._seen.get(k, 0)
                self._seen[k] = n + 1
                if n:
                    keys[i] = f"{k}#{n}"
        hits = self.cache.get_many(keys, self._before)
        failed: set[int] = set() if hits is not None else set(range(len(requests)))
        results: list[Any] = [None] * len(requests)
        missing: list[int] = []
        waiting: list[tuple[int, asyncio.Future[Any]]] = []
        loop = asyncio.get_running_loop()
        for i, k in enumerate(keys):
            if hits and k in hits:
                why = invalid_entry(kind, hits[k], requests[i])
                if why is None:
                    # a served answer evaluated no prompt: its prompt tokens are 0, as a scored
                    # answer's (which stores none) and a shared one's below; its reply keeps its length
                    results[i] = make(**{**hits[k], "tokens_in": 0}, cached=True)
                    continue
                self._name_invalid(why)  # a miss: computed below, and overwritten
                failed.add(i)
            if k in self._inflight and self._before is None:
                # the same request is being computed right now (e.g. both seats of a symmetric
                # game): share that one computation instead of paying for it twice
                waiting.append((i, self._inflight[k]))
            else:
                missing.append(i)
                if self._before is None:  # a reusing backend computes each of its calls itself
                    self._inflight[k] = loop.create_future()
        if missing:
            try:
                fresh = await call([requests[i] for i in missing])
            except BaseException as e:
                for i in missing:
                    fut = self._inflight.pop(keys[i], None)
                    # (a waiter cancelled by Ctrl-C cancels the future it awaited: leave that one be)
                    if fut is not None and not fut.done():
                        fut.set_exception(e)
                        fut.exception()  # mark retrieved: nobody may be waiting
                raise
            store = {}
            for i, r in zip(missing, fresh):
                results[i] = r
                fut = self._inflight.pop(keys[i], None)
                if fut is not None and not fut.done():
                    fut.set_result(r)
                entry = {f: getattr(r, f) for f in fields}
                # only what would be served again is stored (a NaN a local backend let through
                # is the caller's to record, not the cache's to keep)
                if r.ok and invalid_entry(kind, entry, requests[i]) is None:
                    store[keys[i]] = entry
            if not self.cache.put_many(store):  # the answers stand; only the cache missed them
                failed.update(i for i in missing if keys[i] in store)
        for i, fut in waiting:
            r = await fut
            results[i] = dataclasses.replace(r, cached=True, tokens_in=0, latency_s=0.0) if r.ok else r
        self.usage.cache_failures += len(failed)
        return results

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        results = await self._through("score", requests, self.inner.score, _SCORE_FIELDS, ScoreResult)
        for r in results:
            self.usage.add_score(r)
        return results

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = await self._through("generate", requests, self.inner.generate, _GEN_FIELDS,
                                      GenerateResult)
        for r in results:
            self.usage.add_generate(r)
        return results

    def describe(self) -> dict[str, Any]:
        return {**self._identity, "cache": shown_path(self.cache.path)}

    def request_prompts(self, req: ScoreRequest) -> list[list[str]]:
        return self.inner.request_prompts(req)

    def output_budget(self, req: GenerateRequest) -> int:
        return self.inner.output_budget(req)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self.cache.close()
