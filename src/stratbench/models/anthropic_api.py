"""`anthropic:<model>`: Claude through Anthropic's Messages API, with Anthropic's own SDK.

The TMGBench paper's Claude rows (claude-3-5-sonnet, claude-3-haiku) come from this API. It is a
chat API without log-probabilities, so a Claude player samples (``--policy sample``) and its answer
is parsed; exact log-prob or choice policies are refused before a run (``supports_logprobs`` is
False), never approximated.

What the SDK does and what stratbench keeps:

- **Retries** are the SDK's (429, 408, 409, 5xx including 529 ``overloaded_error``, connection
  errors; its backoff honours ``retry-after``), with stratbench's ``--retries`` and ``--timeout``
  passed as its ``max_retries`` and ``timeout``. A call that still fails is an error record naming
  the status and Anthropic's error type — counted, never replaced.
- **The request**: the conversation's system turn is the ``system`` parameter, user and assistant
  turns are ``messages``; ``max_tokens`` is required by the API and is the request's budget;
  ``stop_sequences`` are the request's stops (a whitespace-only stop, such as a blank line, which
  the API refuses, is applied to the reply here instead: the answer ends where it would have); a temperature other than the API's default 1.0 is sent in the body (recent SDKs no
  longer name it; a model that refuses it answers 400, an error record); a raw prompt (``chat=False``) is sent as one user turn, as on every chat endpoint.
- **The reply**: ``text`` blocks are the answer; extended-thinking ``thinking`` blocks are the
  reasoning (``redacted_thinking`` blocks are counted but hold no text); ``stop_reason`` becomes
  ``finish_reason`` ("max_tokens" → "length", so a reply cut inside its thinking is a parse
  failure downstream, never an answer read from the reasoning).
- **Credentials**: the key is read from ``ANTHROPIC_API_KEY`` only and given to the client
  explicitly (the SDK's profile files and other variables are not consulted); the URL is
  ``https://api.anthropic.com`` unless ``--base-url`` says otherwise (a proxy, a test server) and
  must not carry credentials.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, GenerateResult, LanguageModel, ScoreRequest, ScoreResult

__all__ = ["DEFAULT_URL", "KEY_ENV", "AnthropicModel"]

DEFAULT_URL = "https://api.anthropic.com"
KEY_ENV = "ANTHROPIC_API_KEY"
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise InputError("anthropic: models need Anthropic's SDK: pip install 'stratbench[anthropic]'") from None
    return anthropic


class AnthropicModel(LanguageModel):
    """Claude over the Messages API (generation only: the API returns no log-probabilities)."""

    supports_logprobs = False
    supports_chat = True

    def __init__(self, model: str, base_url: str | None = None, max_concurrency: int = 8, timeout_s: float = 60.0,
                 max_retries: int = 4) -> None:
        super().__init__()
        from stratbench.models.openai_api import check_base_url

        self.model = model
        self.spec = f"anthropic:{model}"
        url = (base_url or DEFAULT_URL).rstrip("/")
        check_base_url(url, self.spec)
        parts = urlsplit(url)
        if parts.username or parts.password:
            raise InputError(f"{self.spec}: --base-url: credentials in the URL are not sent to the Messages API; "
                             f"set {KEY_ENV}")
        self.base_url = url
        key = (os.environ.get(KEY_ENV) or "").strip()
        if not key:
            raise InputError(f"{self.spec}: set {KEY_ENV}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InputError(f"{self.spec}: max_concurrency must be a positive integer")
        if not timeout_s > 0 or timeout_s == float("inf"):
            raise InputError(f"{self.spec}: timeout must be a positive number of seconds")
        if max_retries < 0:
            raise InputError(f"{self.spec}: max_retries must be >= 0")
        self._sdk = _sdk()
        self._key = key
        self.max_concurrency = max_concurrency
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self._client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "backend": "anthropic", "model": self.model, "base_url": self.base_url,
                "endpoint": "messages"}

    def check_chat(self, scoring: bool = False) -> None:
        """Conversations are what the API takes; exact choice scoring would need log-probabilities,
        which it never returns (no chat template can stand in for them)."""
        if scoring:
            raise InputError(f"{self.spec}: the Messages API returns no log-probabilities, so no exact choice "
                             "scoring; use --policy sample")

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r}, api_key=set)"

    def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # one client per event loop
            self._client = self._sdk.AsyncAnthropic(api_key=self._key, base_url=self.base_url,
                                                    max_retries=self.max_retries, timeout=self.timeout_s)
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        why = f"{self.spec}: the Messages API returns no log-probabilities; use --policy sample"
        results = [ScoreResult(None, error=why) for _ in requests]
        for r in results:
            self.usage.add_score(r)
        return results

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        client = self._session()
        results = await asyncio.gather(*(self._one(client, r) for r in requests))
        for r in results:
            self.usage.add_generate(r)
        return list(results)

    @staticmethod
    def _body(req: GenerateRequest) -> dict[str, Any]:
        turns = list(req.messages) if req.messages else (
            ([("system", req.system)] if req.system else []) + [("user", req.prompt)])
        system = "\n\n".join(c for role, c in turns if role == "system")
        body: dict[str, Any] = {
            "max_tokens": req.max_tokens,
            "messages": [{"role": role, "content": c} for role, c in turns if role != "system"]}
        if float(req.temperature) != 1.0:
            # the API's default is 1.0; another value goes in the body as the older models take it
            # (recent SDKs no longer name the parameter; a model that refuses it says so, an error record)
            body["extra_body"] = {"temperature": float(req.temperature)}
        if system:
            body["system"] = system
        stops = [s for s in req.stop if s.strip()]
        if stops:
            body["stop_sequences"] = stops
        return body

    async def _one(self, client: Any, req: GenerateRequest) -> GenerateResult:
        sdk = self._sdk
        assert self._sem is not None
        t0 = time.perf_counter()
        async with self._sem:
            try:
                msg = await client.messages.create(model=self.model, **self._body(req))
            except sdk.APIStatusError as e:
                return GenerateResult(None, latency_s=time.perf_counter() - t0, error=_status_error(e))
            except sdk.APITimeoutError:
                return GenerateResult(None, latency_s=time.perf_counter() - t0,
                                      error=f"timed out after {self.timeout_s:g} s ({self.max_retries} retries)")
            except sdk.APIConnectionError as e:
                return GenerateResult(None, latency_s=time.perf_counter() - t0,
                                      error=f"connection failed after {self.max_retries} retries: {e}")
            except sdk.APIResponseValidationError as e:
                return GenerateResult(None, latency_s=time.perf_counter() - t0, error=f"invalid reply: {e}")
        res = _result(msg, time.perf_counter() - t0)
        blank = [x for x in req.stop if x and not x.strip()]  # stops the API refuses: applied here
        text = res.text or ""
        cut = min((i for i in (text.find(x) for x in blank) if i >= 0), default=-1)
        if cut >= 0:
            res.text, res.finish_reason = text[:cut], "stop"
        return res

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _status_error(e: Any) -> str:
    """``HTTP 529 overloaded_error: Overloaded`` from the API's error body, where it has one."""
    body = getattr(e, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return f"HTTP {e.status_code} {err.get('type', 'error')}: {str(err.get('message', ''))[:300]}"
    return f"HTTP {e.status_code}: {str(e)[:300]}"


def _result(msg: Any, latency: float) -> GenerateResult:
    text: list[str] = []
    thinking: list[str] = []
    for block in getattr(msg, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            text.append(str(getattr(block, "text", "")))
        elif kind == "thinking":
            thinking.append(str(getattr(block, "thinking", "")))
    usage = getattr(msg, "usage", None)
    stop = getattr(msg, "stop_reason", None)
    return GenerateResult(
        "".join(text), tokens_in=int(getattr(usage, "input_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "output_tokens", 0) or 0), latency_s=latency,
        finish_reason=_FINISH.get(stop, stop) if isinstance(stop, str) else None,
        reasoning="\n\n".join(thinking) if thinking else None)
