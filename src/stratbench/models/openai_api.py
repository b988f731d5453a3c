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
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import math
import os
import random
import re
import time
import unicodedata
import zlib
from pathlib import Path
from typing import Any, Protocol, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    Message,
    ScoreRequest,
    ScoreResult,
    reported_count,
)
from stratbench.models.labels import LOGPROB_MAX
from stratbench.models.providers import HTTP_PROVIDERS, read_key
from stratbench.models.retry import BodyTimeout, ResponseTooLarge, RetryOutcome, RetryPolicy, request_with_retries
from stratbench.models.templates import bounded_formatter, probe
from stratbench.redact import is_redacted_url, redact_known, redact_text, redact_url, secret_forms

log = logging.getLogger(__name__)

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


class _BadLogprob(_Malformed):
    """A log-probability in a response that no probability has: NaN, infinite, or above 0 by more
    than rounding (`labels.LOGPROB_MAX`). The call is an error, never scored otherwise."""


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
            raise bad(f"port {port.group(1)!r} is not a number")
        if not 1 <= int(port.group(1)) <= 65535:
            raise bad(f"port {int(port.group(1))} is outside 1-65535")
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
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as e:
        raise bad(f"not a valid URL ({e})") from None


def _strip_userinfo(url: str) -> str:
    """`url` without its userinfo (``user:password@``); the host as written."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
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


class Tokenizer(Protocol):
    """The server's tokenizer, known here (for the top-k walk): token ids of a text as the server
    splits a completions prompt (special-token texts parsed, no BOS), and a token's text as the
    server names it in its top-k log-probs."""

    def tokenize(self, text: str) -> list[int]: ...

    def piece(self, token: int) -> str: ...


class _GGUFTokenizer:
    """llama.cpp's tokenizer of a GGUF (a vocabulary-only `llama_cpp.Llama`): what llama.cpp's and
    llama-cpp-python's servers use for that file."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._pieces: dict[int, str] = {}

    def tokenize(self, text: str) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def piece(self, token: int) -> str:
        # as llama-cpp-python's server writes top-k keys: detokenize([id]) without special texts
        if token not in self._pieces:
            self._pieces[token] = self._llm.detokenize([token]).decode("utf-8", errors="ignore")
        return self._pieces[token]


_TEMPLATE_VARS = re.compile(r"\b(bos_token|eos_token)\b")


def _token_text(value: Any) -> str:
    """tokenizer_config.json's bos_token / eos_token: a string, an AddedToken dict, or null."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


class ChatTemplate:
    """A model's chat template, held by the client to render conversations exactly as the
    server's chat route would (see the module docstring), and — from a GGUF — its tokenizer.

    `load(path)`: a GGUF file (template from ``tokenizer.chat_template``, BOS/EOS texts and
    ``add_bos_token`` from its vocabulary, rendered as `stratbench.models.llama` renders it
    locally, and the tokenizer); a tokenizer_config.json (``chat_template``, a string or the
    "default" of a list, else a chat_template.jinja beside it; ``bos_token``, ``eos_token``,
    ``add_bos_token``); a .jinja file (with the BOS/EOS texts of a tokenizer_config.json beside
    it, if any); or a folder holding those."""

    def __init__(self, formatter: Any, *, bos_token: str, add_bos: bool | None, source: str,
                 digest: str, tokenizer: Tokenizer | None = None) -> None:
        self._formatter = formatter  # None: a GGUF without a template (tokenizer only)
        self.bos_token = bos_token
        self.add_bos = add_bos  # does the server add a BOS to a completions prompt (None: unknown)
        self.source = source
        self.digest = digest
        self.tokenizer = tokenizer

    @property
    def has_template(self) -> bool:
        return self._formatter is not None

    def describe(self) -> str:
        return f"{self.source}:sha256:{self.digest[:16]}"

    def render(self, messages: Sequence[Message]) -> tuple[str, str]:
        """(the rendered conversation with the assistant's turn opened, the text to send to the
        completions endpoint). ValueError when the template fails or cannot be reproduced."""
        if self._formatter is None:
            raise ValueError(f"{self.source} has no chat template")
        try:
            res = self._formatter(messages=[{"role": r, "content": c} for r, c in messages])
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - a template error (jinja2) is this request's failure
            raise ValueError(f"chat template: {type(e).__name__}: {e}") from None
        text = str(res.prompt)
        if not getattr(res, "added_special", False):
            # a built-in format: the chat route adds a BOS exactly when a completions prompt gets one
            return text, text
        # the template wrote its special tokens: the chat route adds no BOS, the completions
        # endpoint adds one when the vocabulary says so
        if self.add_bos is not False and self.bos_token and text.startswith(self.bos_token):
            return text, text[len(self.bos_token):]
        if self.add_bos:
            raise ValueError(f"chat template of {self.source}: the server adds a BOS to a completions "
                             "prompt that its chat route would not have (the template writes none)")
        return text, text

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "ChatTemplate":
        """The template of `path` (see the class docstring), checked: a file is what its name says
        (a .gguf begins with the GGUF magic bytes, a .json is JSON), a template is not empty and
        renders a conversation with every message's content in it (`templates.probe`). Any
        problem is one InputError line, before a run starts."""
        if not str(path).strip():
            raise InputError("--chat-template: give a file (the model's GGUF, tokenizer_config.json or .jinja); "
                             "an empty path names none")
        p = Path(path).expanduser()
        if p.is_dir():
            for name in ("tokenizer_config.json", "chat_template.jinja"):
                if (p / name).is_file():
                    p = p / name
                    break
            else:
                raise InputError(f"--chat-template {p}: no tokenizer_config.json or chat_template.jinja there")
        if not p.is_file():
            if p.is_symlink() and not p.exists():
                raise InputError(f"--chat-template {p}: a symbolic link to nothing (or a loop of links)")
            raise InputError(f"--chat-template {p}: " + ("not a regular file" if p.exists() else "no such file"))
        try:
            with p.open("rb") as f:
                magic = f.read(4)
        except OSError as e:
            raise InputError(f"--chat-template {p}: {e}") from None
        if magic == b"GGUF":
            template = cls._from_gguf(p)
        elif p.suffix.lower() == ".gguf":
            raise InputError(f"--chat-template {p}: not a GGUF file (it does not begin with the GGUF magic "
                             "bytes); a template file is a .jinja or a tokenizer_config.json")
        else:
            template = cls._from_text(p)
        if template.has_template:
            why = probe(lambda messages: template.render(messages)[0])
            if why is not None:
                raise InputError(f"--chat-template {p}: not a usable chat template: {why}")
        return template

    @classmethod
    def _from_text(cls, p: Path) -> "ChatTemplate":
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"--chat-template {p}: cannot read it ({e})") from None
        if p.suffix.lower() == ".json":
            return cls._from_tokenizer_config(p, text)
        if not text.strip():
            raise InputError(f"--chat-template {p}: empty template")
        config = p.parent / "tokenizer_config.json"
        if config.is_file():
            try:
                conf = json.loads(config.read_text(encoding="utf-8"))
            except RecursionError:
                raise InputError(f"--chat-template {config}: not a tokenizer_config.json (nested too deeply)") from None
            except (OSError, ValueError) as e:
                raise InputError(f"--chat-template {config}: not a JSON file ({e})") from None
            return cls._jinja(text, conf if isinstance(conf, dict) else {}, p.name, p)
        if _TEMPLATE_VARS.search(text):
            raise InputError(f"--chat-template {p}: the template uses bos_token/eos_token, which a .jinja "
                             "file alone does not give; pass the model's tokenizer_config.json or GGUF")
        return cls._jinja(text, {}, p.name, p)

    @classmethod
    def _from_tokenizer_config(cls, p: Path, text: str) -> "ChatTemplate":
        try:
            conf = json.loads(text)
        except RecursionError:
            raise InputError(f"--chat-template {p}: not a tokenizer_config.json (nested too deeply)") from None
        except ValueError as e:
            raise InputError(f"--chat-template {p}: not a JSON file ({e})") from None
        if not isinstance(conf, dict):
            raise InputError(f"--chat-template {p}: not a tokenizer_config.json (not an object)")
        template = conf.get("chat_template")
        if isinstance(template, list):  # [{"name": ..., "template": ...}]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default", next(iter(named.values()), None))
        if template is None:
            beside = p.parent / "chat_template.jinja"
            if beside.is_file():
                try:
                    template = beside.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as e:
                    raise InputError(f"--chat-template {beside}: cannot read it ({e})") from None
        if not isinstance(template, str) or not template.strip():
            raise InputError(f"--chat-template {p}: no chat_template in it (nor a chat_template.jinja beside it)")
        return cls._jinja(template, conf, p.name, p)

    @classmethod
    def _jinja(cls, template: str, conf: dict[str, Any], source: str, path: Path) -> "ChatTemplate":
        """`source` (the file's name) is the template's identity (`describe`, cache keys); `path`
        names it in messages, as every other --chat-template message does."""
        bos, eos = _token_text(conf.get("bos_token")), _token_text(conf.get("eos_token"))
        add_bos = conf.get("add_bos_token")
        add_bos = add_bos if isinstance(add_bos, bool) else None
        try:
            formatter = bounded_formatter(template, eos_token=eos, bos_token=bos)
        except ImportError:
            raise InputError(f"--chat-template {path}: rendering a template needs llama-cpp-python") from None
        except Exception as e:  # noqa: BLE001 - jinja2's TemplateSyntaxError and kin
            raise InputError(f"--chat-template {path}: not a valid template ({type(e).__name__}: {e})") from None
        digest = hashlib.sha256(json.dumps(["jinja", template, bos, eos, add_bos]).encode()).hexdigest()
        return cls(formatter, bos_token=bos, add_bos=add_bos, source=source, digest=digest)

    @classmethod
    def _from_gguf(cls, p: Path) -> "ChatTemplate":
        try:
            import llama_cpp

            from stratbench.models.llama import _chat_formatter, _silence_llama_log, open_llama
        except ImportError:
            raise InputError(f"--chat-template {p}: reading a GGUF needs llama-cpp-python") from None
        _silence_llama_log(llama_cpp)
        llm = open_llama(llama_cpp, f"--chat-template {p}: cannot read the GGUF",
                         model_path=str(p), vocab_only=True, verbose=False)
        template = (llm.metadata or {}).get("tokenizer.chat_template") or ""
        formatter = _chat_formatter(llm) if template else None
        if template and formatter is None:
            raise InputError(f"--chat-template {p}: llama-cpp-python renders this template as its "
                             f"{llm.chat_format!r} format, which this client does not reproduce")
        bos_id = llm.token_bos()
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        # llama-cpp-python's completions add [CLS or BOS] when the vocabulary adds a BOS
        add_bos = bool(llm._model.add_bos_token()) and bos_id != -1
        digest = hashlib.sha256(json.dumps(["gguf", template, llm.chat_format, bos, add_bos,
                                            llm.n_vocab()]).encode()).hexdigest()
        return cls(formatter, bos_token=bos, add_bos=add_bos, source=p.name, digest=digest,
                   tokenizer=_GGUFTokenizer(llm))


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
    supports_chat = True  # a chat endpoint takes conversations (the server applies its template)

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
        self._basic = _Secret(None)
        if parts.username or parts.password:
            self._basic = _Secret(f"{unquote(parts.username or '')}:{unquote(parts.password or '')}")
        self.base_url = _strip_userinfo(url).rstrip("/")
        self.max_response_bytes = max_response_bytes_setting() if max_response_bytes is None else max_response_bytes
        if isinstance(self.max_response_bytes, bool) or not isinstance(self.max_response_bytes, int) \
                or self.max_response_bytes < 1:
            raise InputError(f"{self.spec}: max_response_bytes must be a positive integer")
        if endpoint not in ENDPOINTS:
            raise InputError(f"{self.spec}: endpoint must be 'completions' or 'chat', got {endpoint!r}")
        self.endpoint = endpoint
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

        env = api_key_env or default_env
        self.api_key_env = env
        key = read_key(env, self.spec)
        from stratbench.models.costs import planning

        if key is None and (key_required or api_key_env is not None) and not planning():  # (a dry run: no request)
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
                             "model": self.model, "base_url": self._redact(_strip_userinfo(self.base_url)),
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
        if scoring and self.chat_template is not None and not self.chat_template.has_template:
            raise InputError(f"{self.spec}: {self._no_template()}, or use --policy sample")
        super().check_chat(scoring)

    def __repr__(self) -> str:
        return (f"OpenAICompatibleModel(spec={self.spec!r}, base_url={_strip_userinfo(self.base_url)!r}, "
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
                transport=_ShardedTransport(self.max_concurrency),
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
                            content = await _read_capped(response, self.max_response_bytes)
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
            tokens_in = _add_tokens(tokens_in, t_in)
            if err is not None and status not in (400, 422):
                return ScoreResult(logprobs=None, error=err, **_prompt_usage(tokens_in))
            if top is not None:
                paths = self._token_paths(prompt, todo) if self.multi_token_scoring == "topk-walk" else {}
                for c in todo:  # no tokenizer: a continuation that is one top-k token, by its text
                    if c not in paths and c in top:
                        scored[c] = (top[c], 1)
                if paths:
                    walked, t_in, err = await self._walk(prompt, paths, top)
                    tokens_in = _add_tokens(tokens_in, t_in)
                    if err is not None:
                        return ScoreResult(logprobs=None, error=err, **_prompt_usage(tokens_in))
                    scored.update(walked)
        rest = [c for c in todo if c not in scored]
        parts = dict(zip(rest, await asyncio.gather(*(self._score_continuation(prompt, c) for c in rest))))
        for p in parts.values():
            tokens_in = _add_tokens(tokens_in, p[2])
        for _, _, _, err in parts.values():
            if err is not None:
                return ScoreResult(logprobs=None, error=err, **_prompt_usage(tokens_in))
        scored.update({c: (lp, n) for c, (lp, n, _, _) in parts.items()})
        return ScoreResult(logprobs=[scored[c][0] for c in continuations],
                           n_tokens=[scored[c][1] for c in continuations], **_prompt_usage(tokens_in))

    async def _next_token_top(self, prompt: str) -> tuple[dict[str, float] | None, int | None, str | None, int | None]:
        """(token text -> log-prob of the top-k after `prompt`, or None when the server does not
        give them; prompt tokens (None: not reported); error; HTTP status)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0,
                "logprobs": self.top_logprobs}
        out = await self._post("completions", body)
        if not out.ok:
            return None, 0, out.error, out.status
        try:
            top = _completion_top_logprobs(out.data)
        except _BadLogprob as e:  # a broken answer is the call's error, never bypassed by an echo
            return None, _usage_int(out.data, "prompt_tokens"), self._redact(str(e)), out.status
        except _Malformed:
            top = None  # echo scoring instead
        return top, _usage_int(out.data, "prompt_tokens"), None, out.status

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
                tokens_in = _add_tokens(tokens_in, t_in)
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
        usage = _prompt_usage(_usage_int(out.data, "prompt_tokens"))
        try:
            top = _chat_top_logprobs(out.data)
        except _Malformed as e:
            return ScoreResult(logprobs=None, error=self._redact(str(e)), **usage)
        return ScoreResult(logprobs=[top.get(c, float("-inf")) for c in req.continuations],
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
        if chat and _is_reasoning_family(self.model):
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
        rendered = _server_prompt(data) if chat else None
        reasoning = None
        try:
            choice = _first_choice(data)
            if chat:
                message = choice.get("message")
                if not isinstance(message, dict):
                    raise _Malformed("malformed response: choice has no message")
                # DeepSeek's and vLLM's reasoning parsers: the thinking beside the answer
                for key in ("reasoning_content", "reasoning"):
                    if isinstance(message.get(key), str) and message[key]:
                        reasoning = message[key]
                        break
                text = message.get("content")
                if text is None and reasoning is not None:
                    text = ""  # all reasoning, no answer (cut by the token limit): a parse failure
                if text is None:
                    refusal = message.get("refusal")
                    raise _Malformed(f"response has no text content{f' (refusal: {refusal})' if refusal else ''}")
            else:
                text = choice.get("text")
            if not isinstance(text, str):
                raise _Malformed("malformed response: choice has no text")
        except _Malformed as e:
            return GenerateResult(text=None, error=self._redact(str(e)[:300]), rendered=rendered, **_usage(data))
        finish = choice.get("finish_reason")
        return GenerateResult(text=text, **_usage(data),
                              finish_reason=finish if isinstance(finish, str) else None, rendered=rendered,
                              reasoning=reasoning, tokens_reasoning=_reasoning_tokens(data))


def _is_reasoning_family(model: str) -> bool:
    """OpenAI's reasoning models (o1, o1-mini, o3, o4-mini, gpt-5 …), which take
    ``max_completion_tokens`` and no sampling parameters of their own choosing."""
    name = model.lower().rsplit("/", 1)[-1]
    return re.match(r"^(o\d+(-|$)|gpt-5)", name) is not None


def _reasoning_tokens(data: Any) -> int | None:
    """``usage.completion_tokens_details.reasoning_tokens`` (OpenAI, DeepSeek), when reported."""
    usage = data.get("usage") if isinstance(data, dict) else None
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# -- response parsing (pure functions) ------------------------------------------------------


def _usage_int(data: Any, key: str) -> int | None:
    """``usage[key]`` of a reply, checked (`models.base.reported_count`); None when absent or no
    count: the request's usage is unknown."""
    usage = data.get("usage") if isinstance(data, dict) else None
    return reported_count(usage.get(key) if isinstance(usage, dict) else None)


def _add_tokens(total: int | None, more: int | None) -> int | None:
    """Prompt tokens of a call's requests together: unknown (None) once one request's is."""
    return None if total is None or more is None else total + more


def _prompt_usage(tokens_in: int | None) -> dict[str, Any]:
    """A scored call's usage fields: its prompt tokens, or none known."""
    return {"tokens_in": tokens_in or 0, "usage_unknown": tokens_in is None}


def _usage(data: Any) -> dict[str, Any]:
    """A generation's usage fields: its prompt and reply tokens, or unknown when either is not
    reported as a count."""
    t_in, t_out = _usage_int(data, "prompt_tokens"), _usage_int(data, "completion_tokens")
    return {"tokens_in": t_in or 0, "tokens_out": t_out or 0, "usage_unknown": t_in is None or t_out is None}


def _server_prompt(data: Any) -> str | None:
    """The prompt as the server rendered it, when it says: a top-level string ``prompt``, or
    llama.cpp's server's ``__verbose.prompt`` (when started with --verbose)."""
    if not isinstance(data, dict):
        return None
    for where in (data, data.get("__verbose")):
        if isinstance(where, dict) and isinstance(where.get("prompt"), str):
            return str(where["prompt"])
    return None


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
    if not _offsets_index(tokens, offsets, full):
        # offsets that skip special tokens (llama-cpp-python): the continuation's tokens are the
        # last ones before the generated ones
        generated = _usage_int(data, "completion_tokens")
        if generated is None or generated > len(tokens):
            raise _Malformed("echoed token offsets do not match the prompt")
        return _echo_suffix_logprob(tokens[: len(tokens) - generated], token_lps, full[prompt_len:])
    return _tiled_logprob(tokens, token_lps, offsets, prompt_len, full)


def _tiled_logprob(tokens: list[Any], token_lps: list[Any], offsets: list[Any], prompt_len: int,
                   full: str) -> tuple[float, int]:
    """The summed log-prob of the echoed tokens that spell ``full[prompt_len:]``, which must tile
    it exactly once: the first starts at `prompt_len`, each next one where the one before ends,
    none repeated, none going back, none left out, the last ending at ``len(full)`` (where the
    generated token, if any, starts). A token holding U+FFFD (part of a character) ends where the
    next begins. Anything else is a malformed reply — never a label counted twice or scored by a
    part of it."""
    full_len = len(full)
    total, n = 0.0, 0
    pos: int | None = None  # where the next continuation token must start (None: not started)
    loose = False  # the token before held U+FFFD: its length in characters is not known
    for tok, tok_lp, off in zip(tokens, token_lps, offsets):
        if not isinstance(off, int) or isinstance(off, bool):
            raise _Malformed("malformed response: bad text_offset")
        if pos is None:
            if off < prompt_len:
                continue
            if off >= full_len:
                break  # nothing of the continuation (named below)
            if off != prompt_len:
                raise _Malformed("continuation does not start at a token boundary")
            pos = prompt_len
        if off >= full_len and (pos == full_len or loose):
            break  # the generated token (max_tokens=1), ignored
        if loose and pos <= off < full_len:
            pos = off
        if off != pos:
            why = (f"a token at offset {off}, before the end of the one before it ({pos}): a repeated or earlier "
                   "offset" if off < pos else f"no token covers offsets {pos} to {off - 1}")
            raise _Malformed(f"the echoed tokens do not spell the continuation exactly once ({why})")
        if not isinstance(tok, str) or not tok:
            raise _Malformed("malformed response: a continuation token is not a text")
        total += _logprob(tok_lp, "a continuation token")
        n += 1
        loose = "\ufffd" in tok
        pos = off if loose else off + len(tok)
        if pos > full_len:
            raise _Malformed("a token runs past the end of the continuation")
    if pos is None:
        # either a token covers the boundary and the whole continuation, or nothing was echoed
        if any(isinstance(o, int) and o < prompt_len for o in offsets):
            raise _Malformed("continuation does not start at a token boundary")
        raise _Malformed("server did not echo the continuation's tokens (echo=true unsupported?)")
    if pos != full_len and not loose:
        raise _Malformed(f"the echoed tokens do not spell the continuation exactly once (they end at offset "
                         f"{pos}, the continuation at {full_len})")
    return total, n


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _logprob(x: Any, what: str) -> float:
    """A log-probability the server returned for `what`, checked: _Malformed when there is none
    (null, not a number), _BadLogprob when it is no log-probability (NaN, infinite, above 0)."""
    if not _is_number(x):
        raise _Malformed(f"server returned no log-prob for {what}")
    value = float(x)
    if not math.isfinite(value) or value > LOGPROB_MAX:
        raise _BadLogprob(f"server returned the log-probability {value!r} for {what}: not a probability "
                          "(a log-probability is finite and at most 0)")
    return value


def _offsets_index(tokens: list[Any], offsets: list[Any], full: str) -> bool:
    """Whether the echoed offsets index `full` (each token's text is found at its offset)."""
    for tok, off in zip(tokens, offsets):
        if not isinstance(off, int) or not isinstance(tok, str):
            continue
        if off >= len(full) or not tok or "\ufffd" in tok:
            continue
        if not full.startswith(tok, off):
            return False
    return True


def _echo_suffix_logprob(tokens: list[Any], token_lps: list[Any], cont: str) -> tuple[float, int]:
    """The last prompt tokens, which must spell `cont` exactly."""
    spelled, total, n = "", 0.0, 0
    for i in range(len(tokens) - 1, -1, -1):
        if len(spelled) >= len(cont):
            break
        tok = tokens[i]
        if not isinstance(tok, str):
            raise _Malformed("malformed response: a token is not a string")
        spelled, total, n = tok + spelled, total + _logprob(token_lps[i], "a continuation token"), n + 1
    if spelled == cont and n:
        return total, n
    if len(spelled) > len(cont) and spelled.endswith(cont):
        raise _Malformed("continuation does not start at a token boundary")
    raise _Malformed("the echoed tokens do not spell the continuation")


def _completion_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position of a completions response."""
    lp = _first_choice(data).get("logprobs")
    top = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if not isinstance(top, list) or not top or not isinstance(top[0], dict):
        raise _Malformed("completion response has no top_logprobs")
    out: dict[str, float] = {}
    for tok, value in top[0].items():
        if isinstance(tok, str) and _is_number(value):
            out[tok] = _logprob(value, f"the top-k token {tok!r}")
    return out


def _chat_top_logprobs(data: Any) -> dict[str, float]:
    """token text -> log-prob at the first generated position (duplicates combined)."""
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise _Malformed("chat response has no logprobs (the server may not support logprobs)")
    first = content[0]
    entries = first.get("top_logprobs")
    if not isinstance(entries, list) or not entries:
        raise _Malformed("chat response has no top_logprobs")
    out: dict[str, float] = {}
    for i, e in enumerate(entries):
        # an entry that cannot be read makes the reply malformed: skipping it would read its token
        # as outside the top-20 (probability 0), which the server never said
        if not isinstance(e, dict) or not isinstance(e.get("token"), str):
            raise _Malformed(f"malformed response: top_logprobs entry {i} has no token text")
        value = e.get("logprob")
        if not _is_number(value):
            raise _Malformed(f"malformed response: top_logprobs entry {i} ({e['token'][:40]!r}) has no "
                             "numeric logprob")
        tok = e["token"]
        lp = _logprob(value, f"the top-k token {tok!r}")
        out[tok] = lp if tok not in out else _logprob(_logaddexp(out[tok], lp), f"the top-k token {tok!r} (its entries together)")
    return out


def _logaddexp(a: float, b: float) -> float:
    if a == float("-inf"):
        return b
    if b == float("-inf"):
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))
