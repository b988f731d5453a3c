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
  API answers a bad key, otherwise);
- ``edit``: a hostile server: a function of each normal 200 answer giving the body sent instead.

Every request is recorded in ``server.requests`` (path, headers lower-cased, JSON body).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from fake_json_api import FakeJSONAPI, Seen

_STATUS = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _error(status: int, message: str) -> tuple[int, Any, dict[str, str]]:
    return status, {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}, {}


class FakeGeminiServer(FakeJSONAPI):
    def __init__(self, text: str = "Action: 1", thought: str | None = None, block: str | None = None,
                 safety: bool = False, fail_first: int = 0, fail_status: int = 503, key: str = "gm-test",
                 edit: Callable[[dict[str, Any]], Any] | None = None) -> None:
        super().__init__()
        self.edit = edit
        self.text, self.thought, self.block, self.safety, self.key = text, thought, block, safety, key
        self.fail_first, self.fail_status = fail_first, fail_status

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

    def respond(self, seen: Seen, n: int) -> tuple[int, Any, dict[str, str]]:
        body = seen.body
        if not seen.path.split("?")[0].endswith(":generateContent"):
            return _error(404, f"no route {seen.path}")
        if seen.headers.get("x-goog-api-key") != self.key:
            return _error(400, "API key not valid. Please pass a valid API key.")
        if not isinstance(body, dict) or not body.get("contents"):
            return _error(400, "contents is not specified")
        if n <= self.fail_first:
            return _error(self.fail_status, "The model is overloaded. Please try again later.")
        answer = self._answer(body)
        return 200, answer if self.edit is None else self.edit(answer), {}
