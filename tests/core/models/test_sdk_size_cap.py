"""The response-size cap on the backends that speak through a provider's SDK (Anthropic, Gemini).

The OpenAI-compatible route reads bodies itself and is capped in test_replies_hostile.py; these two
go through the SDKs' own HTTP clients, handed our transport (models.sdk_transport), so the same cap
(`STRATBENCH_MAX_RESPONSE_BYTES`) must hold there too: a huge reply is an error naming the cap, never
written to a record whole, and a reply under the cap is the answer, whole."""

from __future__ import annotations

import asyncio

import pytest
from fake_anthropic_server import FakeAnthropicServer
from fake_gemini_server import FakeGeminiServer

from stratbench.models import ModelOptions, open_model
from stratbench.models.base import GenerateRequest

BACKENDS = {"anthropic": ("anthropic:claude-3-5-sonnet-20241022", FakeAnthropicServer, "ANTHROPIC_API_KEY", "sk-ant-test"),
            "gemini": ("gemini:gemini-1.5-pro", FakeGeminiServer, "GEMINI_API_KEY", "gm-test")}


def _generate(spec: str, base_url: str, req: GenerateRequest):
    async def go():
        model = open_model(spec, ModelOptions(base_url=base_url, max_retries=0), no_cache=True)
        try:
            (r,) = await model.generate([req])
            return r, model.usage
        finally:
            await model.aclose()
    return asyncio.run(go())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reply_over_the_size_cap_is_an_error_naming_the_cap(monkeypatch, backend):
    spec, server, key_env, key = BACKENDS[backend]
    monkeypatch.setenv(key_env, key)  # (the fake servers accept their test key only)
    monkeypatch.setenv("STRATBENCH_MAX_RESPONSE_BYTES", "4000")
    req = GenerateRequest("Q", max_tokens=20_000, chat=True)
    with server(text="x" * 10_000) as s:
        r, totals = _generate(spec, s.base_url, req)
    assert r.text is None and r.error.startswith("response body over 4000 bytes"), r.error
    assert totals.errors == 1
    with server(text="x" * 1_000) as s:  # under the cap: the answer, whole
        r, _ = _generate(spec, s.base_url, req)
    assert r.ok and r.text == "x" * 1_000
