"""The HTTP client given to the providers' own SDKs (Anthropic, Gemini), so that their replies pass
the same guards as the OpenAI-compatible route's before the SDK parses them.

Why a transport of our own: the SDKs read a reply whole, however large (a 40 MB body written to a
record; a gzip body that expands to gigabytes ends in an out-of-memory kill), and their JSON
parsing turns two kinds of hostile usage counts into something else than an unknown count:
Python refuses integers of more than 4,300 digits (the answer is lost to a ``ValueError`` naming
Python internals), and the Gemini SDK's pydantic reads ``true`` as the count 1. Here the body is
read under `http_transport.read_capped`'s cap (``STRATBENCH_MAX_RESPONSE_BYTES``; past it the
call fails with `ResponseTooLarge`, which the backends name), and a JSON reply's counts that are
no counts are replaced by -1 before the SDK sees them: a value every backend's `reported_count`
reads as unknown usage, while the answer stands.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import httpx

from stratbench.models.http_transport import max_response_bytes_setting, read_capped
from stratbench.models.retry import ResponseTooLarge

__all__ = ["GuardedTransport", "guarded_client", "no_count", "too_large_cause"]

# longer integers than this are no token count (and Python's own limit for str -> int is 4,300)
_MAX_DIGITS = 30
# a JSON object under one of these keys holds token counts (Anthropic: usage; Gemini: usageMetadata)
_USAGE_KEYS = frozenset({"usage", "usageMetadata", "usage_metadata"})
# a usage object's counts (Gemini: promptTokenCount …; Anthropic: input_tokens …, web_search_requests)
_COUNT_ENDINGS = ("Count", "_tokens", "_requests")
# why a reply stopped (Gemini: finishReason; Anthropic: stop_reason): a text, or the SDK fails on it
_FINISH_KEYS = frozenset({"finishReason", "finish_reason", "stop_reason"})


def no_count(body: bytes) -> bytes:
    """`body` with every usage value that is no count replaced by -1 — a bool, an integer of more
    digits than any count, a fraction or a number past any count, a text or a list where a count
    goes — a usage that is no object by an empty one, and a finish reason that is no text dropped;
    the body unchanged when it needs nothing (or is no JSON: the SDK names that). Each of these made
    the SDK throw the answer away (fuzz 25 A F2: pydantic refused 12.5 where Anthropic's route kept
    the answer with its usage unknown)."""
    changed = False

    def parse_int(text: str) -> int:
        nonlocal changed
        if len(text.lstrip("-")) <= _MAX_DIGITS:
            return int(text)
        changed = True
        return -1

    try:
        data = json.loads(body, parse_int=parse_int)
    except (ValueError, RecursionError):
        return body

    def no(value: Any) -> Any:
        nonlocal changed
        changed = True
        return value

    def count(value: Any) -> Any:
        """A value under a usage object's count key (`…Count`, `…_tokens`, `…_requests`)."""
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) < 10.0 ** _MAX_DIGITS:
            return value
        return no(-1)

    def fix(obj: Any, usage: bool) -> Any:
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k in _USAGE_KEYS and not isinstance(v, dict) and v is not None:
                    out[k] = no({})
                elif k in _FINISH_KEYS and v is not None and not isinstance(v, str):
                    no(None)  # (left out: the SDK reads a missing reason as unknown)
                elif usage and isinstance(k, str) and k.endswith(_COUNT_ENDINGS):
                    out[k] = count(v)
                else:
                    out[k] = fix(v, usage or k in _USAGE_KEYS)
            return out
        if isinstance(obj, list):
            return [fix(v, usage) for v in obj]
        if usage and isinstance(obj, bool):
            return no(-1)
        return obj

    try:
        fixed = fix(data, False)
    except RecursionError:
        return body
    return json.dumps(fixed).encode() if changed else body


def _transport_class(http: ModuleType) -> type:
    """`GuardedTransport` for one httpx-like package (the Anthropic SDK takes ``httpx2``'s client,
    the Gemini SDK ``httpx``'s): the same code over either package's classes."""

    class GuardedTransport(http.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """The package's own transport, with each response body read under the size cap and its
        counts checked (`no_count`) before the SDK reads it."""

        def __init__(self, limit: int) -> None:
            self._inner = http.AsyncHTTPTransport()
            self._limit = limit

        async def handle_async_request(self, request: Any) -> Any:
            resp = await self._inner.handle_async_request(request)
            try:
                body = await read_capped(http.Response(resp.status_code, headers=resp.headers, stream=resp.stream,
                                                       request=request), self._limit)
            finally:
                await resp.aclose()
            headers = [(k, v) for k, v in resp.headers.multi_items()
                       if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
            if "json" in resp.headers.get("content-type", "").lower():
                body = no_count(body)
            return http.Response(resp.status_code, headers=headers, content=body,
                                 extensions={k: v for k, v in resp.extensions.items() if k != "network_stream"})

        async def aclose(self) -> None:
            await self._inner.aclose()

    return GuardedTransport


GuardedTransport = _transport_class(httpx)


def guarded_client(http: ModuleType = httpx) -> Any:
    """The async client an SDK is given, of the httpx-like package `http` it is built on (its
    timeouts and retries stay the SDK's, set per request)."""
    cls = GuardedTransport if http is httpx else _transport_class(http)
    return http.AsyncClient(transport=cls(max_response_bytes_setting()))


def too_large_cause(e: BaseException) -> ResponseTooLarge | None:
    """The `ResponseTooLarge` behind an SDK's exception (it wraps what the transport raised)."""
    seen: BaseException | None = e
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ResponseTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
