"""`gemini:<model>`: Gemini through Google's own SDK (`google-genai`), the Gemini API's
generateContent.

CHBench's Gemini-1.5-pro row comes from this API. The players sample (``--policy sample``): exact
log-prob and choice policies need the log-probability of given answers, which generateContent does
not score, so they are refused before a run rather than approximated.

What the SDK does and what stratbench keeps:

- **Retries** are the SDK's (its retry options: 408, 429, 5xx, with backoff), with stratbench's
  ``--retries`` as its attempts after the first and ``--timeout`` as its per-request timeout (the
  call as a whole has a deadline, `stratbench.models.native`). A call that still fails is an
  error record naming the HTTP code and the API's status.
- **The request**: the system turn is ``system_instruction``; user and assistant turns are
  ``contents`` with roles ``user`` and ``model``; ``max_output_tokens``, ``temperature`` and
  ``stop_sequences`` from the request.
- **The reply**: the first candidate's parts; parts marked ``thought`` are the reasoning, the rest
  the answer; ``thoughts_token_count`` is ``tokens_reasoning``. ``MAX_TOKENS`` is
  ``finish_reason: length`` (a reply cut inside its thinking is a parse failure downstream). A
  blocked prompt (``prompt_feedback.block_reason``) or a candidate stopped for safety (or any
  other reason) with no text is an **error** naming the reason — never an empty answer to parse.
- **Credentials**: the key is read from ``GEMINI_API_KEY`` only and given to the client
  explicitly (Vertex AI and ambient Google credentials are not used); the URL is the SDK's
  default unless ``--base-url`` names another (a proxy, a test server), without credentials.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, GenerateResult, reported_count
from stratbench.models.native import SDKChatModel, turns_of
from stratbench.models.sdk_transport import guarded_client, too_large_cause

__all__ = ["DEFAULT_URL", "KEY_ENV", "GeminiModel"]

DEFAULT_URL = "https://generativelanguage.googleapis.com"
KEY_ENV = "GEMINI_API_KEY"
_RETRY_CODES = [408, 429, 500, 502, 503, 504]


def _sdk() -> tuple[Any, Any, Any]:
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError:
        raise InputError("gemini: models need Google's SDK: pip install 'stratbench[gemini]'") from None
    return genai, types, errors


def _name(value: Any) -> str | None:
    """An SDK enum (FinishReason.STOP) or plain string as its name."""
    if value is None:
        return None
    return str(getattr(value, "name", value))


class _ExplicitKey(logging.Filter):
    """The SDK looks at GOOGLE_API_KEY and GEMINI_API_KEY even when given a key, and warns "Using
    GOOGLE_API_KEY" when both are set — untrue here (the key is GEMINI_API_KEY's, given
    explicitly): that line is dropped, the SDK's other warnings are kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Both GOOGLE_API_KEY and GEMINI_API_KEY are set")


logging.getLogger("google_genai._api_client").addFilter(_ExplicitKey())
# a finishReason (or another enum value) newer than the SDK: it keeps the value, which the reply's
# record names (`_result`), and warns in two lines on stderr that say nothing more
warnings.filterwarnings("ignore", message=r".* is not a valid \w+$", category=UserWarning,
                        module=r"google\.genai\._common")


class GeminiModel(SDKChatModel):
    """Gemini over generateContent (generation only: no scored answers)."""

    prefix, api, key_env, default_url = "gemini", "the Gemini API", KEY_ENV, DEFAULT_URL
    reply_reader = 3  # 2: parts not read are errors, text without its count is unknown usage (fuzz 12, 13);
    # 3: an unread field beside a part's text (fuzz 14)
    max_retry_wait_s = 20.0  # the retry options' max_delay below
    _http: Any = None  # the httpx client given to the SDK (models.sdk_transport)

    def __init__(self, model: str, base_url: str | None = None, max_concurrency: int = 8, timeout_s: float = 60.0,
                 max_retries: int = 4, temperature: float | None = None,
                 reasoning_effort: str | None = None) -> None:
        super().__init__(model, base_url, max_concurrency, timeout_s, max_retries, temperature, reasoning_effort)
        self._genai, self._types, self._errors = _sdk()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "endpoint": "generateContent"}

    def _make_client(self) -> Any:
        t = self._types
        retry = t.HttpRetryOptions(attempts=self.max_retries + 1, initial_delay=0.5, max_delay=self.max_retry_wait_s,
                                   http_status_codes=_RETRY_CODES)
        self._http = guarded_client()  # the SDK leaves a client it was given open: closed in _close
        opts = t.HttpOptions(base_url=self.base_url, timeout=int(self.timeout_s * 1000), retry_options=retry,
                             httpx_async_client=self._http)
        return self._genai.Client(api_key=self._key, vertexai=False, http_options=opts)

    async def _close(self, client: Any) -> None:
        close = getattr(getattr(client, "aio", None), "aclose", None)
        try:
            if close is not None:
                await close()
        finally:
            await self._http.aclose()

    def _request(self, req: GenerateRequest) -> tuple[list[Any], Any]:
        t = self._types
        system, turns = turns_of(req)
        contents = [t.Content(role="model" if role == "assistant" else "user", parts=[t.Part(text=c)])
                    for role, c in turns]
        thinking = None if self.thinking_budget is None else t.ThinkingConfig(thinking_budget=self.thinking_budget)
        config = t.GenerateContentConfig(
            max_output_tokens=self._max_tokens(req), temperature=float(req.temperature),
            stop_sequences=list(req.stop) or None, system_instruction=system or None, thinking_config=thinking)
        return contents, config

    async def _call(self, client: Any, req: GenerateRequest) -> GenerateResult:
        contents, config = self._request(req)
        t0 = time.perf_counter()
        try:
            resp = await client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        except self._errors.APIError as e:
            status = e.status or ""
            if e.code == 400 and ("API_KEY_INVALID" in str(getattr(e, "details", "")) or
                                  "API key not valid" in str(e.message or "")):
                status = "API_KEY_INVALID"  # Gemini's answer to a bad key (400, not 401): a refused key
            return GenerateResult(None, latency_s=time.perf_counter() - t0,
                                  error=f"HTTP {e.code} {status}: {str(e.message or '')[:300]}".replace(" :", ":"))
        except Exception as e:  # noqa: BLE001 - transport failures (after the SDK's retries): an error record
            too_large = too_large_cause(e)
            return GenerateResult(None, latency_s=time.perf_counter() - t0, error=str(too_large) if too_large else
                                  f"request failed: {type(e).__name__}: {str(e)[:300]}")
        return _result(resp, time.perf_counter() - t0)


def _tokens(usage: Any) -> dict[str, Any]:
    """The usage fields of a reply, as reported: `models.base` checks them (a count that is no
    count — negative, a string, absurd — makes the call's usage unknown). The API leaves a zero
    count out of its JSON, so an absent count is 0 (the reply's own, beside its text, is unknown:
    `_result`); an absent ``usage_metadata`` is unknown."""
    if usage is None:
        return {"tokens_in": None, "tokens_out": None}

    def count(name: str) -> Any:
        value = getattr(usage, name, None)
        return 0 if value is None else value

    reply, thoughts = reported_count(count("candidates_token_count")), reported_count(count("thoughts_token_count"))
    return {"tokens_in": count("prompt_token_count"),
            "tokens_out": None if reply is None or thoughts is None else reply + thoughts}


#: the Part fields read as the answer (a thought signature: an opaque token beside a thought)
_READ_FIELDS = ("text", "thought", "thought_signature")
#: the Part fields an SDK without `model_fields` is asked about (the kinds that hold no answer text)
_OTHER_PARTS = ("function_call", "function_response", "inline_data", "file_data", "executable_code",
                "code_execution_result", "tool_call", "tool_response", "audio_transcription")


def _unread_field(part: Any) -> str | None:
    """The first field of `part` that holds something and is not read (a function or tool call, inline
    data, a transcription: every kind but text and its metadata), or None. The SDK's own field list
    is asked, so a kind a later release adds is caught too, not skipped as an empty answer."""
    names = getattr(type(part), "model_fields", None) or _OTHER_PARTS
    for n in names:
        if n in _READ_FIELDS or n.endswith("_metadata") or n in ("media_resolution", "media_processing"):
            continue
        if getattr(part, n, None) is not None:
            return str(n)
    return None


def _result(resp: Any, latency: float) -> GenerateResult:
    usage = getattr(resp, "usage_metadata", None)
    tokens = dict(_tokens(usage), latency_s=latency)
    blocked = _name(getattr(getattr(resp, "prompt_feedback", None), "block_reason", None))
    candidates = getattr(resp, "candidates", None) or []
    if blocked:
        return GenerateResult(None, error=f"the prompt was blocked ({blocked})", **tokens)
    if not candidates:
        return GenerateResult(None, error="the reply has no candidate", **tokens)
    cand = candidates[0]
    finish = _name(getattr(cand, "finish_reason", None))
    text: list[str] = []
    thought: list[str] = []
    empty: int | None = None  # the first part holding nothing read (a kind the SDK dropped, unknown to it)
    for i, part in enumerate(getattr(getattr(cand, "content", None), "parts", None) or []):
        other = _unread_field(part)
        if other is not None:  # a function call, inline data (beside text too): a reply not wholly read is no answer
            return GenerateResult(None, error=f"invalid reply: part {i} holds {other}, which is not read "
                                              "(text and thought parts are)", **tokens)
        if getattr(part, "text", None) is None:
            if getattr(part, "thought_signature", None) is None and empty is None:
                empty = i
            continue
        (thought if getattr(part, "thought", False) else text).append(part.text)
    if empty is not None and not text and not thought:
        return GenerateResult(None, error=f"invalid reply: part {empty} holds no text (an empty part, or a kind "
                                          "of part this version does not know), and no part holds text", **tokens)
    if (text or thought) and usage is not None and getattr(usage, "candidates_token_count", None) is None:
        tokens["tokens_out"] = None  # (text, but no count of it: unknown, never 0)
    if not text and not thought and finish not in (None, "STOP", "MAX_TOKENS"):
        return GenerateResult(None, error=f"the reply was stopped ({finish}) with no text", **tokens)
    return GenerateResult(
        "".join(text), finish_reason={"STOP": "stop", "MAX_TOKENS": "length"}.get(finish or "", finish and finish.lower()),
        reasoning="".join(thought) if thought else None,
        tokens_reasoning=getattr(usage, "thoughts_token_count", None),  # checked by models.base
        **tokens)
