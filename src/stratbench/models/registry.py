"""Model specs → backends. Provider modules are imported only when used, so `import stratbench`
never pulls in torch, llama.cpp or httpx.

Specs: `embedded` (the default: Gemma 3 270M base, offline), `gguf:<path>`, `hf:<path-or-id>`,
`openai:<model>`, `together:<model>`, `openai-compatible:<model>` (needs `--base-url`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stratbench.errors import InputError
from stratbench.models.base import LanguageModel

API_PROVIDERS = ("openai", "together", "openai-compatible")
LOCAL_PREFIXES = ("gguf", "hf")
DEFAULT_MODEL = "embedded"


@dataclass
class ModelOptions:
    base_url: str | None = None
    max_concurrency: int = 8
    chat: bool | None = None  # None: the provider's default endpoint
    n_ctx: int | None = None
    prefix_reuse: bool = False
    batch_size: int = 8
    device: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4


def split_spec(spec: str) -> tuple[str, str]:
    """'openai:gpt-4o-mini' → ('openai', 'gpt-4o-mini'); 'embedded' → ('embedded', '')."""
    s = spec.strip()
    if s == DEFAULT_MODEL:
        return s, ""
    if ":" not in s:
        raise InputError(
            f"unknown model {spec!r}: use embedded, gguf:<path>, hf:<path>, openai:<model>, "
            "together:<model> or openai-compatible:<model>"
        )
    kind, _, name = s.partition(":")
    kind = kind.lower()
    if kind not in API_PROVIDERS + LOCAL_PREFIXES:
        raise InputError(f"unknown model backend {kind!r} in {spec!r}; known: embedded, "
                         + ", ".join(LOCAL_PREFIXES + API_PROVIDERS))
    if not name:
        raise InputError(f"model spec {spec!r} names no model")
    return kind, name


def load_model(spec: str, options: ModelOptions | None = None) -> LanguageModel:
    opts = options or ModelOptions()
    kind, name = split_spec(spec)
    if kind == "embedded":
        from stratbench.models.llama import load_embedded

        kw: dict[str, Any] = {"prefix_reuse": opts.prefix_reuse}
        if opts.n_ctx:
            kw["n_ctx"] = opts.n_ctx
        return load_embedded(**kw)
    if kind == "gguf":
        from stratbench.models.llama import LlamaCppModel

        kw = {"prefix_reuse": opts.prefix_reuse}
        if opts.n_ctx:
            kw["n_ctx"] = opts.n_ctx
        return LlamaCppModel(name, spec=spec, **kw)
    if kind == "hf":
        try:
            from stratbench.models.hf import HFModel
        except ImportError as e:  # pragma: no cover - depends on optional extras
            raise InputError(f"{spec}: the hf backend needs torch and transformers ({e})") from None
        return HFModel(name, device=opts.device, batch_size=opts.batch_size)
    from stratbench.models.openai_api import OpenAICompatibleModel

    if kind == "openai-compatible" and not opts.base_url:
        raise InputError(f"{spec}: --base-url is required for openai-compatible models")
    endpoint = None
    if opts.chat is not None:
        endpoint = "chat" if opts.chat else "completions"
    elif kind == "openai":
        endpoint = "chat"  # OpenAI's current models are chat models
    kwargs: dict[str, Any] = dict(
        base_url=opts.base_url, max_concurrency=opts.max_concurrency, timeout_s=opts.timeout_s,
        max_retries=opts.max_retries,
    )
    if endpoint:
        kwargs["endpoint"] = endpoint
    return OpenAICompatibleModel(kind, name, **kwargs)
