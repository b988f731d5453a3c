"""Backends declare what they are (local or HTTP, chat model by default or raw); the scorecard asks
them instead of matching spec prefixes, so a backend added through the entry-point group is read
as it says — a local chat backend gets exact choice scoring, not sampling."""

from __future__ import annotations

import pytest

from stratbench.errors import InputError
from stratbench.models import BACKENDS, TRAITS, BackendTraits, backend_traits
from stratbench.suites.scorecards import ScorecardModel
from stratbench.workflows.scorecard import chat_by_default


def test_builtin_backends_traits():
    assert set(TRAITS) == {"embedded", "embedded-instruct", "gguf", "hf", "openai", "together", "deepseek", "qwen",
                           "mistral", "openai-compatible", "anthropic", "gemini"}
    assert set(TRAITS) <= set(BACKENDS.names())
    assert backend_traits("embedded") == BackendTraits(local=True, chat_model=False)
    assert backend_traits("embedded-instruct") == BackendTraits(local=True, chat_model=True)
    assert backend_traits("gguf:/x.gguf").local and backend_traits("hf:/ckpt").local
    assert not backend_traits("openai:gpt-4o-mini").local and backend_traits("openai:gpt-4o-mini").chat_model
    assert backend_traits("openai-compatible:m") == BackendTraits()
    with pytest.raises(InputError, match="unknown model backend 'nope'"):
        backend_traits("nope:x")


def test_the_scorecard_reads_a_plugin_backend_by_its_declared_traits():
    def local_chat(kind, name, spec, options):  # never called: traits are known before loading
        raise AssertionError("not opened")

    local_chat.local = True  # type: ignore[attr-defined]
    local_chat.chat_model = True  # type: ignore[attr-defined]

    def remote(kind, name, spec, options):
        raise AssertionError("not opened")

    BACKENDS.register("mylocal", local_chat)
    BACKENDS.register("myremote", remote)
    try:
        assert chat_by_default("mylocal:ckpt") and not chat_by_default("myremote:m")
        assert ScorecardModel("mylocal:ckpt", "x", chat=True).policy == "choice"  # exact, as a local model
        assert ScorecardModel("myremote:m", "y", chat=True).policy == "sample"  # undeclared: an endpoint
        assert ScorecardModel("mylocal:ckpt", "x", chat=False).policy == "logprob"
    finally:
        BACKENDS.unregister("mylocal")
        BACKENDS.unregister("myremote")
