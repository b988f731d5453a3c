"""A real HTTP server that speaks enough of the OpenAI API for tests and benchmarks.

It listens on 127.0.0.1 with an OS-assigned port, runs in a background thread (stdlib
`ThreadingHTTPServer`, one thread per connection, listen backlog 256) and serves

* ``POST /v1/completions``       model, prompt (string), max_tokens, temperature, logprobs (int),
                                 echo, stop, seed, n=1
* ``POST /v1/chat/completions``  model, messages, max_tokens / max_completion_tokens, temperature,
                                 logprobs (bool), top_logprobs (int), stop, seed
* ``GET  /v1/models``

The "model" is a deterministic character-level language model: every character is a token (unless
`multi_char_tokens` declares longer ones), and log P(next char | text) is a softmax of hashed scores
over a fixed alphabet (printable ASCII and newline) that depends on the last `CONTEXT_WINDOW`
characters only. Tests compute expected values independently of any HTTP with `expected_logprob`,
`expected_text_logprob`, `top_logprobs`, `greedy_completion` and `chat_context`.

Fault injection (per request, in this order of precedence): a script of faults consumed one per
request (`server.script(...)`), else with probability `fault_rate` a fault drawn from `fault_kinds`
with an RNG seeded by `fault_seed`. Faults are strings:

    "ok"            no fault (useful inside a script)
    "latency:MS"    add MS milliseconds, then answer normally
    "429" / "429:S" HTTP 429 with ``Retry-After: S`` (default 1)
    "500", "502", "503", "504", "400", "404", "422"   that status with an OpenAI-shaped error body
    "401"           401 whose message echoes the Authorization header, as OpenAI's does
    "drop"          close the connection without sending anything
    "partial"       200 headers with the full Content-Length, half the body, then close
    "truncate"      a complete 200 response whose JSON body is cut in half
    "nonsense"      a complete 200 response whose body is not JSON at all
    "deep"          a complete 200 response of JSON nested 200,000 deep (no parser reads it)
    "bad_shape"     a complete 200 response with valid JSON that has no ``choices``
    "garbage_text"  a valid completion whose text is junk (for parser tests; not a transport fault)
    "logprobs:V"    the normal answer with every log-prob in it set to V (e.g. "logprobs:3.5",
                    "logprobs:nan", "logprobs:inf"; digits alone are sent as a JSON integer, of
                    any length): a server whose numbers are no probabilities
    "huge:N"        a complete 200 response of N bytes of valid JSON (one long text), streamed
    "trickle" / "trickle:S"  the normal answer (200, its full Content-Length), written one byte
                    every S seconds (default 1): a slow server that no per-read timeout catches
    "echo_auth"     the normal answer with the request's Authorization header (and basic
                    credentials decoded) added to its text, finish_reason and reasoning: a server
                    that echoes what it was sent in a successful reply
    "usage:JSON"    the normal answer with its ``usage`` replaced by JSON (``usage:null`` leaves it
                    out; ``usage:{"prompt_tokens": -5}``): a server whose token counts are none
    "gzip" / "deflate"      the normal answer, compressed (Content-Encoding: gzip / deflate)
    "gzip:N" / "deflate:N"  a compressed body that expands to N bytes of valid JSON (a "zip bomb")

Every request is recorded (`server.requests`: path, method, JSON body, headers, fault) and
`server.max_in_flight` is the largest number of requests handled at once.

Options that imitate particular servers (all off by default):

* `reasoning_content`: chat replies carry this text as ``message.reasoning_content`` and its
  tokens as ``usage.completion_tokens_details.reasoning_tokens`` (DeepSeek's reasoner, vLLM's
  reasoning parsers); a `canned_text` with ``<think>…</think>`` imitates an open reasoning model
  without one, and a small max_tokens cuts it inside its thinking;
* `reasoning_rules`: for models named like OpenAI's reasoning models (o1…, gpt-5…) a chat request
  with ``max_tokens`` or a temperature other than 1 is a 400, as OpenAI answers;

* `special_tokens`: texts tokenised as one token each that an echo shows as "" with text offsets
  counted in the text without them, and `echo_skips`: special tokens left out of an echo
  altogether — as llama-cpp-python's server does (it detokenises without special tokens and
  drops every token whose id is the BOS id, e.g. SmolLM2's ``<|im_start|>``);
* `strict_fields`: a request with a field the OpenAI API does not define is a 400 naming it, as
  OpenAI's API answers ("Unrecognized request argument supplied: repeat_penalty");
* `report_prompt`: chat responses carry the rendered prompt (top-level ``prompt``);
* `port`: listen on this port (0: any free one), e.g. to restart a server where it was;
* `next_token`: a planted model for completions requests without echo (a scorer's top-k next-token
  request): ``next_token(model, prompt)`` returns ``{token: logprob}`` — the first generated
  token's top log-probabilities, its most likely token the text — or None for the fake model's own
  answer (tests/workflows/test_trend.py plants a skill that grows with the model name this way);
* `planted_text`: the same for completions requests that generate (no echo, no log-probs: a sampled
  answer): ``planted_text(model, prompt)`` returns the text (finish_reason "stop") or None.

Usage::

    with FakeOpenAIServer(canned_text="Action: 2") as server:
        model = OpenAICompatibleModel("openai-compatible", "fake", base_url=server.base_url)

or the `fake_openai_server` pytest fixture (import it into a test module).
"""

from __future__ import annotations

import base64
import collections
import functools
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable, Sequence

ALPHABET: tuple[str, ...] = tuple(chr(c) for c in range(32, 127)) + ("\n",)
_INDEX = {c: i for i, c in enumerate(ALPHABET)}
CONTEXT_WINDOW = 8  # the fake model looks at the last 8 characters only
OOV_LOGPROB = -20.0  # log-prob of any character outside ALPHABET (not normalised; it is a fake)
SCORE_SCALE = 8.0


# --------------------------------------------------------------------------------------------
# The deterministic "model" (pure functions, usable by tests without any server)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def _distribution(window: str) -> tuple[float, ...]:
    """Log-probabilities over ALPHABET after a context whose last CONTEXT_WINDOW chars are `window`."""
    digest = hashlib.blake2b(window.encode("utf-8"), digest_size=8).digest()
    rng = random.Random(int.from_bytes(digest, "big"))
    scores = [SCORE_SCALE * rng.random() for _ in ALPHABET]
    top = max(scores)
    log_z = top + math.log(sum(math.exp(s - top) for s in scores))
    return tuple(s - log_z for s in scores)


def _window(context: str) -> str:
    return context[-CONTEXT_WINDOW:] if CONTEXT_WINDOW else ""


def expected_logprob(context: str, next_char: str) -> float:
    """log P(next_char | context) under the fake model (one character)."""
    if len(next_char) != 1:
        raise ValueError("expected_logprob takes one character; use expected_text_logprob")
    i = _INDEX.get(next_char)
    if i is None:
        return OOV_LOGPROB
    return _distribution(_window(context))[i]


def expected_text_logprob(context: str, text: str) -> float:
    """log P(text | context): the sum over its characters (independent of tokenisation)."""
    return sum(expected_logprob(context + text[:i], c) for i, c in enumerate(text))


def top_logprobs(context: str, k: int) -> list[tuple[str, float]]:
    """The k most likely next characters with their log-probs, best first (ties: alphabet order)."""
    dist = _distribution(_window(context))
    order = sorted(range(len(ALPHABET)), key=lambda i: (-dist[i], i))
    return [(ALPHABET[i], dist[i]) for i in order[: max(0, k)]]


def greedy_completion(context: str, max_tokens: int, stop: Sequence[str] = ()) -> tuple[str, str]:
    """(text, finish_reason) of greedy (temperature 0) generation, as the server does it."""
    return _generate(context, max_tokens, 0.0, None, list(stop), multi_char_tokens=())


def chat_context(messages: Sequence[dict]) -> str:
    """The text the fake chat "template" turns messages into; generation continues after it."""
    parts = [f"<|{m.get('role', 'user')}|>{_content_text(m.get('content'))}\n" for m in messages]
    return "".join(parts) + "<|assistant|>"


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def tokenize(text: str, multi_char_tokens: Iterable[str] = ()) -> list[str]:
    """Greedy longest-match over `multi_char_tokens`, otherwise one character per token."""
    multi = sorted({t for t in multi_char_tokens if len(t) > 1}, key=len, reverse=True)
    out: list[str] = []
    i = 0
    while i < len(text):
        for t in multi:
            if text.startswith(t, i):
                out.append(t)
                i += len(t)
                break
        else:
            out.append(text[i])
            i += 1
    return out


def _sample_rng(seed: Any, context: str) -> random.Random:
    digest = hashlib.blake2b(f"{seed!r}\x00{context}".encode("utf-8"), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def _next_char(context: str, temperature: float, rng: random.Random | None) -> str:
    dist = _distribution(_window(context))
    if temperature <= 0 or rng is None:
        return ALPHABET[max(range(len(ALPHABET)), key=lambda i: (dist[i], -i))]
    weights = [math.exp(lp / temperature) for lp in dist]
    return rng.choices(ALPHABET, weights=weights, k=1)[0]


def _apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    cut = min((text.find(s) for s in stop if s and s in text), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def _generate(context: str, max_tokens: int, temperature: float, seed: Any, stop: list[str],
              multi_char_tokens: Sequence[str], canned: str | None = None) -> tuple[str, str]:
    if canned is not None:
        toks = tokenize(canned, multi_char_tokens)
        text = "".join(toks[:max_tokens])
        text, stopped = _apply_stop(text, stop)
        return text, "stop" if stopped or len(toks) <= max_tokens else "length"
    rng = _sample_rng(seed, context) if temperature > 0 else None
    out = ""
    for _ in range(max_tokens):
        out += _next_char(context + out, temperature, rng)
        out, stopped = _apply_stop(out, stop)
        if stopped:
            return out, "stop"
    return out, "length"


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (None if absent or unparseable)
    fault: str | None
    time: float = field(default_factory=time.monotonic)


class FakeServerError(Exception):
    def __init__(self, status: int, message: str, err_type: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.err_type = status, message, err_type


_ERROR_STATUSES = {"400", "404", "422", "500", "502", "503", "504"}
# request fields of the OpenAI API (strict_fields rejects any other)
OPENAI_FIELDS = frozenset({
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n",
    "stream", "stream_options", "logprobs", "top_logprobs", "echo", "stop", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "user", "suffix", "best_of", "response_format", "tools",
    "tool_choice", "parallel_tool_calls", "service_tier", "store", "metadata", "reasoning_effort"})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers
    disable_nagle_algorithm = True  # no 40 ms Nagle / delayed-ACK stalls per response
    server: "_HTTPServer"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    # -- plumbing -------------------------------------------------------------------------

    def _send(self, status: int, payload: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None, content_length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload) if content_length is None else content_length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self._headers_buffer.append(b"\r\n")  # end_headers, with the body in the same write
        self._headers_buffer.append(payload)
        self.flush_headers()

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers=headers)

    def _send_error(self, status: int, message: str, err_type: str = "invalid_request_error",
                    headers: dict[str, str] | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": err_type, "code": status}}, headers)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                bad_json = True
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = owner._next_fault() if self.path.startswith("/v1/") and method == "POST" else None
        owner._record(RecordedRequest(method, self.path, headers, body, fault))
        owner._maybe_hold(raw)
        owner._enter()
        try:
            delay_ms = owner.latency_ms
            if fault and fault.startswith("latency:"):
                delay_ms += float(fault.split(":", 1)[1])
            if delay_ms > 0:
                time.sleep(delay_ms / 1000.0)
            if bad_json:
                return self._send_error(400, "request body is not valid JSON")
            if owner.require_api_key is not None:
                auth = headers.get("authorization", "")
                if auth != f"Bearer {owner.require_api_key}":
                    given = auth[len("Bearer "):] if auth.startswith("Bearer ") else auth
                    return self._send_error(401, f"Incorrect API key provided: {given}.",
                                            "invalid_api_key")
            self._body = body  # for the faults that alter a normal answer
            if fault and not fault.startswith("latency:") and fault != "ok":
                if self._apply_fault(fault, method):
                    return
            self._route(method, body, garbage=(fault == "garbage_text"))
        except FakeServerError as e:
            self._send_error(e.status, e.message, e.err_type)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            owner._exit()

    def _apply_fault(self, fault: str, method: str) -> bool:
        """Answer with the fault; False if the fault only alters a normal answer."""
        kind, _, arg = fault.partition(":")
        if kind == "429":
            self._send_error(429, "Rate limit reached; slow down.", "rate_limit_exceeded",
                             headers={"Retry-After": arg or "1"})
        elif kind == "401":
            auth = self.headers.get("Authorization", "")
            self._send_error(401, f"Incorrect API key provided: {auth}.", "invalid_api_key")
        elif kind in _ERROR_STATUSES:
            self._send_error(int(kind), f"injected HTTP {kind}", "server_error")
        elif kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif kind == "partial":
            payload = json.dumps({"choices": [{"text": "x" * 200}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif kind == "truncate":
            payload = json.dumps({"id": "cmpl-x", "choices": [{"text": "truncated", "index": 0}]}).encode()
            self._send(200, payload[: len(payload) // 2])
        elif kind == "nonsense":
            self._send(200, b"<html><body>502 upstream says hello</body></html>", "text/html")
        elif kind == "deep":
            self._send(200, b"[" * 200_000 + b"]" * 200_000)
        elif kind == "bad_shape":
            self._send_json(200, {"object": "text_completion", "result": "no choices here"})
        elif kind == "garbage_text":
            return False
        elif kind == "logprobs":
            self._send_json(200, _with_logprobs(self._normal_answer(), int(arg) if arg.lstrip("-").isdigit() else float(arg)))
        elif kind == "echo_auth":
            auth = self.headers.get("Authorization", "")
            leak = f" auth={auth}"
            if auth.startswith("Basic "):
                leak += " decoded=" + base64.b64decode(auth[6:]).decode("utf-8", "replace")
            answer = self._normal_answer()
            choice = answer["choices"][0]
            choice["finish_reason"] = f"stop{leak}"
            message = choice.get("message")
            if isinstance(message, dict):
                message["content"] = f"{message.get('content') or ''}{leak}"
                message["reasoning_content"] = f"thinking{leak}"
            else:
                choice["text"] = f"{choice.get('text') or ''}{leak}"
            self._send_json(200, answer)
        elif kind == "usage":
            answer, usage = self._normal_answer(), json.loads(arg)
            answer.pop("usage", None)
            self._send_json(200, answer if usage is None else {**answer, "usage": usage})
        elif kind == "huge":
            self._send_streamed(int(arg))
        elif kind == "trickle":
            self._send_trickled(json.dumps(self._normal_answer()).encode("utf-8"), float(arg or 1))
        elif kind in ("gzip", "deflate"):
            payload = (_compressed_json_of_size(kind, int(arg)) if arg else
                       _compress(kind, json.dumps(self._normal_answer()).encode("utf-8")))
            self._send(200, payload, headers={"Content-Encoding": kind})
        else:
            raise ValueError(f"unknown fault {fault!r}")
        return True

    def _normal_answer(self) -> Any:
        """What this request would be answered without a fault."""
        path = self.path.split("?", 1)[0].rstrip("/")
        owner = self.server.owner
        if path == "/v1/chat/completions":
            return owner._chat(self._body, False)
        return owner._completions(self._body, False)

    def _send_streamed(self, size: int) -> None:
        """A 200 response of `size` bytes of valid JSON, written a megabyte at a time (never held
        whole in memory here)."""
        head, tail = b'{"choices": [{"index": 0, "text": "', b'", "finish_reason": "length"}]}'
        fill = max(0, size - len(head) - len(tail))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + fill + len(tail)))
        self.end_headers()
        self.wfile.write(head)
        chunk = b"x" * (1 << 20)
        while fill > 0:
            self.wfile.write(chunk[:fill])
            fill -= min(fill, len(chunk))
        self.wfile.write(tail)
        self.wfile.flush()

    def _send_trickled(self, payload: bytes, every_s: float) -> None:
        """A 200 response with `payload`'s full Content-Length, its body written one byte every
        `every_s` seconds (until done or the client hangs up)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.flush()
        for i in range(len(payload)):
            time.sleep(every_s)
            self.wfile.write(payload[i:i + 1])
            self.wfile.flush()

    # -- endpoints ------------------------------------------------------------------------

    def _route(self, method: str, body: Any, garbage: bool) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            return self._send_json(200, {"object": "list", "data": [
                {"id": self.server.owner.model_name, "object": "model", "owned_by": "fake"}]})
        if method == "POST" and path == "/v1/completions":
            return self._send_json(200, self.server.owner._completions(body, garbage))
        if method == "POST" and path == "/v1/chat/completions":
            return self._send_json(200, self.server.owner._chat(body, garbage))
        raise FakeServerError(404, f"no route {method} {path}", "not_found")


def _with_logprobs(data: Any, value: float) -> Any:
    """`data` with every log-prob in it (completions and chat, chosen and top-k) set to `value`."""
    if isinstance(data, list):
        return [_with_logprobs(x, value) for x in data]
    if not isinstance(data, dict):
        return data
    out = {}
    for k, v in data.items():
        if k in ("token_logprobs",) and isinstance(v, list):
            out[k] = [None if x is None else value for x in v]
        elif k == "top_logprobs" and isinstance(v, list) and all(
                x is None or (isinstance(x, dict) and "token" not in x) for x in v):
            out[k] = [None if x is None else {t: value for t in x} for x in v]  # completions: [{token: lp}]
        elif k == "logprob" and isinstance(v, (int, float)):
            out[k] = value
        else:
            out[k] = _with_logprobs(v, value)
    return out


def _compress(kind: str, data: bytes) -> bytes:
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if kind == "gzip" else zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


@functools.lru_cache(maxsize=8)
def _compressed_json_of_size(kind: str, size: int) -> bytes:
    """A compressed body that expands to `size` bytes of valid JSON, made a megabyte at a time."""
    import zlib

    head, tail = b'{"choices": [{"index": 0, "text": "', b'"}]}'
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if kind == "gzip" else zlib.MAX_WBITS)
    parts = [c.compress(head)]
    fill = max(0, size - len(head) - len(tail))
    chunk = b" " * (1 << 20)
    while fill > 0:
        parts.append(c.compress(chunk[:fill]))
        fill -= min(fill, len(chunk))
    parts += [c.compress(tail), c.flush()]
    return b"".join(parts)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen backlog: >= 64 simultaneous connects without SYN retries
    allow_reuse_address = True
    owner: "FakeOpenAIServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that hung up (e.g. one that stopped reading at its size cap)
        super().handle_error(request, client_address)


class FakeOpenAIServer:
    """See the module docstring. Start with `start()` or a `with` block; `base_url` ends in /v1."""

    def __init__(self, *, latency_ms: float = 0.0, canned_text: str | None = None,
                 echo_supported: bool = True, multi_char_tokens: Sequence[str] = (),
                 fault_rate: float = 0.0, fault_kinds: Sequence[str] = ("500", "503", "429:0", "drop",
                                                                        "truncate", "nonsense"),
                 fault_seed: int = 0, model_name: str = "fake-model",
                 require_api_key: str | None = None, max_logprobs: int = 20,
                 garbage_text: str = "lorem ipsum ??? no action here",
                 special_tokens: Sequence[str] = (), echo_skips: Sequence[str] = (),
                 strict_fields: bool = False, report_prompt: bool = False, port: int = 0,
                 reasoning_content: str | None = None, reasoning_rules: bool = False,
                 next_token: Any = None, planted_text: Any = None) -> None:
        self.latency_ms = latency_ms
        self.next_token = next_token
        self.planted_text = planted_text
        self.canned_text = canned_text
        self.echo_supported = echo_supported
        self.multi_char_tokens = tuple(multi_char_tokens)
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.model_name = model_name
        self.require_api_key = require_api_key
        self.max_logprobs = max_logprobs
        self.garbage_text = garbage_text
        self.special_tokens = tuple(special_tokens)
        self.echo_skips = tuple(echo_skips)
        self.strict_fields = strict_fields
        self.report_prompt = report_prompt
        self.reasoning_content = reasoning_content
        self.reasoning_rules = reasoning_rules
        self._port = port
        self._fault_rng = random.Random(fault_seed)
        self._script: collections.deque[str] = collections.deque()
        self._lock = threading.Lock()
        self._hold: tuple[bytes, int] | None = None  # hold_after(): (marker, requests answered)
        self._held_seen = 0
        self._gate = threading.Event()
        self._gate.set()
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._conns: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "FakeOpenAIServer":
        if self._httpd is None:
            self._httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
            self._httpd.owner = self
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="fake-openai-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self.release()  # no handler thread left waiting at the gate
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:  # idle keep-alive connections would otherwise block their threads forever
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- configuration and inspection -----------------------------------------------------

    def script(self, *faults: str | None) -> None:
        """Queue faults for the next requests, one per request, in order (None or "ok": no fault)."""
        with self._lock:
            self._script.extend("ok" if f is None else f for f in faults)

    def reset(self) -> None:
        """Forget recorded requests, pending scripted faults and the in-flight maximum."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self.max_in_flight = self.in_flight

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def faults_served(self) -> collections.Counter:
        with self._lock:
            return collections.Counter(r.fault or "ok" for r in self.requests)

    # -- internals used by the handler ----------------------------------------------------

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _next_fault(self) -> str | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
            if self.fault_rate > 0 and self._fault_rng.random() < self.fault_rate:
                return self._fault_rng.choice(self.fault_kinds)
            return None

    def hold_after(self, marker: str, n: int) -> None:
        """Answer the first `n` requests whose body contains `marker`, then hold every further
        one (unanswered, its connection open) until `release()`: a client is then certain to be
        in the middle of that work, whatever the machine's speed (for interrupt tests)."""
        with self._lock:
            self._hold = (marker.encode(), n)
            self._held_seen = 0
            self._gate.clear()

    def release(self) -> None:
        """Answer the held requests and hold no more."""
        with self._lock:
            self._hold = None
        self._gate.set()

    def _maybe_hold(self, raw: bytes) -> None:
        with self._lock:
            if self._hold is None or self._hold[0] not in raw:
                return
            self._held_seen += 1
            if self._held_seen <= self._hold[1]:
                return
        self._gate.wait()

    def _record(self, r: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(r)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _exit(self) -> None:
        with self._lock:
            self.in_flight -= 1

    # -- the model behind the endpoints ---------------------------------------------------

    def _token_logprobs(self, text: str, tokens: list[str], start: int, k: int | None,
                        first_is_null: bool) -> dict[str, list]:
        """OpenAI completions `logprobs` for `tokens` that spell text[start:]."""
        out: dict[str, list] = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        pos = start
        for j, tok in enumerate(tokens):
            ctx = text[:pos]
            null = first_is_null and j == 0
            out["tokens"].append(tok)
            out["text_offset"].append(pos)
            out["token_logprobs"].append(None if null else expected_text_logprob(ctx, tok))
            if null or not k:
                out["top_logprobs"].append(None if null else {})
            else:
                out["top_logprobs"].append(dict(top_logprobs(ctx, k)))
            pos += len(tok)
        return out

    def _visible_echo(self, prompt: str, prompt_toks: list[str], text: str, gen_toks: list[str],
                      k: int | None) -> dict[str, list]:
        """An echo as llama-cpp-python's server writes it: special tokens show as "" (or not at
        all: `echo_skips`) and text offsets count the text without them."""
        out: dict[str, list] = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        pos = visible = 0
        full = prompt + text
        first = True
        for tok in prompt_toks + gen_toks:
            ctx = full[:pos]
            pos += len(tok)
            if tok in self.echo_skips:
                continue
            shown = "" if tok in self.special_tokens else tok
            out["tokens"].append(shown)
            out["text_offset"].append(visible)
            out["token_logprobs"].append(None if first else expected_text_logprob(ctx, tok))
            out["top_logprobs"].append(None if first else (dict(top_logprobs(ctx, k)) if k else {}))
            first = False
            visible += len(shown)
        return out

    def _common(self, body: Any) -> tuple[int, float, Any, list[str]]:
        if not isinstance(body, dict):
            raise FakeServerError(400, "request body must be a JSON object")
        if self.strict_fields:
            for key in body:
                if key not in OPENAI_FIELDS:
                    raise FakeServerError(400, f"Unrecognized request argument supplied: {key}")
        if body.get("n", 1) != 1:
            raise FakeServerError(400, "only n=1 is supported")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 16))
        if not isinstance(max_tokens, int) or max_tokens < 0:
            raise FakeServerError(400, "max_tokens must be a non-negative integer")
        temperature = body.get("temperature", 1.0)
        if not isinstance(temperature, (int, float)) or temperature < 0:
            raise FakeServerError(400, "temperature must be >= 0")
        stop = body.get("stop") or []
        if isinstance(stop, str):
            stop = [stop]
        return max_tokens, float(temperature), body.get("seed"), list(stop)

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    def _completions(self, body: Any, garbage: bool) -> dict:
        max_tokens, temperature, seed, stop = self._common(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise FakeServerError(400, "prompt must be a string")
        echo = bool(body.get("echo", False))
        if echo and not self.echo_supported:
            raise FakeServerError(400, "echo is not supported by this server")
        k = body.get("logprobs")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= self.max_logprobs):
            raise FakeServerError(400, f"logprobs must be an integer in [0, {self.max_logprobs}]")
        canned = self.garbage_text if garbage else self.canned_text
        planted = self.next_token(body.get("model"), prompt) if self.next_token and not echo and k else None
        if planted:  # a planted model's next token: its most likely one is the text
            top = dict(sorted(planted.items(), key=lambda t: -t[1])[:k])
            first = next(iter(top))
            return {"id": f"cmpl-{len(self.requests)}", "object": "text_completion", "created": int(time.time()),
                    "model": body.get("model", self.model_name),
                    "choices": [{"index": 0, "text": first, "finish_reason": "length",
                                 "logprobs": {"tokens": [first], "token_logprobs": [top[first]],
                                              "top_logprobs": [top], "text_offset": [len(prompt)]}}],
                    "usage": self._usage(len(tokenize(prompt, self.multi_char_tokens)), 1)}
        written = self.planted_text(body.get("model"), prompt) if self.planted_text and not echo and k is None else None
        if written is not None:  # a planted model's sampled answer
            text, finish = written, "stop"
        else:
            text, finish = _generate(prompt, max_tokens, temperature, seed, stop, self.multi_char_tokens, canned)
        multi = self.multi_char_tokens + self.special_tokens
        prompt_toks = tokenize(prompt, multi)
        gen_toks = tokenize(text, multi)
        choice: dict[str, Any] = {"index": 0, "text": (prompt + text) if echo else text,
                                  "finish_reason": finish, "logprobs": None}
        if k is not None:
            full = prompt + text
            lp = self._token_logprobs(full, gen_toks, len(prompt), k, first_is_null=False)
            if echo and self.special_tokens:
                lp = self._visible_echo(prompt, prompt_toks, text, gen_toks, k)
            elif echo:
                pre = self._token_logprobs(prompt, prompt_toks, 0, k, first_is_null=True)
                lp = {key: pre[key] + lp[key] for key in lp}
            choice["logprobs"] = lp
        return {"id": f"cmpl-{len(self.requests)}", "object": "text_completion", "created": int(time.time()),
                "model": body.get("model", self.model_name), "choices": [choice],
                "usage": self._usage(len(prompt_toks), len(gen_toks))}

    def _chat(self, body: Any, garbage: bool) -> dict:
        if self.reasoning_rules and re.match(r"^(o\d|gpt-5)", str(body.get("model", ""))):
            if "max_tokens" in body:
                raise FakeServerError(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                      "Use 'max_completion_tokens' instead.", "unsupported_parameter")
            if body.get("temperature", 1) != 1:
                raise FakeServerError(400, "Unsupported value: 'temperature' does not support "
                                      f"{body['temperature']} with this model. Only the default (1) value is "
                                      "supported.", "unsupported_value")
        max_tokens, temperature, seed, stop = self._common(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise FakeServerError(400, "messages must be a non-empty list of objects")
        want_lp = bool(body.get("logprobs", False))
        k = body.get("top_logprobs") or 0
        if not isinstance(k, int) or not 0 <= k <= self.max_logprobs:
            raise FakeServerError(400, f"top_logprobs must be an integer in [0, {self.max_logprobs}]")
        if k and not want_lp:
            raise FakeServerError(400, "top_logprobs requires logprobs=true")
        context = chat_context(messages)
        canned = self.garbage_text if garbage else self.canned_text
        text, finish = _generate(context, max_tokens, temperature, seed, stop, self.multi_char_tokens, canned)
        gen_toks = tokenize(text, self.multi_char_tokens)
        logprobs = None
        if want_lp:
            content = []
            pos = 0
            for tok in gen_toks:
                ctx = context + text[:pos]
                content.append({"token": tok, "logprob": expected_text_logprob(ctx, tok),
                                "bytes": list(tok.encode()),
                                "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                                                 for t, lp in top_logprobs(ctx, k)]})
                pos += len(tok)
            logprobs = {"content": content}
        prompt_tokens = len(tokenize(context, self.multi_char_tokens))
        out = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
               "model": body.get("model", self.model_name),
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                            "finish_reason": finish, "logprobs": logprobs}],
               "usage": self._usage(prompt_tokens, len(gen_toks))}
        if self.reasoning_content is not None:  # DeepSeek's reasoner: the thinking beside the answer
            n = len(tokenize(self.reasoning_content, self.multi_char_tokens))
            out["choices"][0]["message"]["reasoning_content"] = self.reasoning_content
            out["usage"]["completion_tokens"] += n
            out["usage"]["completion_tokens_details"] = {"reasoning_tokens": n}
        if self.report_prompt:
            out["prompt"] = context
        return out


def main(argv: Sequence[str] | None = None) -> None:
    """Serve in the foreground (e.g. in a separate process for benchmarks); prints the base URL."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--canned-text", default=None)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--fault-seed", type=int, default=0)
    args = ap.parse_args(argv)
    server = FakeOpenAIServer(latency_ms=args.latency_ms, canned_text=args.canned_text,
                              fault_rate=args.fault_rate, fault_seed=args.fault_seed).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()



try:  # a ready-made fixture for test modules that `from fake_openai_server import fake_openai_server`
    import pytest

    @pytest.fixture
    def fake_openai_server():
        with FakeOpenAIServer() as server:
            yield server
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pass


if __name__ == "__main__":
    main()
