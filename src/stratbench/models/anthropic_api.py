"""`anthropic:<model>`: Claude through Anthropic's Messages API, with Anthropic's own SDK.

The TMGBench paper's Claude rows (claude-3-5-sonnet, claude-3-haiku) come from this API. It is a
chat API without log-probabilities, so a Claude player samples (``--policy sample``) and its answer
is parsed; exact log-prob or choice policies are refused before a run (``supports_logprobs`` is
False), never approximated.

What the SDK does and what stratbench keeps:

- **Retries** are the SDK's (429, 408, 409, 5xx including 529 ``overloaded_error``, connection
  errors; its backoff honours ``retry-after``), with stratbench's ``--retries`` and ``--timeout``
  passed as its ``max_retries`` and ``timeout`` (a per-read timeout there; the call as a whole has
  a deadline, `stratbench.models.native`). A call that still fails is an error record naming
  the status and Anthropic's error type — counted, never replaced.
- **The request**: the conversation's system turn is the ``system`` parameter, user and assistant
  turns are ``messages``; ``max_tokens`` is required by the API and is the request's budget;
  ``stop_sequences`` are the request's stops (a whitespace-only stop, such as a blank line, which
  the API refuses, is applied to the reply here instead: the answer ends where it would have); a temperature other than the API's default 1.0 is sent in the body (recent SDKs no
  longer name it; a model that refuses it answers 400, an error record); one above 1, which the
  API refuses on every call, is refused as the model opens, before any folder; a raw prompt (``chat=False``) is sent as one user turn, as on every chat endpoint.
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

import time
from typing import Any

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, GenerateResult
from stratbench.models.native import SDKChatModel, turns_of
from stratbench.models.sdk_transport import guarded_client, too_large_cause

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


class AnthropicModel(SDKChatModel):
    """Claude over the Messages API (generation only: the API returns no log-probabilities)."""

    prefix, api, key_env, default_url = "anthropic", "the Messages API", KEY_ENV, DEFAULT_URL
    reply_reader = 2  # 2: blocks not read and stop_reason refusal are errors (fuzz 12)
    max_temperature = 1.0

    def __init__(self, model: str, base_url: str | None = None, max_concurrency: int = 8, timeout_s: float = 60.0,
                 max_retries: int = 4, temperature: float | None = None,
                 reasoning_effort: str | None = None) -> None:
        super().__init__(model, base_url, max_concurrency, timeout_s, max_retries, temperature, reasoning_effort)
        if self.thinking_budget and temperature is not None and temperature != 1.0:
            # extended thinking takes no other temperature: every call would be refused (HTTP 400)
            raise InputError(f"{self.spec}: --reasoning-effort {reasoning_effort} turns on extended thinking, "
                             f"which {self.api} runs only at temperature 1 (got --temperature {temperature:g})")
        self._sdk = _sdk()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "endpoint": "messages"}

    def _make_client(self) -> Any:
        return self._sdk.AsyncAnthropic(api_key=self._key, base_url=self.base_url, max_retries=self.max_retries,
                                        timeout=self.timeout_s, http_client=guarded_client(self._sdk_http()))

    def _sdk_http(self) -> Any:
        """The httpx-like package the SDK is built on (recent SDKs: ``httpx2``; older: ``httpx``)."""
        base = getattr(self._sdk, "_base_client", None)
        for name in ("httpx2", "httpx"):
            module = getattr(base, name, None)
            if module is not None:
                return module
        raise InputError("anthropic: this version of Anthropic's SDK is not supported (no httpx client)")

    def _body(self, req: GenerateRequest) -> dict[str, Any]:
        system, turns = turns_of(req)
        body: dict[str, Any] = {
            "max_tokens": self._max_tokens(req), "messages": [{"role": role, "content": c} for role, c in turns]}
        if self.thinking_budget:  # --reasoning-effort: extended thinking with its own budget
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        elif float(req.temperature) != 1.0:
            # the API's default is 1.0; another value goes in the body as the older models take it
            # (recent SDKs no longer name the parameter; a model that refuses it says so, an error record)
            body["extra_body"] = {"temperature": float(req.temperature)}
        if system:
            body["system"] = system
        stops = [s for s in req.stop if s.strip()]
        if stops:
            body["stop_sequences"] = stops
        return body

    async def _call(self, client: Any, req: GenerateRequest) -> GenerateResult:
        sdk = self._sdk
        t0 = time.perf_counter()
        try:
            msg = await client.messages.create(model=self.model, **self._body(req))
        except sdk.APIStatusError as e:
            return GenerateResult(None, latency_s=time.perf_counter() - t0, error=_status_error(e))
        except sdk.APITimeoutError:
            return GenerateResult(None, latency_s=time.perf_counter() - t0,
                                  error=f"timed out after {self.timeout_s:g} s ({self.max_retries} retries)")
        except sdk.APIConnectionError as e:
            too_large = too_large_cause(e)
            return GenerateResult(None, latency_s=time.perf_counter() - t0, error=str(too_large) if too_large else
                                  f"connection failed after {self.max_retries} retries: {e}")
        except sdk.APIResponseValidationError as e:
            return GenerateResult(None, latency_s=time.perf_counter() - t0, error=f"invalid reply: {e}")
        res = _result(msg, time.perf_counter() - t0)
        blank = [x for x in req.stop if x and not x.strip()]  # stops the API refuses: applied here
        text = res.text or ""
        cut = min((i for i in (text.find(x) for x in blank) if i >= 0), default=-1)
        if cut >= 0:
            res.text, res.finish_reason = text[:cut], "stop"
        return res


def _status_error(e: Any) -> str:
    """``HTTP 529 overloaded_error: Overloaded`` from the API's error body, where it has one."""
    body = getattr(e, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return f"HTTP {e.status_code} {err.get('type', 'error')}: {str(err.get('message', ''))[:300]}"
    return f"HTTP {e.status_code}: {str(e)[:300]}"


def _field(obj: Any, name: str) -> Any:
    """A field of the SDK's reply object (or of a dict, where the SDK kept one unparsed)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _result(msg: Any, latency: float) -> GenerateResult:
    """The answer of a reply, or an error result when the reply is not a message whose blocks the
    API defines: a 200 reply of type "error", content that is not a list of blocks, or a text or
    thinking block whose text is not a string (never a text made of it by ``str()``). The token
    counts are passed as given: `models.base` checks them (a count that is no count is unknown
    usage; the answer stands)."""
    usage = _field(msg, "usage")
    tokens: dict[str, Any] = {"tokens_in": _field(usage, "input_tokens"), "tokens_out": _field(usage, "output_tokens"),
                              "latency_s": latency}
    kind = _field(msg, "type")
    if kind is not None and kind != "message":
        err = _field(msg, "error")
        what = f"{_field(err, 'type') or 'error'}: {str(_field(err, 'message') or '')[:300]}" if err else repr(kind)[:80]
        # (an error the API answers is not billed: no usage to report)
        return GenerateResult(None, error=f"the API answered with an error (HTTP 200, type {repr(kind)[:40]}): {what}",
                              latency_s=latency)
    content = _field(msg, "content")
    if not isinstance(content, list):
        return GenerateResult(None, error=f"invalid reply: its content is not a list of blocks ({type(content).__name__})",
                              **tokens)
    text: list[str] = []
    thinking: list[str] = []
    for i, block in enumerate(content):
        kind = _field(block, "type")
        if kind == "redacted_thinking":
            continue  # (thinking the API hides: counted in the tokens, no text)
        if kind not in ("text", "thinking"):  # a tool call, an image: a reply that is not read is no empty answer
            return GenerateResult(None, error=f"invalid reply: content block {i} is of type {str(kind)[:40]!r}, "
                                              "which is not read (text and thinking blocks are)", **tokens)
        value = _field(block, kind)
        if not isinstance(value, str):
            return GenerateResult(None, error=f"invalid reply: a {kind} block's {kind} is not a string "
                                              f"({type(value).__name__})", **tokens)
        (text if kind == "text" else thinking).append(value)
    stop = _field(msg, "stop_reason")
    if stop == "refusal":  # Claude declined: the call's outcome, never the model's unreadable answer
        said = " ".join("".join(text).split())[:200]
        return GenerateResult(None, error=f"the model refused (stop_reason refusal){f': {said}' if said else ''}",
                              **tokens)
    return GenerateResult(
        "".join(text), finish_reason=_FINISH.get(stop, stop) if isinstance(stop, str) else None,
        reasoning="\n\n".join(thinking) if thinking else None, **tokens)
