"""Local Hugging Face causal LMs through `transformers` + PyTorch (spec `hf:<path-or-id>`).

Loading is strictly offline: `local_files_only=True` (and HF_HUB_OFFLINE=1 unless the user set it),
so `<path-or-id>` is either a local directory written by `save_pretrained` or a model id already in
the local Hugging Face cache. torch and transformers are imported only when a model is built, so
importing this module (or stratbench) stays cheap.

Scoring — log P(continuation | prompt), summed over the continuation's tokens:

* Tokenisation. The prompt is encoded with the tokenizer's special tokens (its BOS, if it adds
  one). A continuation's tokens are the tokens of `prompt + continuation` beyond the prompt's
  tokens when the prompt's tokens are a prefix of them (the natural tokenisation of the whole
  text); otherwise — the tokenizer merged across the boundary, e.g. a prompt ending in a space —
  the continuation is encoded on its own without special tokens and appended, as
  lm-evaluation-harness does. An empty prompt (with no BOS) is conditioned on the BOS or EOS token.
* Shared prompt. A request's prompt is evaluated ONCE. The prompts of up to `batch_size` requests
  (sorted by length) go through one LEFT-padded forward with an attention mask and explicit
  position ids that keeps only the last position's logits (`logits_to_keep=1`); its log-softmax
  scores every continuation's first token, so a request whose continuations are all single
  tokens (e.g. action labels) costs one forward of its prompt and keeps no KV cache. When some
  continuation has more tokens, that forward also returns its KV cache (a transformers
  `DynamicCache`), and each such continuation runs only `continuation[:-1]` on top of its
  prompt's cache: the rows are picked from the cache with `Cache.batch_select_indices` (on a
  deep copy, except for the last chunk of a group), `batch_size` continuations at a time,
  RIGHT-padded after the prompt (nothing between a prompt and its continuation, so a sliding
  window sees true distances), positions continuing the prompt's; logits are kept and
  log-softmaxed only at the continuation's positions. `tokens_in` counts what is evaluated: the
  prompt once plus Σ(len(continuation) − 1) (padding not counted).
* Token tree. Answers that share prefixes (TMGBench's 16 answer lines all begin `answer = [`)
  are, on a model whose every layer attends to the whole context with the eager or SDPA kernel,
  one token tree instead: each distinct prefix is one position on the prompt's cache, attending
  to the prompt and its own ancestors only (a 4D additive mask), at the prompt's last position +
  its depth, so `tokens_in` is the prompt plus the distinct prefixes — what llama.cpp's prefix
  reuse evaluates for the same answers (TMGBench DA on SmolLM2-135M: 4,020 tokens for 12 games by
  both routes, 6,504 as rows). The first multi-token group of a model runs both ways and the tree
  is kept only if its scores agree with the rows' (within 1e-2 nat in float32; measured 6.6e-5
  on SmolLM2-135M, ~1e-6 on tiny GPT-2, Llama, Qwen2, Phi-3 and Mistral), so a model that
  ignored the mask would cost speed, never numbers. A sliding window (Gemma, Mistral with a
  window) keeps the rows. A model whose cache is not a
  `DynamicCache` (legacy tuples, static or hybrid caches, recurrent states) falls back to one
  plain forward of `prompt + continuation[:-1]` per multi-token continuation (counted as such).
* Exactness. These scores equal a plain forward of each whole `prompt + continuation` up to
  float32 rounding: on the tests' tiny Llama (fp32, CPU, log-probs −4 to −50 nat) the largest
  |difference| measured against the plain path is 3.8e-6 nat (2.4e-6 against an unpadded,
  unbatched forward; the same order as between batch shapes of the plain path, 3.1e-6), and within
  3.8e-6 for GPT-2, Qwen2, Phi-3 and for Mistral/Gemma-2/Gemma-3 with an 8-token sliding window;
  the tests assert 1e-5 (benchmarks/bench_hf.py, 4 layers, 32k vocabulary, TMGBench answers of up
  to 45 tokens: 6.7e-6). The method is not part of `describe()`: scores equal within float32
  rounding are served from the same response-cache entries as before.

Chat: a tokenizer with a chat template (`tokenizer.chat_template`) makes the model chat-capable.
A conversation (a GenerateRequest's `messages`, else its system + user prompt; a ScoreRequest's
`messages`) is rendered with `apply_chat_template(..., tokenize=False, add_generation_prompt=True)`
and the rendered text is encoded WITHOUT adding special tokens again (the template writes its own
BOS); a chat ScoreRequest appends its stem `prompt` to the rendered text and scores the
continuations after it as above. Results carry the rendered text.

Generation is a plain KV-cached decode loop (not `model.generate`) so that each sampled request
draws from its own CPU `torch.Generator` seeded by (seed, sample_index): a request's sample does
not depend on which other requests share its batch (up to float rounding differences between
batch shapes, which can in rare near-ties flip a token).

Backends never raise for a failed request: the result carries `error`. A model that cannot be
loaded at all raises `InputError` with one line.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import hashlib
import inspect
import os
import stat
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from stratbench.errors import InputError
from stratbench.models.base import (
    GenerateRequest,
    GenerateResult,
    LocalModel,
    Message,
    ScoreRequest,
    ScoreResult,
    ends_answer,
)
from stratbench.models.notices import warn
from stratbench.seeding import derive_seed

DTYPES = ("float32", "bfloat16", "float16")
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


def _snapshot_dir(transformers: Any, model_id: str) -> Path | None:
    """The local Hugging Face cache's folder of `model_id` (its snapshot: one commit's files)."""
    try:
        found = transformers.utils.cached_file(model_id, "config.json", local_files_only=True)
    except Exception:  # noqa: BLE001 - loaded, so there; this only names its files
        return None
    return Path(found).parent if found else None


def _files_identity(folder: Path | None) -> str | None:
    """`<n> files:<digest>` of the name, size and modification time of every file at the top of
    `folder` (weights, config, tokenizer) but notes and logs (`.md`, `.log`, hidden files, which a
    load never reads): what a save into the folder changes, read without reading the files (a
    checkpoint can be tens of GB)."""
    if folder is None:
        return None
    rows = []
    try:
        names = sorted(folder.iterdir())
    except OSError:
        return None
    for f in names:
        if f.name.startswith(".") or f.suffix.lower() in (".md", ".log", ".lock"):
            continue
        try:
            st = f.stat()  # (a hub snapshot's files are links to its blobs: the blob's)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            rows.append(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}")
    return f"{len(rows)} files:" + hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# the tree path's scores against the rows path's on a model's first multi-token group, by dtype:
# rounding differs by ~1e-5 nat in float32 (6.6e-5 measured on SmolLM2-135M, 30 layers), while a
# model that let a branch see its siblings would be off by orders of magnitude more; a check that
# fails only costs speed (the rows path is kept)
TREE_CHECK_TOL = {"float32": 1e-2, "bfloat16": 0.25, "float16": 0.25}


def _tree_capable(model: Any) -> bool:
    """Whether every layer of `model` attends to the whole context with an eager or SDPA kernel,
    the two that take a 4D additive mask as given (a sliding window would need the window in that
    mask too; flash and flex kernels take no such mask), and places tokens by position ids (ALiBi
    models — Bloom, MPT, Falcon with alibi — build their biases from a 2D mask)."""
    cfg = model.config
    if getattr(cfg, "_attn_implementation", None) not in ("eager", "sdpa"):
        return False
    attn = getattr(cfg, "attn_config", None)
    alibi = getattr(attn, "alibi", None) if not isinstance(attn, dict) else attn.get("alibi")
    if getattr(cfg, "model_type", "") == "bloom" or getattr(cfg, "alibi", False) or alibi:
        return False
    types = getattr(cfg, "layer_types", None)
    if types:
        return all(t == "full_attention" for t in types)
    return getattr(cfg, "sliding_window", None) is None or getattr(cfg, "use_sliding_window", True) is False


def _token_tree(conts: list[list[int]]) -> tuple[list[tuple[int, int, int]], list[list[int]]]:
    """The distinct prefixes of every continuation's input tokens (all but its last) as nodes
    (token, parent node or -1, depth from 1), parents before children, and each continuation's
    path of nodes."""
    index: dict[tuple[int, int], int] = {}
    nodes: list[tuple[int, int, int]] = []
    paths: list[list[int]] = []
    for c in conts:
        parent, path = -1, []
        for t in c[:-1]:
            key = (parent, t)
            if key not in index:
                index[key] = len(nodes)
                nodes.append((t, parent, nodes[parent][2] + 1 if parent >= 0 else 1))
            parent = index[key]
            path.append(parent)
        paths.append(path)
    return nodes, paths


def _ancestor_matrix(nodes: list[tuple[int, int, int]], torch: Any) -> Any:
    """(n, n) booleans: row i marks node i and its ancestors."""
    m = torch.zeros((len(nodes), len(nodes)), dtype=torch.bool)
    for i, (_, parent, _) in enumerate(nodes):
        if parent >= 0:
            m[i] = m[parent]
        m[i, i] = True
    return m


class _Item:
    """One request to score: its prompt tokens and its continuations' target tokens (closed: each
    ending in the vocabulary size, "the answer ends here")."""

    __slots__ = ("qi", "ctx", "conts")

    def __init__(self, qi: int, ctx: list[int], conts: list[list[int]]) -> None:
        self.qi = qi
        self.ctx = ctx
        self.conts = conts


class HFModel(LocalModel):
    """A causal LM loaded with `AutoModelForCausalLM` from a local directory or the local HF cache."""

    supports_logprobs = True
    supports_closed_scoring = True

    def __init__(
        self,
        path: str,
        device: str | None = None,
        dtype: str = "float32",
        batch_size: int = 8,
        chat_template: bool = False,
        spec: str | None = None,
    ) -> None:
        super().__init__()
        self.path = str(path)
        self.spec = spec or f"hf:{self.path}"
        dtype = _DTYPE_ALIASES.get(str(dtype).lower(), str(dtype).lower())
        if dtype not in DTYPES:
            raise InputError(f"{self.spec}: unknown dtype {dtype!r} (choose from {', '.join(DTYPES)})")
        if int(batch_size) < 1:
            raise InputError(f"{self.spec}: batch_size must be at least 1, got {batch_size}")
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.chat_template = bool(chat_template)

        local = Path(self.path).expanduser()
        is_dir = local.is_dir()
        if is_dir and not (local / "config.json").is_file():
            raise InputError(f"{self.spec}: no model found (config.json missing in {local})")
        if not is_dir and (local.exists() or self.path.startswith((".", "/", "~")) or self.path.count("/") > 1):
            what = "not a directory" if local.exists() else "no such directory"
            raise InputError(f"{self.spec}: no model found ({what}: {local})")

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            import transformers
        except ImportError:
            raise InputError(
                f"{self.spec}: torch and transformers are not installed (pip install 'stratbench[hf]')"
            ) from None
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        source = str(local) if is_dir else self.path
        bars = transformers.utils.logging.is_progress_bar_enabled()
        transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar over the CLI's display
        # transformers' and torch's warnings while loading (its load report, "model of type …", a
        # config's token ids, a pickle's protocol) would come before the one line a refusal is
        # (fuzz 25 A F6); what matters of them is checked and said in that line
        level = transformers.utils.logging.get_verbosity()
        transformers.utils.logging.set_verbosity_error()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._load(transformers, torch, source, is_dir)
        finally:
            transformers.utils.logging.set_verbosity(level)
            if bars:
                transformers.utils.logging.enable_progress_bar()
        self._versions = {"transformers": transformers.__version__, "torch": torch.__version__}
        self.weights = _files_identity(local if is_dir else _snapshot_dir(transformers, self.path))
        self.supports_chat = self.supports_chat_scoring = bool(getattr(self._tok, "chat_template", None))

    def _load(self, transformers: Any, torch: Any, source: str, is_dir: bool) -> None:
        try:
            self._tok = transformers.AutoTokenizer.from_pretrained(source, local_files_only=True)
        except Exception as e:  # noqa: BLE001 - anything here means "cannot load"
            where = "" if is_dir else " (not a local directory, and not in the local Hugging Face cache)"
            raise InputError(f"{self.spec}: no model found{where}: {_one_line(e)}") from None
        dtype_kw = "dtype" if _version_tuple(transformers.__version__) >= (4, 56) else "torch_dtype"
        try:  # (its load report is silenced by the caller: said here in one line instead)
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                source, local_files_only=True, output_loading_info=True, **{dtype_kw: getattr(torch, self.dtype)}
            )
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{self.spec}: cannot load the model: {_one_line(e)}") from None
        # weights the config needs but the checkpoint lacks (or holds in another shape) would be
        # filled at random: every score then a draw of the load, not the checkpoint's
        lost = [k if isinstance(k, str) else str(k[0]) for k in (*sorted(info.get("missing_keys") or (), key=str),
                                                                  *sorted(info.get("mismatched_keys") or (), key=str))]
        if lost:
            raise InputError(f"{self.spec}: the checkpoint lacks {len(lost)} of the weights its config.json needs "
                             f"(e.g. {lost[0]}), which transformers would fill at random: a config and weights "
                             "of different models, or a checkpoint cut short")
        # weights the checkpoint holds that its config does not use (a config naming fewer layers):
        # transformers drops them, and a cut-down model would be scored as the checkpoint
        unused = sorted(k for k in info.get("unexpected_keys") or () if isinstance(k, str)
                        and k.endswith((".weight", ".bias")))
        if unused:
            raise InputError(f"{self.spec}: the checkpoint holds {len(unused)} weights its config.json does not use "
                             f"(e.g. {unused[0]}), which transformers would drop: a config and weights of "
                             "different models (a config naming fewer layers?)")
        try:
            model.to(self.device)
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{self.spec}: cannot load the model: {_one_line(e)}") from None
        model.eval()
        self._model = model
        self._ends: Any = None  # ends_answer_mask(), made on first use
        self._cache_cls = getattr(transformers, "DynamicCache", None)
        self._share_prefix: bool | None = None  # False once the model's KV cache proved unshareable
        # answers as a token tree on the prompt's cache: None = not yet checked against the rows
        # path on this model, False = not used (a sliding window, another attention kernel, or
        # the check failed)
        self._tree: bool | None = None if _tree_capable(model) else False
        params = inspect.signature(model.forward).parameters
        self._keep_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        self._takes_position_ids = "position_ids" in params
        # the KV cache's keyword: `cache` from transformers 5.24 on (`past_key_values` is deprecated
        # there, removed in 5.40), `past_key_values` before
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

        cfg = model.config
        self.max_len: int | None = None
        for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            v = getattr(cfg, attr, None)
            if isinstance(v, int) and v > 0:
                self.max_len = v
                break
        tok = self._tok
        self._pad_id = next(
            (t for t in (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id, 0) if t is not None), 0
        )
        eos: set[int] = set()
        for src in (getattr(getattr(model, "generation_config", None), "eos_token_id", None), tok.eos_token_id):
            if isinstance(src, int):
                eos.add(src)
            elif isinstance(src, (list, tuple)):
                eos.update(int(t) for t in src)
        self._eos_ids = eos

    # -- tokens -------------------------------------------------------------------------------
    def _encode(self, text: str, special: bool) -> list[int]:
        return list(self._tok(text, add_special_tokens=special)["input_ids"])

    def _context_tokens(self, prompt: str) -> list[int]:
        ids = self._encode(prompt, True)
        if not ids:
            start = self._tok.bos_token_id if self._tok.bos_token_id is not None else self._tok.eos_token_id
            if start is None:
                raise ValueError("empty prompt and the tokenizer has no BOS/EOS token to condition on")
            ids = [int(start)]
        return ids

    def continuation_tokens(self, prompt_tokens: list[int], prompt: str, cont: str,
                            special: bool = True) -> list[int]:
        """Tokens of `cont` after `prompt`: the tail of encode(prompt + cont) when the prompt's
        tokens are its prefix, else `cont` encoded on its own (no special tokens)."""
        if not cont:
            return []
        full = self._encode(prompt + cont, special)
        n = len(prompt_tokens)
        if len(full) > n and full[:n] == prompt_tokens:
            return full[n:]
        return self._encode(cont, False)

    def render_chat(self, messages: Sequence[Message]) -> str:
        """The conversation through the tokenizer's chat template, the assistant's turn opened."""
        if not getattr(self._tok, "chat_template", None):
            raise ValueError(f"{self.spec}: the tokenizer has no chat template")
        dicts = [{"role": role, "content": content} for role, content in messages]
        try:
            text = self._tok.apply_chat_template(dicts, tokenize=False, add_generation_prompt=True)
        except Exception as e:  # noqa: BLE001 - a template error is this request's failure
            raise ValueError(f"chat template: {_one_line(e)}") from None
        return str(text)

    def _score_tokens(self, req: ScoreRequest) -> tuple[list[int], list[list[int]], str | None]:
        """Context tokens, continuation tokens and (chat) the scored text."""
        if not req.messages:
            ctx = self._context_tokens(req.prompt)
            return ctx, [self.continuation_tokens(ctx, req.prompt, c) for c in req.continuations], None
        text = self.render_chat(req.messages) + req.prompt
        ctx = self._encode(text, False) or self._context_tokens("")
        return ctx, [self.continuation_tokens(ctx, text, c, special=False) for c in req.continuations], text

    # -- forward ------------------------------------------------------------------------------
    def _batch_tensors(self, seqs: list[list[int]], left: bool = True) -> tuple[Any, Any, Any]:
        """Token ids, attention mask and position ids of `seqs` padded to one width, on the left
        (or on the right: `left=False`)."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            if s:
                at = slice(width - len(s), width) if left else slice(0, len(s))
                ids[i, at] = torch.tensor(s, dtype=torch.long)
                mask[i, at] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        return ids.to(self.device), mask.to(self.device), pos.to(self.device)

    def _forward(self, ids: Any, mask: Any, pos: Any, keep: int, **extra: Any) -> Any:
        """Logits (float32) of the last `keep` positions."""
        kw: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, **extra}
        if self._takes_position_ids:
            kw["position_ids"] = pos
        if self._keep_kw:
            kw[self._keep_kw] = keep
        out = self._model(**kw)
        logits = out.logits
        if logits.shape[1] != keep:
            logits = logits[:, -keep:, :]
        return out, logits.float()

    def _with_cache(self, cache: Any) -> dict[str, Any]:
        """The forward keyword that passes a KV cache, in this transformers' spelling."""
        return {self._cache_kw: cache}

    @staticmethod
    def _cache_of(out: Any) -> Any:
        """The KV cache a forward returned (`cache` from transformers 5.24 on, `past_key_values`
        before)."""
        fields = getattr(out, "keys", None)
        if callable(fields) and "cache" in out.keys():
            return out["cache"]
        return out.past_key_values

    def _n_logits(self) -> int:
        """The size of a logits row (the token id that stands for "the answer ends here")."""
        head = self._model.get_output_embeddings() if hasattr(self._model, "get_output_embeddings") else None
        weight = getattr(head, "weight", None)
        return int(weight.shape[0]) if weight is not None else int(self._model.config.vocab_size)

    def ends_answer_mask(self, size: int) -> Any:
        """Which of the `size` logits end an answer (`base.ends_answer` of each token's text, read
        after a letter so that a leading space survives decoding); rows beyond the tokenizer's
        vocabulary do not. Computed once per model."""
        if self._ends is None or self._ends.shape[0] != size:
            tok = self._tok
            a = tok("a", add_special_tokens=False)["input_ids"][:1]
            head = len(tok.decode(a))
            n = min(size, len(tok))
            texts = tok.batch_decode([a + [i] for i in range(n)], skip_special_tokens=False,
                                     clean_up_tokenization_spaces=False)
            flags = [ends_answer(t[head:]) for t in texts] + [False] * (size - n)
            self._ends = self._torch.tensor(flags, dtype=self._torch.bool)
        return self._ends

    def _pick(self, lp: Any, targets: list[list[int]]) -> list[float]:
        """Summed log-probs of each target list (all of length lp.shape[0]) at lp's positions; the
        target id == vocabulary size is "the answer ends here" (closed scoring)."""
        torch = self._torch
        if any(t[-1] == lp.shape[1] for t in targets):  # closed: the answer's end as one more column
            ends = self.ends_answer_mask(lp.shape[1]).to(lp.device)
            lp = torch.cat([lp, torch.logsumexp(lp[:, ends], dim=1, keepdim=True)], dim=1)
        tgt = torch.tensor(targets, dtype=torch.long, device=lp.device)  # (n_targets, n_positions)
        return [float(v) for v in lp.gather(1, tgt.T).double().sum(0).tolist()]

    def _shareable(self, cache: Any) -> bool:
        """Whether `cache` is a transformers DynamicCache whose rows can be selected and continued
        (not a legacy tuple, a static/hybrid cache, or one holding recurrent states)."""
        return (self._cache_cls is not None and isinstance(cache, self._cache_cls)
                and hasattr(cache, "batch_select_indices") and not any(getattr(cache, "is_linear", ()) or ()))

    def _run_group(self, group: list[_Item], chunk: int) -> list[tuple[list[float], int]]:
        """Scores of a group of requests, with the tokens evaluated for each: one left-padded
        forward over the prompts (keeping only the last position, whose log-softmax scores every
        continuation's first token), then every continuation's remaining tokens `chunk` rows at a
        time on top of the prompts' KV cache (rows selected from it)."""
        torch = self._torch
        pids, pmask, ppos = self._batch_tensors([it.ctx for it in group])
        rows = [(g, ci, c) for g, it in enumerate(group) for ci, c in enumerate(it.conts) if len(c) > 1]
        share = bool(rows) and self._share_prefix is not False
        out, logits = self._forward(pids, pmask, ppos, keep=1, use_cache=share)
        cache = self._cache_of(out) if share else None
        del out
        if share and not self._shareable(cache):
            self._share_prefix, cache = False, None  # this model's cache cannot be shared: plain rows
        first = torch.log_softmax(logits[:, -1, :], dim=-1)  # (G, V)
        del logits
        scores = [self._pick(first[g:g + 1], [[c[0]] for c in it.conts]) for g, it in enumerate(group)]
        evaluated = [len(it.ctx) for it in group]
        if cache is not None and self._tree is not False:
            width = max(len(c) for _, _, c in rows) - 1
            budget = max(1, chunk * width // len(group))  # the rows path's logits memory, at most
            if self._tree:
                return self._tree_scores(group, pmask, ppos, cache, scores, evaluated, budget)
            try:
                tree = self._tree_scores(group, pmask, ppos, copy.deepcopy(cache), copy.deepcopy(scores),
                                         list(evaluated), budget)
            except Exception as e:  # noqa: BLE001 - a model _tree_capable did not foresee
                self._tree = False
                self._tree_off(f"failed ({_one_line(e)})")
                return self._rows_scores(group, pmask, ppos, cache, scores, evaluated, rows, chunk)
            checked = self._rows_scores(group, pmask, ppos, cache, scores, evaluated, rows, chunk)
            tol = TREE_CHECK_TOL.get(self.dtype, 1e-2)
            gaps = [abs(a - b) for (x, _), (y, _) in zip(tree, checked) for a, b in zip(x, y)]
            self._tree = all(d <= tol for d in gaps)  # (a NaN gap is no agreement)
            if not self._tree:
                worst = next((d for d in gaps if d != d), max(gaps))
                self._tree_off(f"gave scores {worst:.3g} nat away from one row each (more than {tol})")
            return tree if self._tree else checked
        return self._rows_scores(group, pmask, ppos, cache, scores, evaluated, rows, chunk)

    def _tree_off(self, why: str) -> None:
        """Say that the token tree is off for this model, once: the numbers stay right (the rows
        path's), but it is slower, and a tree that fails where it should not is a bug to see."""
        warn(f"{self.spec}: scoring answers that share a prefix as one token tree {why}; each answer is "
             "scored as its own row on this model instead (the same numbers, more tokens evaluated)")

    def _rows_scores(self, group: list[_Item], pmask: Any, ppos: Any, cache: Any, scores: list[list[float]],
                     evaluated: list[int], rows: list[tuple[int, int, list[int]]],
                     chunk: int) -> list[tuple[list[float], int]]:
        """Each multi-token continuation as its own row, `chunk` rows a forward, on the prompts'
        cache (or, with no cache, after its whole prompt)."""
        torch = self._torch
        rows.sort(key=lambda r: -len(r[2]))
        for s in range(0, len(rows), chunk):
            part = rows[s:s + chunk]
            width = max(len(c) for _, _, c in part) - 1
            if cache is not None:
                idx = torch.tensor([g for g, _, _ in part], dtype=torch.long, device=pmask.device)
                # the last chunk may narrow the prompts' cache itself; earlier ones work on a copy
                rows_cache = cache if s + chunk >= len(rows) else copy.deepcopy(cache)
                rows_cache.batch_select_indices(idx)
                # padded on the RIGHT: nothing between a prompt and its continuation, so that the
                # distance between two real tokens (a sliding window's measure) is their distance
                ids, cmask, cpos = self._batch_tensors([c[:-1] for _, _, c in part], left=False)
                mask = torch.cat([pmask[idx], cmask], dim=1)
                pos = ppos[idx, -1:] + 1 + cpos  # the prompt's last position is real (left padding)
                out, logits = self._forward(ids, mask, pos, keep=width, use_cache=True,
                                            **self._with_cache(rows_cache))
                del out, rows_cache
                at = [slice(0, len(c) - 1) for _, _, c in part]
            else:
                out, logits = self._forward(*self._batch_tensors([group[g].ctx + c[:-1] for g, _, c in part]),
                                            keep=width, use_cache=False)
                del out
                at = [slice(width - (len(c) - 1), width) for _, _, c in part]
            for i, (g, ci, c) in enumerate(part):
                lp = torch.log_softmax(logits[i, at[i], :], dim=-1)  # (len(c) - 1, V)
                scores[g][ci] += self._pick(lp, [c[1:]])[0]
                evaluated[g] += len(c) - 1 + (len(group[g].ctx) if cache is None else 0)
            del logits
        return list(zip(scores, evaluated))

    def _tree_scores(self, group: list[_Item], pmask: Any, ppos: Any, cache: Any, scores: list[list[float]],
                     evaluated: list[int], budget: int) -> list[tuple[list[float], int]]:
        """Every request's continuations as one token tree on its prompt's cache: each distinct
        continuation prefix is one position, attending to the prompt and to its own ancestors only
        (a 4D attention mask), at the prompt's last position + its depth; `budget` positions per
        row a forward, the cache growing by each chunk. Padding positions attend only to
        themselves, so no row of the attention is empty."""
        torch = self._torch
        trees = [_token_tree(it.conts) for it in group]
        n_nodes = [len(nodes) for nodes, _ in trees]
        # which (node, target) log-probs each continuation sums: its input tokens' nodes, each
        # scoring the next token
        wants: list[list[tuple[int, int, int]]] = [
            [(path[j], c[j + 1], ci) for ci, (c, path) in enumerate(zip(it.conts, paths)) for j in range(len(path))]
            for it, (_, paths) in zip(group, trees)
        ]
        ancestors = [_ancestor_matrix(nodes, torch) for nodes, _ in trees]
        dtype = next(self._model.parameters()).dtype
        low = torch.finfo(dtype).min
        n_prompt = pmask.shape[1]
        total = max(n_nodes)
        for a in range(0, total, budget):
            width = min(budget, total - a)
            ids = torch.full((len(group), width), self._pad_id, dtype=torch.long)
            pos = torch.zeros((len(group), width), dtype=torch.long)
            allowed = torch.zeros((len(group), width, n_prompt + a + width), dtype=torch.bool)
            for g, (nodes, _) in enumerate(trees):
                real = max(0, min(width, n_nodes[g] - a))
                base = int(ppos[g, -1])
                for i in range(width):
                    allowed[g, i, n_prompt + a + i] = True  # itself (padding: only itself)
                if real:
                    ids[g, :real] = torch.tensor([nodes[a + i][0] for i in range(real)], dtype=torch.long)
                    pos[g, :real] = torch.tensor([base + nodes[a + i][2] for i in range(real)], dtype=torch.long)
                    allowed[g, :real, :n_prompt] = pmask[g].bool().cpu()
                    seen = min(a + width, n_nodes[g])  # (this row's own nodes; its padding is seen by none)
                    allowed[g, :real, n_prompt:n_prompt + seen] = ancestors[g][a:a + real, :seen]
            mask = torch.full(allowed.shape, low, dtype=dtype)
            mask.masked_fill_(allowed, 0.0)
            out, logits = self._forward(ids.to(self.device), mask[:, None].to(self.device), pos.to(self.device),
                                        keep=width, use_cache=True, **self._with_cache(cache))
            del out
            for g in range(len(group)):
                here = [(n - a, t, ci) for n, t, ci in wants[g] if a <= n < a + width]
                if not here:
                    continue
                lp = torch.log_softmax(logits[g], dim=-1)
                if any(t == lp.shape[1] for _, t, _ in here):  # closed: the answer's end as one more column
                    ends = self.ends_answer_mask(lp.shape[1]).to(lp.device)
                    lp = torch.cat([lp, torch.logsumexp(lp[:, ends], dim=1, keepdim=True)], dim=1)
                at = torch.tensor([n for n, _, _ in here], dtype=torch.long, device=lp.device)
                tok = torch.tensor([t for _, t, _ in here], dtype=torch.long, device=lp.device)
                for (_, _, ci), v in zip(here, lp[at, tok].double().tolist()):
                    scores[g][ci] += v
            del logits
        return [(s, e + n) for s, e, n in zip(scores, evaluated, n_nodes)]

    def _score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        if self._model is None:
            return [ScoreResult(None, error=f"{self.spec}: model is closed") for _ in requests]
        t0 = time.perf_counter()
        torch = self._torch
        n = len(requests)
        errors: list[str | None] = [None] * n
        logprobs: list[list[float] | None] = [None] * n
        n_tokens: list[list[int]] = [[] for _ in requests]
        tokens_in = [0] * n
        rendered: list[str | None] = [None] * n
        items: list[_Item] = []
        for qi, req in enumerate(requests):
            try:
                if not req.continuations:
                    raise ValueError("no continuations to score")
                ctx, conts, rendered[qi] = self._score_tokens(req)
                if any(len(c) == 0 for c in conts):
                    raise ValueError("empty continuation")
                n_tokens[qi] = [len(c) for c in conts]
                if req.closed:  # each continuation then ends the answer: one more "token", its end
                    conts = [c + [self._n_logits()] for c in conts]
                longest = len(ctx) + max(len(c) for c in conts) - 1
                if self.max_len is not None and longest > self.max_len:
                    raise ValueError(f"input of {longest} tokens exceeds the model's context of {self.max_len}")
                items.append(_Item(qi, ctx, conts))
            except Exception as e:  # noqa: BLE001 - per-request failure, never raised
                errors[qi] = str(e) if isinstance(e, ValueError) else _one_line(e)

        items.sort(key=lambda it: -len(it.ctx))
        with torch.inference_mode():
            for b in range(0, len(items), self.batch_size):
                group = items[b:b + self.batch_size]
                done: list[tuple[list[float], int] | None]
                try:
                    done = list(self._run_group(group, self.batch_size))
                except Exception as e:  # noqa: BLE001 - e.g. out of memory: retry request by request
                    self._free()
                    if len(group) == 1 and self.batch_size == 1:
                        errors[group[0].qi] = f"hf: {_one_line(e)}"
                        continue
                    done = []
                    for it in group:
                        try:
                            done.extend(self._run_group([it], 1))
                        except Exception as e1:  # noqa: BLE001
                            self._free()
                            errors[it.qi] = f"hf: {_one_line(e1)}"
                            done.append(None)
                for it, got in zip(group, done):
                    if got is not None:
                        logprobs[it.qi], tokens_in[it.qi] = got

        latency = (time.perf_counter() - t0) / max(n, 1)
        results = []
        for qi in range(n):
            lps = logprobs[qi]
            if errors[qi] is not None or lps is None:
                results.append(ScoreResult(None, error=errors[qi] or "hf: scoring failed", latency_s=latency,
                                           rendered=rendered[qi]))
            else:
                results.append(ScoreResult(lps, n_tokens[qi], tokens_in=tokens_in[qi], latency_s=latency,
                                           rendered=rendered[qi]))
        return results

    # -- generation ---------------------------------------------------------------------------
    def _prompt_tokens(self, req: GenerateRequest) -> tuple[list[int], str | None]:
        """The prompt's tokens, and (chat) the rendered text they encode."""
        if req.chat or req.messages or self.chat_template:
            conversation: tuple[Message, ...] = req.messages or (
                (("system", req.system),) if req.system else ()) + (("user", req.prompt),)
            text = self.render_chat(conversation)
            ids = self._encode(text, False)  # the template writes its own special tokens
            return ids or self._context_tokens(""), text
        return self._context_tokens(req.prompt), None

    def _generate_chunk(self, reqs: list[GenerateRequest], prompts: list[list[int]]) -> list[GenerateResult]:
        torch = self._torch
        t0 = time.perf_counter()
        B = len(reqs)
        limits = []
        for req, p in zip(reqs, prompts):
            room = req.max_tokens if self.max_len is None else min(req.max_tokens, self.max_len - len(p))
            limits.append(max(room, 0))
        gens: list[Any] = []
        for req in reqs:
            if req.temperature > 0:
                g = torch.Generator(device="cpu")
                g.manual_seed(derive_seed(req.seed or 0, req.sample_index))
                gens.append(g)
            else:
                gens.append(None)
        sampling = any(g is not None for g in gens)
        temps = torch.tensor([[float(r.temperature) if r.temperature > 0 else 1.0] for r in reqs],
                             dtype=torch.float32, device=self.device)
        out_tokens: list[list[int]] = [[] for _ in reqs]
        texts: list[str | None] = [None] * B
        finish: list[str | None] = [None] * B
        for i in range(B):
            if limits[i] == 0:
                texts[i], finish[i] = "", "length"

        ids, mask, pos = self._batch_tensors(prompts)
        cache = None
        step_ids = ids
        while any(f is None for f in finish):
            extra: dict[str, Any] = {"use_cache": True}
            if cache is not None:
                extra.update(self._with_cache(cache))
            out, logits = self._forward(step_ids, mask, pos, keep=1, **extra)
            cache = self._cache_of(out)
            last = logits[:, -1, :]
            greedy = last.argmax(dim=-1).tolist()  # one device sync per step, not one per row
            probs = torch.softmax(last / temps, dim=-1).cpu() if sampling else None
            nxt: list[int] = []
            for i, req in enumerate(reqs):
                if finish[i] is not None:
                    nxt.append(self._pad_id)
                    continue
                if req.temperature > 0:
                    assert probs is not None  # sampling
                    tok = int(torch.multinomial(probs[i], 1, generator=gens[i]).item())
                else:
                    tok = int(greedy[i])
                nxt.append(tok)
                if tok in self._eos_ids:
                    out_tokens[i].append(tok)
                    finish[i] = "stop"
                    texts[i] = self._tok.decode(out_tokens[i][:-1], skip_special_tokens=True)
                    continue
                out_tokens[i].append(tok)
                full = len(out_tokens[i]) >= limits[i]
                if not (req.stop or full):
                    continue  # decode only when a stop string could match or the row is done
                text = self._tok.decode(out_tokens[i], skip_special_tokens=True)
                cut = [text.find(s) for s in req.stop if s and s in text]
                if cut:
                    texts[i], finish[i] = text[:min(cut)], "stop"
                elif full:
                    texts[i], finish[i] = text, "length"
            step_ids = torch.tensor(nxt, dtype=torch.long, device=self.device)[:, None]
            mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=mask.device)], dim=1)
            pos = pos[:, -1:] + 1
        del cache
        latency = (time.perf_counter() - t0) / B
        return [
            GenerateResult(texts[i], tokens_in=len(prompts[i]), tokens_out=len(out_tokens[i]),
                           latency_s=latency, finish_reason=finish[i])
            for i in range(B)
        ]

    def _generate_batch(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        if self._model is None:
            return [GenerateResult(None, error=f"{self.spec}: model is closed") for _ in requests]
        torch = self._torch
        results: list[GenerateResult | None] = [None] * len(requests)
        todo: list[tuple[int, list[int]]] = []
        rendered: list[str | None] = [None] * len(requests)
        for qi, req in enumerate(requests):
            try:
                if req.max_tokens < 0:
                    raise ValueError(f"max_tokens must be >= 0, got {req.max_tokens}")
                p, rendered[qi] = self._prompt_tokens(req)
                if self.max_len is not None and len(p) >= self.max_len:
                    raise ValueError(f"prompt of {len(p)} tokens fills the model's context of {self.max_len}")
                todo.append((qi, p))
            except Exception as e:  # noqa: BLE001
                results[qi] = GenerateResult(None, error=str(e) if isinstance(e, ValueError) else _one_line(e),
                                             rendered=rendered[qi])
        todo.sort(key=lambda t: -len(t[1]))
        with torch.inference_mode():
            for b in range(0, len(todo), self.batch_size):
                chunk = todo[b:b + self.batch_size]
                try:
                    outs = self._generate_chunk([requests[q] for q, _ in chunk], [p for _, p in chunk])
                except Exception as e:  # noqa: BLE001 - e.g. out of memory: retry one at a time
                    self._free()
                    if len(chunk) == 1:
                        outs = [GenerateResult(None, error=f"hf: {_one_line(e)}")]
                    else:
                        outs = []
                        for q, p in chunk:
                            try:
                                outs.extend(self._generate_chunk([requests[q]], [p]))
                            except Exception as e1:  # noqa: BLE001
                                self._free()
                                outs.append(GenerateResult(None, error=f"hf: {_one_line(e1)}"))
                for (q, _), r in zip(chunk, outs):
                    r.rendered = rendered[q]
                    results[q] = r
        return [r if r is not None else GenerateResult(None, error="hf: generation failed") for r in results]

    # -- interface ----------------------------------------------------------------------------
    def _free(self) -> None:
        gc.collect()
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "backend": "hf",
            "path": self.path,
            "dtype": self.dtype,
            "device": self.device,
            # the checkpoint's files as they are now: a checkpoint saved anew into the same folder
            # (the next training step) is another model to the response cache and to a resume
            "weights": self.weights,
            **self._versions,
        }

    async def aclose(self) -> None:
        def close() -> None:
            with self._lock:
                self._model = None
                self._free()

        await asyncio.to_thread(close)


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
        if not part.isdigit():
            break
    return tuple(out)
