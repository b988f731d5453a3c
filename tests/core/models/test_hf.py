"""The Hugging Face backend on a tiny randomly-initialised Llama built here (no downloads)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from stratbench.errors import InputError  # noqa: E402
from stratbench.models.base import GenerateRequest, ScoreRequest  # noqa: E402
from stratbench.models.hf import HFModel  # noqa: E402

CORPUS = [
    "You are playing a game. Choose action A or action B.",
    "The payoff matrix is: row 1: 3, 0; row 2: 5, 1.",
    "Answer: A", "Answer: B", "Answer: C", "Answer: D",
    "Player 1 chooses cooperate. Player 2 chooses defect.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 42 100 2024",
    "The quick brown fox jumps over the lazy dog.",
    "Probability of each action: A 0.5, B 0.25, C 0.25.",
] * 3

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    tok = _build_tokenizer()
    cfg = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():  # larger weights than the default init, so distributions are not flat
        for p in m.parameters():
            p.mul_(3.0)
    m.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def hf(model_dir):
    return HFModel(str(model_dir), device="cpu", batch_size=8)


@pytest.fixture(scope="module")
def ref(model_dir):
    tok = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    m.eval()

    def score(prompt: str, cont: str) -> tuple[float, int]:
        """Direct forward of the unpadded sequence, full logits, manual gather."""
        p = tok(prompt)["input_ids"]
        full = tok(prompt + cont)["input_ids"]
        c = full[len(p):] if full[:len(p)] == p and len(full) > len(p) else tok(cont, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([p + c])
        with torch.no_grad():
            lp = torch.log_softmax(m(ids).logits[0].double(), dim=-1)
        return float(sum(lp[len(p) - 1 + j, t] for j, t in enumerate(c))), len(c)

    score.tok = tok
    return score


def run(coro):
    return asyncio.run(coro)


PROMPTS = [
    "You are playing a game. Choose action A or action B.\nAnswer:",
    "Answer:",
    "The payoff matrix is: row 1: 3, 0; row 2: 5, 1. Player 1 chooses",
    "0 1 2 3",
    "The quick brown fox jumps over the lazy dog. Probability of each action: A 0.5, B",
]
SINGLE = (" A", " B", " C", " D")
MULTI = (" cooperate", " defect", " 42", " 2024 and 12", " zebra!")


def test_scores_match_direct_forward(hf, ref):
    reqs = [ScoreRequest(p, SINGLE) for p in PROMPTS] + [ScoreRequest(p, MULTI) for p in PROMPTS]
    reqs.append(ScoreRequest("Answer: ", ("A", "B")))  # prompt tokens not a prefix: separate encode
    res = run(hf.score(reqs))
    saw_multi = False
    for req, r in zip(reqs, res):
        assert r.ok, r.error
        for cont, lp, n in zip(req.continuations, r.logprobs, r.n_tokens):
            want, want_n = ref(req.prompt, cont)
            assert n == want_n
            assert lp == pytest.approx(want, abs=1e-5)
            assert lp < 0
            saw_multi |= n > 1
    assert saw_multi
    assert all(n == 1 for r in res[:len(PROMPTS)] for n in r.n_tokens)


def test_batched_equals_unbatched(model_dir, hf):
    one = HFModel(str(model_dir), device="cpu", batch_size=1)
    reqs = [ScoreRequest(p, SINGLE + MULTI) for p in PROMPTS] + [ScoreRequest(p, SINGLE) for p in PROMPTS]
    a = run(hf.score(reqs))
    b = run(one.score(reqs))
    for x, y in zip(a, b):
        assert x.ok and y.ok
        assert x.n_tokens == y.n_tokens
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-5)
    # and the generation path: greedy batched == greedy one at a time
    greqs = [GenerateRequest(p, max_tokens=8) for p in PROMPTS]
    ga = run(hf.generate(greqs))
    gb = run(one.generate(greqs))
    assert [r.text for r in ga] == [r.text for r in gb]


def test_single_token_fast_path_is_used(hf, ref):
    calls = []

    def hook(module, args, kwargs, output):
        calls.append((kwargs["input_ids"].shape, kwargs.get("logits_to_keep"), output.logits.shape))

    prompt = PROMPTS[0]
    n_prompt = len(ref.tok(prompt)["input_ids"])
    h = hf._model.register_forward_hook(hook, with_kwargs=True)
    try:
        fast = run(hf.score([ScoreRequest(prompt, SINGLE)]))[0]
        n_fast = len(calls)
        calls_fast = list(calls)
        # same labels forced through the multi-token path by adding one multi-token continuation
        slow = run(hf.score([ScoreRequest(prompt, SINGLE + (" zebra!",))]))[0]
    finally:
        h.remove()
    assert fast.ok and slow.ok
    assert n_fast == 1
    (shape, keep, lshape), = calls_fast
    assert tuple(shape) == (1, n_prompt) and keep == 1 and lshape[1] == 1
    assert fast.tokens_in == n_prompt  # one pass over the prompt, nothing else
    assert fast.n_tokens == [1, 1, 1, 1]
    assert slow.n_tokens[-1] > 1 and slow.tokens_in > n_prompt
    assert fast.logprobs == pytest.approx(slow.logprobs[:4], abs=1e-5)
    # and each single-token score equals scoring that label alone with a multi-token sibling
    for cont, lp in zip(SINGLE, fast.logprobs):
        want, _ = ref(prompt, cont)
        assert lp == pytest.approx(want, abs=1e-5)


def test_complete_single_token_set_is_a_distribution(hf, ref):
    tok = ref.tok
    vocab = tok.get_vocab()
    conts = []
    for t, i in sorted(vocab.items(), key=lambda kv: kv[1]):
        s = tok.decode([i])
        if i in tok.all_special_ids or not s:
            continue
        if tok("Answer:" + s)["input_ids"] == tok("Answer:")["input_ids"] + [i]:
            conts.append(s)
    assert len(conts) > 50
    r = run(hf.score([ScoreRequest("Answer:", tuple(conts))]))[0]
    assert r.ok and set(r.n_tokens) == {1}
    total = sum(math.exp(v) for v in r.logprobs)
    assert 0 < total <= 1 + 1e-6
    m = max(r.logprobs)
    z = sum(math.exp(v - m) for v in r.logprobs)
    assert sum(math.exp(v - m) / z for v in r.logprobs) == pytest.approx(1.0, abs=1e-9)


def test_generate(hf, ref):
    p = PROMPTS[0]
    g1 = run(hf.generate([GenerateRequest(p, max_tokens=12)]))[0]
    # greedy equals transformers' own greedy generate on the unpadded prompt
    ids = ref.tok(p, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        want = hf._model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                                  pad_token_id=ref.tok.pad_token_id)
    assert g1.text == ref.tok.decode(want[0, ids.shape[1]:], skip_special_tokens=True)
    g2 = run(hf.generate([GenerateRequest(p, max_tokens=12), GenerateRequest(PROMPTS[2], max_tokens=3)]))
    assert g1.ok and g1.text == g2[0].text
    assert g1.tokens_in > 0 and 0 < g1.tokens_out <= 12
    assert g1.finish_reason in ("stop", "length")
    assert g2[1].tokens_out <= 3

    # stop sequences cut the text at the first occurrence
    s = run(hf.generate([GenerateRequest(p, max_tokens=40, temperature=1.0, seed=3)]))[0]
    assert s.ok and len(s.text) >= 2
    stop = next(ch for ch in s.text[1:] if ch.isascii() and ch.isalnum())  # not a partial UTF-8 byte
    cut = run(hf.generate([GenerateRequest(p, max_tokens=40, temperature=1.0, seed=3, stop=(stop,))]))[0]
    assert cut.finish_reason == "stop"
    assert cut.text == s.text[:s.text.find(stop)]
    assert stop not in cut.text

    # seeded sampling: reproducible, and different samples differ
    reqs = [GenerateRequest(p, max_tokens=16, temperature=1.0, seed=7, sample_index=k) for k in range(4)]
    a = run(hf.generate(reqs))
    b = run(hf.generate(list(reversed(reqs))))[::-1]
    assert [r.text for r in a] == [r.text for r in b]
    assert len({r.text for r in a}) > 1
    c = run(hf.generate([GenerateRequest(p, max_tokens=16, temperature=1.0, seed=8)]))[0]
    assert c.text != a[0].text

    # zero tokens, chat template, and an over-long prompt: results, not exceptions
    z = run(hf.generate([GenerateRequest(p, max_tokens=0)]))[0]
    assert z.text == "" and z.finish_reason == "length" and z.tokens_out == 0
    ch = run(hf.generate([GenerateRequest("Choose A or B.", max_tokens=4, chat=True, system="Be brief.")]))[0]
    assert ch.ok
    raw = run(hf.generate([GenerateRequest("Choose A or B.", max_tokens=4)]))[0]
    assert ch.tokens_in > raw.tokens_in
    long = run(hf.generate([GenerateRequest("0 1 2 3 " * 100, max_tokens=4)]))[0]
    assert not long.ok and "context" in long.error
    assert hf.usage.errors >= 1


def test_no_chat_template_and_bad_requests_are_errors(model_dir, hf):
    m = HFModel(str(model_dir), device="cpu")
    m._tok.chat_template = None
    r = run(m.generate([GenerateRequest("hi", max_tokens=2, chat=True)]))[0]
    assert not r.ok and "chat template" in r.error
    res = run(hf.score([
        ScoreRequest("Answer:", (" A", "")),
        ScoreRequest("0 1 2 3 " * 100, (" A",)),
        ScoreRequest("Answer:", (" A", " B")),
    ]))
    assert not res[0].ok and "empty continuation" in res[0].error
    assert not res[1].ok and "context" in res[1].error
    assert res[2].ok


def test_describe(hf, model_dir):
    d = hf.describe()
    assert d["spec"] == f"hf:{model_dir}" and d["backend"] == "hf"
    assert d["path"] == str(model_dir) and d["dtype"] == "float32" and d["device"] == "cpu"
    assert d["transformers"] == transformers.__version__ and d["torch"] == torch.__version__
    assert hf.supports_logprobs


def test_missing_model_is_input_error(tmp_path):
    for path in (str(tmp_path / "nope"), str(tmp_path)):
        with pytest.raises(InputError) as e:
            HFModel(path)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"hf:{path}: no model found")
    (tmp_path / "f").write_text("not a checkpoint")
    with pytest.raises(InputError, match=r"not a directory: .*/f\)$"):  # (there, but a file: fuzz 24 M1)
        HFModel(str(tmp_path / "f"))
    with pytest.raises(InputError, match="no such directory: "):
        HFModel(str(tmp_path / "nope"))
    with pytest.raises(InputError) as e:
        HFModel("no-such-org/no-such-model")
    assert "\n" not in str(e.value) and "no model found" in str(e.value)
    with pytest.raises(InputError):
        HFModel(str(tmp_path), dtype="int3")


def test_a_checkpoint_lacking_weights_its_config_needs_is_refused(model_dir, tmp_path):
    """A config naming more layers than the weights hold: transformers would fill the rest at
    random (and print its load report); refused in one line instead."""
    d = tmp_path / "cut"
    shutil.copytree(model_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] += 1
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError) as e:
        HFModel(str(d), device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and "lacks" in msg and "model.layers.2." in msg, msg


def test_a_checkpoint_holding_weights_its_config_does_not_use_is_refused(model_dir, tmp_path):
    """A config naming fewer layers than the weights hold: transformers dropped the rest and a
    cut-down model was scored as the checkpoint, exit 0 (fuzz 25 A F1); refused in one line."""
    d = tmp_path / "extra"
    shutil.copytree(model_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] -= 1
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError) as e:
        HFModel(str(d), device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and "does not use" in msg and "model.layers.1." in msg, msg


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env=dict(os.environ, CI="1", STRATBENCH_CACHE_DIR=str(cwd / "cache")))


@pytest.mark.parametrize("edit", [{"model_type": "nosuchmodel"}, {"vocab_size": 0}])
def test_a_broken_checkpoint_is_one_line_without_the_libraries_warnings(model_dir, tmp_path, edit):
    """transformers' warnings while loading ("You are using a model of type …", a config's token
    ids) came before the refusal: 2-4 lines (fuzz 25 A F6); now the refusal alone."""
    d = tmp_path / "broken"
    shutil.copytree(model_dir, d)
    (d / "config.json").write_text(json.dumps({**json.loads((d / "config.json").read_text()), **edit}))
    r = _cli("nashgap", "--model", f"hf:{d}", "--num-games", "1", "--quiet", "--output-dir", "o", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith(f"error: hf:{d}") and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_checkpoint_saved_anew_is_another_model_to_the_cache_and_to_a_resume(model_dir, tmp_path):
    """The next training step saved into the same folder: its answers are not served from the
    previous step's cache entries, and an unfinished run of the previous step is not finished by it."""
    d = tmp_path / "ckpt"
    shutil.copytree(model_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] = 1024  # TMGBench's prompts (rotary positions: no weights change)
    (d / "config.json").write_text(json.dumps(cfg))
    before = HFModel(str(d), device="cpu").describe()["weights"]
    (d / "README.md").write_text("notes written beside the checkpoint")  # read by no load
    assert before == HFModel(str(d), device="cpu").describe()["weights"]  # (the same files: the same)
    run_args = ("tmgbench", "run", "--model", f"hf:{d}", "--policy", "logprob", "--games", "111,112", "--seed", "1",
                "--quiet")
    r = _cli(*run_args, "--output-dir", "a", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "a").iterdir()
    weights = d / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))  # saved anew
    assert HFModel(str(d), device="cpu").describe()["weights"] != before
    r = _cli(*run_args, "--output-dir", "b", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (again,) = (tmp_path / "b").iterdir()
    assert all(not json.loads(line)["usage"]["cached"] for line in (again / "answers.jsonl").read_text().splitlines())
    # an unfinished run of the earlier files (cut as a kill leaves it) is not finished by the new ones
    lines = (folder / "answers.jsonl").read_text().splitlines()
    (folder / "answers.jsonl").write_text(lines[0] + "\n")
    (folder / "summary.json").unlink()
    snapshot = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    r = _cli("tmgbench", "run", "--resume", str(folder), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "is not the one the run started with" in r.stderr, r.stderr
    assert {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()} == snapshot


def test_import_is_lazy(model_dir):
    code = (
        "import sys\n"
        "import stratbench, stratbench.models.hf as hf\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
        f"hf.HFModel({str(model_dir)!r}, device='cpu')\n"
        "assert 'torch' in sys.modules\n"
        "print('ok')\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- chat templates ------------------------------------------------------------------------------

CHAT = (("system", "Be brief."), ("user", "Choose A or B."))


def test_chat_scoring_after_the_template(hf, ref):
    """A ScoreRequest with messages: the conversation through the tokenizer's chat template with
    the assistant's turn opened, then the stem; the template's BOS is not added twice."""
    tok = ref.tok
    stem = "Answer:"
    rendered = tok.apply_chat_template([{"role": r, "content": c} for r, c in CHAT], tokenize=False,
                                       add_generation_prompt=True)
    assert rendered.startswith("<s>") and rendered.endswith("<|assistant|>")
    (r,) = run(hf.score([ScoreRequest(stem, SINGLE + MULTI, messages=CHAT)]))
    assert r.ok, r.error
    assert r.rendered == rendered + stem
    ctx = tok(r.rendered, add_special_tokens=False)["input_ids"]
    assert ctx.count(tok.bos_token_id) == 1 and ctx[0] == tok.bos_token_id
    m = hf._model
    for cont, lp, n in zip(SINGLE + MULTI, r.logprobs, r.n_tokens):
        full = tok(r.rendered + cont, add_special_tokens=False)["input_ids"]
        c = full[len(ctx):] if full[:len(ctx)] == ctx else tok(cont, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            out = torch.log_softmax(m(torch.tensor([ctx + c])).logits[0].double(), dim=-1)
        want = float(sum(out[len(ctx) - 1 + j, t] for j, t in enumerate(c)))
        assert n == len(c) and lp == pytest.approx(want, abs=1e-5)
    # the same request again: the same numbers; a raw request has no rendered text
    (again,) = run(hf.score([ScoreRequest(stem, SINGLE + MULTI, messages=CHAT)]))
    assert again.logprobs == pytest.approx(r.logprobs, abs=1e-9)
    (raw,) = run(hf.score([ScoreRequest(stem, SINGLE)]))
    assert raw.ok and raw.rendered is None


def test_chat_generation_renders_the_conversation(hf, ref):
    tok = ref.tok
    conv = CHAT + (("assistant", "A"), ("user", "Why?"))
    dicts = [{"role": r, "content": c} for r, c in conv]
    rendered = tok.apply_chat_template(dicts, tokenize=False, add_generation_prompt=True)
    (g,) = run(hf.generate([GenerateRequest("Why?", max_tokens=6, messages=conv)]))
    assert g.ok and g.rendered == rendered
    assert g.tokens_in == len(tok(rendered, add_special_tokens=False)["input_ids"])
    # greedy equals transformers' own greedy generate on the rendered prompt's tokens
    ids = torch.tensor([tok(rendered, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        want = hf._model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                                  pad_token_id=tok.pad_token_id)
    assert g.text == tok.decode(want[0, ids.shape[1]:], skip_special_tokens=True)
    # without messages: [system?, user prompt]
    (s,) = run(hf.generate([GenerateRequest("Choose A or B.", max_tokens=2, chat=True, system="Be brief.")]))
    assert s.rendered == tok.apply_chat_template(dicts[:2], tokenize=False, add_generation_prompt=True)
    (u,) = run(hf.generate([GenerateRequest("Choose A or B.", max_tokens=2, chat=True)]))
    assert u.rendered == tok.apply_chat_template(dicts[1:2], tokenize=False, add_generation_prompt=True)
    (plain,) = run(hf.generate([GenerateRequest("Choose A or B.", max_tokens=2)]))
    assert plain.rendered is None
    assert hf.supports_chat and hf.supports_chat_scoring
    hf.check_chat(scoring=True)


def test_model_without_chat_template(model_dir, tmp_path):
    import shutil

    plain = tmp_path / "no-template"
    shutil.copytree(model_dir, plain)
    for f in plain.glob("*.jinja"):
        f.unlink()
    cfg = plain / "tokenizer_config.json"
    data = json.loads(cfg.read_text())
    data.pop("chat_template", None)
    cfg.write_text(json.dumps(data))
    m = HFModel(str(plain), device="cpu")
    assert not m.supports_chat and not m.supports_chat_scoring
    with pytest.raises(InputError) as e:
        m.check_chat()
    assert "\n" not in str(e.value) and "no chat template" in str(e.value)
    (g,) = run(m.generate([GenerateRequest("hi", max_tokens=2, chat=True)]))
    (s,) = run(m.score([ScoreRequest("Answer:", (" A",), messages=CHAT)]))
    assert not g.ok and "chat template" in g.error
    assert not s.ok and "chat template" in s.error


def test_closed_scoring_matches_direct_forward(hf, ref, model_dir):
    """Labels that begin one another ("1", "10", "11") scored as whole answers: each label, then
    any token whose text does not begin with a letter or digit — against a direct forward, with
    the ending tokens read here from each token decoded alone."""
    tok = ref.tok
    m = transformers.AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    m.eval()
    texts = [tok.decode([i], clean_up_tokenization_spaces=False) for i in range(len(tok))]
    ends = torch.tensor([not t or not (t[0].isalnum() or t[0] == "\ufffd") for t in texts])
    assert 0 < int(ends.sum()) < len(tok)
    prompt, labels = "0 1 2 3 4 5 6 7 8 9 10", (" 1", " 10", " 11", " 2", " 12")
    (res,) = run(hf.score([ScoreRequest(prompt, labels, closed=True)]))
    assert res.ok, res.error
    for cont, lp, n in zip(labels, res.logprobs, res.n_tokens):
        p = tok(prompt)["input_ids"]
        c = tok(prompt + cont)["input_ids"][len(p):]
        with torch.no_grad():
            rows = torch.log_softmax(m(torch.tensor([p + c])).logits[0].double(), dim=-1)
        want = float(sum(rows[len(p) - 1 + j, t] for j, t in enumerate(c))
                     + torch.logsumexp(rows[len(p) - 1 + len(c), : len(tok)][ends], dim=0))
        assert n == len(c)
        assert lp == pytest.approx(want, abs=1e-5)
    assert sum(math.exp(x) for x in res.logprobs) <= 1.0 + 1e-9
    (open_,) = run(hf.score([ScoreRequest(prompt, labels)]))
    assert all(a < b for a, b in zip(res.logprobs, open_.logprobs))  # the end costs something


# -- shared prompt: the prompt evaluated once, continuations on its KV cache ----------------------

# shared-prompt scores vs a plain forward of each whole sequence: measured at most 3.8e-6 nat on
# this model (float32 rounding; log-probs here are -4 to -50 nat), asserted with some room
SHARED_TOL = 1e-5
MIXED = (" A", " row 1", " 2024 and 12", " B", " 0.5", " zebra!", " the lazy dog jumps", " action B")


def _evaluated(model, reqs):
    """Scores of `reqs` and the non-padding input tokens the network really ran, from a hook."""
    seen = []

    def hook(module, args, kwargs, output):
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        past = kwargs.get("cache", kwargs.get("past_key_values"))  # (transformers >= 5.24: `cache`)
        if mask.ndim == 4:  # the answers' token tree: a padding position attends only to itself
            real = int(((mask[:, 0] == 0).sum(-1) > 1).sum())
        else:
            real = int(mask[:, -ids.shape[1]:].sum())
        seen.append((tuple(ids.shape), real, past))

    h = model._model.register_forward_hook(hook, with_kwargs=True)
    try:
        res = run(model.score(reqs))
    finally:
        h.remove()
    return res, seen


def _plain(model_dir, batch_size):
    m = HFModel(str(model_dir), device="cpu", batch_size=batch_size)
    m._share_prefix = False  # as for a model whose KV cache cannot be shared
    return m


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_shared_prompt_equals_full_sequence_forward(model_dir, ref, batch_size):
    """Single- and multi-token continuations of different lengths, several prompts, against an
    unpadded forward of each whole sequence and against the plain (one row per sequence) path."""
    shared = HFModel(str(model_dir), device="cpu", batch_size=batch_size)
    reqs = [ScoreRequest(p, MIXED) for p in PROMPTS] + [ScoreRequest(PROMPTS[0], (" defect and then 42",))]
    res, seen = _evaluated(shared, reqs)
    plain = run(_plain(model_dir, batch_size).score(reqs))
    lengths = set()
    for req, r, p in zip(reqs, res, plain):
        assert r.ok and p.ok, (r.error, p.error)
        assert r.n_tokens == p.n_tokens
        assert r.logprobs == pytest.approx(p.logprobs, abs=SHARED_TOL)
        for cont, lp, n in zip(req.continuations, r.logprobs, r.n_tokens):
            want, want_n = ref(req.prompt, cont)
            assert n == want_n and lp == pytest.approx(want, abs=SHARED_TOL)
            lengths.add(n)
    assert {1, 2, 3}.issubset(lengths) and max(lengths) >= 4
    assert shared._share_prefix is not False
    # the continuations really ran on a cache: only their own tokens in, a past given, and never more
    # logits rows a forward than `batch_size` rows of the longest continuation (the rows path's bound;
    # the token tree packs several continuations' prefixes into a row)
    cont_calls = [s for s in seen if s[2] is not None]
    assert cont_calls and all(shape[0] * shape[1] <= batch_size * (max(lengths) - 1) for shape, _, _ in cont_calls)


def test_prompt_is_evaluated_once_per_request(hf, ref):
    prompt = PROMPTS[4]
    n_prompt = len(ref.tok(prompt)["input_ids"])
    (r,), seen = _evaluated(hf, [ScoreRequest(prompt, MIXED)])
    assert r.ok
    conts = sum(r.n_tokens)
    # the prompt once, then each multi-token continuation's tokens but its last
    assert r.tokens_in == n_prompt + sum(n - 1 for n in r.n_tokens)
    assert r.tokens_in <= 1.5 * (n_prompt + conts)
    assert r.tokens_in < 2 * n_prompt  # a second pass over the prompt would exceed this
    assert sum(n for _, n, _ in seen) == r.tokens_in  # the counter is what the network ran
    assert seen[0][0] == (1, n_prompt) and seen[0][2] is None  # first call: the prompt alone
    # several requests in one batch: the sum over requests likewise
    reqs = [ScoreRequest(p, MIXED) for p in PROMPTS]
    res, seen = _evaluated(hf, reqs)
    assert sum(n for _, n, _ in seen) == sum(x.tokens_in for x in res)
    for req, x in zip(reqs, res):
        assert x.tokens_in == len(ref.tok(req.prompt)["input_ids"]) + sum(n - 1 for n in x.n_tokens)


def test_shared_prompt_closed_and_chat_scoring(model_dir, hf):
    """Closed (whole-answer) scoring of multi-token continuations and chat requests: the shared
    prompt's scores equal the plain path's."""
    plain = _plain(model_dir, 8)
    reqs = [
        ScoreRequest("0 1 2 3 4 5 6 7 8 9 10", (" 1", " 10", " 11", " 2024 and 12", " 42"), closed=True),
        ScoreRequest(PROMPTS[2], MIXED, closed=True),
        ScoreRequest("Answer:", MIXED, messages=CHAT),
        ScoreRequest("Answer:", MIXED, messages=CHAT, closed=True),
    ]
    a, b = run(hf.score(reqs)), run(plain.score(reqs))
    for x, y in zip(a, b):
        assert x.ok and y.ok, (x.error, y.error)
        assert x.n_tokens == y.n_tokens and x.rendered == y.rendered
        assert x.logprobs == pytest.approx(y.logprobs, abs=SHARED_TOL)
        assert x.tokens_in < y.tokens_in  # the plain path re-runs the prompt per continuation
    assert sum(math.exp(v) for v in a[0].logprobs) <= 1 + 1e-6


def test_unshareable_cache_falls_back_to_plain_rows(model_dir, hf):
    m = HFModel(str(model_dir), device="cpu", batch_size=4)
    m._cache_cls = type("NotTheCache", (), {})  # the model's cache is then not one we can share
    reqs = [ScoreRequest(p, MIXED) for p in PROMPTS[:3]]
    a, b = run(m.score(reqs)), run(hf.score(reqs))
    assert m._share_prefix is False
    for x, y in zip(a, b):
        assert x.ok and x.logprobs == pytest.approx(y.logprobs, abs=SHARED_TOL)
        assert x.tokens_in > y.tokens_in


def _distinct_prefixes(conts):
    """Distinct proper prefixes (1 .. len - 1 tokens) of the continuations: the token tree's nodes."""
    return len({tuple(c[:i]) for c in conts for i in range(1, len(c))})


def _rows(model_dir, batch_size):
    m = HFModel(str(model_dir), device="cpu", batch_size=batch_size)
    m._tree = False  # each continuation its own row on the prompt's cache
    return m


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_answers_sharing_prefixes_run_as_one_token_tree(model_dir, ref, batch_size):
    """TMGBench's 16 answer lines share long prefixes: each distinct prefix is evaluated once, and
    the scores equal each continuation as its own row and a plain forward of each whole sequence."""
    from stratbench.suites.tmgbench.prompts import completion_candidates

    answers = tuple(text for _, text in completion_candidates())
    m = HFModel(str(model_dir), device="cpu", batch_size=batch_size)
    assert m._tree is None  # to be checked against the rows path on its first use
    reqs = [ScoreRequest(p, answers) for p in PROMPTS] + [ScoreRequest(PROMPTS[1], answers, closed=True),
                                                          ScoreRequest("Answer:", answers, messages=CHAT)]
    res = run(m.score(reqs))
    assert m._tree is True
    rows = run(_rows(model_dir, batch_size).score(reqs))
    for req, r, w in zip(reqs, res, rows):
        assert r.ok and w.ok, (r.error, w.error)
        assert r.n_tokens == w.n_tokens
        assert r.logprobs == pytest.approx(w.logprobs, abs=SHARED_TOL)
        ctx, conts, _ = m._score_tokens(req)
        if req.closed:  # each answer's last token is then an input too (its end is scored after it)
            conts = [c + [-1] for c in conts]
        assert r.tokens_in == len(ctx) + _distinct_prefixes(conts) < w.tokens_in
    for req, r in zip(reqs[:len(PROMPTS)], res):
        for cont, lp in zip(answers, r.logprobs):
            # (these answers reach -400 nat on this model: float32 rounding is relative there)
            assert lp == pytest.approx(ref(req.prompt, cont)[0], abs=SHARED_TOL, rel=1e-7)
    # what the network ran, once the check is behind it, is what tokens_in says
    again, seen = _evaluated(m, reqs[:3])
    assert sum(n for _, n, _ in seen) == sum(x.tokens_in for x in again)
    for x, y in zip(again, res):  # (other batches: equal up to rounding)
        assert x.logprobs == pytest.approx(y.logprobs, abs=SHARED_TOL)


def test_a_tree_that_disagrees_with_the_rows_is_never_used(model_dir, capsys):
    """The first multi-token group runs both ways; a model on which the tree gives other numbers
    (one that ignored the 4D mask) keeps the rows path's scores, then and after, and says so once."""
    m = HFModel(str(model_dir), device="cpu", batch_size=4)
    real = m._tree_scores

    def off(*args, **kwargs):
        return [([v + 0.5 for v in s], n) for s, n in real(*args, **kwargs)]

    m._tree_scores = off
    reqs = [ScoreRequest(p, MIXED + (" action A", " action B2")) for p in PROMPTS[:3]]
    first, later = run(m.score(reqs)), run(m.score(reqs))
    assert m._tree is False
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"warning: {m.spec}: ") and "0.5 nat away from one row each" in line, line
    rows = run(_rows(model_dir, 4).score(reqs))
    for a, b, w in zip(first, later, rows):
        assert a.logprobs == pytest.approx(w.logprobs, abs=SHARED_TOL) and b.logprobs == a.logprobs
        assert a.tokens_in == w.tokens_in


def test_a_tree_that_fails_on_a_model_falls_back_to_the_rows_and_says_so(model_dir, capsys):
    """A model the capability check let through whose tree raises (a transformers release that
    builds masks anew, a bug of ours: 5437289's hid so for two commits) is scored as rows — the
    same numbers, no error record — with one warning line naming the failure."""
    m = HFModel(str(model_dir), device="cpu", batch_size=4)

    def broken(*args, **kwargs):
        raise RuntimeError("The size of tensor a (7) must match\nthe size of tensor b (5)")

    m._tree_scores = broken
    reqs = [ScoreRequest(p, MIXED + (" action A", " action B2")) for p in PROMPTS[:3]]
    res, again = run(m.score(reqs)), run(m.score(reqs))
    assert m._tree is False and all(r.ok for r in res + again), [r.error for r in res + again]
    rows = run(_rows(model_dir, 4).score(reqs))
    for a, w in zip(res, rows):
        assert a.logprobs == pytest.approx(w.logprobs, abs=SHARED_TOL) and a.tokens_in == w.tokens_in
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"warning: {m.spec}: ") and "failed (RuntimeError: The size of tensor a (7) must " \
        "match the size of tensor b (5))" in line, line


def test_a_model_whose_positions_come_from_a_2d_mask_keeps_the_rows(tmp_path, capsys):
    """Bloom builds its ALiBi biases from a 2D attention mask: the tree's 4D mask cannot carry them,
    so such a model scores as rows from the start, without a warning (fuzz 22 A D1: every answer
    was an error)."""
    tok = _build_tokenizer()
    cfg = transformers.BloomConfig(vocab_size=len(tok), hidden_size=32, n_layer=2, n_head=4,
                                   bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                   pad_token_id=tok.pad_token_id)
    torch.manual_seed(2)
    transformers.BloomForCausalLM(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m = HFModel(str(tmp_path), device="cpu", batch_size=3)
    assert m._tree is False
    reqs = [ScoreRequest(p, MIXED + (" action A", " action B2")) for p in PROMPTS[:4]]
    res = run(m.score(reqs))
    assert m._tree is False and all(r.ok for r in res), [r.error for r in res]
    assert "warning" not in capsys.readouterr().err
    rows = run(_rows(tmp_path, 3).score(reqs))
    for a, b in zip(res, rows):
        assert a.logprobs == pytest.approx(b.logprobs, abs=SHARED_TOL) and a.tokens_in == b.tokens_in


@pytest.fixture(scope="module")
def sliding_dir(tmp_path_factory):
    """A tiny Mistral whose 4-token sliding window is shorter than every prompt here."""
    d = tmp_path_factory.mktemp("tiny-mistral")
    tok = _build_tokenizer()
    cfg = transformers.MistralConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128, sliding_window=4,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(1)
    m = transformers.MistralForCausalLM(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    m.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_shared_prompt_with_a_sliding_window(sliding_dir):
    """Continuations of different lengths batched on prompts of different lengths: no padding may
    sit between a prompt and its continuation, or the window would measure the wrong distance."""
    m = HFModel(str(sliding_dir), device="cpu", batch_size=3)
    tok, net = m._tok, m._model
    reqs = [ScoreRequest(p, MIXED) for p in PROMPTS]
    res = run(m.score(reqs))
    for req, r in zip(reqs, res):
        assert r.ok, r.error
        ctx, conts, _ = m._score_tokens(req)
        assert len(ctx) > 2
        for c, lp in zip(conts, r.logprobs):
            with torch.no_grad():
                rows = torch.log_softmax(net(torch.tensor([ctx + c])).logits[0].double(), dim=-1)
            assert lp == pytest.approx(float(sum(rows[len(ctx) - 1 + j, t] for j, t in enumerate(c))),
                                       abs=SHARED_TOL)
    assert m._share_prefix is not False and tok is not None
    assert m._tree is False  # a 4D mask would have to carry the window: continuations as rows
