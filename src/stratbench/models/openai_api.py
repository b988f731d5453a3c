"""OpenAI-compatible HTTP backends: `openai:<model>`, `together:<model>`, `openai-compatible:<model>`.

`openai-compatible` covers self-hosted servers that speak the same API (vLLM, SGLang, the
llama.cpp server, llama-cpp-python's server, Ollama, ...) and needs a base URL.

Scoring
    endpoint "completions" (exact): first one next-token request for the prompt with the top-k
    log-probs (``max_tokens=1, logprobs=k``; k = `top_logprobs`, 5 by default, OpenAI's limit,
    and 20 for the top-k walk below): a continuation that is one of those tokens has its exact log-prob
    there. Any other continuation is scored by echoing prompt+continuation (``echo=true,
    logprobs=1, max_tokens=1, temperature=0``; the log-prob is the sum of the echoed log-probs of
    the tokens that spell the continuation; ``max_tokens=1``, not 0: the llama.cpp server reads 0
    as unlimited). Exact too, but one request per continuation, and slow on servers that compute
    every prompt position's log-probs in Python (llama-cpp-python's server: ~1 min for a
    200-token prompt with Gemma's 262k vocabulary). A token straddling the prompt/continuation
    boundary gives an error result, never a guess. Echoed tokens are located by their text
    offsets, and must tile the continuation exactly once (no repeated or earlier offset, no gap,
    up to its end: otherwise the reply is malformed, an error result), or — when a server's offsets skip special tokens, as llama-cpp-python's do (its
    offsets index the text with special tokens removed) — as the last prompt tokens, which must
    spell the continuation exactly.

    top-k walk (multi-token continuations, when the model's tokenizer is known here: a GGUF given
    as `chat_template`): the continuations' tokens, as the server's own tokenizer (the same
    llama.cpp vocabulary) splits prompt+continuation, form a prefix tree; one next-token
    request per node (the prompt followed by a prefix of whole tokens) gives the log-prob of
    each child token from the top-k, so a set of continuations sharing prefixes (TMGBench's 16
    answers: 96 nodes with Gemma's tokenizer) costs one cheap request per node instead of one
    echo each; a node's text is checked to tokenise to exactly the tree's prefix. A continuation
    whose next token is outside a node's top-k (or whose tokens cannot be checked) falls back to
    its own echo request: every score stays exact. The property `multi_token_scoring` says which
    way ("topk-walk" or "echo"; "unsupported" on the chat endpoint) before a run; `describe()`
    carries it (with `top_logprobs`) only for "topk-walk", so a model opened without a tokenizer
    keeps the cache identity it always had. The default k is 5 (OpenAI's limit), 20 for the walk
    on an openai-compatible server.

    endpoint "chat" (top-k approximation): one request per prompt (the prompt as a user message,
    ``max_tokens=1, logprobs=true, top_logprobs=20``); each continuation must be one token, and
    its log-prob is read from the first position's top-20. A continuation absent from the top-20
    gets ``float('-inf')`` (its probability is below the 20th's; the result is not an error).
    Tokens are matched by exact text (" A" is not "A").

    conversations (`ScoreRequest.messages`, exact choice scoring of chat models): a chat endpoint
    cannot do it exactly (top-20, and no way to append the answer stem to the assistant's turn),
    so it needs the model's chat template here (`chat_template`: a GGUF, whose template is read
    from its metadata with the BOS/EOS texts and rendered as llama-cpp-python's default chat
    handler does — `stratbench.models.llama`'s rendering, identical to the local `gguf:` route —;
    a tokenizer_config.json; or a .jinja file, rendered by llama-cpp-python's
    `Jinja2ChatFormatter`). The conversation is rendered with the assistant's turn opened, the
    stem appended, and the result scored on the completions endpoint as above (servers parse
    special-token texts in a completions prompt: llama-cpp-python tokenises it with
    ``special=True``, as llama.cpp's server and vLLM do). A BOS that the template writes is left
    out of the text sent when the server adds one itself (GGUF ``add_bos_token``; for a
    tokenizer_config.json its ``add_bos_token``, assumed true when absent), so the server sees
    the tokens its own chat route would. `supports_chat_scoring` is true only with a template.

Generation
    completions (raw prompt, no chat template; `system`, if any, is prepended followed by a blank
    line) or chat (the request's `messages` — the whole conversation — when given, else
    [system?, user]) when the endpoint is "chat" or the request asks for chat. `seed` is passed
    through unchanged. `finish_reason` is the server's; `rendered` (the prompt after the chat
    template) only when the server reports it (a top-level ``prompt`` string, or llama.cpp's
    ``__verbose.prompt``), else None.

    repeat_penalty: llama-cpp-python's server applies ``repeat_penalty=1.1`` unless told
    otherwise — even at temperature 0 — while its `create_completion`/`create_chat_completion`
    (the local `gguf:`/`embedded*` routes) default to 1.0, so greedy answers differ.
    `repeat_penalty=1.0` (`DEFAULT_REPEAT_PENALTY`; openai-compatible only) sends that field with
    every generation request (an unpenalised model, as the local routes; vLLM, SGLang and Ollama
    ignore a field they do not know, llama.cpp's server takes it) and adds it to `describe()`. A
    server that rejects the field (HTTP 400/422 naming it) gets the request again without it, and
    no more afterwards. The class's default (None) sends nothing; models opened from a spec
    (`load_model`, every command) use `ModelOptions.repeat_penalty`, "auto" by default, so an
    `openai-compatible:` model at temperature 0 answers what the same GGUF answers locally.

Failures never raise: after the retries of `stratbench.models.retry` a result carries `error` and
no value; `wait_for_server_s` keeps trying a server that is down (restarting) that long. Every
HTTP attempt is counted in ``usage.extra["http_requests"]`` and every attempt after a call's
first in ``usage.extra["retries"]`` as it is made (timeouts included), whatever the call's
outcome. The API key is read from the environment at construction, sent only in the
Authorization header, and redacted from every error, log line and repr.

Hostile servers and inputs
    the base URL is checked at construction (`check_base_url`: http/https, a host, a port in
    1-65535, no whitespace or control characters, no query): one InputError line. Credentials in
    it (``http://user:PASSWORD@host/v1``) are sent as HTTP basic authentication, kept out of the
    URL of every request, and shown nowhere (`stratbench.redact`; a server echoing the header is
    redacted too, in an error and in a successful reply alike). Every log-probability read from a reply must be finite and at most
    `labels.LOGPROB_MAX`: NaN, infinite or positive makes the call an error (never scored, never
    bypassed by another request). A chat top_logprobs entry that cannot be read is a malformed
    reply, never its token read as outside the top-20. Token counts are checked as every
    backend's are (`models.base.reported_count`: absent or no count, the call's usage is
    unknown). A response body is read, decoded (identity, gzip, deflate),
    up to `max_response_bytes` (``STRATBENCH_MAX_RESPONSE_BYTES``, 8 MiB by default) and no
    further: past it the call is the error "response body over N bytes", not retried. The
    timeout is a deadline for the whole answer too (a body trickled a byte at a time): past it,
    a timeout "response body not complete within N s", retried as timeouts are. A chat
    template is rendered under the limits of `stratbench.models.templates` and checked with a
    probe conversation when loaded.

Where the parts live: this module holds the protocol (the requests, scoring, the top-k walk,
generation); `models.http_transport` the transport (keys, connection pools, capped bodies, URL
checks); `models.openai_replies` the reading of replies (usage, choices, log-probabilities);
`models.chat_template` the chat template and tokenizer known here.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import random
import time
from typing import Any, Sequence
from urllib.parse import unquote, urlsplit

import httpx
import numpy as np

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
)
from stratbench.models.chat_template import ChatTemplate, Tokenizer
from stratbench.models.http_transport import (
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_RESPONSE_BYTES_ENV,
    Secret,
    ShardedTransport,
    check_base_url,
    max_response_bytes_setting,
    read_capped,
    strip_userinfo,
)
from stratbench.models.openai_replies import (
    BadLogprob,
    Malformed,
    add_tokens,
    chat_top_logprobs,
    completion_top_logprobs,
    echo_logprob,
    first_choice,
    is_reasoning_family,
    prompt_usage,
    reasoning_tokens,
    server_prompt,
    usage_int,
    usage_of,
)
from stratbench.models.providers import HTTP_PROVIDERS, read_key
from stratbench.models.retry import BodyTimeout, RetryOutcome, RetryPolicy, request_with_retries
from stratbench.redact import redact_known, redact_text, secret_forms

log = logging.getLogger(__name__)

# (the names other modules import from here since before the split)
__all__ = ["CHAT_TOP_LOGPROBS", "DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_REPEAT_PENALTY", "ENDPOINTS",
           "MAX_RESPONSE_BYTES_ENV", "PROVIDERS", "ChatTemplate", "OpenAICompatibleModel", "Tokenizer",
           "check_base_url", "parse_spec"]

# provider -> (default base URL, key environment variable, key required): `models.providers`
PROVIDERS: dict[str, tuple[str | None, str, bool]] = {
    n: (p.base_url, p.key_env or "", p.key_required) for n, p in HTTP_PROVIDERS.items()}
ENDPOINTS = ("completions", "chat")
CHAT_TOP_LOGPROBS = 20
# the repeat penalty sent to openai-compatible servers: 1.0 = none, as llama-cpp-python's local
# create_completion / create_chat_completion (its server's own default is 1.1)
DEFAULT_REPEAT_PENALTY = 1.0

# When each HTTP attempt of the request being served got its connection slot: a result's latency
# runs from its first attempt's start, not from when it was queued behind max_concurrency others.
_attempt_starts: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "stratbench_attempt_starts", default=None)


def parse_spec(spec: str) -> tuple[str, str]:
    """'openai:gpt-4o-mini' -> ('openai', 'gpt-4o-mini'); InputError for anything else."""
    provider, sep, model = spec.partition(":")
    if not sep or provider not in PROVIDERS or not model:
        known = ", ".join(f"{p}:<model>" for p in PROVIDERS)
        raise InputError(f"{spec}: not an API model spec (expected one of {known})")
    return provider, model


def _as_text(value: Any) -> str:
    """A reasoning field as text: a string as it is, a list of strings (or of text parts) joined,
    anything else as its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if isinstance(value, list) and all(isinstance(v, dict) and isinstance(v.get("text"), str) for v in value):
        return "\n".join(v["text"] for v in value)
    return json.dumps(value, ensure_ascii=False)


def _content_parts(parts: list[Any]) -> tuple[str, str]:
    """A chat message's content given as parts: (the text parts joined — the answer —, the
    thinking parts joined — the reasoning —). Text parts are ``text`` (chat completions) or
    ``output_text`` (the Responses shape) with a string text; thinking parts are ``thinking`` or
    ``reasoning`` (their text, or a Responses-style ``summary``). A part that cannot be read this way
    (an image, a refusal, a text that is an object) makes the reply an error naming it, never an
    empty answer: the model would be blamed for a reply that was not read."""
    text, thought, refusals = [], [], []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            text.append(part)
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, dict) and kind in ("text", "output_text"):
            value = part.get("text")
            if not isinstance(value, str):
                raise Malformed(f"invalid reply: content part {i} ({kind}) has a text that is not a string "
                                f"({type(value).__name__}): not read")
            text.append(value)
        elif isinstance(part, dict) and kind in ("thinking", "reasoning"):
            inner = next((part[k] for k in ("thinking", "reasoning", "text", "summary", "content")
                          if part.get(k) not in (None, "", [])), None)
            if inner is not None:
                thought.append(_as_text(inner))
        elif isinstance(part, dict) and kind == "refusal":
            refusals.append(_as_text(part.get("refusal")))
        else:
            what = f"of type {kind!r}" if isinstance(kind, str) else f"no object with a type ({type(part).__name__})"
            raise Malformed(f"invalid reply: content part {i} is {what:.80}, which is not read "
                            "(text, output_text, thinking and reasoning parts are)")
    if refusals:  # (beside text too: a reply the reader does not wholly take is not the model's answer)
        said = " ".join(refusals)[:200]
        if "".join(text).strip():
            raise Malformed(f"invalid reply: a refusal part beside the text ({said})")
        raise Malformed(f"response has no text content (refusal: {said})")
    return "".join(text), "\n\n".join(thought)


class OpenAICompatibleModel(LanguageModel):
    """An OpenAI-compatible HTTP API. See the module docstring for how score and generate work."""

    supports_logprobs = True
    supports_chat = True  # a chat endpoint takes conversations (the server applies its template)
    reply_reader = 3  # 2: a refusal, content parts and a reasoning part's content read (fuzz 12); 3: a tool
    # call or refusal beside the text (fuzz 14)

    def __init__(self, provider: str, model: str, base_url: str | None = None,
                 api_key_env: str | None = None, max_concurrency: int = 8, timeout_s: float = 60,
                 max_retries: int = 4, endpoint: str = "completions",
                 retry_base_delay_s: float = 0.5, retry_max_delay_s: float = 20.0,
                 max_retry_after_s: float = 60.0, jitter_seed: int | None = None,
                 top_logprobs: int | None = None, wait_for_server_s: float = 0.0,
                 chat_template: "str | os.PathLike[str] | ChatTemplate | None" = None,
                 repeat_penalty: float | None | str = None, tokenizer: Tokenizer | None = None,
                 walk: bool = True, max_response_bytes: int | None = None,
                 reasoning_effort: str | None = None) -> None:
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
        check_base_url(url, self.spec)
        # credentials in the URL (http://user:PASSWORD@host/v1) are sent as basic authentication,
        # as HTTP clients do, and kept out of the URL every request (and httpx's log) names
        parts = urlsplit(url)
        self._basic = Secret(None)
        if parts.username or parts.password:
            self._basic = Secret(f"{unquote(parts.username or '')}:{unquote(parts.password or '')}")
        self.base_url = strip_userinfo(url).rstrip("/")
        self.max_response_bytes = max_response_bytes_setting() if max_response_bytes is None else max_response_bytes
        if isinstance(self.max_response_bytes, bool) or not isinstance(self.max_response_bytes, int) \
                or self.max_response_bytes < 1:
            raise InputError(f"{self.spec}: max_response_bytes must be a positive integer")
        if endpoint not in ENDPOINTS:
            raise InputError(f"{self.spec}: endpoint must be 'completions' or 'chat', got {endpoint!r}")
        self.endpoint = endpoint
        # chat scores (top-k log-probs) read 2: a refusal, tool call or reasoning message is no
        # answer (fuzz 15, 16); 3: a label's own leading space, a message without text (fuzz 17);
        # the completions route's echo reading never changed
        self.score_reader = 3 if endpoint == "chat" else 1  # 3: a label's own leading space, no text (fuzz 17, 18)
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InputError(f"{self.spec}: max_concurrency must be a positive integer")
        if not timeout_s or not timeout_s > 0 or timeout_s == float("inf"):
            raise InputError(f"{self.spec}: timeout must be a positive number of seconds")
        if max_retries < 0:
            raise InputError(f"{self.spec}: max_retries must be >= 0")
        if not wait_for_server_s >= 0 or wait_for_server_s == float("inf"):
            raise InputError(f"{self.spec}: wait-for-server must be a finite number of seconds >= 0")
        self.max_concurrency = max_concurrency
        if chat_template is not None and not isinstance(chat_template, ChatTemplate):
            chat_template = ChatTemplate.load(chat_template)
        self._tokenizer = tokenizer or (chat_template.tokenizer if chat_template is not None else None)
        if top_logprobs is None:
            # 5: OpenAI's limit on the completions endpoint; 20 (vLLM's default cap) for the top-k
            # walk of a self-hosted server, which needs a tokenizer given here
            top_logprobs = 20 if provider == "openai-compatible" and self._tokenizer is not None else 5
        if not isinstance(top_logprobs, int) or top_logprobs < 0:
            raise InputError(f"{self.spec}: top_logprobs must be an integer >= 0")
        self.top_logprobs = top_logprobs
        self.timeout_s = float(timeout_s)
        self.retry_policy = RetryPolicy(max_retries=max_retries, base_delay_s=retry_base_delay_s,
                                        max_delay_s=retry_max_delay_s, max_retry_after_s=max_retry_after_s,
                                        wait_for_server_s=float(wait_for_server_s))
        if repeat_penalty == "auto":
            repeat_penalty = DEFAULT_REPEAT_PENALTY if provider == "openai-compatible" else None
        elif repeat_penalty is not None and provider != "openai-compatible":
            raise InputError(f"{self.spec}: repeat_penalty is not an OpenAI API parameter; it is sent "
                             "only to openai-compatible servers")
        if repeat_penalty is not None and (isinstance(repeat_penalty, str) or not float(repeat_penalty) >= 0):
            raise InputError(f"{self.spec}: repeat_penalty must be a number >= 0, 'auto' or None")
        self.repeat_penalty = None if repeat_penalty is None else float(repeat_penalty)
        self._send_repeat_penalty = self.repeat_penalty is not None
        self.chat_template: ChatTemplate | None = chat_template
        self.supports_chat_scoring = chat_template is not None and chat_template.has_template
        self.walk = walk
        if reasoning_effort is not None and endpoint != "chat":
            # the completions endpoint takes no reasoning_effort: a flag that would change nothing
            raise InputError(f"{self.spec}: --reasoning-effort is a chat model's option; run it with --chat")
        self.reasoning_effort = reasoning_effort  # sent with every chat generation request
        if provider == "openai" and is_reasoning_family(model):
            # OpenAI's reasoning models give no log-probabilities: their default policy samples,
            # and an exact policy asked for is refused before the run (every call was an HTTP 400)
            self.supports_logprobs = False

        env = api_key_env or default_env
        self.api_key_env = env
        key = read_key(env, self.spec)
        from stratbench.models.costs import planning

        if key is None and (key_required or api_key_env is not None) and not planning():  # (a dry run: no request)
            raise InputError(f"{self.spec}: set {env}")
        self._key = Secret(key)
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

    @property
    def multi_token_scoring(self) -> str:
        """How continuations of several tokens are scored: "topk-walk" (one cheap next-token
        request per node of their prefix tree, echo only for what the top-k misses), "echo" (one
        echo request per continuation: exact, but slow where the server computes prompt log-probs
        in Python, as llama-cpp-python's does), or "unsupported" (the chat endpoint: single-token
        continuations from the top-20 only)."""
        if self.endpoint == "chat":
            return "unsupported"
        if self._tokenizer is not None and self.walk and self.top_logprobs > 0:
            return "topk-walk"
        return "echo"

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.spec, "backend": "openai-compatible", "provider": self.provider,
                             "model": self.model, "base_url": self._redact(strip_userinfo(self.base_url)),
                             "endpoint": self.endpoint}
        # keys beyond HEAD's only where behaviour differs from it (the cache identity of a model
        # opened without the new options stays what it was)
        if self.multi_token_scoring == "topk-walk":
            d["multi_token_scoring"] = "topk-walk"
            d["top_logprobs"] = self.top_logprobs
        if self.repeat_penalty is not None:  # changes generated answers: part of the cache identity
            d["repeat_penalty"] = self.repeat_penalty
        if self.chat_template is not None:
            d["chat_template"] = self.chat_template.describe()
        if self.reasoning_effort is not None:  # changes generated answers: part of the cache identity
            d["reasoning_effort"] = self.reasoning_effort
        return d

    def request_prompts(self, req: ScoreRequest) -> list[list[str]]:
        """The most requests scoring `req` takes (see the module docstring): on the chat endpoint
        one; on the completions endpoint the top-k request, one per node of the top-k walk where
        it is used, and one echo per continuation (any continuation may fall back to its echo).
        A request refused before any call (closed scoring, no template) takes none."""
        if req.closed or not req.continuations:
            return []
        if req.messages:
            if self.chat_template is None or not self.chat_template.has_template:
                return []
            try:
                prompt = self.chat_template.render(req.messages)[1] + req.prompt
            except ValueError:
                return []
        elif self.endpoint == "chat":
            return [[req.prompt]]
        else:
            prompt = req.prompt
        todo = [c for c in dict.fromkeys(req.continuations) if c]
        if not prompt or not todo:
            return []
        out = [[prompt]] if self.top_logprobs > 0 else []
        if self.top_logprobs > 0 and self.multi_token_scoring == "topk-walk":
            paths = self._token_paths(prompt, todo)
            nodes = {"".join(p[:j]) for p in paths.values() for j in range(1, len(p))}
            out += [[prompt, pre] for pre in sorted(nodes)]
        return out + [[prompt, c] for c in todo]

    def _no_template(self) -> str:
        """Why this model cannot score a conversation exactly: no --chat-template, or one (a GGUF)
        that holds no chat template."""
        if self.chat_template is not None and not self.chat_template.has_template:
            return (f"--chat-template {self.chat_template.source} holds no chat template (a GGUF without "
                    "tokenizer.chat_template gives only its tokenizer): exact choice scoring of a conversation "
                    "needs the model's template; give its tokenizer_config.json or .jinja, or a GGUF that holds one")
        return "exact choice scoring of a conversation over HTTP needs the model's chat template (--chat-template)"

    def check_chat(self, scoring: bool = False) -> None:
        """As the base class; and a conversation run given a --chat-template that holds no chat
        template is refused whatever its policy: the user meant the model's template to be used,
        and the run would read the server's chat endpoint instead without a word."""
        if self.chat_template is not None and not self.chat_template.has_template:
            other = ", or use --policy sample" if scoring else (
                "; or drop --chat-template to read the server's chat endpoint with its own template")
            raise InputError(f"{self.spec}: {self._no_template()}{other}")
        super().check_chat(scoring)

    def __repr__(self) -> str:
        return (f"OpenAICompatibleModel(spec={self.spec!r}, base_url={strip_userinfo(self.base_url)!r}, "
                f"endpoint={self.endpoint!r}, max_concurrency={self.max_concurrency}, "
                f"api_key={'set' if self._key else 'unset'})")

    def _secrets(self) -> list[str]:
        """The API key and the URL's credentials, in every form a server may echo them."""
        return secret_forms(self._key.get(), self._basic.get())

    def _redact(self, text: str) -> str:
        """`text` without the API key, the URL's credentials (as given, and as the basic
        authentication header a server may echo) or any URL's userinfo."""
        return redact_text(redact_known(text, self._secrets()))

    # -- HTTP -----------------------------------------------------------------------------

    def _basic_auth(self) -> httpx.BasicAuth | None:
        basic = self._basic.get()
        if basic is None:
            return None
        user, _, password = basic.partition(":")
        return httpx.BasicAuth(user, password)

    def _ensure_client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        """One shared client and semaphore per event loop (asyncio objects are loop-bound)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # A client from an earlier loop (e.g. a previous asyncio.run) cannot be used or closed
            # here; it is dropped and its connections close when collected.
            # gzip and deflate only: the bodies this client decodes itself, under its size cap
            headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate"}
            if self._key:
                headers["Authorization"] = f"Bearer {self._key.get()}"
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s),  # connect, write, read (the whole answer), pool
                transport=ShardedTransport(self.max_concurrency),
                follow_redirects=False,
                auth=self._basic_auth(),
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
                request = client.build_request("POST", url, json=body)
                # the timeout is also a deadline for the whole answer (headers and body, wall
                # clock): httpx's read timeout is per chunk, and a server trickling a byte a
                # second would never trip it
                deadline = asyncio.timeout(self.timeout_s)
                try:
                    async with deadline:
                        response = await client.send(request, stream=True)
                        try:
                            content = await read_capped(response, self.max_response_bytes)
                        finally:
                            await response.aclose()
                except TimeoutError:
                    if not deadline.expired():
                        raise
                    raise BodyTimeout(self.timeout_s) from None
                # the body as read (decoded): nothing is read or decoded again
                headers = [(k, v) for k, v in response.headers.multi_items()
                           if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
                return httpx.Response(response.status_code, headers=headers, content=content, request=request)

        def counted(attempt: int) -> None:  # as each attempt is made, whatever comes of it
            self.usage.extra["http_requests"] += 1
            if attempt > 0:
                self.usage.extra["retries"] += 1

        out = await request_with_retries(send, self.retry_policy, rng=self._rng, redact=self._redact,
                                         label=f"{self.spec} POST /{path}", on_attempt=counted)
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
        secrets = self._secrets()
        for r in results:
            r.redact(secrets)  # (an echo of the request's headers in a reply)
            self.usage.add_score(r)
        return list(results)

    async def _guard_score(self, req: ScoreRequest) -> ScoreResult:
        starts: list[float] = []
        _attempt_starts.set(starts)
        try:
            if req.closed:  # checked before a run (models.labels.check_closed): never reached there
                res = ScoreResult(logprobs=None, error="closed scoring (labels that are prefixes of others, e.g. "
                                                       "'1' and '10') needs a local model's full next-token "
                                                       "distribution; an HTTP endpoint returns its top tokens only")
            elif req.messages:
                res = await self._score_conversation(req)
            elif self.endpoint == "chat":
                res = await self._score_chat(req)
            else:
                res = await self._score_completions(req.prompt, req.continuations)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never raise for one request
            res = ScoreResult(logprobs=None, error=self._redact(f"internal error: {type(e).__name__}: {e}"))
        res.latency_s = time.perf_counter() - min(starts) if starts else 0.0
        return res

    async def _score_conversation(self, req: ScoreRequest) -> ScoreResult:
        """Exact choice scoring of a conversation: rendered here with the model's chat template,
        the stem appended, scored on the completions endpoint (whatever the generation endpoint)."""
        if self.chat_template is None or not self.chat_template.has_template:
            return ScoreResult(logprobs=None, error=self._no_template())
        try:
            rendered, send = self.chat_template.render(req.messages)
        except ValueError as e:
            return ScoreResult(logprobs=None, error=self._redact(str(e)[:300]))
        res = await self._score_completions(send + req.prompt, req.continuations)
        res.rendered = rendered + req.prompt
        return res

    async def _score_completions(self, prompt: str, continuations: Sequence[str]) -> ScoreResult:
        """Exact log-probs: the top-k next-token request (and the top-k walk when the tokenizer is
        known), then one echo request for each continuation still unscored (module docstring)."""
        if not prompt:
            return ScoreResult(logprobs=None, error="empty prompt: its first token has no log-prob to condition on")
        scored: dict[str, tuple[float, int]] = {"": (0.0, 0)}
        todo = [c for c in dict.fromkeys(continuations) if c]
        tokens_in: int | None = 0  # None: a request's usage was not reported (models.base.reported_count)
        if self.top_logprobs > 0 and todo:
            top, t_in, err, status = await self._next_token_top(prompt)
            tokens_in = add_tokens(tokens_in, t_in)
            if err is not None and status not in (400, 422):
                return ScoreResult(logprobs=None, error=err, **prompt_usage(tokens_in))
            if top is not None:
                paths = self._token_paths(prompt, todo) if self.multi_token_scoring == "topk-walk" else {}
                for c in todo:  # no tokenizer: a continuation that is one top-k token, by its text
                    if c not in paths and c in top:
                        scored[c] = (top[c], 1)
                if paths:
                    walked, t_in, err = await self._walk(prompt, paths, top)
                    tokens_in = add_tokens(tokens_in, t_in)
                    if err is not None:
                        return ScoreResult(logprobs=None, error=err, **prompt_usage(tokens_in))
                    scored.update(walked)
        rest = [c for c in todo if c not in scored]
        parts = dict(zip(rest, await asyncio.gather(*(self._score_continuation(prompt, c) for c in rest))))
        for p in parts.values():
            tokens_in = add_tokens(tokens_in, p[2])
        for _, _, _, err in parts.values():
            if err is not None:
                return ScoreResult(logprobs=None, error=err, **prompt_usage(tokens_in))
        scored.update({c: (lp, n) for c, (lp, n, _, _) in parts.items()})
        return ScoreResult(logprobs=[scored[c][0] for c in continuations],
                           n_tokens=[scored[c][1] for c in continuations], **prompt_usage(tokens_in))

    async def _next_token_top(self, prompt: str) -> tuple[dict[str, float] | None, int | None, str | None, int | None]:
        """(token text -> log-prob of the top-k after `prompt`, or None when the server does not
        give them; prompt tokens (None: not reported); error; HTTP status)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0,
                "logprobs": self.top_logprobs}
        out = await self._post("completions", body)
        if not out.ok:
            return None, 0, out.error, out.status
        try:
            top = completion_top_logprobs(out.data)
        except BadLogprob as e:  # a broken answer is the call's error, never bypassed by an echo
            return None, usage_int(out.data, "prompt_tokens"), self._redact(str(e)), out.status
        except Malformed:
            top = None  # echo scoring instead
        return top, usage_int(out.data, "prompt_tokens"), None, out.status

    def _token_paths(self, prompt: str, conts: Sequence[str]) -> dict[str, list[str]]:
        """continuation -> its tokens' texts, as the server's tokenizer splits prompt+continuation,
        for the continuations the walk can score exactly: whole tokens after the prompt's, that
        spell it, and whose every proper prefix tokenises (after the prompt) to those tokens."""
        tok = self._tokenizer
        assert tok is not None
        memo: dict[str, list[int]] = {}

        def ids(text: str) -> list[int]:
            if text not in memo:
                memo[text] = tok.tokenize(text)
            return memo[text]

        p_ids = ids(prompt)
        n = len(p_ids)
        out: dict[str, list[str]] = {}
        for c in conts:
            full = ids(prompt + c)
            tail = full[n:]
            if full[:n] != p_ids or not tail:
                continue  # the continuation starts inside a token: echo reports it
            pieces = [tok.piece(i) for i in tail]
            if "".join(pieces) != c:
                continue
            text, ok = prompt, True
            for j in range(1, len(tail)):
                text += pieces[j - 1]
                if ids(text) != full[: n + j]:
                    ok = False
                    break
            if ok:
                out[c] = pieces
        return out

    async def _walk(self, prompt: str, paths: dict[str, list[str]],
                    root: dict[str, float]) -> tuple[dict[str, tuple[float, int]], int | None, str | None]:
        """Score continuations token by token down their prefix tree, one next-token request per
        node (the nodes of one depth concurrently). A continuation whose next token a node's top-k
        does not hold is left out of the result (it gets an echo request)."""
        tops: dict[str, dict[str, float] | None] = {"": root}
        state = {c: (0, 0.0) for c in paths}  # continuation -> (tokens scored, their log-prob)
        done: dict[str, tuple[float, int]] = {}
        tokens_in: int | None = 0
        while state:
            need = sorted({"".join(paths[c][:j]) for c, (j, _) in state.items()} - tops.keys())
            answers = await asyncio.gather(*(self._next_token_top(prompt + pre) for pre in need))
            for pre, (top, t_in, err, status) in zip(need, answers):
                tokens_in = add_tokens(tokens_in, t_in)
                if err is not None and status not in (400, 422):
                    return done, tokens_in, err
                tops[pre] = top
            for c, (j, lp) in list(state.items()):
                pieces = paths[c]
                top = tops["".join(pieces[:j])]
                if top is None or pieces[j] not in top:
                    del state[c]  # outside the top-k: echo
                    continue
                j, lp = j + 1, lp + top[pieces[j]]
                if j == len(pieces):
                    done[c] = (lp, j)
                    del state[c]
                else:
                    state[c] = (j, lp)
        return done, tokens_in, None

    async def _score_continuation(self, prompt: str, cont: str) -> tuple[float, int, int | None, str | None]:
        """(logprob, n_tokens, prompt_tokens (None: not reported), error) of one continuation."""
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
        tokens_in = usage_int(out.data, "prompt_tokens")
        try:
            logprob, n = echo_logprob(out.data, len(prompt), full)
        except Malformed as e:
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
        usage = prompt_usage(usage_int(out.data, "prompt_tokens"))
        try:
            top = chat_top_logprobs(out.data)
        except Malformed as e:
            return ScoreResult(logprobs=None, error=self._redact(str(e)), **usage)
        # the first token of a chat reply may carry the whitespace a tokenizer puts before a word
        # (SentencePiece models behind vLLM report " 1"), and a reply begins no word after a space
        # of its own: an answer is every top-20 token that is it after that whitespace, their
        # probabilities summed — a label's own leading space (CHBench's " 1", written for the
        # completion after "Action:") included (fuzz 17 A D1: " 1" was looked up as is)
        bare: dict[str, float] = {}
        for tok, lp in top.items():
            key = tok.lstrip()
            if key:
                bare[key] = lp if key not in bare else float(np.logaddexp(bare[key], lp))
        return ScoreResult(logprobs=[(bare.get(c.lstrip(), float("-inf")) if c.strip() else top.get(c, float("-inf")))
                                     for c in req.continuations],
                           n_tokens=[1] * len(req.continuations), **usage)

    # -- generation -----------------------------------------------------------------------

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = await asyncio.gather(*(self._guard_generate(r) for r in requests))
        secrets = self._secrets()
        for r in results:
            r.redact(secrets)  # a server echoing the Authorization header in its reply
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
        chat = self.endpoint == "chat" or req.chat or bool(req.messages)
        if chat and is_reasoning_family(self.model):
            # the o-series and gpt-5 refuse max_tokens (max_completion_tokens: the reasoning's tokens
            # and the answer's) and any temperature but their own: sampled as the model samples
            body: dict[str, Any] = {"model": self.model, "max_completion_tokens": req.max_tokens}
        else:
            body = {"model": self.model, "max_tokens": req.max_tokens, "temperature": req.temperature}
        if chat:
            if req.messages:  # the whole conversation
                messages = [{"role": role, "content": content} for role, content in req.messages]
            else:
                messages = [{"role": "system", "content": req.system}] if req.system else []
                messages.append({"role": "user", "content": req.prompt})
            body["messages"] = messages
            if self.reasoning_effort is not None:
                body["reasoning_effort"] = self.reasoning_effort
            path = "chat/completions"
        else:
            body["prompt"] = f"{req.system}\n\n{req.prompt}" if req.system else req.prompt
            path = "completions"
        if req.stop:
            body["stop"] = list(req.stop)
        if req.seed is not None:
            body["seed"] = req.seed
        if self._send_repeat_penalty and self.repeat_penalty is not None:
            body["repeat_penalty"] = self.repeat_penalty
        out = await self._post(path, body)
        if not out.ok and "repeat_penalty" in body and out.status in (400, 422) \
                and "repeat_penalty" in (out.error or ""):
            # a server that refuses fields it does not know: without it from now on
            self._send_repeat_penalty = False
            log.warning("%s: the server rejects repeat_penalty (%s); not sending it again", self.spec, out.error)
            del body["repeat_penalty"]
            self.usage.extra["retries"] += 1
            out = await self._post(path, body)
        if not out.ok:
            return GenerateResult(text=None, error=out.error)
        data = out.data
        rendered = server_prompt(data) if chat else None
        reasoning = None
        try:
            choice = first_choice(data)
            if chat:
                message = choice.get("message")
                if not isinstance(message, dict):
                    raise Malformed("malformed response: choice has no message")
                # DeepSeek's and vLLM's reasoning parsers: the thinking beside the answer
                for key in ("reasoning_content", "reasoning"):
                    if message.get(key) not in (None, "", [], {}):
                        reasoning = _as_text(message[key])  # (a list or an object is kept as its text, not dropped)
                        break
                text = message.get("content")
                if isinstance(text, list):  # content parts (Magistral: thinking parts beside text parts)
                    text, thought = _content_parts(text)
                    if thought:
                        reasoning = thought if reasoning is None else f"{reasoning}\n\n{thought}"
                refusal = message.get("refusal")
                said = bool(refusal) and not (isinstance(refusal, str) and not refusal.strip())  # (false, 0, [], " ": none)
                if said and not (isinstance(text, str) and text.strip()):
                    raise Malformed(f"response has no text content (refusal: {_as_text(refusal)[:200]})")
                if said:  # (beside text too: a reply the reader does not wholly take is not the model's answer)
                    raise Malformed(f"invalid reply: a refusal beside the text ({_as_text(refusal)[:200]})")
                calls = message.get("tool_calls") or message.get("function_call")
                if calls:  # (a tool call beside the text: the answer is not all in the text)
                    raise Malformed("invalid reply: the message holds a tool call, which is not read (its text is)")
                if text is None and reasoning is not None:
                    text = ""  # all reasoning, no answer (cut by the token limit): a parse failure
                if text is None:
                    refusal = message.get("refusal")
                    raise Malformed(f"response has no text content{f' (refusal: {refusal})' if refusal else ''}")
            else:
                text = choice.get("text")
            if not isinstance(text, str):
                raise Malformed("malformed response: choice has no text")
        except Malformed as e:
            return GenerateResult(text=None, error=self._redact(str(e)[:300]), rendered=rendered, **usage_of(data))
        finish = choice.get("finish_reason")
        return GenerateResult(text=text, **usage_of(data),
                              finish_reason=finish if isinstance(finish, str) else None, rendered=rendered,
                              reasoning=reasoning, tokens_reasoning=reasoning_tokens(data))
