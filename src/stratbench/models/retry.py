"""Retrying one HTTP call that should return JSON, for the API backends.

`request_with_retries(send, policy)` calls `send()` (a coroutine factory returning an
`httpx.Response`) until it gets a 2xx response whose body parses as JSON, or gives up:

* retried: HTTP 408, 429, 500, 502, 503, 504; connection errors (refused, reset, dropped without a
  response, body cut short); timeouts; a 2xx body that is not valid JSON;
* not retried: any other status (400, 401, 403, 404, 422, ...): the outcome is an error at once,
  with the status and a short message taken from the body; and a body over the size cap (`send()`
  raises `ResponseTooLarge`): "response body over N bytes";
* a response not read whole within the request's timeout, counted from its start (`send()` raises
  `BodyTimeout`, a read timeout: a server that trickles its body a byte at a time never trips
  httpx's per-read timeout) is a timeout like any other: retried, and the error says
  "timeout (response body not complete within N s) after K attempts";
* waits between attempts: exponential backoff with full jitter, uniform(0, min(max_delay,
  base * 2**retry)); a `Retry-After` header (seconds or an HTTP date) replaces it, capped by
  `max_retry_after_s`. Jitter changes only timing, never results;
* waiting for a server (`wait_for_server_s` > 0, ``--wait-for-server``): when the server is
  unavailable — the connection is refused, times out while connecting, or is dropped; or it
  answers 503 (llama.cpp's server while it loads a model) — and the `max_retries` are used up,
  the call keeps trying, every `WAIT_POLL_S` seconds at most, until it has been unavailable for
  that long: enough to ride out a server restart. Any other failure ends such a streak. With 0
  (the default) nothing changes.

`on_attempt(i)` is called just before attempt i (0 = the first; i > 0 are the retries), so a
caller counts requests and retries as they happen, whatever the outcome (a timed-out attempt that
is tried again is a retry like any other).

It never raises for a failed call (cancellation still propagates): the outcome carries either the
parsed JSON (`data`) or a one-line `error` such as "HTTP 500 after 5 attempts: injected HTTP 500"
or "invalid JSON in response after 5 attempts". Error text passes through `redact` so that a
secret echoed by a server cannot leak.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Awaitable, Callable

import httpx

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
UNAVAILABLE_STATUS = frozenset({503})  # counts as "server unavailable" for wait_for_server_s
# the server is not there (down, restarting): no connection, or the connection dropped without an
# answer; a read or write timeout on an open connection is a slow server instead
UNREACHABLE_ERRORS: tuple[type[BaseException], ...] = (
    httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.WriteError, httpx.CloseError,
    httpx.RemoteProtocolError)
WAIT_POLL_S = 2.0  # longest pause between attempts while waiting for a server
MAX_MESSAGE_CHARS = 200
_last_wait_warning = [0.0]


class ResponseTooLarge(Exception):
    """Raised by a `send()` that stopped reading a response body past its size cap: the call's
    error at once (a server that sends that much would send it again), never retried."""

    def __init__(self, limit: int, status: int | None = None) -> None:
        super().__init__(f"response body over {limit} bytes (the cap; set STRATBENCH_MAX_RESPONSE_BYTES to change it)")
        self.limit, self.status = limit, status


class BodyTimeout(httpx.ReadTimeout):
    """Raised by a `send()` whose response did not arrive whole within the request's timeout as a
    total (wall clock); a timeout, retried as one."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"response body not complete within {timeout_s:g} s")
        self.timeout_s = timeout_s


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4  # attempts = max_retries + 1
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0
    wait_for_server_s: float = 0.0  # keep trying an unavailable server this long (0: no extra wait)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("retry delays must be >= 0")
        if not self.wait_for_server_s >= 0 or self.wait_for_server_s == float("inf"):
            raise ValueError("wait_for_server_s must be a finite number >= 0")

    def backoff_s(self, retry_index: int, rng: random.Random | None = None) -> float:
        """Full-jitter delay before retry number `retry_index` (0 = the first retry)."""
        cap = min(self.max_delay_s, self.base_delay_s * (2.0 ** min(retry_index, 62)))
        return (rng or random).uniform(0.0, cap)


@dataclass
class RetryOutcome:
    data: Any = None  # parsed JSON of the successful response
    error: str | None = None  # one line, redacted; None on success
    status: int | None = None  # HTTP status of the last response (None if none arrived)
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds == float("inf"):  # NaN / inf
        return None
    return max(0.0, seconds)


def short_message(body: bytes | str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A one-line message from an error body: OpenAI's error.message when present, else the text."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    msg = text
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err)
        elif isinstance(err, str):
            msg = err
        elif "detail" in obj or "message" in obj:
            msg = str(obj.get("detail") or obj.get("message"))
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def _exception_text(exc: BaseException) -> str:
    detail = " ".join(str(exc).split())
    if len(detail) > MAX_MESSAGE_CHARS:
        detail = detail[: MAX_MESSAGE_CHARS - 3] + "..."
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


async def request_with_retries(
    send: Callable[[], Awaitable[httpx.Response]],
    policy: RetryPolicy = RetryPolicy(),
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    redact: Callable[[str], str] = lambda s: s,
    label: str = "request",
    on_attempt: Callable[[int], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RetryOutcome:
    """Run `send()` with retries; see the module docstring. Never raises except on cancellation."""
    last = "no attempt made"
    status: int | None = None
    attempts = 0
    down_since: float | None = None  # start of the current streak of "server unavailable"
    waited = False  # whether attempts went beyond max_retries to wait for the server
    while True:
        attempt = attempts
        attempts += 1
        retry_after: float | None = None
        unavailable = False
        if on_attempt is not None:
            on_attempt(attempt)
        try:
            resp = await send()
        except asyncio.CancelledError:
            raise
        except httpx.TimeoutException as e:
            status, last = None, f"timeout ({e if isinstance(e, BodyTimeout) else type(e).__name__})"
            unavailable = isinstance(e, UNREACHABLE_ERRORS)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:  # a bad base URL: retrying is pointless
            return RetryOutcome(error=redact(f"invalid URL ({_exception_text(e)})"), attempts=attempts)
        except ResponseTooLarge as e:
            return RetryOutcome(error=redact(str(e)), status=e.status, attempts=attempts)
        except (httpx.TransportError, httpx.DecodingError) as e:
            status, last = None, f"connection error ({_exception_text(e)})"
            unavailable = isinstance(e, UNREACHABLE_ERRORS)
        else:
            status = resp.status_code
            if 200 <= status < 300:
                try:
                    return RetryOutcome(data=json.loads(resp.content), status=status, attempts=attempts)
                except ValueError:  # includes UnicodeDecodeError
                    last = "invalid JSON in response"
                except RecursionError:  # (200,000 "[": a reply no parser reads, not a bug here)
                    last = "invalid JSON in response (nested too deeply)"
            elif status in RETRYABLE_STATUS:
                msg = short_message(resp.content)
                last = f"HTTP {status}" + (f": {msg}" if msg else "")
                retry_after = parse_retry_after(resp.headers.get("retry-after"))
                unavailable = status in UNAVAILABLE_STATUS
            else:
                msg = short_message(resp.content)
                error = f"HTTP {status}" + (f": {msg}" if msg else "")
                return RetryOutcome(error=redact(error), status=status, attempts=attempts)
        now = clock()
        down_since = (now if down_since is None else down_since) if unavailable else None
        if attempt < policy.max_retries:
            remaining = None
        elif unavailable and policy.wait_for_server_s > 0 and down_since is not None \
                and now - down_since < policy.wait_for_server_s:
            remaining = policy.wait_for_server_s - (now - down_since)
            if not waited and now - _last_wait_warning[0] > 10.0:
                _last_wait_warning[0] = now
                log.warning("%s: server unavailable (%s); waiting up to %.0f s for it", label, redact(last),
                            policy.wait_for_server_s)
            waited = True
        else:
            break
        if retry_after is not None:
            delay = min(retry_after, policy.max_retry_after_s)
        else:
            delay = policy.backoff_s(attempt, rng)
        if remaining is not None:
            delay = max(0.0, min(delay, WAIT_POLL_S, remaining))
        log.debug("%s: attempt %d failed (%s); retrying in %.3fs", label, attempts, redact(last), delay)
        await sleep(delay)
    head, sep, tail = last.partition(": ")
    if last.startswith("HTTP ") and sep:
        error = f"{head} after {attempts} attempts: {tail}"
    else:
        error = f"{last} after {attempts} attempts"
    if waited:
        error += f" (the server was unavailable for {policy.wait_for_server_s:g} s)"
    return RetryOutcome(error=redact(error), status=status, attempts=attempts)
