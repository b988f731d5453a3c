"""Retrying one HTTP call that should return JSON, for the API backends.

`request_with_retries(send, policy)` calls `send()` (a coroutine factory returning an
`httpx.Response`) until it gets a 2xx response whose body parses as JSON, or gives up:

* retried: HTTP 408, 429, 500, 502, 503, 504; connection errors (refused, reset, dropped without a
  response, body cut short); timeouts; a 2xx body that is not valid JSON;
* not retried: any other status (400, 401, 403, 404, 422, ...): the outcome is an error at once,
  with the status and a short message taken from the body;
* waits between attempts: exponential backoff with full jitter, uniform(0, min(max_delay,
  base * 2**retry)); a `Retry-After` header (seconds or an HTTP date) replaces it, capped by
  `max_retry_after_s`. Jitter changes only timing, never results.

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
MAX_MESSAGE_CHARS = 200


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4  # attempts = max_retries + 1
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("retry delays must be >= 0")

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
    except ValueError:
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
) -> RetryOutcome:
    """Run `send()` with retries; see the module docstring. Never raises except on cancellation."""
    last = "no attempt made"
    status: int | None = None
    attempts = 0
    for attempt in range(policy.max_retries + 1):
        attempts = attempt + 1
        retry_after: float | None = None
        try:
            resp = await send()
        except asyncio.CancelledError:
            raise
        except httpx.TimeoutException as e:
            status, last = None, f"timeout ({type(e).__name__})"
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:  # a bad base URL: retrying is pointless
            return RetryOutcome(error=redact(f"invalid URL ({_exception_text(e)})"), attempts=attempts)
        except (httpx.TransportError, httpx.DecodingError) as e:
            status, last = None, f"connection error ({_exception_text(e)})"
        else:
            status = resp.status_code
            if 200 <= status < 300:
                try:
                    return RetryOutcome(data=json.loads(resp.content), status=status, attempts=attempts)
                except ValueError:  # includes UnicodeDecodeError
                    last = "invalid JSON in response"
            elif status in RETRYABLE_STATUS:
                msg = short_message(resp.content)
                last = f"HTTP {status}" + (f": {msg}" if msg else "")
                retry_after = parse_retry_after(resp.headers.get("retry-after"))
            else:
                msg = short_message(resp.content)
                error = f"HTTP {status}" + (f": {msg}" if msg else "")
                return RetryOutcome(error=redact(error), status=status, attempts=attempts)
        if attempt == policy.max_retries:
            break
        if retry_after is not None:
            delay = min(retry_after, policy.max_retry_after_s)
        else:
            delay = policy.backoff_s(attempt, rng)
        log.debug("%s: attempt %d failed (%s); retrying in %.3fs", label, attempts, redact(last), delay)
        await sleep(delay)
    head, sep, tail = last.partition(": ")
    if last.startswith("HTTP ") and sep:
        error = f"{head} after {attempts} attempts: {tail}"
    else:
        error = f"{last} after {attempts} attempts"
    return RetryOutcome(error=redact(error), status=status, attempts=attempts)
