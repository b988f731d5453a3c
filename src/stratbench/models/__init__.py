"""Language-model backends behind one interface (:mod:`.base`: async `score` and `generate`), and
the table that maps a model spec to its backend.

Specs: `embedded` (the default: Gemma 3 270M base, offline), `embedded-instruct` (SmolLM2-135M-
Instruct, offline, with its chat template), `gguf:<path>`, `hf:<path-or-id>`,
`openai:<model>`, `together:<model>`, `openai-compatible:<model>` (needs `--base-url`). Backend
modules are imported only when a spec needs them, so `import stratbench` never pulls in torch,
llama.cpp or httpx; packages can add backends through the entry-point group `stratbench.models`
(a callable ``(kind, name, spec, options) -> LanguageModel``). This package is core: it imports
nothing from the suites, workflows, report or CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stratbench.errors import BaseUrlNotApplicable, InputError
from stratbench.models.base import LanguageModel
from stratbench.models.providers import HTTP_PROVIDERS, NATIVE_PROVIDERS
from stratbench.registry import Registry

API_PROVIDERS = tuple(HTTP_PROVIDERS)  # openai, together, the presets (deepseek, qwen, mistral), openai-compatible
LOCAL_PREFIXES = ("gguf", "hf")
DEFAULT_MODEL = "embedded"
EMBEDDED_INSTRUCT = "embedded-instruct"
EMBEDDED_SPECS = (DEFAULT_MODEL, EMBEDDED_INSTRUCT)  # specs without a ":<name>"


@dataclass
class ModelOptions:
    base_url: str | None = None
    max_concurrency: int = 8
    chat: bool | None = None  # None: the provider's default endpoint
    n_ctx: int | None = None
    prefix_reuse: bool = False
    batch_size: int = 8
    device: str | None = None
    timeout_s: float = 60.0  # --timeout: one HTTP request
    max_retries: int = 4  # --retries
    wait_for_server_s: float = 0.0  # --wait-for-server: ride out a server restart
    # --chat-template: the model's GGUF, tokenizer_config.json or .jinja, for HTTP backends: exact
    # choice scoring of conversations over the completions endpoint (and, from a GGUF, its
    # tokenizer for the top-k walk that scores multi-token answers); see models.openai_api
    chat_template: str | None = None
    # openai-compatible servers: the repetition penalty sent with generation requests. "auto" sends
    # 1.0 (no penalty, as the local gguf:/embedded routes: llama-cpp-python's server would apply
    # 1.1 even at temperature 0, so greedy answers would differ); None sends nothing
    repeat_penalty: float | str | None = "auto"
    # the run's sampling temperature, where it has one: a backend whose API takes a narrower range
    # (Anthropic's 0..1) refuses it as it opens, before any folder, not in every record's error
    temperature: float | None = None
    # --reasoning-effort (HTTP models: OpenAI's reasoning_effort, Anthropic's and Gemini's thinking
    # budgets): None sends nothing, as before the flag existed
    reasoning_effort: str | None = None
    # --think-tags "OPEN,CLOSE": where an open reasoning model's thinking is (default <think>)
    think_tags: str | None = None


def is_http_spec(spec: str) -> bool:
    """Whether a model spec names an HTTP backend (openai:, together:, a preset, openai-compatible:,
    anthropic:, gemini:)."""
    return spec.partition(":")[0].strip().lower() in (*API_PROVIDERS, *NATIVE_PROVIDERS)


def check_reasoning_effort(effort: str | None, specs: Iterable[str]) -> None:
    """`--reasoning-effort` is sent to HTTP models (a local model's reasoning is its own, a scripted
    player has none): one line, before anything is opened or written, when none of `specs` is an
    HTTP model."""
    if effort is not None and not any(is_http_spec(s) for s in specs):
        raise InputError(f"--reasoning-effort applies to HTTP models ({', '.join(p + ':' for p in API_PROVIDERS)}, "
                         f"{', '.join(p + ':' for p in NATIVE_PROVIDERS)}); a local model reasons as it was trained to")


def check_base_url_applies(base_url: str | None, specs: Iterable[str]) -> None:
    """`--base-url` is where an HTTP model is served: given to a run with none (a GGUF, the
    embedded models, scripted players), it would be silently ignored and the run made here, not
    on the server the user named. ``specs`` are all the players of the command (a run with an HTTP
    model beside local ones gives the URL to the HTTP ones). One line, before anything is opened
    or written."""
    if base_url is not None and not any(is_http_spec(s) for s in specs):
        raise BaseUrlNotApplicable(f"--base-url applies to HTTP models ({', '.join(p + ':' for p in API_PROVIDERS)}, "
                         f"{', '.join(p + ':' for p in NATIVE_PROVIDERS)}); a local model runs on this machine")


def check_chat_template(chat_template: str | None, specs: Iterable[str]) -> None:
    """`--chat-template` is an HTTP model's chat template (a local model brings its own, a scripted
    player has none): one line, before anything is opened or written, when none of `specs` is an
    HTTP model."""
    if chat_template is not None and not chat_template.strip():
        raise InputError("--chat-template: give a file (the model's GGUF, tokenizer_config.json or .jinja); "
                         "an empty path names none")
    if chat_template is not None and not any(takes_chat_template(s) for s in specs):
        raise InputError(f"--chat-template applies to OpenAI-compatible HTTP models "
                         f"({', '.join(p + ':' for p in API_PROVIDERS)}); a local model brings its own, and "
                         f"{' and '.join(p + ':' for p in NATIVE_PROVIDERS)} render their prompts on the server")


def takes_chat_template(spec: str) -> bool:
    """Whether ``--chat-template`` applies to the model: an OpenAI-compatible HTTP model (its
    completions endpoint scores a conversation rendered here); the native APIs (Anthropic, Gemini)
    render their own prompts, a local model brings its template."""
    return spec.partition(":")[0].strip().lower() in API_PROVIDERS


def split_spec(spec: str) -> tuple[str, str]:
    """'openai:gpt-4o-mini' → ('openai', 'gpt-4o-mini'); 'embedded' → ('embedded', '')."""
    s = spec.strip()
    if s in EMBEDDED_SPECS:
        return s, ""
    if ":" not in s:
        raise InputError(
            f"unknown model {spec!r}: use embedded, embedded-instruct, gguf:<path>, hf:<path>, "
            + ", ".join(f"{p}:<model>" for p in API_PROVIDERS[:-1]) + f" or {API_PROVIDERS[-1]}:<model> "
            "(stratbench models lists them)"
        )
    kind, _, name = s.partition(":")
    kind = kind.lower()
    if kind not in BACKENDS or kind in EMBEDDED_SPECS:
        raise InputError(f"unknown model backend {kind!r} in {spec!r}; known: "
                         + ", ".join([*EMBEDDED_SPECS, *(k for k in BACKENDS.names() if k not in EMBEDDED_SPECS)]))
    if not name:
        raise InputError(f"model spec {spec!r} names no model")
    return kind, name


# -- the backends (each imports its module only when called) -------------------------------------

Backend = Callable[[str, str, str, ModelOptions], LanguageModel]


def _llama_kwargs(opts: ModelOptions) -> dict[str, Any]:
    kw: dict[str, Any] = {"prefix_reuse": opts.prefix_reuse}
    if opts.n_ctx:
        kw["n_ctx"] = opts.n_ctx
    return kw


def _embedded(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.llama import load_embedded

    return load_embedded(**_llama_kwargs(opts))


def _embedded_instruct(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.llama import load_embedded_instruct

    return load_embedded_instruct(**_llama_kwargs(opts))


def check_gguf_file(path: str, what: str) -> None:
    """A file named as a GGUF model must be one: it begins with the GGUF magic bytes (one line
    otherwise, before llama.cpp reads anything). A path that is not a file is left to the loader."""
    from pathlib import Path

    p = Path(path).expanduser()
    if not p.is_file():
        return
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise InputError(f"{what}: {e.strerror or e}") from None
    if magic != b"GGUF":
        raise InputError(f"{what}: not a GGUF file (it does not begin with the GGUF magic bytes)")


def _gguf(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.llama import LlamaCppModel

    check_gguf_file(name, spec)
    return LlamaCppModel(name, spec=spec, **_llama_kwargs(opts))


def _hf(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    try:
        from stratbench.models.hf import HFModel
    except ImportError as e:  # pragma: no cover - depends on optional extras
        raise InputError(f"{spec}: the hf backend needs torch and transformers ({e})") from None
    return HFModel(name, device=opts.device, batch_size=opts.batch_size)


def _api(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.openai_api import OpenAICompatibleModel

    if kind == "openai-compatible" and not opts.base_url:
        raise InputError(f"{spec}: --base-url is required for openai-compatible models")
    endpoint = None
    if opts.chat is not None:
        endpoint = "chat" if opts.chat else "completions"
    else:  # the provider's (OpenAI's and the presets' current models are chat models)
        endpoint = HTTP_PROVIDERS[kind].endpoint
    kwargs: dict[str, Any] = dict(
        base_url=opts.base_url, max_concurrency=opts.max_concurrency, timeout_s=opts.timeout_s,
        max_retries=opts.max_retries, wait_for_server_s=opts.wait_for_server_s,
        chat_template=opts.chat_template, reasoning_effort=opts.reasoning_effort,
    )
    if kind == "openai-compatible":
        kwargs["repeat_penalty"] = opts.repeat_penalty
    if endpoint:
        kwargs["endpoint"] = endpoint
    model = OpenAICompatibleModel(kind, name, **kwargs)
    if not HTTP_PROVIDERS[kind].api_logprobs:  # (Mistral's API returns none: its players sample)
        model.supports_logprobs = False
    return model


def _anthropic(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.anthropic_api import AnthropicModel

    if opts.chat is False:
        raise InputError(f"{spec}: the Messages API is a chat API; run it with --chat (or without --no-chat)")
    return AnthropicModel(name, base_url=opts.base_url, max_concurrency=opts.max_concurrency,
                          timeout_s=opts.timeout_s, max_retries=opts.max_retries, temperature=opts.temperature,
                          reasoning_effort=opts.reasoning_effort)


def _gemini(kind: str, name: str, spec: str, opts: ModelOptions) -> LanguageModel:
    from stratbench.models.gemini_api import GeminiModel

    return GeminiModel(name, base_url=opts.base_url, max_concurrency=opts.max_concurrency,
                       timeout_s=opts.timeout_s, max_retries=opts.max_retries, temperature=opts.temperature,
                          reasoning_effort=opts.reasoning_effort)


#: spec prefix → backend factory
BACKENDS: Registry[Backend] = Registry("model backend", {
    DEFAULT_MODEL: _embedded,  # type: ignore[dict-item]
    EMBEDDED_INSTRUCT: _embedded_instruct,  # type: ignore[dict-item]
    "gguf": _gguf,  # type: ignore[dict-item]
    "hf": _hf,  # type: ignore[dict-item]
    **{p: _api for p in API_PROVIDERS},  # type: ignore[misc]
    "anthropic": _anthropic,  # type: ignore[dict-item]
    "gemini": _gemini,  # type: ignore[dict-item]
}, entry_point_group="stratbench.models")


@dataclass(frozen=True)
class BackendTraits:
    """What a backend is, known from its spec before it is opened (plans and defaults are made
    before any model loads). ``local``: the model runs here — the full next-token distribution
    (closed scoring) and exact chat scoring with the model's own template; otherwise an HTTP
    endpoint. ``chat_model``: an instruction-tuned model unless the user says otherwise (the
    scorecard reads it through its chat template)."""

    local: bool = False
    chat_model: bool = False


#: the built-in backends' traits; a backend added through the entry-point group declares its own
#: as attributes of its factory (``factory.local = True``, ``factory.chat_model = True``)
TRAITS: dict[str, BackendTraits] = {
    DEFAULT_MODEL: BackendTraits(local=True),
    EMBEDDED_INSTRUCT: BackendTraits(local=True, chat_model=True),
    "gguf": BackendTraits(local=True),
    "hf": BackendTraits(local=True),
    **{p: BackendTraits(chat_model=p != "openai-compatible") for p in API_PROVIDERS},
    "anthropic": BackendTraits(chat_model=True),
    "gemini": BackendTraits(chat_model=True),
}


def backend_traits(spec: str) -> BackendTraits:
    """The traits of the backend `spec` names (one InputError line for an unknown backend). The
    scorecard and the suites ask this instead of matching spec prefixes."""
    kind, _ = split_spec(spec)
    if kind in TRAITS:
        return TRAITS[kind]
    factory = BACKENDS.get(kind)
    return BackendTraits(local=bool(getattr(factory, "local", False)),
                         chat_model=bool(getattr(factory, "chat_model", False)))


def load_model(spec: str, options: ModelOptions | None = None) -> LanguageModel:
    """The backend for ``spec``, loaded (no response cache)."""
    kind, name = split_spec(spec)
    return BACKENDS.get(kind)(kind, name, spec, options or ModelOptions())


def open_model(spec: str, model_options: ModelOptions | None = None, *, no_cache: bool = False,
               cache_path: str | None = None) -> LanguageModel:
    """Load a model backend by spec, behind the response cache unless `no_cache`."""
    from stratbench.models import costs
    from stratbench.models.cache import CachedModel, ResponseCache

    split_spec(spec)  # validate before loading anything
    model = load_model(spec, model_options)
    session = costs.current()
    if session is not None and session.dry_run:  # no request, no cache read or written
        model, no_cache = costs.DryRunModel(model, session), True
    elif session is not None:  # a command's session (the CLI): never a test's or a library call's
        if is_http_spec(spec):  # a refused key stops the command instead of an error per record
            model = costs.RefusalGuard(model, session)
        if session.max_cost is not None:  # below the cache: a hit costs nothing
            model = costs.CostGuard(model, session)
    if not no_cache:
        # a backend whose scores depend on the sequence of its calls (llama.cpp with prefix reuse)
        # is served only answers stored before this session: see CachedModel
        inner = model
        model = CachedModel(model, ResponseCache(cache_path), earlier_only=model.describe().get("prefix_reuse") is True)
        if type(inner).check_chat is not LanguageModel.check_chat and type(model).check_chat is LanguageModel.check_chat:
            # the backend says why it cannot take conversations (e.g. an HTTP model whose
            # --chat-template is a GGUF without a template): the cache answers the same
            setattr(model, "check_chat", inner.check_chat)  # noqa: B010
    from stratbench.models.reasoning import ReasoningReplies
    from stratbench.parsing.reasoning import parse_tags

    # parsers read the answer, never a reasoning model's thinking
    return ReasoningReplies(model, parse_tags((model_options or ModelOptions()).think_tags))


__all__ = ["API_PROVIDERS", "BACKENDS", "DEFAULT_MODEL", "TRAITS", "BackendTraits", "backend_traits", "EMBEDDED_INSTRUCT", "EMBEDDED_SPECS", "LOCAL_PREFIXES", "LanguageModel", "ModelOptions",
           "check_base_url_applies", "check_chat_template", "takes_chat_template", "check_reasoning_effort", "check_gguf_file", "is_http_spec", "load_model", "open_model", "split_spec"]
