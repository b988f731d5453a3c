"""OpenAI-compatible HTTP backends: `openai:<model>`, `together:<model>`, `openai-compatible:<model>`.

`openai-compatible` covers self-hosted servers that speak the same API (vLLM, SGLang, the
llama.cpp server, Ollama, ...) and needs a base URL.

Scoring
    endpoint "completions" (exact): one request per continuation, the prompt+continuation with
    ``echo=true, logprobs=1, max_tokens=1, temperature=0``; the log-prob is the sum of the echoed
    token log-probs whose text offset lies in [len(prompt), len(prompt+continuation)). The one
    generated token is ignored (``max_tokens=1``, not 0: the llama.cpp server reads 0 as unlimited).
    A token straddling the prompt/continuation boundary gives an error result, never a guess.

    endpoint "chat" (top-k approximation): one request per prompt (the prompt as a user message,
    ``max_tokens=1, logprobs=true, top_logprobs=20``); each continuation must be one token, and
    its log-prob is read from the first position's top-20. A continuation absent from the top-20
    gets ``float('-inf')`` (its probability is below the 20th's; the result is not an error).
    Tokens are matched by exact text (" A" is not "A").

Generation
    completions (raw prompt, no chat template; `system`, if any, is prepended followed by a blank
    line) or chat (messages=[system?, user]) when the endpoint is "chat" or the request asks for
    chat. `seed` is passed through unchanged.

Failures never raise: after the retries of `stratbench.models.retry` a result carries `error` and
no value. The API key is read from the environment at construction, sent only in the
Authorization header, and redacted from every error, log line and repr.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
import random
import time
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
)
from stratbench.models.retry import RetryOutcome, RetryPolicy, request_with_retries

log = logging.getLogger(__name__)

# provider -> (default base URL, key environment variable, key required)
PROVIDERS: dict[str, tuple[str | None, str, bool]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY", True),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY", True),
    "openai-compatible": (None, "OPENAI_API_KEY", False),
}
ENDPOINTS = ("completions", "chat")
CHAT_TOP_LOGPROBS = 20

# When each HTTP attempt of the request being served got its connection slot: a result's latency
# runs from its first attempt's start, not from when it was queued behind max_concurrency others.
_attempt_starts: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "stratbench_attempt_starts", default=None)


class _Secret:
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


class _ShardedTransport(httpx.AsyncBaseTransport):
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


class _Malformed(Exception):
    """A 2xx JSON response that does not have the shape we need."""


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def parse_spec(spec: str) -> tuple[str, str]:
    """'openai:gpt-4o-mini' -> ('openai', 'gpt-4o-mini'); InputError for anything else."""
    provider, sep, model = spec.partition(":")
    if not sep or provider not in PROVIDERS or not model:
        known = ", ".join(f"{p}:<model>" for p in PROVIDERS)
        raise InputError(f"{spec}: not an API model spec (expected one of {known})")
    return provider, model


class OpenAICompatibleModel(LanguageModel):
    """An OpenAI-compatible HTTP API. See the module docstring for how score and generate work."""

    supports_logprobs = True

    def __init__(self, provider: str, model: str, base_url: str | None = None,
                 api_key_env: str | None = None, max_concurrency: int = 8, timeout_s: float = 60,
                 max_retries: int = 4, endpoint: str = "completions",
                 retry_base_delay_s: float = 0.5, retry_max_delay_s: float = 20.0,
                 max_retry_after_s: float = 60.0, jitter_seed: int | None = None,
                 top_logprobs: int = 5) -> None:
        super().__init__()
        if provider not in PROVIDERS:
            raise InputError(f"{provider}:{model}: unknown API provider {provider!r} "
                             f"(expected one of {', '.join(PROVIDERS)})")
        self.provider = provider
        self.model = model
        self.spec = f"{provider}:{model}"
        if not model:
            raise InputError(f"{self.spec}: missing model name")
        default_url, default_env, key_required = PROVIDERS[provider]
        url = base_url or default_url
        if not url:
            raise InputError(f"{self.spec}: a base URL is required (e.g. http://127.0.0.1:8000/v1)")
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise InputError(f"{self.spec}: base URL must be an http(s) URL, got {_strip_userinfo(url)!r}")
        self.base_url = url.rstrip("/")
        if endpoint not in ENDPOINTS:
            raise InputError(f"{self.spec}: endpoint must be 'completions' or 'chat', got {endpoint!r}")
        self.endpoint = endpoint
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InputError(f"{self.spec}: max_concurrency must be a positive integer")
        if not timeout_s or timeout_s <= 0:
            raise InputError(f"{self.spec}: timeout must be positive")
        if max_retries < 0:
            raise InputError(f"{self.spec}: max_retries must be >= 0")
        self.max_concurrency = max_concurrency
        self.top_logprobs = top_logprobs  # 5: OpenAI's limit on the completions endpoint
        self.timeout_s = float(timeout_s)
        self.retry_policy = RetryPolicy(max_retries=max_retries, base_delay_s=retry_base_delay_s,
                                        max_delay_s=retry_max_delay_s, max_retry_after_s=max_retry_after_s)

        env = api_key_env or default_env
        self.api_key_env = env
        key = os.environ.get(env) or None
        if key is not None:
            key = key.strip() or None
        if key is None and (key_required or api_key_env is not None):
            raise InputError(f"{self.spec}: set {env}")
        self._key = _Secret(key)
        self._rng = random.Random(jitter_seed)  # jitter only: timing, never results
        self._client: httpx.AsyncClient | None = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.usage.extra.update(http_requests=0, retries=0)

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> "OpenAICompatibleModel":
        provider, model = parse_spec(spec)
        return cls(provider, model, **kwargs)

    # -- identification -------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "backend": "openai-compatible", "provider": self.provider,
                "model": self.model, "base_url": self._redact(_strip_userinfo(self.base_url)),
                "endpoint": self.endpoint}

    def __repr__(self) -> str:
        return (f"OpenAICompatibleModel(spec={self.spec!r}, base_url={_strip_userinfo(self.base_url)!r}, "
                f"endpoint={self.endpoint!r}, max_concurrency={self.max_concurrency}, "
                f"api_key={'set' if self._key else 'unset'})")

    def _redact(self, text: str) -> str:
        key = self._key.get()
        if key and key in text:
            text = text.replace(key, "***")
        return text

    # -- HTTP -----------------------------------------------------------------------------

    def _ensure_client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        """One shared client and semaphore per event loop (asyncio objects are loop-bound)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # A client from an earlier loop (e.g. a previous asyncio.run) cannot be used or closed
            # here; it is dropped and its connections close when collected.
            headers = {"Accept": "application/json"}
            if self._key:
                headers["Authorization"] = f"Bearer {self._key.get()}"
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s),
                transport=_ShardedTransport(self.max_concurrency),
                follow_redirects=False,
            )
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        assert self._sem is not None
        return self._client, self._sem

    async def _post(self, path: str, body: dict[str, Any]) -> RetryOutcome:
        client, sem = self._ensure_client()
        url = f"{self.base_url}/{path}"

        starts = _attempt_starts.get()

        async def send() -> httpx.Response:
            async with sem:
                if starts is not None:
                    starts.append(time.perf_counter())
                self.usage.extra["http_requests"] += 1
                return await client.post(url, json=body)

        out = await request_with_retries(send, self.retry_policy, rng=self._rng, redact=self._redact,
                                         label=f"{self.spec} POST /{path}")
        self.usage.extra["retries"] += max(0, out.attempts - 1)
        if out.ok and not isinstance(out.data, dict):
            return RetryOutcome(error="malformed response: JSON is not an object", status=out.status,
                                attempts=out.attempts)
        if out.ok and "choices" not in out.data and "error" in out.data:  # some servers: 200 + error
            err = out.data["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            return RetryOutcome(error=self._redact(f"server error in 200 response: {str(msg)[:200]}"),
                                status=out.status, attempts=out.attempts)
        return out

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.aclose()
            except RuntimeError:  # created on another (closed) loop
                pass

    # -- scoring --------------------------------------------------------------------------

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        results = await asyncio.gather(*(self._guard_score(r) for r in requests))
        for r in results:
            self.usage.add_score(r)
        return list(results)

    async def _guard_score(self, req: ScoreRequest) -> ScoreResult:
        starts: list[float] = []
        _attempt_starts.set(starts)
        try:
            if self.endpoint == "chat":
                res = await self._score_chat(req)
            else:
                res = await self._score_completions(req)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never raise for one request
            res = ScoreResult(logprobs=None, error=self._redact(f"internal error: {type(e).__name__}: {e}"))
        res.latency_s = time.perf_counter() - min(starts) if starts else 0.0
        return res

    async def _score_completions(self, req: ScoreRequest) -> ScoreResult:
        """Exact log-probs. First one next-token request with the top-k log-probs: a continuation
        that is one of those tokens has its exact log-prob there (one call covers all of a game's
        single-token labels). Any other continuation is scored by echoing prompt+continuation —
        exact too, but one request each and slow on servers that compute prompt log-probs in
        Python (llama.cpp's takes ~1 min for a 200-token prompt with Gemma's 262k vocabulary)."""
        if not req.prompt:
            return ScoreResult(logprobs=None, error="empty prompt: its first token has no log-prob to condition on")
        found: dict[str, float] = {}
        tokens_in = 0
        if self.top_logprobs > 0 and req.continuations:
            body = {"model": self.model, "prompt": req.prompt, "max_tokens": 1, "temperature": 0,
                    "logprobs": self.top_logprobs}
            out = await self._post("completions", body)
            if out.ok:
                tokens_in += _usage_int(out.data, "prompt_tokens")
                try:
                    found = _completion_top_logprobs(out.data)
                except _Malformed:
                    found = {}  # fall back to echo scoring below
            elif out.status not in (400, 422):
                return ScoreResult(logprobs=None, tokens_in=tokens_in, error=out.error)
        rest = [c for c in req.continuations if c not in found]
        parts = dict(zip(rest, await asyncio.gather(*(self._score_continuation(req.prompt, c) for c in rest))))
        tokens_in += sum(p[2] for p in parts.values())
        for _, _, _, err in parts.values():
            if err is not None:
                return ScoreResult(logprobs=None, tokens_in=tokens_in, error=err)
        logprobs = [found[c] if c in found else parts[c][0] for c in req.continuations]
        n_tokens = [1 if c in found else parts[c][1] for c in req.continuations]
        return ScoreResult(logprobs=logprobs, n_tokens=n_tokens, tokens_in=tokens_in)

    async def _score_continuation(self, prompt: str, cont: str) -> tuple[float, int, int, str | None]:
        """(logprob, n_tokens, prompt_tokens, error) of one continuation."""
        if not cont:
            return 0.0, 0, 0, None
        full = prompt + cont
        body = {"model": self.model, "prompt": full, "max_tokens": 1, "temperature": 0,
                "logprobs": 1, "echo": True}
        out = await self._post("completions", body)
        if not out.ok:
            if out.status in (400, 422, 501):
                return 0.0, 0, 0, (f"server rejected the scoring request (echo=true with logprobs may be "
                                   f"unsupported): {out.error}")
            return 0.0, 0, 0, out.error
        tokens_in = _usage_int(out.data, "prompt_tokens")
        try:
            logprob, n = _echo_logprob(out.data, len(prompt), full)
        except _Malformed as e:
            return 0.0, 0, tokens_in, self._redact(f"continuation {cont!r}: {e}")
        return logprob, n, tokens_in, None

    async def _score_chat(self, req: ScoreRequest) -> ScoreResult:
        if not req.continuations:
            return ScoreResult(logprobs=[], n_tokens=[])
        body = {"model": self.model, "messages": [{"role": "user", "content": req.prompt}], "max_tokens": 1,
                "temperature": 0, "logprobs": True, "top_logprobs": CHAT_TOP_LOGPROBS}
        out = await self._post("chat/completions", body)
        if not out.ok:
            return ScoreResult(logprobs=None, error=out.error)
        tokens_in = _usage_int(out.data, "prompt_tokens")
        try:
            top = _chat_top_logprobs(out.data)
        except _Malformed as e:
            return ScoreResult(logprobs=None, tokens_in=tokens_in, error=self._redact(str(e)))
        return ScoreResult(logprobs=[top.get(c, float("-inf")) for c in req.continuations],
                           n_tokens=[1] * len(req.continuations), tokens_in=tokens_in)

    # -- generation -----------------------------------------------------------------------

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = await asyncio.gather(*(self._guard_generate(r) for r in requests))
        for r in results:
            self.usage.add_generate(r)
        return list(results)

    async def _guard_generate(self, req: GenerateRequest) -> GenerateResult:
        starts: list[float] = []
        _attempt_starts.set(starts)
        try:
            res = await self._generate_one(req)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never raise for one request
            res = GenerateResult(text=None, error=self._redact(f"internal error: {type(e).__name__}: {e}"))
        res.latency_s = time.perf_counter() - min(starts) if starts else 0.0
        return res

    async def _generate_one(self, req: GenerateRequest) -> GenerateResult:
        chat = self.endpoint == "chat" or req.chat
        body: dict[str, Any] = {"model": self.model, "max_tokens": req.max_tokens, "temperature": req.temperature}
        if chat:
            messages = [{"role": "system", "content": req.system}] if req.system else []
            messages.append({"role": "user", "content": req.prompt})
            body["messages"] = messages
            path = "chat/completions"
        else:
            body["prompt"] = f"{req.system}\n\n{req.prompt}" if req.system else req.prompt
            path = "completions"
        if req.stop:
            body["stop"] = list(req.stop)
        if req.seed is not None:
            body["seed"] = req.seed
        out = await self._post(path, body)
        if not out.ok:
            return GenerateResult(text=None, error=out.error)
        data = out.data
        try:
            choice = _first_choice(data)
            if chat:
                message = choice.get("message")
                if not isinstance(message, dict):
                    raise _Malformed("malformed response: choice has no message")
                text = message.get("content")
                if text is None:
                    refusal = message.get("refusal")
                    raise _Malformed(f"response has no text content{f' (refusal: {refusal})' if refusal else ''}")
            else:
                text = choice.get("text")
            if not isinstance(text, str):
                raise _Malformed("malformed response: choice has no text")
        except _Malformed as e:
            return GenerateResult(text=None, tokens_in=_usage_int(data, "prompt_tokens"),
                                  tokens_out=_usage_int(data, "completion_tokens"), error=self._redact(str(e)[:300]))
        return GenerateResult(text=text, tokens_in=_usage_int(data, "prompt_tokens"),
                              tokens_out=_usage_int(data, "completion_tokens"),
                              finish_reason=choice.get("finish_reason"))


# -- response parsing (pure functions) ------------------------------------------------------


def _usage_int(data: Any, key: str) -> int:
    usage = data.get("usage") if isinstance(data, dict) else None
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _first_choice(data: Any) -> dict:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Malformed("malformed response: no choices")
    return choices[0]


def _echo_logprob(data: Any, prompt_len: int, full: str) -> tuple[float, int]:
    """Sum of the echoed log-probs of the tokens spelling full[prompt_len:]."""
    choice = _first_choice(data)
    text = choice.get("text")
    if isinstance(text, str) and not text.startswith(full):
        raise _Malformed("server did not echo the prompt (echo=true unsupported?)")
    lp = choice.get("logprobs")
    if not isinstance(lp, dict) or not isinstance(lp.get("tokens"), list) or not lp["tokens"]:
        raise _Malformed("response has no echoed token log-probs (echo=true with logprobs unsupported?)")
    tokens, token_lps = lp["tokens"], lp.get("token_logprobs")
    if not isinstance(token_lps, list) or len(token_lps) != len(tokens):
        raise _Malformed("malformed response: token_logprobs do not match tokens")
    offsets = lp.get("text_offset")
    if not isinstance(offsets, list) or len(offsets) != len(tokens):
        offsets, pos = [], 0  # reconstruct from the token texts
        for t in tokens:
            offsets.append(pos)
            pos += len(t) if isinstance(t, str) else 0
    full_len = len(full)
    total, n, started = 0.0, 0, False
    for tok_lp, off in zip(token_lps, offsets):
        if not isinstance(off, int):
            raise _Malformed("malformed response: bad text_offset")
        if off < prompt_len:
            continue
        if off >= full_len:
            break  # the generated token (max_tokens=1), ignored
        if not started:
            if off != prompt_len:
                raise _Malformed("continuation does not start at a token boundary")
            started = True
        if not isinstance(tok_lp, (int, float)) or isinstance(tok_lp, bool) or math.isnan(tok_lp):
            raise _Malformed("server returned no log-prob for a continuation token")
        total += float(tok_lp)
        n += 1
    if n == 0:
        # either a token covers the boundary and the whole continuation, or nothing was echoed
        if any(isinstance(o, int) and o < prompt_len for o in offsets):
            raise _Malformed("continuation does not start at a token boundary")
        raise _Malformed("server did not echo the continuation's tokens (echo=true unsupported?)")
    return total, n


def _completion_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position of a completions response."""
    lp = _first_choice(data).get("logprobs")
    top = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if not isinstance(top, list) or not top or not isinstance(top[0], dict):
        raise _Malformed("completion response has no top_logprobs")
    out: dict[str, float] = {}
    for tok, value in top[0].items():
        if isinstance(tok, str) and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not math.isnan(value):
            out[tok] = float(value)
    return out


def _chat_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position (duplicates combined)."""
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise _Malformed("chat response has no logprobs (the server may not support logprobs)")
    first = content[0]
    entries = list(first.get("top_logprobs") or [])
    if not entries:
        raise _Malformed("chat response has no top_logprobs")
    out: dict[str, float] = {}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("token"), str):
            continue
        value = e.get("logprob")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            continue
        tok = e["token"]
        out[tok] = float(value) if tok not in out else float(_logaddexp(out[tok], float(value)))
    return out


def _logaddexp(a: float, b: float) -> float:
    if a == float("-inf"):
        return b
    if b == float("-inf"):
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))
