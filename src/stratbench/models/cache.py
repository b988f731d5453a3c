"""A persistent response cache (SQLite) that makes re-running a finished run free.

The key covers everything that can change an answer: the backend's identity (spec, model file or
name, base URL — never keys), the full prompt, every generation parameter, and the sample index, so
repeated samples of one prompt stay distinct. Only successful results are stored: a failed call is
retried on the next run rather than replayed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
)

CACHE_VERSION = 1


def default_cache_path() -> Path:
    base = os.environ.get("STRATBENCH_CACHE_DIR")
    if base:
        return Path(base) / "responses.sqlite"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("stratbench")) / "responses.sqlite"


class ResponseCache:
    """A thread-safe key → JSON store in one SQLite file (WAL mode, safe across processes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)"
        )
        self._db.commit()

    def get_many(self, keys: Sequence[str], created_before: float | None = None) -> dict[str, dict[str, Any]]:
        """The cached values of `keys` (only those stored before `created_before`, when given)."""
        if not keys:
            return {}
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = list(keys[i : i + 500])
                q = f"SELECT key, value FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
                args: list[Any] = chunk
                if created_before is not None:
                    q += " AND created < ?"
                    args = [*chunk, created_before]
                for k, v in self._db.execute(q, args):
                    out[k] = json.loads(v)
        return out

    def put_many(self, items: dict[str, dict[str, Any]]) -> None:
        if not items:
            return
        now = time.time()
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                [(k, json.dumps(v), now) for k, v in items.items()],
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


# Request fields added after a cache format was fixed: left out of the key while they hold their
# default, so every answer cached before they existed is still found.
_ADDED_FIELDS: dict[str, Any] = {"messages": (), "closed": False}


def request_key(kind: str, model: dict[str, Any], request: Any) -> str:
    fields = {k: v for k, v in dataclasses.asdict(request).items()
              if not (k in _ADDED_FIELDS and v == _ADDED_FIELDS[k])}
    payload = {
        "v": CACHE_VERSION,
        "kind": kind,
        "model": model,
        "request": fields,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


_SCORE_FIELDS = ("logprobs", "n_tokens", "rendered")
_GEN_FIELDS = ("text", "tokens_in", "tokens_out", "finish_reason", "rendered")


class CachedModel(LanguageModel):
    """Wraps any backend; hits return instantly with `cached=True` and cost no call.

    `earlier_only`: serve only answers stored before this model was opened, and store the n-th
    asking of a request in a session as its own entry. A prefix-reusing backend needs it: its
    scores depend on the sequence of calls (llama.cpp rounds differently by a token's place in the
    KV cache), so the same prompt asked twice in a session (two episodes opening alike) can score
    differently, and a hit skips a call, which would change every later score. With it a first run
    equals an uncached run exactly, and a re-run of the same work is all hits with the same values.
    """

    def __init__(self, inner: LanguageModel, cache: ResponseCache, earlier_only: bool = False) -> None:
        super().__init__()
        self.inner = inner
        self.cache = cache
        self._before = time.time() if earlier_only else None
        self._seen: dict[str, int] = {}  # earlier_only: how often each request was asked this session
        self.spec = inner.spec
        self.supports_logprobs = inner.supports_logprobs
        self.supports_chat = inner.supports_chat
        self.supports_chat_scoring = inner.supports_chat_scoring
        self.supports_closed_scoring = inner.supports_closed_scoring
        # the backend's own counters (HTTP requests, retries) show in this model's usage too
        self.usage.extra = inner.usage.extra
        self._identity = inner.describe()
        self._inflight: dict[str, asyncio.Future[Any]] = {}

    async def _through(self, kind: str, requests: Sequence[Any], call: Any, fields: tuple[str, ...],
                       make: Any) -> list[Any]:
        keys = [request_key(kind, self._identity, r) for r in requests]
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
        results: list[Any] = [None] * len(requests)
        missing: list[int] = []
        waiting: list[tuple[int, asyncio.Future[Any]]] = []
        loop = asyncio.get_running_loop()
        for i, k in enumerate(keys):
            if k in hits:
                results[i] = make(**hits[k], cached=True)
            elif k in self._inflight and self._before is None:
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
                    if fut is not None:
                        fut.set_exception(e)
                        fut.exception()  # mark retrieved: nobody may be waiting
                raise
            store = {}
            for i, r in zip(missing, fresh):
                results[i] = r
                fut = self._inflight.pop(keys[i], None)
                if fut is not None:
                    fut.set_result(r)
                if r.ok:
                    store[keys[i]] = {f: getattr(r, f) for f in fields}
            self.cache.put_many(store)
        for i, fut in waiting:
            r = await fut
            results[i] = dataclasses.replace(r, cached=True, tokens_in=0, latency_s=0.0) if r.ok else r
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
        return {**self._identity, "cache": str(self.cache.path)}

    async def aclose(self) -> None:
        await self.inner.aclose()
        self.cache.close()
