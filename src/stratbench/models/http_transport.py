"""The HTTP side of the OpenAI-compatible backend: API keys that never show, connection pools that
stay fast at high concurrency, response bodies read under a size cap (gzip bombs included) and
base URLs checked before anything is sent. Split from `stratbench.models.openai_api`, which
uses them; nothing here knows the OpenAI protocol."""

from __future__ import annotations

import math
import os
import re
import unicodedata
import zlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from stratbench.errors import InputError
from stratbench.models.retry import ResponseTooLarge
from stratbench.redact import is_redacted_url, redact_url, unparsed_credentials


class Secret:
    """Holds the API key; its repr/str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value

    def get(self) -> str | None:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "'***'" if self._value else "None"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # never pickle a key into another process or onto disk
        raise TypeError("API keys are not picklable")


class ShardedTransport(httpx.AsyncBaseTransport):
    """Connection pools of at most SHARD_SIZE connections behind one client.

    httpcore's pool does work quadratic in its number of connections on every request, which
    costs milliseconds of event-loop time per request at 64 connections. Each request goes to the
    least-loaded shard; a shard's load counts requests until their response is closed, so with
    the model's semaphore no request ever waits in a pool while another shard has room.
    """

    SHARD_SIZE = 16

    def __init__(self, max_connections: int, **transport_kwargs: Any) -> None:
        n = max(1, math.ceil(max_connections / self.SHARD_SIZE))
        self._capacity = [max_connections // n + (i < max_connections % n) for i in range(n)]
        self._load = [0] * n
        self._shards = [httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=c, max_keepalive_connections=c), **transport_kwargs)
            for c in self._capacity]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        i = min(range(len(self._shards)), key=lambda j: self._load[j] / self._capacity[j])
        self._load[i] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._load[i] -= 1

        try:
            resp = await self._shards[i].handle_async_request(request)
        except BaseException:
            release()
            raise
        return httpx.Response(status_code=resp.status_code, headers=resp.headers,
                              stream=_ReleasingStream(resp.stream, release), extensions=resp.extensions)

    async def aclose(self) -> None:
        for shard in self._shards:
            await shard.aclose()


class _ReleasingStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any, release: Any) -> None:
        self._stream, self._release = stream, release

    async def __aiter__(self):  # type: ignore[override]
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            self._release()


DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
MAX_RESPONSE_BYTES_ENV = "STRATBENCH_MAX_RESPONSE_BYTES"


def max_response_bytes_setting() -> int:
    """The cap on a response body (decoded): STRATBENCH_MAX_RESPONSE_BYTES, else 8 MiB."""
    raw = os.environ.get(MAX_RESPONSE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_RESPONSE_BYTES
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if not 1 <= value <= 2**40:
        raise InputError(f"{MAX_RESPONSE_BYTES_ENV}={raw[:40]!r}: not a number of bytes from 1 to 2**40")
    return value


def check_base_url(url: str, who: str) -> None:
    """One InputError line for a base URL that no request could use: not http(s), no host, a
    port outside 1-65535, whitespace or control characters, a query or fragment, or credentials
    read back from a saved run (redacted there). Credentials themselves are fine (sent as basic
    authentication) and never shown."""
    shown = redact_url(url)
    if len(shown) > 200:  # (a URL of 100,000 characters is named, not echoed whole)
        shown = f"{shown[:120]}…({len(shown):,} characters)"

    def bad(problem: str) -> InputError:
        return InputError(f"{who}: --base-url {shown!r}: {problem}")

    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in url):
        raise bad("contains whitespace or control characters")
    if unparsed_credentials(url):  # (a parser's own words would show a piece of it as a "port")
        raise bad("its password holds a '/', '?' or '#' as typed; percent-encode them (%2F, %3F, %23)")
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise bad(f"not a valid URL ({e})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise bad("not an http:// or https:// URL")
    hostport = parts.netloc.rpartition("@")[2]
    port = re.fullmatch(r"(?:\[[^\]]*\]|[^:]*)(?::(.*))?", hostport)
    if port is not None and port.group(1) is not None:
        if not re.fullmatch(r"[0-9]+", port.group(1)):
            raise bad(f"port {port.group(1)[:20]!r} is not a number")
        digits = port.group(1).lstrip("0") or "0"
        if len(digits) > 5 or not 1 <= int(digits) <= 65535:  # (no int() of a 5,000-digit port)
            raise bad(f"port {digits if len(digits) <= 20 else digits[:12] + '…'} is outside 1-65535")
    try:
        host = parts.hostname
    except ValueError as e:
        raise bad(f"not a valid URL ({e})") from None
    if not host:
        raise bad("names no host")
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise bad("has a query or fragment (?/#); give the API's base, e.g. http://127.0.0.1:8000/v1")
    if is_redacted_url(url):
        raise bad("its credentials were redacted (***) when the run was saved; give --base-url again "
                  "with the real ones")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as e:
        raise bad(f"not a valid URL ({e})") from None
    try:
        _ = parsed.host  # decoded as every request decodes it: an "xn--" label that is no IDNA name fails them all
    except UnicodeError as e:
        raise bad(f"its host is no valid internationalised domain name ({e})") from None


def strip_userinfo(url: str) -> str:
    """`url` without its userinfo (``user:password@``); the host as written."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """A streamed response's body, decoded (identity, gzip or deflate), reading no further than
    `limit` decoded bytes: past it, `ResponseTooLarge` (a gzip bomb stops at the cap too: the
    decompressor is never asked for more than what is left under it)."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = None  # zlib-wrapped or raw: known from the first bytes
    elif encoding not in ("", "identity"):
        raise httpx.DecodingError(f"unsupported Content-Encoding {encoding[:40]!r}")
    out = bytearray()
    raw_total = 0

    def too_large() -> ResponseTooLarge:
        return ResponseTooLarge(limit, response.status_code)

    async for raw in response.aiter_raw():
        raw_total += len(raw)
        if raw_total > limit:
            raise too_large()
        if encoding in ("", "identity"):
            out += raw
            continue
        if decoder is None:  # deflate: a zlib header, else a raw deflate stream
            wrapped = len(raw) >= 2 and raw[0] & 0x0F == 8 and (raw[0] * 256 + raw[1]) % 31 == 0
            decoder = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        data = raw
        try:
            while data and not decoder.eof:
                out += decoder.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise too_large()
                data = decoder.unconsumed_tail
        except zlib.error as e:
            raise httpx.DecodingError(f"cannot decode the {encoding} body ({e})") from None
    if decoder is not None and not decoder.eof:
        try:
            out += decoder.flush(limit + 1 - len(out))
        except zlib.error as e:
            raise httpx.DecodingError(f"cannot decode the {encoding} body ({e})") from None
    if len(out) > limit:
        raise too_large()
    return bytes(out)
