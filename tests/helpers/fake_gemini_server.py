"""A fake Gemini API (generateContent) on 127.0.0.1, for driving the official `google-genai` SDK.

``POST /{version}/models/{model}:generateContent`` with the key in ``x-goog-api-key`` and a JSON
body (contents with user/model turns, systemInstruction, generationConfig: maxOutputTokens,
temperature, stopSequences); a GenerateContentResponse back (candidates with content parts —
``thought: true`` parts are the model's thinking —, finishReason, usageMetadata). Errors use the
API's shape ``{"error": {"code", "message", "status"}}``.

Behaviour (constructor arguments):
- ``text``; ``thought``: a thinking part before the answer;
- a reply longer than maxOutputTokens (characters here) is cut: finishReason MAX_TOKENS;
- ``block``: the prompt is blocked (``promptFeedback.blockReason``, no candidates);
- ``safety``: the candidate stops with finishReason SAFETY and no parts;
- ``fail_first``: the first N requests answer ``fail_status`` (503 UNAVAILABLE, or 429
  RESOURCE_EXHAUSTED), then normally; ``key``: the API key required (400 INVALID_ARGUMENT as the
  API answers a bad key, otherwise).

Every request is recorded in ``server.requests`` (path, headers lower-cased, JSON body).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_STATUS = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeGeminiServer:
    def __init__(self, text: str = "Action: 1", thought: str | None = None, block: str | None = None,
                 safety: bool = False, fail_first: int = 0, fail_status: int = 503, key: str = "gm-test") -> None:
        self.text, self.thought, self.block, self.safety, self.key = text, thought, block, safety, key
        self.fail_first, self.fail_status = fail_first, fail_status
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> "FakeGeminiServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        cfg = body.get("generationConfig") or {}
        n_in = len(json.dumps(body.get("contents", [])))
        usage = {"promptTokenCount": n_in}
        if self.block:
            return {"promptFeedback": {"blockReason": self.block}, "usageMetadata": usage}
        if self.safety:
            return {"candidates": [{"finishReason": "SAFETY", "index": 0,
                                    "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                                                       "probability": "HIGH", "blocked": True}]}],
                    "usageMetadata": usage}
        left = int(cfg.get("maxOutputTokens", 10_000))
        parts: list[dict[str, Any]] = []
        finish = "STOP"
        if self.thought is not None:
            shown = self.thought[:left]
            parts.append({"text": shown, "thought": True})
            usage["thoughtsTokenCount"] = len(shown)
            left -= len(shown)
            if len(shown) < len(self.thought):
                finish = "MAX_TOKENS"
        if finish == "STOP":
            shown = self.text[:left]
            if len(shown) < len(self.text):
                finish = "MAX_TOKENS"
            if shown:
                parts.append({"text": shown})
            usage["candidatesTokenCount"] = len(shown)
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
                "usageMetadata": usage, "modelVersion": "fake"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._send(status, {"error": {"code": status, "message": message,
                                              "status": _STATUS.get(status, "UNKNOWN")}})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    server.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    n = len(server.requests)
                if not self.path.split("?")[0].endswith(":generateContent"):
                    return self._error(404, f"no route {self.path}")
                if self.headers.get("x-goog-api-key") != server.key:
                    return self._error(400, "API key not valid. Please pass a valid API key.")
                if not isinstance(body, dict) or not body.get("contents"):
                    return self._error(400, "contents is not specified")
                if n <= server.fail_first:
                    return self._error(server.fail_status, "The model is overloaded. Please try again later.")
                self._send(200, server._answer(body))

        return Handler
