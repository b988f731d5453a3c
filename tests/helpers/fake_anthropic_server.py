"""A fake Anthropic Messages API on 127.0.0.1, for driving the official `anthropic` SDK in tests.

It speaks what the SDK sends and reads: ``POST /v1/messages`` with the key (``x-api-key``, or
``Authorization: Bearer`` as recent SDKs send it) and an ``anthropic-version`` header, a JSON body (model, max_tokens, messages, system, temperature,
stop_sequences), and a Message object back (content blocks, stop_reason, usage). Errors use the
API's shape ``{"type": "error", "error": {"type": ..., "message": ...}}``.

Behaviour (constructor arguments):
- ``text``: the answer's text block; ``thinking``: a thinking block before it (extended thinking);
- extended thinking (``thinking: {"type": "enabled", "budget_tokens": N}``) refused as the API
  does: N under 1,024 or not under ``max_tokens``, or a temperature other than 1;
- a reply longer than ``max_tokens`` (counted in characters here) is cut, ``stop_reason:
  "max_tokens"`` — inside the thinking when the thinking alone is longer;
- ``fail_first``: the first N requests answer ``fail_status`` (529 ``overloaded_error`` by
  default; 429 ``rate_limit_error`` with ``retry-after: 0``), then the server answers normally;
- ``key``: the x-api-key it requires (401 ``authentication_error`` otherwise);
- ``edit``: a hostile server: a function of each normal 200 answer giving the body sent instead.

Every request is recorded in ``server.requests`` (path, headers lower-cased, JSON body).
"""

from __future__ import annotations

from typing import Any, Callable

from fake_json_api import FakeJSONAPI, Seen

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    return status, {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}, \
        headers or {}


class FakeAnthropicServer(FakeJSONAPI):
    def __init__(self, text: str = "Action: 1", thinking: str | None = None, fail_first: int = 0,
                 fail_status: int = 529, key: str = "sk-ant-test", edit: Callable[[dict[str, Any]], Any] | None = None
                 ) -> None:
        super().__init__()
        self.text, self.thinking, self.key, self.edit = text, thinking, key, edit
        self.fail_first, self.fail_status = fail_first, fail_status

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

    def respond(self, seen: Seen, n: int) -> tuple[int, Any, dict[str, str]]:
        body, headers = seen.body, seen.headers
        if seen.path.rstrip("/") != "/v1/messages":
            return _error(404, f"no route {seen.path}")
        if self.key not in (headers.get("x-api-key"), (headers.get("authorization") or "").removeprefix("Bearer ")):
            return _error(401, "invalid x-api-key")
        if not headers.get("anthropic-version"):
            return _error(400, "anthropic-version header is required")
        if not isinstance(body, dict) or not isinstance(body.get("max_tokens"), int):
            return _error(400, "max_tokens: Field required")
        if not 0.0 <= float(body.get("temperature", 1.0)) <= 1.0:
            return _error(400, "temperature: Input should be less than or equal to 1")
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":  # extended thinking's rules
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return _error(400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if budget >= body["max_tokens"]:
                return _error(400, "`max_tokens` must be greater than `thinking.budget_tokens`")
            if "temperature" in body and float(body["temperature"]) != 1.0:
                return _error(400, "`temperature` may only be set to 1 when thinking is enabled")
        if any(not str(x).strip() for x in body.get("stop_sequences", [])):
            return _error(400, "stop_sequences: each stop sequence must contain non-whitespace")
        if n <= self.fail_first:
            return _error(self.fail_status, "Overloaded" if self.fail_status == 529 else "slow down",
                          {"retry-after": "0"} if self.fail_status == 429 else None)
        answer = self._answer(body)
        return 200, answer if self.edit is None else self.edit(answer), {}
