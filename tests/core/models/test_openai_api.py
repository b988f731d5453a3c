"""The OpenAI-compatible API backend against a real HTTP server on 127.0.0.1 (tests/fake_openai_server.py):
exact scores, generation, retries and their limits, faults that must end as error results (never a
substitute answer, never lost), bounded concurrency, and an API key that never leaks."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import pickle
import random
import time

import httpx
import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    chat_context,
    expected_logprob,
    expected_text_logprob,
    greedy_completion,
    top_logprobs,
)
from model_calls import run

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, ScoreRequest
from stratbench.models.openai_api import OpenAICompatibleModel
from stratbench.models.retry import RetryPolicy, parse_retry_after, request_with_retries

SECRET = "sk-test-5ecret-K3y-do-not-leak-0123456789"


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def make_model(server: FakeOpenAIServer, **kw) -> OpenAICompatibleModel:
    # top_logprobs=0: echo scoring only, so request counts and fault scripts are exact; the
    # top-k fast path has tests of its own.
    opts = dict(base_url=server.base_url, retry_base_delay_s=0.002, retry_max_delay_s=0.02, timeout_s=5,
                top_logprobs=0)
    opts.update(kw)
    provider = opts.pop("provider", "openai-compatible")
    return OpenAICompatibleModel(provider, opts.pop("model", "fake-model"), **opts)


def expected_scores(req: ScoreRequest) -> list[float]:
    return [expected_text_logprob(req.prompt, c) for c in req.continuations]


# -------------------------------------------------------------------------------- scoring


def test_scores_equal_the_fake_models_logprobs(server):
    reqs = [
        ScoreRequest("The answer is", (" A", " B", " C")),
        ScoreRequest("Choose an action: ", ("0", "1", "2", "10", "Cooperate", "Defect")),
        ScoreRequest("x", ("y",)),
        ScoreRequest("Line one\nLine two\n", ("Action: 2\n", "é")),  # newline, out-of-alphabet char
    ]
    model = make_model(server)
    results = run(model, "score", reqs)
    assert len(results) == len(reqs)
    for req, res in zip(reqs, results):
        assert res.ok and res.error is None, res.error
        assert res.n_tokens == [len(c) for c in req.continuations]
        for got, want in zip(res.logprobs, expected_scores(req)):
            assert abs(got - want) < 1e-9
        assert res.tokens_in == sum(len(req.prompt + c) for c in req.continuations)
        assert res.latency_s > 0
    # single-character continuation: one call, exactly the model's conditional log-prob
    assert abs(results[2].logprobs[0] - expected_logprob("x", "y")) < 1e-9
    # one HTTP request per continuation, each echo=true with max_tokens=1 (never 0)
    bodies = [r.body for r in server.requests]
    assert len(bodies) == sum(len(r.continuations) for r in reqs)
    assert all(b["echo"] is True and b["max_tokens"] == 1 and b["temperature"] == 0 and b["logprobs"] == 1
               for b in bodies)
    assert model.usage.calls == len(reqs) and model.usage.errors == 0


def test_multi_char_tokens_and_token_boundaries():
    with FakeOpenAIServer(multi_char_tokens=("ab", "Action")) as s:
        reqs = [
            ScoreRequest("x", ("ab", "abab", "a")),  # whole tokens inside the continuation
            ScoreRequest("Say: ", ("Action 1",)),
            ScoreRequest("xa", ("b",)),  # "ab" straddles the prompt/continuation boundary
            ScoreRequest("xa", ("bc",)),
        ]
        res = run(make_model(s), "score", reqs)
    assert res[0].ok and res[0].n_tokens == [1, 2, 1]
    for got, want in zip(res[0].logprobs, expected_scores(reqs[0])):
        assert abs(got - want) < 1e-9
    assert res[1].ok and res[1].n_tokens == [3]
    assert abs(res[1].logprobs[0] - expected_text_logprob("Say: ", "Action 1")) < 1e-9
    for r in res[2:]:
        assert r.logprobs is None and "continuation does not start at a token boundary" in r.error


def test_echo_unsupported_is_an_error_result_not_retried():
    with FakeOpenAIServer(echo_supported=False) as s:
        model = make_model(s)
        (res,) = run(model, "score", [ScoreRequest("Q", ("A",))])
        assert s.request_count == 1
    assert res.logprobs is None and "echo" in res.error and "HTTP 400" in res.error
    assert model.usage.errors == 1


def test_empty_prompt_and_empty_continuation(server):
    res = run(make_model(server), "score", [ScoreRequest("", ("A",)), ScoreRequest("Q", ("", "A"))])
    assert res[0].logprobs is None and "empty prompt" in res[0].error
    assert res[1].ok and res[1].logprobs[0] == 0.0 and res[1].n_tokens == [0, 1]


def test_chat_scoring_reads_top20_and_gives_minus_inf_outside(server):
    prompt = "Pick one letter."
    ctx = chat_context([{"role": "user", "content": prompt}])
    top = top_logprobs(ctx, 20)
    top_chars = {c for c, _ in top}
    outside = next(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" if c not in top_chars)
    conts = (top[0][0], top[5][0], top[19][0], outside)
    model = make_model(server, endpoint="chat")
    (res,) = run(model, "score", [ScoreRequest(prompt, conts)])
    assert res.ok and res.error is None and res.n_tokens == [1, 1, 1, 1]
    for got, c in zip(res.logprobs[:3], conts):
        assert abs(got - expected_logprob(ctx, c)) < 1e-9
    assert res.logprobs[3] == float("-inf")
    assert server.request_count == 1
    body = server.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 1


# -------------------------------------------------------------------------------- generation


def test_generate_completions_greedy(server):
    reqs = [GenerateRequest("Once upon a time", max_tokens=12),
            GenerateRequest("abc", max_tokens=40, stop=(greedy_completion("abc", 40)[0][3:5],))]
    model = make_model(server)
    res = run(model, "generate", reqs)
    text, finish = greedy_completion("Once upon a time", 12)
    assert res[0].ok and res[0].text == text and res[0].finish_reason == finish == "length"
    assert res[0].tokens_in == len("Once upon a time") and res[0].tokens_out == 12
    want, finish = greedy_completion("abc", 40, reqs[1].stop)
    assert res[1].text == want and finish == "stop" and res[1].finish_reason == "stop"
    assert server.requests[0].path == "/v1/completions" and "messages" not in server.requests[0].body
    assert model.usage.tokens_out == 12 + len(want)


def test_generate_chat_canned_text():
    with FakeOpenAIServer(canned_text="Action: 2") as s:
        model = make_model(s)
        res = run(model, "generate", [GenerateRequest("Your move?", chat=True, system="You are a player."),
                                      GenerateRequest("Raw prompt")])
        bodies = {r.path: r.body for r in s.requests}
    assert [r.text for r in res] == ["Action: 2", "Action: 2"]
    assert all(r.finish_reason == "stop" for r in res)
    assert bodies["/v1/chat/completions"]["messages"] == [
        {"role": "system", "content": "You are a player."}, {"role": "user", "content": "Your move?"}]
    assert bodies["/v1/completions"]["prompt"] == "Raw prompt"


def test_generate_seeded_sampling_passes_seed_and_temperature(server):
    reqs = [GenerateRequest("Hello", max_tokens=20, temperature=1.0, seed=7),
            GenerateRequest("Hello", max_tokens=20, temperature=1.0, seed=7),
            GenerateRequest("Hello", max_tokens=20, temperature=1.0, seed=8)]
    res = run(make_model(server, endpoint="chat"), "generate", reqs)
    assert res[0].text == res[1].text and res[0].text != res[2].text
    assert sorted(r.body["seed"] for r in server.requests) == [7, 7, 8]
    assert all(r.body["temperature"] == 1.0 for r in server.requests)


def test_junk_text_is_returned_as_is_not_replaced(server):
    server.script("garbage_text")
    (res,) = run(make_model(server), "generate", [GenerateRequest("Move?")])
    assert res.ok and res.text == server.garbage_text


# -------------------------------------------------------------------------------- keys and secrets


def test_key_goes_only_into_the_authorization_header(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(require_api_key=SECRET) as s:
        model = make_model(s, provider="openai", model="gpt-4o-mini")
        s.script("500", None, "401", "400")  # a retried 500 (logged), then errors that echo the key
        res = run(model, "generate", [GenerateRequest("hi")])
        res += run(model, "generate", [GenerateRequest("hi")])
        res += run(model, "score", [ScoreRequest("Q", ("A",))])
        headers = [r.headers for r in s.requests]
        base_url = s.base_url
    assert res[0].ok
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in headers)
    assert res[1].error.startswith("HTTP 401") and "***" in res[1].error
    assert res[2].logprobs is None and "HTTP 400" in res[2].error
    leaks = [repr(model), str(model), model.describe(), vars(model), res, model.usage, caplog.text]
    with pytest.raises(TypeError):  # the key never travels by pickle
        pickle.dumps(model)
    assert "retry" in caplog.text or "retrying" in caplog.text
    for thing in leaks:
        assert SECRET not in repr(thing) and SECRET not in str(thing)
    assert model.describe() == {"spec": "openai:gpt-4o-mini", "backend": "openai-compatible",
                                "provider": "openai", "model": "gpt-4o-mini", "base_url": base_url,
                                "endpoint": "completions"}


def test_wrong_key_echoed_by_server_is_redacted(monkeypatch):
    monkeypatch.setenv("TOGETHER_API_KEY", SECRET)
    with FakeOpenAIServer(require_api_key="another-key") as s:
        model = make_model(s, provider="together", model="meta-llama/Llama-3-8b")
        (res,) = run(model, "generate", [GenerateRequest("hi")])
        assert s.request_count == 1  # 401 is not retried
    assert res.text is None and res.error.startswith("HTTP 401") and SECRET not in res.error


def test_missing_key_is_an_input_error(monkeypatch, server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    with pytest.raises(InputError) as e:
        OpenAICompatibleModel("openai", "gpt-4o-mini")
    assert str(e.value) == "openai:gpt-4o-mini: set OPENAI_API_KEY"
    with pytest.raises(InputError, match="together:m: set TOGETHER_API_KEY"):
        OpenAICompatibleModel.from_spec("together:m")
    with pytest.raises(InputError, match="base URL"):
        OpenAICompatibleModel("openai-compatible", "llama")
    with pytest.raises(InputError, match="set MY_KEY"):
        OpenAICompatibleModel("openai-compatible", "llama", base_url=server.base_url, api_key_env="MY_KEY")
    with pytest.raises(InputError):
        OpenAICompatibleModel.from_spec("nope:model")
    with pytest.raises(InputError):
        OpenAICompatibleModel("openai-compatible", "m", base_url=server.base_url, endpoint="embeddings")
    # a local server needs no key, and then no Authorization header is sent
    model = OpenAICompatibleModel.from_spec("openai-compatible:llama", base_url=server.base_url)
    (res,) = run(model, "generate", [GenerateRequest("hi", max_tokens=2)])
    assert res.ok and "authorization" not in server.requests[0].headers


# -------------------------------------------------------------------------------- retries


def test_429_retry_after_is_honoured(server):
    server.script("429:1")
    req = ScoreRequest("Q: ", ("A",))
    model = make_model(server)
    t0 = time.monotonic()
    (res,) = run(model, "score", [req])
    elapsed = time.monotonic() - t0
    assert elapsed >= 1.0
    assert res.ok and abs(res.logprobs[0] - expected_scores(req)[0]) < 1e-9
    assert server.request_count == 2 and model.usage.extra["retries"] == 1


@pytest.mark.parametrize("fault", ["500", "502", "503", "504", "drop", "partial", "truncate", "nonsense"])
def test_transient_faults_are_retried_then_succeed(server, fault):
    server.script(fault, fault)
    req = ScoreRequest("Prompt", ("ab",))
    model = make_model(server)
    (res,) = run(model, "score", [req])
    assert res.ok and abs(res.logprobs[0] - expected_scores(req)[0]) < 1e-9
    assert server.request_count == 3
    assert model.usage.errors == 0 and model.usage.extra["retries"] == 2


@pytest.mark.parametrize("method", ["score", "generate"])
def test_permanent_500_ends_as_error_after_max_retries_plus_one(method):
    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("500",)) as s:
        model = make_model(s, max_retries=3)
        req = ScoreRequest("Q", ("A",)) if method == "score" else GenerateRequest("Q")
        (res,) = run(model, method, [req])
        assert s.request_count == 4
    assert res.error == "HTTP 500 after 4 attempts: injected HTTP 500"
    assert not res.ok
    assert (res.logprobs if method == "score" else res.text) is None
    assert model.usage.errors == 1


@pytest.mark.parametrize("fault", ["400", "404", "422", "bad_shape"])
def test_client_errors_and_malformed_responses_are_not_retried(server, fault):
    server.script(fault)
    model = make_model(server)
    (res,) = run(model, "generate", [GenerateRequest("Q")])
    assert server.request_count == 1
    assert res.text is None and res.error
    assert res.error.startswith(f"HTTP {fault}") if fault.isdigit() else "malformed" in res.error


def test_timeouts_are_retried_then_reported():
    with FakeOpenAIServer(latency_ms=300) as s:
        model = make_model(s, timeout_s=0.05, max_retries=1)
        (res,) = run(model, "generate", [GenerateRequest("Q")])
        assert s.request_count == 2
    assert res.text is None and res.error.startswith("timeout (") and res.error.endswith("after 2 attempts")


def test_connection_refused_is_an_error_result():
    with FakeOpenAIServer() as s:
        url = s.base_url  # the port is closed once the server stops
    model = OpenAICompatibleModel("openai-compatible", "m", base_url=url, max_retries=1,
                                  retry_base_delay_s=0.001)
    (res,) = run(model, "score", [ScoreRequest("Q", ("A",))])
    assert res.logprobs is None and res.error.startswith("connection error (ConnectError")
    assert res.error.endswith("after 2 attempts")


# -------------------------------------------------------------------------------- batches


KINDS = ("500", "503", "429:0", "drop", "partial", "truncate", "nonsense", "latency:20")


@pytest.mark.parametrize("method", ["score", "generate"])
def test_batch_of_200_with_random_faults_loses_nothing(method):
    rng = random.Random(1)
    with FakeOpenAIServer(fault_rate=0.2, fault_kinds=KINDS, fault_seed=3) as s:
        model = make_model(s, max_concurrency=16)
        if method == "score":
            reqs = [ScoreRequest(f"Game {i}: pick ", tuple(rng.sample(["0", "1", "2", "10"], 2)))
                    for i in range(200)]
        else:
            reqs = [GenerateRequest(f"Game {i}: ", max_tokens=8) for i in range(200)]
        results = run(model, method, reqs)
        n_http = s.request_count
        max_in_flight = s.max_in_flight
        faults = s.faults_served()
    assert len(results) == 200
    assert sum(n for k, n in faults.items() if k != "ok") > 20  # faults really happened
    n_err = 0
    for req, res in zip(reqs, results):
        if res.error is not None:
            n_err += 1
            assert (res.logprobs if method == "score" else res.text) is None
        elif method == "score":
            assert all(abs(g - w) < 1e-9 for g, w in zip(res.logprobs, expected_scores(req)))
        else:
            assert res.text == greedy_completion(req.prompt, 8)[0]
    assert n_err == model.usage.errors
    assert model.usage.calls == 200
    assert model.usage.extra["http_requests"] == n_http
    assert max_in_flight <= 16


def test_heavy_faults_end_as_counted_errors_never_substitutes():
    with FakeOpenAIServer(fault_rate=0.7, fault_kinds=("500", "drop", "truncate", "429:0"), fault_seed=5) as s:
        model = make_model(s, max_concurrency=16, max_retries=1)
        reqs = [GenerateRequest(f"p{i}", max_tokens=4) for i in range(200)]
        results = run(model, "generate", reqs)
    errors = [r for r in results if r.error is not None]
    assert len(results) == 200 and 0 < len(errors) < 200
    assert len(errors) == model.usage.errors
    assert all(r.text is None and "after 2 attempts" in r.error for r in errors)
    assert all(r.text == greedy_completion(q.prompt, 4)[0] for q, r in zip(reqs, results) if r.error is None)


def test_concurrency_is_bounded_by_max_concurrency():
    with FakeOpenAIServer(latency_ms=30) as s:
        model = make_model(s, max_concurrency=4)
        t0 = time.monotonic()
        results = run(model, "generate", [GenerateRequest(f"p{i}", max_tokens=2) for i in range(40)])
        elapsed = time.monotonic() - t0
        assert 3 <= s.max_in_flight <= 4
    assert all(r.ok for r in results)
    assert elapsed >= 10 * 0.03


def test_server_and_client_handle_64_concurrent_requests():
    with FakeOpenAIServer(latency_ms=200) as s:
        model = make_model(s, max_concurrency=64)
        t0 = time.monotonic()
        results = run(model, "score", [ScoreRequest(f"p{i}", ("a",)) for i in range(128)])
        elapsed = time.monotonic() - t0
        assert 48 <= s.max_in_flight <= 64  # 64 in practice; slack for a loaded machine
    assert all(r.ok for r in results)
    assert elapsed < 2.5  # two waves of 200 ms (about 0.6 s); serial would take 25 s


def test_model_survives_successive_event_loops(server):
    model = make_model(server)
    a = asyncio.run(model.generate([GenerateRequest("x", max_tokens=3)]))
    b = asyncio.run(model.generate([GenerateRequest("x", max_tokens=3)]))
    asyncio.run(model.aclose())
    assert a[0].ok and b[0].text == a[0].text


# -------------------------------------------------------------------------------- retry helper


def test_parse_retry_after():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= parse_retry_after(date, now=now) <= 31
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_backoff_is_full_jitter_and_capped():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    rng = random.Random(0)
    for retry in range(8):
        cap = min(3.0, 0.5 * 2 ** retry)
        samples = [policy.backoff_s(retry, rng) for _ in range(200)]
        assert all(0 <= d <= cap for d in samples) and max(samples) > 0.8 * cap


def test_request_with_retries_sleeps_and_caps_retry_after():
    statuses = [429, 503, 200]
    sleeps: list[float] = []

    async def send():
        status = statuses.pop(0)
        headers = {"Retry-After": "120"} if status == 429 else {}
        return httpx.Response(status, headers=headers, content=b'{"ok": true}' if status == 200 else b"busy")

    async def fake_sleep(s):
        sleeps.append(s)

    policy = RetryPolicy(max_retries=4, base_delay_s=0.1, max_delay_s=1.0, max_retry_after_s=5.0)
    out = asyncio.run(request_with_retries(send, policy, sleep=fake_sleep, rng=random.Random(0)))
    assert out.ok and out.data == {"ok": True} and out.attempts == 3
    assert sleeps[0] == 5.0 and 0 <= sleeps[1] <= 0.2


def test_request_with_retries_redacts_and_stops_on_4xx():
    async def send():
        return httpx.Response(403, json={"error": {"message": f"key {SECRET} is not allowed"}})

    out = asyncio.run(request_with_retries(send, RetryPolicy(), redact=lambda s: s.replace(SECRET, "***")))
    assert out.attempts == 1 and out.status == 403
    assert out.error == "HTTP 403: key *** is not allowed"
    assert not math.isnan(out.attempts)


def test_topk_fast_path_is_exact_and_echoes_only_the_rest(server):
    prompt = "Choose an action: "
    top5 = [t for t, _ in top_logprobs(prompt, 5)]
    outside = next(c for c in "0123456789" if c not in top5)
    conts = (top5[0], top5[3], outside, "10")
    model = make_model(server, top_logprobs=5)
    (res,) = run(model, "score", [ScoreRequest(prompt, conts)])
    assert res.ok, res.error
    for got, c in zip(res.logprobs, conts):
        assert abs(got - expected_text_logprob(prompt, c)) < 1e-9
    assert res.n_tokens == [1, 1, 1, 2]
    bodies = [r.body for r in server.requests if r.path.endswith("/completions")]
    # one next-token request for the whole set, echo requests only for the two not in the top 5
    assert sum(1 for b in bodies if not b.get("echo")) == 1
    assert sorted(b["prompt"][len(prompt):] for b in bodies if b.get("echo")) == sorted([outside, "10"])


def test_topk_rejected_falls_back_to_echo(server):
    server.script("400")  # e.g. a server that caps logprobs below the requested k
    model = make_model(server, top_logprobs=20)
    (res,) = run(model, "score", [ScoreRequest("x", ("y", "z"))])
    assert res.ok, res.error
    assert res.logprobs == pytest.approx([expected_text_logprob("x", "y"), expected_text_logprob("x", "z")], abs=1e-9)


def test_cache_shares_a_computation_already_in_flight(tmp_path):
    """Two concurrent identical requests (both seats of a symmetric game) cost one call."""
    import asyncio

    from stratbench.models.base import LanguageModel, ScoreRequest, ScoreResult
    from stratbench.models.cache import CachedModel, ResponseCache

    class Slow(LanguageModel):
        spec = "slow"

        def __init__(self):
            super().__init__()
            self.calls = 0

        async def score(self, requests):
            self.calls += len(requests)
            await asyncio.sleep(0.05)
            return [ScoreResult([-1.0, -2.0], [1, 1], tokens_in=7) for _ in requests]

        async def generate(self, requests):  # pragma: no cover - unused
            raise NotImplementedError

    inner = Slow()
    m = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    req = ScoreRequest("p", (" 1", " 2"))

    async def main():
        return await asyncio.gather(m.score([req]), m.score([req]), m.score([req, req]))

    a, b, c = asyncio.run(main())
    assert inner.calls == 1
    assert a[0].logprobs == b[0].logprobs == c[0].logprobs == c[1].logprobs == [-1.0, -2.0]
    assert [r.cached for r in (a[0], b[0], c[0], c[1])].count(False) == 1
    assert m.usage.calls == 1 and m.usage.cache_hits == 3


# -- repeat_penalty: what a model opened from a spec sends -----------------------------------------


def _bodies(server: FakeOpenAIServer, path: str) -> list[dict]:
    return [r.body for r in server.requests if r.path.rstrip("/").endswith("/v1" + path)]


def test_openai_compatible_models_from_a_spec_send_no_repetition_penalty(server):
    """llama-cpp-python's server penalises repetition (1.1) unless told otherwise, even at
    temperature 0, where the local gguf route does not: every command's openai-compatible model
    says 1.0, records it in its identity (and so in its cache key), and sends nothing on scoring."""
    from stratbench.models import ModelOptions, load_model

    m = load_model("openai-compatible:m", ModelOptions(base_url=server.base_url))
    try:
        assert m.describe()["repeat_penalty"] == 1.0
        (g,) = asyncio.run(m.generate([GenerateRequest("Pick one.", max_tokens=4, temperature=0.0)]))
        (c,) = asyncio.run(m.generate([GenerateRequest("Pick one.", max_tokens=4, temperature=0.0, chat=True)]))
        (s,) = asyncio.run(m.score([ScoreRequest("Answer: ", ("1", "2"))]))
        assert g.ok and c.ok and s.ok
        scoring = [b for b in _bodies(server, "/completions") if "logprobs" in b]
        gen = _bodies(server, "/chat/completions") + [b for b in _bodies(server, "/completions") if b not in scoring]
        assert len(gen) == 2 and all(b["repeat_penalty"] == 1.0 for b in gen)
        assert scoring and all("repeat_penalty" not in b for b in scoring)
    finally:
        asyncio.run(m.aclose())
    server.requests.clear()
    off = load_model("openai-compatible:m", ModelOptions(base_url=server.base_url, repeat_penalty=None))
    try:
        assert "repeat_penalty" not in off.describe()
        (g,) = asyncio.run(off.generate([GenerateRequest("Pick one.", max_tokens=4)]))
        assert g.ok and all("repeat_penalty" not in b for b in _bodies(server, "/completions"))
    finally:
        asyncio.run(off.aclose())


def test_openai_and_together_never_get_a_repetition_penalty(server, monkeypatch):
    from stratbench.models import ModelOptions, load_model

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("TOGETHER_API_KEY", "k")
    for spec in ("openai:m", "together:m"):
        m = load_model(spec, ModelOptions(base_url=server.base_url))
        try:
            assert "repeat_penalty" not in m.describe()
            (g,) = asyncio.run(m.generate([GenerateRequest("Pick one.", max_tokens=4)]))
            assert g.ok
        finally:
            asyncio.run(m.aclose())
    assert server.requests and all("repeat_penalty" not in (r.body or {}) for r in server.requests)


def test_a_server_that_rejects_repeat_penalty_gets_requests_without_it():
    """A server that refuses unknown fields (400 naming it, as OpenAI's API does): the request is
    sent again without the field, counted as a retry, and the field is not sent again."""
    from stratbench.models import ModelOptions, load_model

    with FakeOpenAIServer(strict_fields=True) as s:
        m = load_model("openai-compatible:m", ModelOptions(base_url=s.base_url))
        try:
            out = asyncio.run(m.generate([GenerateRequest(f"Pick {i}.", max_tokens=4) for i in range(3)]))
            assert all(g.ok for g in out)
            sent = [r.body for r in s.requests]
            rejected = [b for b in sent if "repeat_penalty" in b]
            assert len(rejected) >= 1 and len(sent) == 3 + len(rejected)
            assert m.usage.extra["retries"] == len(rejected)
            (g,) = asyncio.run(m.generate([GenerateRequest("Once more.", max_tokens=4)]))
            assert g.ok and "repeat_penalty" not in s.requests[-1].body
        finally:
            asyncio.run(m.aclose())


@pytest.mark.parametrize("key", ["Action", "EMPTY"])
def test_a_short_placeholder_key_never_rewrites_what_the_model_said(monkeypatch, key):
    """A key under 8 characters (a local server's placeholder, or an ordinary word) is not masked
    in the reply: "Action: 1" stays "Action: 1" (fuzz 9 D3); a real key is masked everywhere."""
    monkeypatch.setenv("TOGETHER_API_KEY", key)
    with FakeOpenAIServer(canned_text=f"Action: 1 ({key})") as s:
        model = make_model(s, provider="together", model="m")
        (res,) = run(model, "generate", [GenerateRequest("hi")])
    assert res.ok and res.text == f"Action: 1 ({key})"
    monkeypatch.setenv("TOGETHER_API_KEY", SECRET)
    with FakeOpenAIServer(canned_text=f"Action: 1 ({SECRET})") as s:
        model = make_model(s, provider="together", model="m")
        (res,) = run(model, "generate", [GenerateRequest("hi")])
    assert res.ok and res.text == "Action: 1 (***)" and len(SECRET) >= 8
