"""What the backends over a provider's own SDK share (Anthropic's Messages API, the Gemini API):
chat APIs that generate and never score given answers.

The base class checks the settings every such backend takes before anything is opened (the URL,
the key from its one environment variable, concurrency, timeout, retries), keeps one SDK client
per event loop behind a semaphore, refuses exact policies in one line (no log-probabilities, so
no logprob or choice policy: a run samples), and counts usage. A subclass names its key variable,
default URL and API, builds its SDK's client and makes one call.

``--timeout`` is a deadline for the whole answer here too, as on the OpenAI-compatible route: the
SDKs take it as a per-read timeout, which a server trickling its body a byte at a time never trips.
The SDK makes a call's attempts itself, so the deadline is the call's: ``--timeout`` for each of
its ``1 + --retries`` attempts, plus the longest wait the SDK may make between two of them
(`max_retry_wait_s`). Past it the call is an error result ("no whole answer within N s").
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, GenerateResult, LanguageModel, ScoreRequest, ScoreResult
from stratbench.models.providers import read_key

__all__ = ["SDKChatModel", "turns_of"]


def turns_of(req: GenerateRequest) -> tuple[str, list[tuple[str, str]]]:
    """(the system text, the user and assistant turns) of a request: its conversation, or its raw
    prompt as one user turn (after its system text), as on every chat API."""
    turns = list(req.messages) if req.messages else (
        ([("system", req.system)] if req.system else []) + [("user", req.prompt)])
    system = "\n\n".join(c for role, c in turns if role == "system")
    return system, [(role, c) for role, c in turns if role != "system"]


class SDKChatModel(LanguageModel):
    """A provider's chat API through its own SDK (generation only)."""

    supports_logprobs = False
    supports_chat = True
    prefix: ClassVar[str] = ""  # the spec prefix ("anthropic")
    api: ClassVar[str] = ""  # what the messages call the API ("the Messages API")
    key_env: ClassVar[str] = ""
    default_url: ClassVar[str] = ""
    max_temperature: ClassVar[float] = 2.0  # the highest sampling temperature the API takes
    max_retry_wait_s: ClassVar[float] = 60.0  # the longest the SDK waits between two attempts

    def __init__(self, model: str, base_url: str | None = None, max_concurrency: int = 8, timeout_s: float = 60.0,
                 max_retries: int = 4, temperature: float | None = None,
                 reasoning_effort: str | None = None) -> None:
        super().__init__()
        from stratbench.models.openai_api import check_base_url

        self.model = model
        self.spec = f"{self.prefix}:{model}"
        url = (base_url or self.default_url).rstrip("/")
        check_base_url(url, self.spec)
        parts = urlsplit(url)
        if parts.username or parts.password:
            raise InputError(f"{self.spec}: --base-url: credentials in the URL are not sent to {self.api}; "
                             f"set {self.key_env}")
        self.base_url = url
        key = read_key(self.key_env, self.spec) or ""
        from stratbench.models.costs import planning

        if not key and not planning():  # (a dry run makes no request: it needs no key)
            raise InputError(f"{self.spec}: set {self.key_env}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InputError(f"{self.spec}: max_concurrency must be a positive integer")
        if not timeout_s > 0 or timeout_s == float("inf"):
            raise InputError(f"{self.spec}: timeout must be a positive number of seconds")
        if max_retries < 0:
            raise InputError(f"{self.spec}: max_retries must be >= 0")
        if temperature is not None and not 0.0 <= temperature <= self.max_temperature:
            # the API would refuse every call (HTTP 400): one line before anything is written
            raise InputError(f"{self.spec}: --temperature {temperature:g}: {self.api} takes 0 to "
                             f"{self.max_temperature:g}")
        from stratbench.models.reasoning import thinking_budget

        self.reasoning_effort = reasoning_effort
        #: the thinking budget sent with every request (None: the API's default, nothing sent)
        self.thinking_budget = thinking_budget(reasoning_effort)
        self._key = key
        self.max_concurrency = max_concurrency
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self._client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.spec, "backend": self.prefix, "model": self.model, "base_url": self.base_url}
        if self.reasoning_effort is not None:  # changes the answers: part of the cache identity
            d["reasoning_effort"] = self.reasoning_effort
        return d

    def output_budget(self, req: GenerateRequest) -> int:
        """The answer's budget and the thinking's: a request asks for both (`_max_tokens`)."""
        return self._max_tokens(req)

    def _max_tokens(self, req: GenerateRequest) -> int:
        """The output limit sent: the request's ``max_tokens`` for the answer plus the thinking
        budget, so that --reasoning-effort gives thinking room without taking the answer's."""
        return req.max_tokens + (self.thinking_budget or 0)

    def check_chat(self, scoring: bool = False) -> None:
        """Conversations are what the API takes; exact choice scoring would need the probability of
        given answers, which it never returns (no chat template can stand in for it)."""
        if scoring:
            raise InputError(f"{self.spec}: {self.api} returns no log-probabilities, so no exact choice "
                             "scoring; use --policy sample")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r}, api_key=set)"

    @abc.abstractmethod
    def _make_client(self) -> Any:
        """The SDK's async client, with this backend's key, URL, timeout and retries."""

    @abc.abstractmethod
    async def _call(self, client: Any, req: GenerateRequest) -> GenerateResult:
        """One request (never raises for the API's or the transport's failures: an error result)."""

    async def _close(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            await close()

    @property
    def deadline_s(self) -> float:
        """The most one call (all its attempts and the waits between them) may take."""
        return self.timeout_s * (self.max_retries + 1) + self.max_retry_wait_s * self.max_retries

    async def _call_within_deadline(self, client: Any, req: GenerateRequest) -> GenerateResult:
        t0 = time.perf_counter()
        deadline = asyncio.timeout(self.deadline_s)
        try:
            async with deadline:
                return await self._call(client, req)
        except TimeoutError:
            if not deadline.expired():
                raise
        except RecursionError:  # the SDK's JSON parser on a reply nested 100,000 deep: a malformed reply
            return GenerateResult(None, latency_s=time.perf_counter() - t0,
                                  error="invalid reply: its JSON is nested too deeply")
        waits = f" and up to {self.max_retry_wait_s * self.max_retries:g} s of waits between them" \
            if self.max_retries else ""
        return GenerateResult(None, latency_s=time.perf_counter() - t0,
                              error=f"timed out: no whole answer within {self.deadline_s:g} s (--timeout "
                                    f"{self.timeout_s:g} s for each of {self.max_retries + 1} attempts{waits})")

    def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # one client per event loop
            self._client = self._make_client()
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        why = f"{self.spec}: {self.api} returns no log-probabilities; use --policy sample"
        results = [ScoreResult(None, error=why) for _ in requests]
        for r in results:
            self.usage.add_score(r)
        return results

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        client = self._session()

        async def one(req: GenerateRequest) -> GenerateResult:
            assert self._sem is not None
            async with self._sem:
                return await self._call_within_deadline(client, req)

        results = await asyncio.gather(*(one(r) for r in requests))
        for r in results:
            r.redact([self._key])  # a server echoing the key in its reply (or an SDK in an error)
            self.usage.add_generate(r)
        return list(results)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await self._close(client)
