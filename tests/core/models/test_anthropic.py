"""`anthropic:<model>`: Claude through Anthropic's own SDK, against a fake Messages API on
127.0.0.1 (tests/helpers/fake_anthropic_server.py) that speaks the protocol the SDK sends.

* The request as the API wants it: system turn apart, ``max_tokens``, stop sequences (blank ones
  dropped), a temperature only where it is not the API's default, the key from ANTHROPIC_API_KEY
  and never from the SDK's other sources.
* The reply: text blocks are the answer, thinking blocks the reasoning; ``max_tokens`` is
  ``finish_reason: length`` — a reply cut inside its thinking is a parse failure in a run, never an
  action read from the thinking.
* Failures: 529 overloaded and 429 are retried by the SDK with stratbench's --retries; a call that
  still fails is an error record naming the status and error type, counted.
* Policies: no log-probabilities, so --policy logprob and choice are refused before a run.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_anthropic_server import FakeAnthropicServer

from stratbench.errors import InputError
from stratbench.models import ModelOptions, is_http_spec, load_model, open_model
from stratbench.models.base import GenerateRequest

KEY = "sk-ant-test"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/never-used")  # the SDK's own sources: ignored
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "not-this-one")


def _generate(server: FakeAnthropicServer, *reqs: GenerateRequest, retries: int = 2):
    async def go():
        model = open_model("anthropic:claude-3-5-sonnet-20241022",
                           ModelOptions(base_url=server.base_url, max_retries=retries), no_cache=True)
        try:
            return await model.generate(list(reqs)), model.usage
        finally:
            await model.aclose()
    return asyncio.run(go())


def test_a_conversation_is_sent_as_the_messages_api_wants_it():
    req = GenerateRequest("flat", max_tokens=64, temperature=0.0, stop=("\n\n", "  ", "END"), chat=True,
                          messages=(("system", "Play well."), ("user", "Q1"), ("assistant", "A1"), ("user", "Q2")))
    with FakeAnthropicServer(text="Action: 2\n\nand more") as s:
        (r, _raw), _ = _generate(s, req, GenerateRequest("raw prompt", max_tokens=16, temperature=1.0))
        first, second = sorted(s.requests, key=lambda q: -q.body["max_tokens"])  # (sent concurrently)
    # the blank-line stop, which the API refuses, ends the answer here, where it would have
    assert r.ok and r.text == "Action: 2" and r.finish_reason == "stop" and r.reasoning is None
    assert first.path == "/v1/messages" and first.headers["anthropic-version"]
    assert KEY in (first.headers.get("x-api-key"), first.headers.get("authorization", "").removeprefix("Bearer "))
    assert first.body == {"model": "claude-3-5-sonnet-20241022", "max_tokens": 64, "system": "Play well.",
                          "messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
                                       {"role": "user", "content": "Q2"}],
                          "stop_sequences": ["END"], "temperature": 0.0}
    # a raw prompt is one user turn; the API's default temperature is not sent
    assert second.body == {"model": "claude-3-5-sonnet-20241022", "max_tokens": 16,
                           "messages": [{"role": "user", "content": "raw prompt"}]}


def test_thinking_blocks_are_the_reasoning_and_a_cut_reply_has_no_answer():
    with FakeAnthropicServer(text="Action: 1", thinking="Action: 0 loses, so 1.") as s:
        (whole, cut), usage = _generate(s, GenerateRequest("Q", max_tokens=200, chat=True),
                                        GenerateRequest("Q", max_tokens=10, chat=True))
    assert whole.ok and whole.text == "Action: 1" and whole.reasoning == "Action: 0 loses, so 1."
    assert whole.tokens_in > 0 and whole.tokens_out > 0 and usage.calls == 2
    assert cut.finish_reason == "length" and cut.text == "" and cut.reasoning == "Action: 0 "


@pytest.mark.parametrize("status", [529, 429])
def test_overloaded_and_rate_limited_calls_are_retried_by_the_sdk(status):
    with FakeAnthropicServer(fail_first=2, fail_status=status) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=2)
        assert r.ok and len(s.requests) == 3 and usage.errors == 0


def test_a_call_that_still_fails_is_an_error_record_naming_the_status():
    with FakeAnthropicServer(fail_first=5) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=1)
        assert len(s.requests) == 2  # the call and its one retry
    assert not r.ok and r.text is None and r.error == "HTTP 529 overloaded_error: Overloaded" and usage.errors == 1


def test_the_key_and_url_are_checked_before_anything_runs(monkeypatch):
    with pytest.raises(InputError, match=r"^anthropic:claude-x: --base-url: credentials in the URL"):
        load_model("anthropic:claude-x", ModelOptions(base_url="https://u:secret@api.example.com"))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(InputError, match="^anthropic:claude-x: set ANTHROPIC_API_KEY$"):
        load_model("anthropic:claude-x")
    assert is_http_spec("anthropic:claude-x")


def test_a_nashgap_run_of_claude_samples_and_keeps_its_thinking(tmp_path, cli):
    with FakeAnthropicServer(text="Action: 1", thinking="If I choose Action: 0 they answer 2, so") as s:
        for policy in ("logprob", "choice"):
            r = cli("nashgap", "--model", "anthropic:claude-3-haiku", "--base-url", s.base_url, "--policy", policy,
                    "--output-dir", str(tmp_path / policy))
            assert r.returncode == 2 and "no log-probabilities" in r.stderr and "Traceback" not in r.stderr, r.stderr
            assert not (tmp_path / policy).exists()
        for max_tokens, status in ((200, "parsed"), (20, "parse_failed")):
            out = tmp_path / str(max_tokens)
            r = cli("nashgap", "--model", "anthropic:claude-3-haiku", "--base-url", s.base_url, "--num-games", "2",
                    "--num-trials", "1", "--max-tokens", str(max_tokens), "--quiet", "--output-dir", str(out))
            assert r.returncode == 0, r.stderr
            (trials,) = out.glob("*/trials*.jsonl")
            for rec in map(json.loads, trials.read_text().splitlines()):
                assert rec["status"] == status and rec["reasoning"].startswith("If I choose")
                if status == "parse_failed":  # cut inside the thinking: no action, although it names one
                    assert rec["llm_decision"] is None and rec["error"].startswith("the reply ended inside its reasoning")
            assert KEY not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    r = cli("models", "--json")
    row = {x["spec"]: x for x in json.loads(r.stdout)}["anthropic:<model>"]
    assert row["key_env"] == "ANTHROPIC_API_KEY" and row["key"] == "set" and row["logprobs"].startswith("no")


def test_tom_with_claude_says_one_combination_that_works(cli):
    """Claude returns no log-probabilities: ToM's default (LM) is refused with the advice to use a
    generation strategy, and that advice works (chat is the default for a chat-only API)."""
    base = ("tom", "run", "--model", "anthropic:claude-x", "--base-url", "http://127.0.0.1:9", "--rounds", "2",
            "--episodes", "1", "--dry-run")
    r = cli(*base)
    assert r.returncode == 2 and "use a generation strategy (e.g. --prompting QA)" in r.stderr, r.stderr
    assert "--no-chat" not in r.stderr and "--chat" not in r.stderr
    r = cli(*base, "--prompting", "QA")
    assert r.returncode == 0 and "anthropic:claude-x" in r.stdout, r.stderr


def test_a_refused_key_stops_the_run_with_one_line_and_no_error_records(tmp_path, cli, monkeypatch):
    """A provider refusing the key (401) would fail every call: the run stops at the first refusal,
    one line naming the model and the reply, exit 2, no error record; with the right key the
    printed resume finishes it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-WRONG")
    with FakeAnthropicServer() as s:
        r = cli("nashgap", "--model", "anthropic:claude-x", "--base-url", s.base_url, "--num-games", "2", "--seed", "1",
                "--num-trials", "2", "--quiet", "--output-dir", str(tmp_path))
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith("error: anthropic:claude-x: HTTP 401 authentication_error: invalid x-api-key"), r.stderr
        assert "sk-ant-WRONG" not in r.stderr and "continue with: stratbench nashgap --resume" in r.stderr
        (folder,) = tmp_path.iterdir()
        assert (folder / "trials.jsonl").read_text() == ""  # no error record for a refused key
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        r = cli("nashgap", "--resume", str(folder))
        assert r.returncode == 0, r.stderr
        recs = [json.loads(x) for x in (folder / "trials.jsonl").read_text().splitlines()]
        assert len(recs) == 4 and {x["status"] for x in recs} == {"parsed"}


def test_a_temperature_the_api_refuses_is_one_line_before_any_folder(tmp_path, cli, monkeypatch):
    """The Messages API takes temperatures 0 to 1; a higher one would be HTTP 400 on every call,
    so every command (and a suite file) refuses it as the model opens, with nothing written."""
    with pytest.raises(InputError, match=r"^anthropic:claude-x: --temperature 1\.5: the Messages API takes 0 to 1$"):
        load_model("anthropic:claude-x", ModelOptions(temperature=1.5))
    load_model("anthropic:claude-x", ModelOptions(temperature=1.0))
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    load_model("gemini:gemini-1.5-pro", ModelOptions(temperature=1.5))  # Gemini takes 0 to 2
    url = ("--base-url", "http://127.0.0.1:9")
    (tmp_path / "s.toml").write_text('models = ["anthropic:claude-x"]\n[nashgap]\nnum_games = 2\ntemperature = 1.5\n')
    for n, args in enumerate((
            ("nashgap", "--model", "anthropic:claude-x", "--num-games", "2", *url),
            ("chbench", "run", "--models", "anthropic:claude-x", "--opponents", "level-k:1", "--games", "1", *url),
            ("tmgbench", "run", "--model", "anthropic:claude-x", "--games", "421", *url),
            ("tom", "run", "--model", "anthropic:claude-x", "--prompting", "QA", *url),
            ("suite", "run", str(tmp_path / "s.toml")))):
        out = tmp_path / f"out{n}"
        r = cli(*args, *(("--temperature", "1.5") if args[0] != "suite" else ()), "--output-dir", str(out))
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "anthropic:claude-x: --temperature 1.5: the Messages API takes 0 to 1" in r.stderr, r.stderr
        assert not out.exists()


_TEXT = [{"type": "text", "text": "Action: 1"}]


@pytest.mark.parametrize("edit, said", [
    (lambda a: {**a, "content": [{"type": "text", "text": 1}]}, "a text block's text is not a string (int)"),
    (lambda a: {**a, "content": [{"type": "text", "text": ["Action: 1"]}]}, "text is not a string (list)"),
    (lambda a: {**a, "content": [{"type": "text", "text": None}]}, "text is not a string (NoneType)"),
    (lambda a: {**a, "content": [{"type": "thinking", "thinking": {"x": 1}, "signature": "s"}] + _TEXT},
     "a thinking block's thinking is not a string (dict)"),
    (lambda a: {**a, "content": "Action: 1"}, "its content is not a list of blocks (str)"),
    (lambda a: {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
     "the API answered with an error (HTTP 200, type 'error'): overloaded_error: busy"),
])
def test_a_reply_that_is_no_message_is_an_error_never_an_answer(edit, said, tmp_path, cli):
    """No text is made of a block that holds none (``str(1)``, ``str(None)``), and a 200 reply of
    type "error" or without a list of blocks is the call's error (exit 1, retried on resume), never
    the model's parse failure."""
    with FakeAnthropicServer(edit=edit) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
        assert r.text is None and r.error and said in r.error, r.error
        assert usage.errors == 1
        res = cli("nashgap", "--model", "anthropic:c", "--base-url", s.base_url, "--policy", "sample", "--num-games", "1",
                  "--num-trials", "1", "--no-cache", "--retries", "0", "--quiet", "--output-dir", str(tmp_path))
    assert res.returncode == 1, res.stderr
    (folder,) = tmp_path.iterdir()
    (rec,) = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert rec["status"] == "error" and said in rec["error"], rec


@pytest.mark.parametrize("usage", [{"input_tokens": "abc", "output_tokens": 5}, {"input_tokens": float("nan"),
                                   "output_tokens": 5}, {"input_tokens": -1000000, "output_tokens": -5}, {},
                                   {"input_tokens": 1e300, "output_tokens": 5.7}, "many", [1, 2]])
def test_usage_that_is_no_count_keeps_the_answer_and_is_unknown(usage):
    """The answer stands and the call counts; its usage is unknown (models.base), never negative, a
    ValueError, or an error that discards the answer."""
    with FakeAnthropicServer(edit=lambda a: {**a, "usage": usage}) as s:
        (r,), totals = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.text == "Action: 1" and r.usage_unknown, r
    assert r.tokens_in >= 0 and r.tokens_out >= 0
    assert totals.calls == 1 and totals.usage_unknown == 1 and totals.errors == 0


def test_a_reply_trickled_past_the_timeout_ends_at_the_deadline():
    """--timeout is a deadline for the whole answer, as on the OpenAI route: a body written a byte
    every 0.3 s (no per-read timeout trips) ends as an error at --timeout × attempts, not when the
    server is done (about 100 s here) or never."""
    from model_calls import trickled_reply

    with FakeAnthropicServer() as s:
        r, took = trickled_reply("anthropic:c", s)
    assert r.text is None and "no whole answer within 1 s" in r.error, r.error
    assert took < 5, took


def test_a_reply_nested_too_deeply_is_an_invalid_reply_not_an_internal_error():
    with FakeAnthropicServer(edit=lambda a: b"[" * 200_000 + b"]" * 200_000) as s:
        (r,), usage = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.text is None and r.error == "invalid reply: its JSON is nested too deeply", r.error
    assert usage.errors == 1


def test_reasoning_effort_asks_for_extended_thinking_with_its_own_budget(tmp_path, cli):
    """--reasoning-effort medium: a thinking budget of 8,192 tokens on top of the answer's
    --max-tokens (the API counts both in max_tokens), identity and dry-run plan included; extended
    thinking runs only at temperature 1, so another temperature is one line before any folder."""
    from stratbench.models.reasoning import THINKING_BUDGETS

    async def go(server):
        model = open_model("anthropic:claude-3-7-sonnet", ModelOptions(base_url=server.base_url, reasoning_effort="medium",
                                                                        temperature=1.0), no_cache=True)
        try:
            return await model.generate([GenerateRequest("Q", max_tokens=64, chat=True, temperature=1.0)]), model
        finally:
            await model.aclose()

    with FakeAnthropicServer(text="Action: 2", thinking="2 beats 1") as s:
        ((r,), model) = asyncio.run(go(s))
        (seen,) = s.requests
    assert r.ok and r.text == "Action: 2" and r.reasoning == "2 beats 1"
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS["medium"]}
    assert seen.body["max_tokens"] == 64 + 8192 and "temperature" not in seen.body
    assert model.describe()["reasoning_effort"] == "medium"
    assert model.output_budget(GenerateRequest("Q", max_tokens=64)) == 64 + 8192
    # "none": no thinking asked for, the request as without the flag
    assert "thinking" not in load_model("anthropic:c", ModelOptions(reasoning_effort="none"))._body(
        GenerateRequest("Q", max_tokens=5))
    r = cli("nashgap", "--model", "anthropic:claude-x", "--base-url", "http://127.0.0.1:9", "--chat", "--policy",
            "sample", "--temperature", "0.5", "--reasoning-effort", "low", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "only at temperature 1" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    r = cli("nashgap", "--model", "anthropic:claude-x", "--chat", "--policy", "sample", "--num-games", "2",
            "--num-trials", "1", "--max-tokens", "100", "--reasoning-effort", "low", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "4,296" in r.stdout or "4296" in r.stdout, r.stdout  # 2 calls × (100 + 2,048) output tokens


def test_a_5001_digit_count_is_unknown_usage_and_the_answer_stands():
    """Python refuses to build an integer of 5,001 digits: the answer was lost to a ValueError
    naming Python internals, with usage {} and 0 calls counted. It is a count that is no count:
    usage unknown, the answer kept (models.sdk_transport)."""
    def edit(a):
        body = json.dumps({**a, "usage": {"input_tokens": "BIG", "output_tokens": 5}}).encode()
        return body.replace(b'"BIG"', b"7" * 5001)

    with FakeAnthropicServer(edit=edit) as s:
        (r,), totals = _generate(s, GenerateRequest("Q", max_tokens=20, chat=True), retries=0)
    assert r.ok and r.text == "Action: 1" and r.usage_unknown, r
    assert totals.calls == 1 and totals.usage_unknown == 1 and totals.errors == 0
