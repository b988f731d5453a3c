"""`gemini:<model>`: Gemini through Google's own SDK (google-genai), against a fake generateContent
API on 127.0.0.1 (tests/helpers/fake_gemini_server.py).

* The request: system instruction apart, user/model turns, max output tokens, temperature and
  stops; the key from GEMINI_API_KEY in the API's header.
* The reply: thought parts are the reasoning (with their token count), the rest the answer;
  MAX_TOKENS is a cut reply — cut inside the thinking, a parse failure in a run.
* A blocked prompt or a candidate stopped for safety with no text is an error naming the reason,
  never an empty answer; 503/429 are retried by the SDK within --retries.
* Policies: no scored answers, so --policy logprob and choice are refused before a run.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_gemini_server import FakeGeminiServer

from stratbench.errors import InputError
from stratbench.models import ModelOptions, load_model, open_model
from stratbench.models.base import GenerateRequest

KEY = "gm-test"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", "not-this-one")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")  # ambient settings: not used


def _generate(server: FakeGeminiServer, *reqs: GenerateRequest, retries: int = 2):
    async def go():
        model = open_model("gemini:gemini-1.5-pro", ModelOptions(base_url=server.base_url, max_retries=retries),
                           no_cache=True)
        try:
            return await model.generate(list(reqs)), model.usage
        finally:
            await model.aclose()
    return asyncio.run(go())


def test_a_conversation_and_its_reply_as_the_api_has_them():
    req = GenerateRequest("flat", max_tokens=64, temperature=0.0, stop=("END",), chat=True,
                          messages=(("system", "Play well."), ("user", "Q1"), ("assistant", "A1"), ("user", "Q2")))
    with FakeGeminiServer(text="Action: 2", thought="2 beats 1.") as s:
        (r,), usage = _generate(s, req)
        (seen,) = s.requests
    assert r.ok and r.text == "Action: 2" and r.reasoning == "2 beats 1." and r.tokens_reasoning == len("2 beats 1.")
    assert r.finish_reason == "stop" and usage.calls == 1 and usage.errors == 0
    assert seen.path.endswith("/models/gemini-1.5-pro:generateContent") and seen.headers["x-goog-api-key"] == KEY
    assert seen.body["systemInstruction"]["parts"] == [{"text": "Play well."}]
    assert [(c["role"], c["parts"][0]["text"]) for c in seen.body["contents"]] == [
        ("user", "Q1"), ("model", "A1"), ("user", "Q2")]
    assert seen.body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 64, "stopSequences": ["END"]}


def test_a_reply_cut_inside_its_thinking_has_no_answer():
    with FakeGeminiServer(text="Action: 1", thought="Action: 0 loses, so") as s:
        (r,), _ = _generate(s, GenerateRequest("Q", max_tokens=9, chat=True))
    assert r.ok and r.text == "" and r.finish_reason == "length" and r.reasoning == "Action: 0"


@pytest.mark.parametrize("kw,why", [({"block": "SAFETY"}, "the prompt was blocked (SAFETY)"),
                                    ({"safety": True}, "the reply was stopped (SAFETY) with no text")])
def test_a_blocked_reply_is_an_error_naming_the_reason(kw, why):
    with FakeGeminiServer(**kw) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True))
    assert not r.ok and r.text is None and r.error == why and usage.errors == 1


@pytest.mark.parametrize("status", [503, 429])
def test_overloaded_calls_are_retried_by_the_sdk_and_then_counted(status):
    with FakeGeminiServer(fail_first=1, fail_status=status) as s:
        (r,), _ = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=1)
        assert r.ok and len(s.requests) == 2
    with FakeGeminiServer(fail_first=9, fail_status=status) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=1)
        assert len(s.requests) == 2
    assert not r.ok and r.error.startswith(f"HTTP {status} ") and usage.errors == 1


def test_the_key_is_checked_before_anything_runs(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(InputError, match="^gemini:g: set GEMINI_API_KEY$"):
        load_model("gemini:g")


def test_a_nashgap_run_of_gemini_samples(tmp_path, cli):
    with FakeGeminiServer(text="Action: 1", thought="thinking") as s:
        r = cli("nashgap", "--model", "gemini:gemini-1.5-pro", "--base-url", s.base_url, "--policy", "logprob",
                "--output-dir", str(tmp_path / "refused"))
        assert r.returncode == 2 and "no log-probabilities" in r.stderr and not (tmp_path / "refused").exists()
        r = cli("nashgap", "--model", "gemini:gemini-1.5-pro", "--base-url", s.base_url, "--num-games", "2",
                "--num-trials", "1", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (trials,) = (tmp_path / "o").glob("*/trials*.jsonl")
    recs = [json.loads(x) for x in trials.read_text().splitlines()]
    assert {x["status"] for x in recs} == {"parsed"} and {x["reasoning"] for x in recs} == {"thinking"}
    assert KEY not in "".join(p.read_text() for p in (tmp_path / "o").rglob("*") if p.is_file())
    r = cli("models", "--json")
    row = {x["spec"]: x for x in json.loads(r.stdout)}["gemini:<model>"]
    assert row["key_env"] == "GEMINI_API_KEY" and row["key"] == "set"


def test_a_key_gemini_refuses_stops_the_run_with_one_line(tmp_path, cli, monkeypatch):
    """Gemini answers a bad key with HTTP 400 API_KEY_INVALID (not 401): the run stops at the first
    such reply, one line, exit 2, no error records, as for a refused key elsewhere."""
    monkeypatch.setenv("GEMINI_API_KEY", "gm-WRONG")
    with FakeGeminiServer(text="Action: 1") as s:
        r = cli("nashgap", "--model", "gemini:gemini-x", "--base-url", s.base_url, "--num-games", "1",
                "--num-trials", "2", "--seed", "1", "--quiet", "--output-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: gemini:gemini-x: HTTP 400 API_KEY_INVALID: API key not valid"), r.stderr
    assert "gm-WRONG" not in r.stderr
    (folder,) = tmp_path.iterdir()
    assert (folder / "trials.jsonl").read_text() == ""


@pytest.mark.parametrize("usage", [{"promptTokenCount": -1000000, "candidatesTokenCount": 3},
                                   {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": -50},
                                   None,
                                   # pydantic refused these, and the answer was lost (fuzz 25 A F2)
                                   {"promptTokenCount": 12.5, "candidatesTokenCount": 3},
                                   {"promptTokenCount": 1e300, "candidatesTokenCount": 3},
                                   {"promptTokenCount": "many", "candidatesTokenCount": 3},
                                   {"promptTokenCount": 5, "candidatesTokenCount": [3]},
                                   "many"])
def test_usage_that_is_no_count_keeps_the_answer_and_is_unknown(usage):
    """Negative counts (or none at all) are the call's unknown usage (models.base): never a negative
    total or cost; the answer stands. A count the API leaves out (it omits zeros) is 0 — but the
    reply's own count, left out beside its text, is unknown (fuzz 12 A D3: 0 output tokens, free)."""
    def edit(a):
        return {k: v for k, v in a.items() if k != "usageMetadata"} if usage is None else {**a, "usageMetadata": usage}

    with FakeGeminiServer(edit=edit) as s:
        (r,), totals = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.text == "Action: 1" and r.usage_unknown, r
    assert r.tokens_in >= 0 and r.tokens_out >= 0 and r.tokens_reasoning is None
    assert totals.usage_unknown == 1 and totals.tokens_in >= 0
    with FakeGeminiServer(edit=lambda a: {**a, "usageMetadata": {"promptTokenCount": 4}}) as s:
        (r,), _ = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.usage_unknown and r.tokens_in == 4
    with FakeGeminiServer(edit=lambda a: {**a, "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3}}) as s:
        (r,), _ = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and not r.usage_unknown and (r.tokens_in, r.tokens_out) == (4, 3)


@pytest.mark.parametrize("reason", [7, ["STOP"], {"x": 1}])
def test_a_finish_reason_that_is_no_text_keeps_the_answer(reason):
    """The SDK failed on a finishReason that is not a text ('int' object has no attribute 'upper')
    and the answer was lost (fuzz 25 A F2): the reason is unknown, the answer stands."""
    def edit(a):
        a["candidates"][0]["finishReason"] = reason
        return a

    with FakeGeminiServer(edit=edit) as s:
        (r,), totals = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.text == "Action: 1" and totals.errors == 0, r


def test_a_reply_trickled_past_the_timeout_ends_at_the_deadline():
    """--timeout is a deadline for the whole answer, as on the OpenAI route: a body written a byte
    every 0.3 s (no per-read timeout trips) ends as an error at --timeout × attempts, not when the
    server is done (about 100 s here) or never."""
    from model_calls import trickled_reply

    with FakeGeminiServer() as s:
        r, took = trickled_reply("gemini:g", s)
    assert r.text is None and "no whole answer within 1 s" in r.error, r.error
    assert took < 5, took


def test_a_finish_reason_newer_than_the_sdk_is_kept_without_its_warning(tmp_path, cli, monkeypatch):
    """The SDK warns in two lines on stderr for an enum value it does not know; the reason is kept
    in the record (a stopped reply without text is an error naming it), and stderr stays clean."""
    def edit(a):
        a["candidates"][0]["finishReason"] = "BRAND_NEW_REASON"
        return a

    with FakeGeminiServer(edit=edit) as s:
        r = cli("nashgap", "--model", "gemini:g", "--base-url", s.base_url, "--policy", "sample", "--num-games", "1",
                "--num-trials", "1", "--no-cache", "--retries", "0", "--quiet", "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr and "is not a valid" not in r.stderr, r.stderr
    (folder,) = tmp_path.iterdir()
    (rec,) = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert rec["finish_reason"] == "brand_new_reason", rec


def test_reasoning_effort_is_a_thinking_budget_on_top_of_the_answers():
    async def go(server, effort):
        model = open_model("gemini:gemini-2.5-flash", ModelOptions(base_url=server.base_url, reasoning_effort=effort),
                           no_cache=True)
        try:
            return await model.generate([GenerateRequest("Q", max_tokens=64, chat=True, temperature=0.0)])
        finally:
            await model.aclose()

    with FakeGeminiServer(text="Action: 2", thought="2 beats 1.") as s:
        for effort in ("high", "none"):
            (r,) = asyncio.run(go(s, effort))
            assert r.ok and r.text == "Action: 2"
        high, none = (q.body["generationConfig"] for q in s.requests)
    assert high == {"temperature": 0.0, "maxOutputTokens": 64 + 24576, "thinkingConfig": {"thinking_budget": 24576}}  # (as the SDK sends it)
    assert none == {"temperature": 0.0, "maxOutputTokens": 64, "thinkingConfig": {"thinking_budget": 0}}


def _with_usage(usage_json: bytes):
    """An edit giving the normal reply with `usage_json` as its usageMetadata, written as raw
    bytes (a count Python's json would refuse to build, or a bool, as a server sends it)."""
    def edit(a):
        body = json.dumps({**a, "usageMetadata": "USAGE"}).encode()
        return body.replace(b'"USAGE"', usage_json)
    return edit


@pytest.mark.parametrize("usage_json", [b'{"promptTokenCount": true, "candidatesTokenCount": 3}',
                                        b'{"promptTokenCount": 4, "candidatesTokenCount": ' + b"9" * 5001 + b"}"])
def test_a_bool_or_a_5001_digit_count_is_unknown_usage_and_the_answer_stands(usage_json):
    """The SDK's pydantic reads ``true`` as the count 1, and Python refuses to build an integer of
    5,001 digits (the answer was lost to a ValueError naming Python internals): both are no count,
    so the call's usage is unknown and its answer kept (models.sdk_transport)."""
    with FakeGeminiServer(edit=_with_usage(usage_json)) as s:
        (r,), totals = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.text == "Action: 1" and r.usage_unknown, r
    assert totals.calls == 1 and totals.usage_unknown == 1 and totals.errors == 0
