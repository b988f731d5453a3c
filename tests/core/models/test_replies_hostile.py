"""Hostile servers and secrets in URLs, for the HTTP backend (against tests/helpers/fake_openai_server.py):

* replies whose log-probabilities are no probabilities (above 0, NaN, infinite) end as error
  records naming the problem — never scored, never bypassed by another request;
* a response body is read no further than its cap (`STRATBENCH_MAX_RESPONSE_BYTES`, 8 MiB by
  default), a gzip or deflate bomb included: the call is an error "response body over N bytes",
  and memory stays bounded;
* a body trickled slower than the timeout allows (a byte at a time: no per-read timeout trips)
  ends at the timeout as a whole: a timeout "response body not complete within N s", retried;
* credentials in a base URL (``http://user:PASSWORD@host/v1``) reach the server as basic
  authentication and nowhere else: not run.json (config, command), records, errors, log lines,
  crash files; a run saved with them asks for them again when resumed.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import os
import sys
import tracemalloc
from pathlib import Path

import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    _compressed_json_of_size,
    expected_text_logprob,
    greedy_completion,
)
from model_calls import run

from stratbench.cli.main import main
from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, ScoreRequest
from stratbench.models.openai_api import (
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_RESPONSE_BYTES_ENV,
    OpenAICompatibleModel,
    check_base_url,
)
from stratbench.redact import is_redacted_url, redact_json, redact_known, redact_text, redact_url, secret_forms

PASSWORD = "Pa55-w0rd-do-not-leak"


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def make_model(server: FakeOpenAIServer, **kw) -> OpenAICompatibleModel:
    opts = dict(base_url=server.base_url, retry_base_delay_s=0.002, retry_max_delay_s=0.02, timeout_s=10,
                top_logprobs=0)
    opts.update(kw)
    return OpenAICompatibleModel("openai-compatible", "fake-model", **opts)


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """`stratbench argv` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ log-probabilities checked


HUGE_INT = "-1" + "0" * 400  # valid JSON, an integer no float holds


@pytest.mark.parametrize("value", ["3.5", "1e-3", "nan", "inf", "-inf", HUGE_INT, HUGE_INT[1:]])
def test_echoed_logprobs_that_are_no_probabilities_are_error_records(server, value):
    server.script(*[f"logprobs:{value}"] * 4)
    (res,) = run(make_model(server), "score", [ScoreRequest("Pick: ", ("A", "B"))])
    assert res.logprobs is None and not res.ok
    assert "not a probability" in res.error and "continuation" in res.error, res.error
    assert server.request_count <= 2  # no retry: the answer is wrong, not lost


def test_a_logprob_above_zero_by_rounding_only_is_accepted(server):
    server.script("logprobs:1e-7")
    (res,) = run(make_model(server), "score", [ScoreRequest("Pick: ", ("A",))])
    assert res.ok, res.error
    assert res.logprobs == [pytest.approx(1e-7)]


@pytest.mark.parametrize("value", ["2.0", "nan", HUGE_INT])
def test_a_bad_topk_answer_is_the_calls_error_never_bypassed_by_an_echo(server, value):
    server.script(f"logprobs:{value}")
    (res,) = run(make_model(server, top_logprobs=5), "score", [ScoreRequest("Pick: ", ("A", "B", "Cooperate"))])
    assert res.logprobs is None and "not a probability" in res.error and "top-k" in res.error, res.error
    assert server.request_count == 1
    assert not any(r.body.get("echo") for r in server.requests)


@pytest.mark.parametrize("value", ["0.5", HUGE_INT])
def test_a_bad_chat_topk_answer_is_an_error_record(server, value):
    server.script(f"logprobs:{value}")
    (res,) = run(make_model(server, endpoint="chat"), "score", [ScoreRequest("Pick: ", ("A", "B"))])
    assert res.logprobs is None and "not a probability" in res.error, res.error
    assert "internal error" not in res.error


def test_good_replies_still_score_exactly(server):
    (res,) = run(make_model(server, top_logprobs=5), "score", [ScoreRequest("Pick: ", ("A", "B", "Cooperate"))])
    assert res.ok, res.error
    assert res.logprobs == pytest.approx([expected_text_logprob("Pick: ", c) for c in ("A", "B", "Cooperate")],
                                         abs=1e-9)


def test_a_run_against_a_server_with_positive_logprobs_ends_in_errors_not_numbers(tmp_path):
    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("logprobs:50",)) as server:
        code, out, err = cli(["nashgap", "--model", "openai-compatible:fake-model", "--base-url", server.base_url,
                              "--policy", "logprob", "--num-games", "2", "--num-trials", "1", "--seed", "1",
                              "--no-cache", "--retries", "0", "--output-dir", str(tmp_path), "--quiet"], tmp_path)
    assert code == 1, err
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    records = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert records and all(r.get("error") for r in records), records[0]
    assert all("not a probability" in r["error"] for r in records), records[0]["error"]


# ------------------------------------------------------------------ reply texts and usage counts


def _records(folder: Path, name: str = "trials.jsonl") -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines()]


def test_a_reply_with_a_lone_surrogate_is_written_cached_and_served_again(tmp_path, monkeypatch):
    """``"\\udc80"`` in a reply's JSON is a string no UTF-8 file can hold: it reaches the records
    and the cache as U+FFFD, and the answer the cache serves again (a resume's) is written too."""
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(canned_text="Action: 1 \udc80") as server:
        for out in ("first", "again"):  # the second run is served by the cache
            code, _, err = cli(["nashgap", "--model", "openai-compatible:fake-model", "--base-url", server.base_url,
                                "--policy", "sample", "--chat", "--num-games", "2", "--num-trials", "1", "--seed", "1",
                                "--output-dir", str(tmp_path / out), "--quiet"], tmp_path)
            assert code == 0, err
            (folder,) = (tmp_path / out).iterdir()
            records = _records(folder)
            assert len(records) == 2 and all(r["raw_response"] == "Action: 1 \ufffd" for r in records), records
            assert all(r["status"] == "parsed" for r in records)
        assert all(r["usage"]["cached"] for r in records) and server.request_count == 2


def test_an_answer_cached_with_a_lone_surrogate_is_served_clean(tmp_path):
    """A cache written before replies were cleaned holds the escaped surrogate: it is served as
    U+FFFD (the result types clean whatever passes them), never a crash on every resume."""
    from stratbench.models.base import GenerateResult
    from stratbench.models.cache import CachedModel, ResponseCache, request_key

    with FakeOpenAIServer(canned_text="fresh") as server:
        model = make_model(server)
        cache = ResponseCache(tmp_path / "responses.sqlite")
        req = GenerateRequest("hi", max_tokens=4)
        cache.put_many({request_key("generate", model.describe(), req, model.reply_reader): {"text": "old \udc80", "tokens_in": 5,
                                                                          "tokens_out": 2}})
        (res,) = run(CachedModel(model, cache), "generate", [req])
        assert res.cached and res.text == "old \ufffd" and res.tokens_in == 0 and res.tokens_out == 2
        assert server.request_count == 0
    r = GenerateResult("a\ud800b", reasoning="\udfff", error=None)
    r.text = "c\udc80"
    assert (r.text, r.reasoning) == ("c\ufffd", "\ufffd")


@pytest.mark.parametrize("usage", [
    "null", '{"prompt_tokens": -1000000, "completion_tokens": -5}', '{"prompt_tokens": "abc", "completion_tokens": 3}',
    '{"prompt_tokens": 1' + "0" * 400 + ', "completion_tokens": 1}', '{"prompt_tokens": 1e18, "completion_tokens": 2}',
    '{"prompt_tokens": 1000000000000000000, "completion_tokens": 2}', '{"prompt_tokens": true, "completion_tokens": 1}'])
def test_a_reply_without_usable_usage_counts_keeps_its_answer_and_its_usage_is_unknown(server, usage):
    """Absent, negative, non-integer or absurd token counts: the answer stands, the call's usage
    is unknown (0 tokens counted, never negative, never a crash), counted as such."""
    model = make_model(server, top_logprobs=5)
    server.script(f"usage:{usage}")
    (gen,) = run(model, "generate", [GenerateRequest("Count: 1, 2, ", max_tokens=5)])
    assert gen.ok and gen.text == greedy_completion("Count: 1, 2, ", 5)[0]
    assert gen.usage_unknown and gen.tokens_in == 0 and 0 <= gen.tokens_out <= 3  # (a count given stays)
    server.script(f"usage:{usage}", "ok", "ok")  # the top-k request, then two echoes
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("Cooperate", "Defect"))])
    assert res.ok and res.usage_unknown and res.tokens_in >= 0, res
    (fine,) = run(model, "score", [ScoreRequest("Pick: ", ("Cooperate", "Defect"))])
    assert fine.ok and not fine.usage_unknown and fine.tokens_in > 0
    assert model.usage.as_dict()["usage_unknown"] == 2 and model.usage.tokens_in >= 0


def test_a_run_whose_server_reports_no_usage_says_so_and_resumes(tmp_path):
    """run.json counts the calls of unknown usage beside a cost made of the others, never a
    negative or overflowing total, and the folder it wrote resumes."""
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:fake-model": {"input_per_million": 1000,
                                                                   "output_per_million": 1000}}))
    with FakeOpenAIServer(canned_text="Action: 1", fault_rate=1.0,
                          fault_kinds=('usage:{"prompt_tokens": -1000000, "completion_tokens": 1' + "0" * 400 + "}",)
                          ) as server:
        code, out, err = cli(["nashgap", "--model", "openai-compatible:fake-model", "--base-url", server.base_url,
                              "--policy", "sample", "--num-games", "3", "--num-trials", "1", "--seed", "1",
                              "--no-cache", "--price-table", str(prices), "--output-dir", str(tmp_path / "o")], tmp_path)
        assert code == 0, err
        assert "est. cost $0.0000, 3 calls whose provider reported no usable usage (their unreported tokens are not in the tokens or the cost)" in err, err
        (folder,) = (tmp_path / "o").iterdir()
        totals = json.loads((folder / "run.json").read_text())["totals"]
        assert totals["model_usage_unknown"] == 3 and totals["model_tokens_in"] == totals["model_tokens_out"] == 0
        # each record says its 0s are no counts (fuzz 10 A D4)
        assert all(r["usage"]["tokens_in"] == 0 and r["usage"]["usage_unknown"] is True for r in _records(folder))
        code, out, err = cli(["nashgap", "--resume", str(folder), "--quiet"], tmp_path)
        assert code == 0, err


@pytest.mark.parametrize("argv", [
    ["tmgbench", "run", "--policy", "sample", "--games", "111"],
    ["chbench", "run", "--opponents", "level-k:1", "--no-self-play", "--policy", "sample", "--rounds", "1",
     "--games", "1", "--bootstrap", "2", "--restarts", "1"],
    ["tom", "run", "--prompting", "LM", "--rounds", "2", "--episodes", "1"],
    ["tmgbench", "run", "--policy", "logprob", "--games", "111", "--chat-template", "<instruct gguf>"],
], ids=["tmgbench", "chbench", "tom", "tmgbench-walk"])
def test_every_suites_line_says_when_usage_went_unreported(tmp_path, argv):
    """Not only Nash gap's line: a run whose token counts are only the reported part says so (fuzz 21 A D4),
    and so does each record (a TMGBench top-k walk's too: fuzz 22 A R1)."""
    from stratbench.models.llama import embedded_instruct_path

    argv = [str(embedded_instruct_path()[0]) if a == "<instruct gguf>" else a for a in argv]
    model = ["--models" if argv[0] == "chbench" else "--model", "openai-compatible:fake-model"]
    with FakeOpenAIServer(canned_text="1", fault_rate=1.0, fault_kinds=("usage:null",)) as server:
        code, out, err = cli([*argv, *model, "--base-url", server.base_url, "--no-cache", "--retries", "0",
                              "--output-dir", str(tmp_path / "o")], tmp_path)
    assert code in (0, 1), err
    (folder,) = (tmp_path / "o").iterdir()
    n = json.loads((folder / "run.json").read_text())["totals"]["model_usage_unknown"]
    assert n > 0 and f"{n} calls whose provider reported no usable usage" in err, err
    if argv[0] == "tmgbench":
        answers = [json.loads(x) for x in (folder / "answers.jsonl").read_text().splitlines()]
        assert answers and all(a["usage"].get("usage_unknown") is True for a in answers if a["status"] != "error")


@pytest.mark.parametrize("mechanism", ["baseline", "chat"])
def test_chbench_moves_of_unknown_usage_say_so(tmp_path, mechanism):
    """A CHBench move whose calls had no usable usage counts says its 0 tokens are no counts (fuzz 11
    A D3: only the other suites' records did), an advisor session's calls included; a scripted
    seat never has the mark; the folder resumes with its records as they are."""
    with FakeOpenAIServer(canned_text="1", fault_rate=1.0, fault_kinds=("usage:null",)) as server:
        code, out, err = cli(["chbench", "run", "--models", "openai-compatible:fake-model", "--opponents", "level-k:1",
                              "--no-self-play", "--mechanism", mechanism, "--policy", "sample", "--rounds", "1",
                              "--games", "1", "--bootstrap", "2", "--restarts", "1", "--base-url", server.base_url,
                              "--no-cache", "--output-dir", str(tmp_path / "o"), "--quiet"], tmp_path)
        assert code == 0, err
        (folder,) = (tmp_path / "o").iterdir()
        rounds = [json.loads(x) for x in (folder / "rounds.jsonl").read_text().splitlines()]
        model_seats = [(r, s) for r in rounds for s in ("row", "col") if r[f"{s}_player"] == "openai-compatible:fake-model"]
        assert model_seats and all(r[f"{s}_usage_unknown"] is True and r[f"{s}_tokens_in"] == 0 for r, s in model_seats)
        assert all(f"{s}_usage_unknown" not in r for r in rounds for s in ("row", "col")
                   if r[f"{s}_player"] == "level-k:1")
        if mechanism == "chat":
            assert all(r[f"{s}_consultation"] for r, s in model_seats if r["round"] == 1)
        assert json.loads((folder / "run.json").read_text())["totals"]["model_usage_unknown"] > 0
        code, out, err = cli(["chbench", "run", "--resume", str(folder), "--quiet"], tmp_path)
        assert code == 0, err


def test_a_reply_nested_too_deeply_is_invalid_json_not_an_internal_error(server):
    server.script("deep", "deep")
    (res,) = run(make_model(server, max_retries=1), "generate", [GenerateRequest("hi", max_tokens=4)])
    assert res.text is None and res.error == "invalid JSON in response (nested too deeply) after 2 attempts", res.error


# ------------------------------------------------------------------ echoed tokens must spell the continuation

PROMPT = "Pick one: "
P = len(PROMPT)


def _echo(full: str, tokens: list, offsets: list, lps: list | None = None) -> dict:
    lps = lps or [None] + [-1.0] * (len(tokens) - 1)
    return {"choices": [{"text": full + "!", "finish_reason": "length",
                         "logprobs": {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1}}


@pytest.mark.parametrize("cont, tokens, offsets, why", [
    ("2", [PROMPT, "2", "2", "!"], [0, P, P, P + 1], "a repeated or earlier offset"),  # the label counted twice
    ("2", [PROMPT, "2", "e: ", "2", "!"], [0, P, P - 3, P, P + 1], "a repeated or earlier offset"),  # going back
    ("AB", [PROMPT, "A", "!"], [0, P, P + 2], "no token covers offsets 11 to 11"),  # a token left out
    ("ABC", [PROMPT, "A", "C", "!"], [0, P, P + 2, P + 3], "no token covers offsets 11 to 11"),
    ("AB", [PROMPT, "A"], [0, P], "they end at offset 11, the continuation at 12"),  # cut before its end
    # a token holding part of a character (U+FFFD, or llama-cpp-python's empty byte tokens) covers
    # at most one character, never ASCII (fuzz 9 D1)
    ("No equilibrium", [PROMPT, "\ufffd", "!"], [0, P, P + 14], "would cover 'No equilibrium'"),
    ("AB", [PROMPT, "", "!"], [0, P, P + 2], "would cover 'AB'"),
    ("A", [PROMPT, "", "!"], [0, P, P + 1], "would cover 'A'"),
    ("\u00e9\u00e9", [PROMPT, "\ufffd", "!"], [0, P, P + 2], "would cover"),
])
def test_echoed_tokens_that_do_not_tile_the_continuation_are_an_error(server, monkeypatch, cont, tokens, offsets, why):
    """An echo whose tokens repeat an offset, go back, leave a gap or stop short of the end is a
    malformed reply: an error result, never a label scored twice or by its first token."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, top_logprobs=0)
    full = PROMPT + cont

    async def post(path, body):
        return RetryOutcome(data=_echo(full, tokens, offsets), status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "score", [ScoreRequest(PROMPT, (cont,))])
    assert res.logprobs is None and "do not spell the continuation exactly once" in res.error, res.error
    assert why in res.error, res.error
    # the same reply with its tokens tiling the continuation scores
    good = [PROMPT, *cont, "!"]
    good_offsets = [0, *range(P, P + len(cont) + 1)]

    async def post_good(path, body):
        return RetryOutcome(data=_echo(full, good, good_offsets), status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post_good)
    (ok,) = run(model, "score", [ScoreRequest(PROMPT, (cont,))])
    assert ok.ok and ok.logprobs == [-1.0 * len(cont)] and ok.n_tokens == [len(cont)], ok


@pytest.mark.parametrize("cont, tokens, offsets", [
    # llama-cpp-python's real echo of " 𝔘𝔫": a rare character's byte tokens, empty texts at its offset (fuzz 9 D2)
    (" \U0001d518\U0001d52b", [PROMPT, " ", "", "", "", "", "", "", "", "", "!"],
     [0, P, P + 1, P + 1, P + 1, P + 1, P + 2, P + 2, P + 2, P + 2, P + 3]),
    # U+FFFD halves of one character, then an ASCII token
    ("\u00e9x", [PROMPT, "\ufffd", "\ufffd", "x", "!"], [0, P, P, P + 1, P + 2]),
])
def test_a_characters_byte_tokens_are_scored_as_that_character(server, monkeypatch, cont, tokens, offsets):
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, top_logprobs=0)

    async def post(path, body):
        return RetryOutcome(data=_echo(PROMPT + cont, tokens, offsets), status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "score", [ScoreRequest(PROMPT, (cont,))])
    assert res.ok and res.n_tokens == [len(tokens) - 2] and res.logprobs == [-1.0 * (len(tokens) - 2)], res


def _chat_model_answering(server, monkeypatch, first: str, top: list) -> object:
    """A chat-endpoint model whose every request is answered by a reply whose first token is
    ``first`` with ``top`` as its top_logprobs (as a server sends them)."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": {"role": "assistant", "content": first}, "finish_reason": "length",
                          "logprobs": {"content": [{"token": first, "logprob": -0.1, "top_logprobs": top}]}}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 1}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    return model


@pytest.mark.parametrize("entry", [{"token": "0", "logprob": "-0.1"}, {"token": "0", "logprob": True},
                                   {"token": None, "bytes": [48], "logprob": -0.1}, {"token": 0, "logprob": -0.1},
                                   {"token": "0"}, "0"])
def test_a_chat_top_logprobs_entry_that_cannot_be_read_is_an_error_never_probability_0(server, monkeypatch, entry):
    """The server put 90% on "0" in an entry that cannot be read: reading the label as outside the
    top-20 would give it probability 0; the reply is malformed, an error result."""
    top = [entry, {"token": "1", "logprob": -2.5}, {"token": "2", "logprob": -4.0}]
    model = _chat_model_answering(server, monkeypatch, "0", top)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("0", "1", "2"))])
    assert res.logprobs is None and "top_logprobs entry 0" in res.error, res.error


def test_chat_labels_led_by_the_tokenizers_whitespace_are_the_labels(server, monkeypatch):
    """A SentencePiece model behind vLLM reports its first token as " 1": the label "1" is every
    top-20 token that is "1" after leading whitespace, their probabilities summed (fuzz 9 D4: the
    clear answer 1 was read as outside the top-20, and the policy put 1.0 on 2)."""
    import math

    top = [{"token": " 1", "logprob": math.log(0.6)}, {"token": "1", "logprob": math.log(0.3)},
           {"token": " 0", "logprob": math.log(0.05)}, {"token": "2", "logprob": math.log(0.01)}]
    model = _chat_model_answering(server, monkeypatch, " 1", top)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("0", "1", "2", " 1"))])
    assert res.ok
    # " 1" asked as such is the same answer (fuzz 17 A D1: looked up as itself, CHBench's labels
    # found nothing in a chat reply, or only a rare spaced token)
    assert [round(math.exp(x), 6) for x in res.logprobs] == [0.05, 0.9, 0.01, 0.9]


# ------------------------------------------------------------------ response body cap


def traced_peak(fn):
    """(fn's result, the peak of memory traced while it ran, in bytes)."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_body_over_the_cap_is_an_error_not_read_and_not_retried(server, monkeypatch):
    monkeypatch.setenv(MAX_RESPONSE_BYTES_ENV, "100000")
    model = make_model(server)
    assert model.max_response_bytes == 100_000
    server.script("huge:20000000", "huge:20000000")
    (res,), peak = traced_peak(lambda: run(model, "generate", [GenerateRequest("hi", max_tokens=4)]))
    assert res.text is None and "response body over 100000 bytes" in res.error, res.error
    assert server.request_count == 1  # a server that sends too much would send it again
    assert peak < 8_000_000, peak  # not the 20 MB


def test_the_default_cap_is_8_mib_and_a_body_under_it_is_read(server):
    assert DEFAULT_MAX_RESPONSE_BYTES == 8 * 1024 * 1024
    model = make_model(server)
    assert model.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    server.script("huge:2000000", f"huge:{DEFAULT_MAX_RESPONSE_BYTES + 1}")
    (under,) = run(model, "generate", [GenerateRequest("hi", max_tokens=4)])
    assert under.ok and len(under.text) > 1_900_000
    (over,) = run(model, "generate", [GenerateRequest("hi", max_tokens=4)])
    assert over.text is None and f"response body over {DEFAULT_MAX_RESPONSE_BYTES} bytes" in over.error


@pytest.mark.parametrize("kind", ["gzip", "deflate"])
def test_a_compression_bomb_stops_at_the_cap(server, kind):
    size = 200_000_000  # 200 MB of JSON in a body of about 200 kB
    assert len(_compressed_json_of_size(kind, size)) < 1_000_000  # made (and cached) before measuring
    model = make_model(server)
    server.script(f"{kind}:{size}")
    (res,), peak = traced_peak(lambda: run(model, "generate", [GenerateRequest("hi", max_tokens=4)]))
    assert res.text is None and f"response body over {DEFAULT_MAX_RESPONSE_BYTES} bytes" in res.error, res.error
    assert server.request_count == 1
    assert peak < 3 * DEFAULT_MAX_RESPONSE_BYTES, peak  # the cap, not the 200 MB


@pytest.mark.parametrize("kind", ["gzip", "deflate"])
def test_compressed_answers_are_read_as_usual(server, kind):
    server.script(kind, kind)
    model = make_model(server)
    (gen,) = run(model, "generate", [GenerateRequest("Count: 1, 2, ", max_tokens=5)])
    assert gen.ok and gen.text == greedy_completion("Count: 1, 2, ", 5)[0]
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("A",))])
    assert res.ok and res.logprobs == [pytest.approx(expected_text_logprob("Pick: ", "A"), abs=1e-9)]
    assert server.requests[0].headers.get("accept-encoding") == "gzip, deflate"


def test_a_body_trickled_past_the_timeout_is_a_timeout_retried_then_an_error(server):
    import time

    server.script("trickle:0.2", "trickle:0.2")  # a byte every 0.2 s: no read ever waits 1 s
    model = make_model(server, timeout_s=1, max_retries=1)
    start = time.monotonic()
    (res,) = run(model, "generate", [GenerateRequest("hi", max_tokens=4)])
    took = time.monotonic() - start
    assert res.text is None and "response body not complete within 1 s" in res.error, res.error
    assert res.error.startswith("timeout (") and "after 2 attempts" in res.error, res.error
    assert server.request_count == 2  # retried as a timeout is
    assert model.usage.extra["retries"] == 1
    assert took < 6, took  # two attempts of about 1 s, not the body's 30 s
    # a trickle that ends in time is read as usual
    server.script("trickle:0.001")
    (ok,) = run(make_model(server, timeout_s=5), "generate", [GenerateRequest("hi", max_tokens=4)])
    assert ok.ok, ok.error


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1e9"])
def test_a_bad_cap_setting_is_one_line(server, monkeypatch, value):
    monkeypatch.setenv(MAX_RESPONSE_BYTES_ENV, value)
    with pytest.raises(InputError, match=MAX_RESPONSE_BYTES_ENV):
        make_model(server)


# ------------------------------------------------------------------ URLs and their secrets


@pytest.mark.parametrize("url, fragment", [
    ("http://[::1", "not a valid URL"),
    ("http://127.0.0.1:70000/v1", "port 70000 is outside 1-65535"),
    ("http://127.0.0.1:0/v1", "port 0 is outside 1-65535"),
    ("http://127.0.0.1:x/v1", "port 'x' is not a number"),
    ("http://127.0.0.1:8000/v1\n", "whitespace or control characters"),
    ("http://127.0.0.1:8000/\x00v1", "whitespace or control characters"),
    ("http://127.0.0.1 :8000/v1", "whitespace or control characters"),
    ("ftp://127.0.0.1/v1", "not an http:// or https:// URL"),
    ("127.0.0.1:8000/v1", "not an http:// or https:// URL"),
    ("http:///v1", "names no host"),
    ("http://127.0.0.1:8000/v1?key=1", "query or fragment"),
    ("http://user:***@127.0.0.1:8000/v1", "redacted"),
])
def test_bad_base_urls_are_one_line_before_any_request(url, fragment):
    with pytest.raises(InputError) as e:
        OpenAICompatibleModel("openai-compatible", "m", base_url=url)
    assert fragment in str(e.value) and "\n" not in str(e.value)
    assert "--base-url" in str(e.value)


def test_a_very_long_base_url_is_named_not_echoed_whole():
    url = "http://127.0.0.1:8000/" + "a" * 100_000 + "?x"
    with pytest.raises(InputError) as e:
        OpenAICompatibleModel("openai-compatible", "m", base_url=url)
    assert len(str(e.value)) < 400 and "characters)" in str(e.value) and "query or fragment" in str(e.value)


def test_a_template_that_does_not_compile_is_named_by_its_path(tmp_path):
    from stratbench.models.openai_api import ChatTemplate

    f = tmp_path / "sub" / "syntax.jinja"
    f.parent.mkdir()
    f.write_text("{% for %}")
    with pytest.raises(InputError, match=f"^--chat-template {f}: not a valid template"):
        ChatTemplate.load(f)


def test_good_base_urls_pass():
    for url in ("http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://[::1]:8080/v1/",
                f"http://user:{PASSWORD}@localhost:1/v1", "http://host"):
        check_base_url(url, "m")


def test_redaction_helpers():
    assert redact_url(f"http://user:{PASSWORD}@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact_url("http://token@host/v1") == "http://***@host/v1"
    assert redact_url("http://host/v1") == "http://host/v1"
    assert redact_url("http://[::1") == "http://[::1"  # malformed: never raises
    # a key in a query (?api_key=…) is masked as a password is: the URL is refused, never echoed whole
    assert redact_url(f"http://host/v1?api_key={PASSWORD}") == "http://host/v1?***"
    assert redact_url(f"http://u:{PASSWORD}@h/v1?k={PASSWORD}#x") == "http://u:***@h/v1?***#***"
    argv = ["stratbench", "--base-url", f"http://u:{PASSWORD}@h/v1", f"--base-url=https://u:{PASSWORD}@h"]
    assert PASSWORD not in redact_text(str(argv)) and PASSWORD not in json.dumps(redact_json({"argv": argv}))
    assert redact_text("mail me@example.com, see http://host/a@b") == "mail me@example.com, see http://host/a@b"
    assert is_redacted_url("http://user:***@h/v1") and not is_redacted_url(f"http://user:{PASSWORD}@h/v1")
    # a password holding "/", "?" or "#" typed as is: no URL parser finds it, every line masks it
    # (fuzz 25 A F5: "port 'Top' is not a number" showed it whole)
    for pw in ("Top/Secret9", "TopSecret#9", "Top?Secret9"):
        url = f"http://u:{pw}@127.0.0.1:8000/v1"
        assert redact_url(url) == "http://u:***@127.0.0.1:8000/v1"
        assert "Secret9" not in redact_text(f"error: --base-url {url!r}: port 'Top' is not a number")
    assert redact_url("http://host:8000/v1/a@b") == "http://host:8000/v1/a@b"  # a path's "@" after a port
    # the password as a URL holds it, percent-encoded, is a known secret too (fuzz 25 A F4)
    forms = secret_forms(None, "user:p@ss:w0rd/S3cretPW")
    echoed = "rejected p%40ss%3Aw0rd%2FS3cretPW, p%40ss%3aw0rd%2fS3cretPW and p%40ss%3Aw0rd/S3cretPW"
    assert "S3cretPW" not in redact_known(echoed, forms)


def test_a_password_holding_a_slash_as_typed_is_not_in_the_refusal(tmp_path, cli):
    """The URL's parser finds no credentials in http://u:Top/Secret9@host (the password reads as a
    port and a path): the one refusal line masks it all the same (fuzz 25 A F5)."""
    r = cli("nashgap", "--model", "openai-compatible:m", "--base-url", "http://u:Top/Secret9@127.0.0.1:8000/v1",
            "--num-games", "1", "--output-dir", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Secret9" not in r.stderr, r.stderr
    assert "Top" not in r.stderr and "percent-encode" in r.stderr, r.stderr  # (not a "port 'Top'")
    assert not (tmp_path / "o").exists()


def test_url_credentials_are_sent_as_basic_auth_and_shown_nowhere(server, caplog):
    url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
    model = make_model(server, base_url=url)
    assert PASSWORD not in json.dumps(model.describe()) + repr(model)
    assert model.describe()["base_url"] == server.base_url  # the cache identity of the server itself
    caplog.set_level(logging.DEBUG)
    server.script("500", "401")
    (res,) = run(model, "generate", [GenerateRequest("hi", max_tokens=2)])
    auth = server.requests[0].headers["authorization"]
    assert auth == "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert not any("@" in r.path for r in server.requests)
    # the 401 echoes the Authorization header, as OpenAI's does: redacted from the error
    assert res.text is None and "HTTP 401" in res.error
    token = auth.split()[1]
    assert PASSWORD not in res.error and token not in res.error, res.error
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert PASSWORD not in logged and token not in logged


def _nashgap(server_url: str, out: Path) -> list[str]:
    return ["nashgap", "--model", "openai-compatible:fake-model", "--base-url", server_url, "--policy", "sample",
            "--num-games", "1", "--num-trials", "1", "--seed", "1", "--no-cache", "--output-dir", str(out), "--quiet"]


def test_a_run_writes_no_url_credentials_and_asks_for_them_on_resume(tmp_path, monkeypatch):
    with FakeOpenAIServer(canned_text="Action: 0") as server:
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        shown = server.base_url.replace("http://", "http://alice:***@")
        argv = _nashgap(url, tmp_path / "out")
        monkeypatch.setattr(sys, "argv", ["stratbench", *argv])  # what run.json records as the command
        code, out, err = cli(argv, tmp_path)
        assert code == 0, err
        assert server.requests and all(r.headers.get("authorization", "").startswith("Basic ")
                                       for r in server.requests)
    (folder,) = (tmp_path / "out").iterdir()
    for f in folder.rglob("*"):
        if f.is_file():
            assert PASSWORD not in f.read_text(errors="replace"), f
    meta = json.loads((folder / "run.json").read_text())
    assert shown in meta["command"]
    assert meta["config"]["base_url"] == shown
    assert PASSWORD not in out + err
    # the saved URL cannot connect: resuming without --base-url is one line (the folder untouched)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    meta["status"] = "running"
    (folder / "run.json").write_text(json.dumps(meta))
    before[folder / "run.json"] = (folder / "run.json").read_bytes()
    code, out, err = cli(["nashgap", "--resume", str(folder)], tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "redacted" in err, err
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    # given again, the run finishes, and still writes no password
    with FakeOpenAIServer(canned_text="Action: 0") as server:
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        argv = ["nashgap", "--resume", str(folder), "--base-url", url, "--quiet"]
        monkeypatch.setattr(sys, "argv", ["stratbench", *argv])
        code, out, err = cli(argv, tmp_path)
    assert code == 0, err
    assert json.loads((folder / "run.json").read_text())["status"] == "finished"
    for f in folder.rglob("*"):
        if f.is_file():
            assert PASSWORD not in f.read_text(errors="replace"), f


def test_a_crash_file_and_its_error_line_hold_no_url_credentials(tmp_path, monkeypatch):
    import tempfile

    def boom(self, provider, model, base_url=None, **kw):
        raise RuntimeError(f"boom while opening {base_url}")

    monkeypatch.setattr(OpenAICompatibleModel, "__init__", boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("STRATBENCH_DEBUG", raising=False)
    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    argv = _nashgap(url, tmp_path / "out")
    monkeypatch.setattr(sys, "argv", ["stratbench", *argv])  # the crash file names the command line
    code, out, err = cli(argv, tmp_path)
    assert code == 1 and "internal error" in err and "boom" in err, err
    assert PASSWORD not in err + out
    (crash,) = (tmp_path / "stratbench-crashes").iterdir()
    text = crash.read_text()
    assert "boom while opening http://alice:***@127.0.0.1:9/v1" in text
    assert "'http://alice:***@127.0.0.1:9/v1'" in text.rpartition("argv:")[2]
    assert PASSWORD not in text


def _no_password_under(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            assert PASSWORD not in f.read_text(errors="replace"), f


def test_a_tiered_suite_writes_no_url_credentials_and_takes_them_again_on_resume(tmp_path, monkeypatch):
    """Two models: one on the suite's --base-url, one with its own URL in the suite file."""
    def suite_file(server: FakeOpenAIServer) -> Path:
        own = server.base_url.replace("http://", f"http://bob:{PASSWORD}@")
        f = tmp_path / "suite.toml"
        f.write_text(f"""
num_games_per_bucket = 2
num_trials = 1
seeds = [1]
bucket_ids = ["2x2_lowVar_pure"]
policy = "sample"
no_cache = true
output_dir = "{tmp_path / 'out'}"
models = [{{ spec = "openai-compatible:fake-model", label = "shared" }},
          {{ spec = "openai-compatible:fake-model", label = "own", base_url = "{own}" }}]
""")
        return f

    with FakeOpenAIServer(canned_text="Action: 0") as server:  # one server: the URLs, cache identities, stay
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        argv = ["suite", "tiered", "--config", str(suite_file(server)), "--base-url", url, "--quiet"]
        monkeypatch.setattr(sys, "argv", ["stratbench", *argv])
        code, out, err = cli(argv, tmp_path)
        assert code == 0, err
        users = {base64.b64decode(r.headers["authorization"].split()[1]).decode().partition(":")[0]
                 for r in server.requests}
        assert users == {"alice", "bob"}
        assert PASSWORD not in out + err
        (folder,) = (tmp_path / "out").iterdir()
        _no_password_under(folder)
        # make one cell look killed mid-run (part of its trials on disk), the suite unfinished
        meta = json.loads((folder / "suite_metadata.json").read_text())
        meta["status"] = "running"
        (folder / "suite_metadata.json").write_text(json.dumps(meta))
        (cell,) = [p for p in (folder / "models").rglob("run.json") if "own" in str(p)]
        rj = json.loads(cell.read_text())
        rj["status"] = "running"
        cell.write_text(json.dumps(rj))
        trials = cell.parent / "trials_pure_actions.jsonl"
        trials.write_text(trials.read_text().splitlines(keepends=True)[0])
        (cell.parent / "summary_pure_actions.json").unlink()
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        server.reset()
        # without the URLs again, or without the model's own: one line naming what to pass, nothing written
        for extra in ([], ["--base-url", url]):
            code, out, err = cli(["suite", "tiered", "--resume", str(folder), *extra], tmp_path)
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "redacted" in err and "--base-url" in err and "--config" in err and PASSWORD not in err, err
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
        assert not server.requests
        # the suite file and --base-url again: the suite finishes, the cell in its own folder
        argv = ["suite", "tiered", "--resume", str(folder), "--config", str(suite_file(server)), "--base-url", url,
                "--quiet"]
        monkeypatch.setattr(sys, "argv", ["stratbench", *argv])
        code, out, err = cli(argv, tmp_path)
        assert code == 0, err
        assert server.requests and all(r.headers["authorization"] == "Basic " + base64.b64encode(
            f"bob:{PASSWORD}".encode()).decode() for r in server.requests)
    assert json.loads((folder / "suite_metadata.json").read_text())["status"] == "finished"
    assert len(trials.read_text().splitlines()) == 2
    _no_password_under(folder)


KEY = "sk-SECRETKEY123"


@pytest.mark.parametrize("how", ["key", "password"])
def test_a_successful_reply_that_echoes_the_credentials_is_stored_without_them(tmp_path, monkeypatch, how):
    """A server echoing the Authorization header in a 200 reply: the key, the password and their
    Basic base64 are masked in the text, reasoning and finish_reason before the records and the
    response cache get them."""
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("echo_auth",)) as server:
        url = server.base_url
        if how == "key":
            monkeypatch.setenv("OPENAI_API_KEY", KEY)
        else:
            url = url.replace("http://", f"http://alice:{PASSWORD}@")
        code, out, err = cli(["nashgap", "--model", "openai-compatible:fake-model", "--base-url", url, "--policy",
                              "sample", "--chat", "--num-games", "2", "--num-trials", "1", "--seed", "1",
                              "--output-dir", str(tmp_path / "o"), "--quiet"], tmp_path)
        assert code == 0, err
        secret = KEY if how == "key" else PASSWORD
        assert secret not in out + err
        (folder,) = (tmp_path / "o").iterdir()
        records = _records(folder)
        assert all("auth=" in r["raw_response"] and "***" in r["raw_response"] for r in records), records[0]
        for f in [*folder.rglob("*"), *(tmp_path / "cache").rglob("*")]:
            if f.is_file():
                data = f.read_bytes()
                assert secret.encode() not in data, f
                basic = base64.b64encode(f"alice:{PASSWORD}".encode())
                assert basic not in data, f
        # scored replies too (an error that quotes the reply, a rendered prompt)
        model = make_model(server, base_url=url)
        (gen,) = run(model, "generate", [GenerateRequest("hi", max_tokens=4, chat=True)])
        assert secret not in gen.text + gen.reasoning + gen.finish_reason and "***" in gen.finish_reason


@pytest.mark.parametrize("key, what", [("sk-\nSECRETKEY123", "a line break"), ("sk-SECRET\x01KEY123", "a control character"),
                                       ("sk-SECRÉTKEY123", "a non-ASCII character")])
@pytest.mark.parametrize("spec, env", [("openai-compatible:m", "OPENAI_API_KEY"), ("anthropic:c", "ANTHROPIC_API_KEY"),
                                       ("gemini:g", "GEMINI_API_KEY")])
def test_an_api_key_no_header_can_carry_is_one_line_before_any_folder(tmp_path, monkeypatch, key, what, spec, env):
    """A key with a line break, a control or a non-ASCII character: every call would fail quoting
    it (or crash in an encoder); it is refused as the model opens, naming the variable, never the
    key (exit 2, no folder). Surrounding whitespace is still stripped."""
    monkeypatch.setenv(env, key)
    code, out, err = cli(["nashgap", "--model", spec, "--base-url", "http://127.0.0.1:9", "--policy", "sample",
                          "--num-games", "1", "--output-dir", str(tmp_path / "o")], tmp_path)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and env in err and what in err, err
    assert "SECRET" not in err + out
    assert not (tmp_path / "o").exists()
    monkeypatch.setenv(env, " sk-fine\r\n")
    from stratbench.models.providers import read_key
    assert read_key(env, spec) == "sk-fine"


# ------------------------------------------------------------------ a GGUF without a chat template


@pytest.fixture(scope="module")
def base_gguf():
    """The embedded base model's GGUF: a tokenizer, no chat template."""
    pytest.importorskip("llama_cpp")
    from stratbench.models.llama import embedded_model_path

    try:
        return embedded_model_path()
    except InputError as e:  # pragma: no cover - the embedded model's package is missing
        pytest.skip(str(e))


@pytest.mark.parametrize("argv", [
    ["nashgap", "--chat", "--policy", "choice", "--num-games", "1"],
    ["tmgbench", "run", "--policy", "choice", "--games", "111"],
    # a --chat run of another policy would read the server's chat endpoint and ignore the file (fuzz 9 M13)
    ["nashgap", "--chat", "--policy", "logprob", "--num-games", "1"],
    ["tmgbench", "run", "--chat", "--policy", "sample", "--games", "111"],
    ["tom", "run", "--chat", "--prompting", "LM", "--episodes", "1"],
], ids=["nashgap", "tmgbench", "nashgap chat logprob", "tmgbench chat sample", "tom chat"])
def test_a_gguf_without_a_template_is_named_as_such(tmp_path, base_gguf, argv):
    code, out, err = cli([*argv, "--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1",
                          "--chat-template", str(base_gguf), "--output-dir", str(tmp_path / "out")], tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "holds no" in err and base_gguf.name in err and "give an HTTP model its template" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_token_given_as_the_urls_user_name_is_masked_in_an_echoed_reply():
    """``http://TOKEN@host/v1``: with no password the user name is the credential; a server that
    echoes the Authorization header in its reply gets neither the token nor its base64 stored (fuzz 9 S1)."""
    from stratbench.redact import secret_forms

    token = "sk-USERSECRET42"
    assert token in secret_forms(None, f"{token}:")
    assert "alice" not in secret_forms(None, f"alice:{PASSWORD}") and PASSWORD in secret_forms(None, f"alice:{PASSWORD}")


@pytest.mark.parametrize("message,text,reasoning", [
    # Magistral's content parts: thinking beside text (fuzz 10 A M5: 'choice has no text' on every call)
    ({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "2 beats 1"}]},
                  {"type": "text", "text": "Action: 1"}]}, "Action: 1", "2 beats 1"),
    # the Responses shape: output_text parts, a reasoning part's summary (fuzz 11 A D1)
    ({"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "2 beats 1"}]},
                  {"type": "output_text", "text": "Action: 1"}]}, "Action: 1", "2 beats 1"),
    ({"content": [{"type": "text", "text": "I pick "}, {"type": "output_text", "text": "Action: 1"}]},
     "I pick Action: 1", None),
    # a reasoning part whose text is its content (gpt-oss servers: fuzz 12 A D2)
    ({"content": [{"type": "reasoning", "content": [{"type": "reasoning_text", "text": "2 beats 1"}]},
                  {"type": "output_text", "text": "Action: 1"}]}, "Action: 1", "2 beats 1"),
    # a reasoning field that is no string is kept as text, not dropped (fuzz 10 A M9)
    ({"content": "Action: 2", "reasoning_content": ["think", "more"]}, "Action: 2", "think\nmore"),
    ({"content": "Action: 2", "reasoning_content": {"x": 1}}, "Action: 2", '{"x": 1}'),
    ({"content": "Action: 2", "reasoning_content": 5}, "Action: 2", "5"),
], ids=["thinking parts", "responses shape", "text and output_text", "reasoning content", "reasoning list",
        "reasoning object", "reasoning number"])
def test_chat_messages_of_other_shapes_keep_their_answer_and_thinking(server, monkeypatch, message, text, reasoning):
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": {"role": "assistant", **message}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 3}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    assert res.ok and res.text == text and res.reasoning == reasoning, res


@pytest.mark.parametrize("content,why", [
    ([{"type": "image_url", "image_url": {"url": "x"}}], "content part 0 is of type 'image_url', which is not read"),
    ([{"type": "text", "text": {"value": "Action: 1", "annotations": []}}],
     "content part 0 (text) has a text that is not a string (dict)"),
    ([{"type": "text", "text": 5}], "content part 0 (text) has a text that is not a string (int)"),
    ([{"type": "refusal", "refusal": "I cannot help with that"}], "refusal: I cannot help with that"),
    ([{"type": "text", "text": "Action: 1"}, 7], "content part 1 is no object with a type (int)"),
], ids=["image", "assistants text object", "text number", "refusal part", "bare number"])
def test_content_parts_that_cannot_be_read_are_an_error_never_an_empty_answer(server, monkeypatch, content, why):
    """A reply whose parts were not read is the call's error (fuzz 11 A D1: they were an empty
    answer — a parse failure blamed on the model — and empty advisor messages in CHBench)."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 3}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    assert not res.ok and res.text is None and why in (res.error or ""), res


def _generated_from(server, monkeypatch, message: dict):
    """The result of a chat generation whose reply is ``message`` (finish "stop", usage 5 + 3)."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": message, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 3}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    return res


@pytest.mark.parametrize("content", ["", [], None])
def test_a_refusal_beside_empty_content_is_an_error(server, monkeypatch, content):
    """(fuzz 12 A D1: with content "" or [] it was the model's empty answer; with null an error)"""
    res = _generated_from(server, monkeypatch, {"role": "assistant", "content": content,
                                                "refusal": "I cannot help with that"})
    assert not res.ok and "refusal: I cannot help with that" in (res.error or ""), res


def test_completions_top_logprobs_in_the_chat_shape_is_named(server, monkeypatch):
    """top_logprobs as [{token, logprob}] entries on the completions endpoint (fuzz 10 A M10): read
    as a map, "token" and "logprob" would be token texts; the error names the shape, not echo."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, top_logprobs=5)
    reply = {"choices": [{"text": "1", "finish_reason": "length",
                          "logprobs": {"tokens": ["1"], "token_logprobs": [-0.1],
                                       "top_logprobs": [{"token": "1", "logprob": -0.1}]}}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 1}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("0", "1"))])
    assert res.logprobs is None and "{token, logprob} entries" in (res.error or ""), res


@pytest.mark.parametrize("refusal", [False, [], 0, " "])
def test_a_refusal_field_that_says_none_beside_empty_content_is_the_empty_answer(server, monkeypatch, refusal):
    """refusal false, [], 0 or blank says no refusal: the empty content is the model's empty answer
    (a parse failure), not an error (fuzz 13 A M)."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": {"role": "assistant", "content": "", "refusal": refusal},
                          "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    assert res.ok and res.text == "", res


@pytest.mark.parametrize("extra,why", [
    ({"tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "tool call"),
    ({"refusal": "I refuse"}, "a refusal beside the text (I refuse)"),
])
def test_text_beside_a_tool_call_or_a_refusal_is_not_the_answer(server, monkeypatch, extra, why):
    """A reply the reader does not wholly take is not the model's answer (fuzz 14 A D1: the text was
    parsed and the call or refusal dropped)."""
    from stratbench.models.retry import RetryOutcome

    model = make_model(server, endpoint="chat")
    reply = {"choices": [{"message": {"role": "assistant", "content": "Action: 1", **extra},
                          "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}

    async def post(path, body):
        return RetryOutcome(data=reply, status=200, attempts=1)

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    assert not res.ok and res.text is None and why in (res.error or ""), res


@pytest.mark.parametrize("extra,why", [
    ({"refusal": "I refuse"}, "is a refusal"),
    ({"tool_calls": [{"id": "c", "type": "function"}]}, "holds a tool call"),
    ({"content": [{"type": "refusal", "refusal": "I refuse"}]}, "content part 0 is a refusal"),
    ({"content": [{"type": "text", "text": "0"}, {"type": "refusal", "refusal": "no"}]}, "content part 1 is a refusal"),
    ({"content": None, "reasoning_content": "Okay"}, "the message is reasoning"),
    ({"content": "", "reasoning": "Okay"}, "the message is reasoning"),
    ({"content": [{"type": "thinking", "thinking": "Okay"}]}, "content part 0 is reasoning"),
    ({"content": [{"type": "image_url", "image_url": {"url": "x"}}]}, "content part 0 is of type 'image_url'"),
    ({"content": None}, "has no text content"),
    ({"content": None, "reasoning_content": ""}, "has no text content"),
    ({"content": []}, "has no text content"),
    ({"content": {"text": "0"}}, "has no text content"),
    ({"content": 0}, "has no text content"),
    ({"content": ""}, "the message's text is empty"),
    ({"content": [{"type": "text", "text": ""}]}, "the message's text is empty"),
], ids=["refusal", "tool call", "refusal part", "text and refusal parts", "reasoning_content", "reasoning",
        "thinking part", "image part", "null", "null beside empty reasoning", "no parts", "object", "number",
        "empty text", "empty text part"])
def test_the_log_probs_of_a_refusal_or_a_tool_call_are_no_answers(server, monkeypatch, extra, why):
    """(fuzz 15 D2: chat scoring built a policy from them, where generation made them errors; fuzz 16
    A D1-D2: a refusal given as a content part, and a reasoning server's first token — the thinking's
    — were still scored as the answer; fuzz 17 A D2: a message with no text at all; fuzz 18 A D3: an
    empty text, the one token a "<think>" a parser took away)"""
    top = [{"token": "0", "logprob": -0.1}, {"token": "1", "logprob": -2.5}, {"token": "2", "logprob": -4.0}]
    model = _chat_model_answering(server, monkeypatch, "0", top)
    reply_post = model._post

    async def post(path, body):
        out = await reply_post(path, body)
        out.data["choices"][0]["message"].update(extra)
        return out

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("0", "1", "2"))])
    assert res.logprobs is None and why in (res.error or ""), res


@pytest.mark.parametrize("content", ["0", [{"type": "text", "text": "0"}], ["0"], " "])
def test_the_log_probs_of_an_answer_in_any_text_shape_are_scored(server, monkeypatch, content):
    """The checks above leave an answer alone: text as a string or as text parts (a space: a
    tokenizer's word-leading one, the labels read after it)."""
    top = [{"token": "0", "logprob": -0.1}, {"token": "1", "logprob": -2.5}, {"token": "2", "logprob": -4.0}]
    model = _chat_model_answering(server, monkeypatch, "0", top)
    reply_post = model._post

    async def post(path, body):
        out = await reply_post(path, body)
        out.data["choices"][0]["message"].update(content=content, refusal=None)
        return out

    monkeypatch.setattr(model, "_post", post)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", ("0", "1", "2"))])
    assert res.logprobs == pytest.approx([-0.1, -2.5, -4.0]), res


def test_text_beside_a_refusal_part_is_named_as_such(server, monkeypatch):
    """(fuzz 16 A M1: the error said the reply had no text content)"""
    res = _generated_from(server, monkeypatch, {"role": "assistant", "content": [
        {"type": "text", "text": "Action: 1"}, {"type": "refusal", "refusal": "but no"}]})
    assert not res.ok and "a refusal part beside the text (but no)" in (res.error or ""), res


def test_chat_labels_with_their_own_leading_space_are_the_replys_first_word(server, monkeypatch):
    """CHBench's labels " 1", " 2" (written for the completion after "Action:") against a chat reply
    whose first token is "1": the answer after any leading whitespace, its spellings summed — not a
    lookup of " 1" as is, which found nothing (a false error) or only a rare spaced token (a policy
    of [1, 0] where the model said 92% / 8%) (fuzz 17 A D1)."""
    import math

    top = [{"token": "1", "logprob": math.log(0.9)}, {"token": "2", "logprob": math.log(0.08)},
           {"token": " 1", "logprob": math.log(0.01)}]
    model = _chat_model_answering(server, monkeypatch, "1", top)
    (res,) = run(model, "score", [ScoreRequest("Pick: ", (" 1", " 2", "3"))])
    assert res.logprobs == pytest.approx([math.log(0.91), math.log(0.08), float("-inf")]), res


def test_a_run_stopped_while_summarising_keeps_that_sessions_usage(tmp_path, monkeypatch):
    """Ctrl-C after the last record, while the summary is computed: the calls made are in run.json,
    and the resume (which makes none) ends with the totals of an uninterrupted run (fuzz 22 B D2:
    they read 0 calls, 0 tokens; a scorecard's cost.json and csv with them)."""
    from stratbench.suites.nashgap.run import NashgapPlan

    argv = ["nashgap", "--model", "openai-compatible:fake-model", "--policy", "sample", "--num-games", "2",
            "--num-trials", "1", "--seed", "1", "--no-cache", "--quiet"]
    keys = ("model_calls", "model_tokens_in", "model_tokens_out")
    with FakeOpenAIServer(canned_text="Action: 1") as server:
        code, out, err = cli([*argv, "--base-url", server.base_url, "--output-dir", str(tmp_path / "ref")], tmp_path)
        assert code == 0, err
        (ref,) = (tmp_path / "ref").iterdir()
        want = {k: json.loads((ref / "run.json").read_text())["totals"][k] for k in keys}
        assert want["model_calls"] > 0
        real = NashgapPlan.summarise

        def stopped(self, folder, records):
            raise KeyboardInterrupt

        monkeypatch.setattr(NashgapPlan, "summarise", stopped)
        code, out, err = cli([*argv, "--base-url", server.base_url, "--output-dir", str(tmp_path / "k")], tmp_path)
        assert code == 130, err
        (folder,) = (tmp_path / "k").iterdir()
        meta = json.loads((folder / "run.json").read_text())
        assert meta["status"] == "running" and {k: meta["totals"][k] for k in keys} == want
        monkeypatch.setattr(NashgapPlan, "summarise", real)
        code, out, err = cli(["nashgap", "--resume", str(folder), "--quiet"], tmp_path)
        assert code == 0, err
        assert {k: json.loads((folder / "run.json").read_text())["totals"][k] for k in keys} == want
        # stopped inside the last write of run.json: it says "running", never "finished" without
        # its records' totals (fuzz 23 A D2), and the resume finishes it with the same totals
        import stratbench.runner.lifecycle as lifecycle

        write = lifecycle.write_json_atomic

        def stop_at_the_finish(path, data, *a, **kw):
            if isinstance(data, dict) and data.get("status") == "finished":
                raise KeyboardInterrupt
            return write(path, data, *a, **kw)

        monkeypatch.setattr(lifecycle, "write_json_atomic", stop_at_the_finish)
        code, out, err = cli([*argv, "--base-url", server.base_url, "--output-dir", str(tmp_path / "f")], tmp_path)
        assert code == 130, err
        monkeypatch.setattr(lifecycle, "write_json_atomic", write)
        (folder,) = (tmp_path / "f").iterdir()
        meta = json.loads((folder / "run.json").read_text())
        assert meta["status"] == "running" and "end_time" not in meta and {k: meta["totals"][k] for k in keys} == want
        code, out, err = cli(["nashgap", "--resume", str(folder), "--quiet"], tmp_path)
        assert code == 0, err
        meta = json.loads((folder / "run.json").read_text())
        assert meta["status"] == "finished" and {k: meta["totals"][k] for k in keys} == want
