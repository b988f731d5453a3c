"""A fake Anthropic Messages API on 127.0.0.1, for driving the official `anthropic` SDK in tests.

It speaks what the SDK sends and reads: ``POST /v1/messages`` with the key (``x-api-key``, or
``Authorization: Bearer`` as recent SDKs send it) and an ``anthropic-version`` header, a JSON body (model, max_tokens, messages, system, temperature,
stop_sequences), and a Message object back (content blocks, stop_reason, usage). Errors use the
API's shape ``{"type": "error", "error": {"type": ..., "message": ...}}``.

Behaviour (constructor arguments):
- ``text``: the answer's text block; ``thinking``: a thinking block before it (extended thinking);
- a reply longer than ``max_tokens`` (counted in characters here) is cut, ``stop_reason:
  "max_tokens"`` — inside the thinking when the thinking alone is longer;
- ``fail_first``: the first N requests answer ``fail_status`` (529 ``overloaded_error`` by
  default; 429 ``rate_limit_error`` with ``retry-after: 0``), then the server answers normally;
- ``key``: the x-api-key it requires (401 ``authentication_error`` otherwise).

Every request is recorded in ``server.requests`` (path, headers lower-cased, JSON body).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeAnthropicServer:
    def __init__(self, text: str = "Action: 1", thinking: str | None = None, fail_first: int = 0,
                 fail_status: int = 529, key: str = "sk-ant-test") -> None:
        self.text, self.thinking, self.key = text, thinking, key
        self.fail_first, self.fail_status = fail_first, fail_status
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> "FakeAnthropicServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        budget = int(body.get("max_tokens", 0))
        content: list[dict[str, Any]] = []
        stop = "end_turn"
        left = budget
        if self.thinking is not None:
            shown = self.thinking[:left]
            content.append({"type": "thinking", "thinking": shown, "signature": "sig"})
            left -= len(shown)
            if len(self.thinking) > len(shown):
                stop = "max_tokens"
        if stop != "max_tokens":
            shown = self.text[:left]
            if len(shown) < len(self.text):
                stop = "max_tokens"
            content.append({"type": "text", "text": shown})
        n_in = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) + len(str(body.get("system", "")))
        return {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant",
                "model": body.get("model"), "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": n_in, "output_tokens": budget - left if stop == "max_tokens" else
                          sum(len(c.get("text", c.get("thinking", ""))) for c in content)}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                self._send(status, {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                                               "message": message}}, headers)

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    server.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    n = len(server.requests)
                if self.path.rstrip("/") != "/v1/messages":
                    return self._error(404, f"no route {self.path}")
                if server.key not in (self.headers.get("x-api-key"),
                                      (self.headers.get("authorization") or "").removeprefix("Bearer ")):
                    return self._error(401, "invalid x-api-key")
                if not self.headers.get("anthropic-version"):
                    return self._error(400, "anthropic-version header is required")
                if not isinstance(body, dict) or not isinstance(body.get("max_tokens"), int):
                    return self._error(400, "max_tokens: Field required")
                temp = body.get("temperature", 1.0)
                if not 0.0 <= float(temp) <= 1.0:
                    return self._error(400, "temperature: Input should be less than or equal to 1")
                if any(not str(s).strip() for s in body.get("stop_sequences", [])):
                    return self._error(400, "stop_sequences: each stop sequence must contain non-whitespace")
                if n <= server.fail_first:
                    extra = {"retry-after": "0"} if server.fail_status == 429 else None
                    return self._error(server.fail_status, "Overloaded" if server.fail_status == 529 else "slow down",
                                       extra)
                self._send(200, server._answer(body))

        return Handler
