"""Every model backend stratbench reaches, with what it can do: one table behind the HTTP
backends' defaults (base URL, key variable, endpoint) and behind `stratbench models`.

The papers' models are reached through their providers' OpenAI-compatible endpoints where the
provider has one (DeepSeek, Alibaba's DashScope "compatible mode" for Qwen, Mistral): a preset is
the base URL and key variable of such a provider, so ``deepseek:deepseek-reasoner`` needs no
``--base-url``; ``--base-url`` still overrides it (a proxy, a regional endpoint). Keys are read
from the environment only, never written.

Capabilities are what stratbench can do through the backend, said for a user choosing a policy:

- ``logprobs``: exact log-probabilities of given answers (the raw-model policy, ``--policy logprob``);
- ``choice``: exact choice scoring of a conversation (``--policy choice``);
- ``chat``: conversations (the chat template applied by the model's side);
- ``reasoning``: thinking kept apart from the answer (``reasoning`` in the records).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from stratbench.errors import InputError

__all__ = ["HTTP_PROVIDERS", "LOCAL_BACKENDS", "NATIVE_PROVIDERS", "Provider", "key_is_set", "read_key"]


@dataclass(frozen=True)
class Provider:
    """One backend (a spec prefix) and what it can do."""

    name: str
    what: str
    base_url: str | None = None  # HTTP: the default base URL (None: --base-url is required)
    key_env: str | None = None  # HTTP: the environment variable the key is read from
    key_required: bool = False
    endpoint: str = "chat"  # HTTP: the endpoint a run uses unless --chat / --no-chat says
    logprobs: str = "no"
    choice: str = "no"
    chat: str = "yes"
    reasoning: str = "no"
    api_logprobs: bool = True  # HTTP: whether the API returns log-probabilities at all


_COMPAT_LOGPROBS = "completions endpoint: exact (top-k walk or echo)"
_CHAT_TOP = "one-token answers, chat top-20"
_THINK = "reasoning_content, <think>…</think>"

#: the local backends: the model runs here, with its full next-token distribution
LOCAL_BACKENDS: dict[str, Provider] = {p.name: p for p in (
    Provider("embedded", "Gemma 3 270M base, offline (default)", logprobs="exact (llama.cpp)",
             chat="no (base model)"),
    Provider("embedded-instruct", "SmolLM2-135M-Instruct, offline",
             logprobs="exact (llama.cpp)", choice="exact"),
    Provider("gguf", "a local GGUF file (llama.cpp)", logprobs="exact (llama.cpp)",
             choice="exact, with its template", chat="with its template",
             reasoning="<think>…</think>"),
    Provider("hf", "a Hugging Face checkpoint (extra: stratbench[hf])",
             logprobs="exact (transformers)", choice="exact, with its template",
             chat="with its template", reasoning="<think>…</think>"),
)}

#: the OpenAI-compatible HTTP providers and presets
HTTP_PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("openai", "OpenAI (o-series, gpt-5 rules applied)",
             "https://api.openai.com/v1", "OPENAI_API_KEY", True,
             logprobs=_CHAT_TOP, choice=_CHAT_TOP, reasoning="reasoning tokens counted"),
    Provider("together", "Together AI", "https://api.together.xyz/v1", "TOGETHER_API_KEY", True, "completions",
             logprobs=_COMPAT_LOGPROBS, choice=_CHAT_TOP, reasoning=_THINK),
    Provider("deepseek", "DeepSeek", "https://api.deepseek.com/v1",
             "DEEPSEEK_API_KEY", True, logprobs="deepseek-chat: " + _CHAT_TOP,
             choice="deepseek-chat: " + _CHAT_TOP, reasoning="reasoning_content (reasoner)"),
    Provider("qwen", "Qwen (DashScope compatible mode)",
             "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", True,
             logprobs="where returned: " + _CHAT_TOP, choice="where returned: " + _CHAT_TOP,
             reasoning="reasoning_content (thinking models)"),
    Provider("mistral", "Mistral AI", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", True,
             logprobs="no: --policy sample", reasoning="<think>…</think>", api_logprobs=False),
    Provider("openai-compatible", "any OpenAI-compatible server (vLLM, llama.cpp, SGLang); --base-url", None, "OPENAI_API_KEY", False, endpoint="completions",
             logprobs=_COMPAT_LOGPROBS, choice="exact with --chat-template",
             reasoning=_THINK),
)}

#: HTTP providers with an API of their own, reached through the provider's SDK (an optional extra)
NATIVE_PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("anthropic", "Claude, Messages API (extra: stratbench[anthropic])", "https://api.anthropic.com",
             "ANTHROPIC_API_KEY", True, "messages", logprobs="no: --policy sample",
             reasoning="extended-thinking blocks"),
    Provider("gemini", "Gemini, generateContent (extra: stratbench[gemini])",
             "https://generativelanguage.googleapis.com", "GEMINI_API_KEY", True, "generateContent",
             logprobs="no: --policy sample", reasoning="thought parts"),
)}


def key_is_set(provider: Provider) -> bool | None:
    """Whether the provider's key variable holds a key (None: the backend needs none)."""
    if provider.key_env is None:
        return None
    return bool((os.environ.get(provider.key_env) or "").strip())


def read_key(env: str, spec: str) -> str | None:
    """The API key in environment variable `env` (surrounding whitespace stripped; None when unset
    or blank), checked as the model opens: a key with a line break, another control character or
    a non-ASCII character can be sent in no HTTP header (every call would fail with an error that
    quotes it, or crash in an encoder), so it is one InputError line naming the variable and the
    character's position — never the key."""
    key = (os.environ.get(env) or "").strip()
    if not key:
        return None
    for i, c in enumerate(key):
        if not " " <= c <= "~":
            what = "a line break" if c in "\r\n" else "a control character" if c.isascii() else "a non-ASCII character"
            raise InputError(f"{spec}: {env} holds {what} (at character {i + 1} of {len(key)}); an API key is "
                             "printable ASCII: set it again")
    return key
