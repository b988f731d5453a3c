"""Reasoning models: the thinking apart from the answer, everywhere a model generates.

* `split_reasoning` (property tests): a closed <think> block is reasoning, the rest the answer; a
  reply cut inside its thinking has no answer; a reply without tags is all answer.
* The OpenAI-compatible backend against the fake server: DeepSeek's ``reasoning_content`` and
  reasoning token counts kept; the o-series' request rules (``max_completion_tokens``, no
  temperature) — the fake server answers 400 as OpenAI does otherwise.
* The CLI end to end: an answer after its <think> block is parsed from the answer with the
  thinking in the record's ``reasoning``; a reply cut inside its <think> block is a parse failure,
  never an action read out of the reasoning (its text names "Action: 0").
"""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai_server import FakeOpenAIServer
from hypothesis import given
from hypothesis import strategies as st

from stratbench.models import ModelOptions, open_model
from stratbench.models.base import GenerateRequest
from stratbench.parsing.reasoning import split_reasoning

TEXT = st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=40)


@given(TEXT, TEXT)
def test_a_closed_think_block_is_reasoning_and_the_rest_the_answer(reasoning, answer):
    s = split_reasoning(f"<think>{reasoning}</think>{answer}")
    assert (s.answer, s.reasoning) == (answer.lstrip(), reasoning.strip())
    # the template opened the block in the prompt: only its end is in the reply
    s = split_reasoning(f"{reasoning}</think>{answer}")
    assert (s.answer, s.reasoning) == (answer.lstrip(), reasoning.strip())


@given(TEXT)
def test_a_reply_cut_inside_its_thinking_has_no_answer(reasoning):
    s = split_reasoning(f"<think>{reasoning}")
    assert s.answer is None and s.reasoning == reasoning.strip()


@given(TEXT, TEXT)
def test_text_before_an_opening_tag_stays_the_answer_when_the_reply_is_cut(before, reasoning):
    """``Action: 2<think>I pick 1`` (fuzz 10 D1): the answer given before the thinking began is
    kept; only a reply with nothing outside its reasoning has no answer."""
    s = split_reasoning(f"{before}<think>{reasoning}")
    assert s.answer == (before.rstrip() if before.strip() else None) and s.reasoning == reasoning.strip()


@given(st.lists(st.tuples(st.sampled_from(["<think>", "</think>"]), TEXT), max_size=6), TEXT)
def test_no_text_outside_the_tags_is_lost(pieces, first):
    """However the tags fall (several spans, a closing tag first, one never closed), every
    character of the reply but the tags' is in the answer or the reasoning."""
    text = first + "".join(tag + t for tag, t in pieces)
    s = split_reasoning(text)
    def bare(x: str) -> list[str]:  # (an opening tag inside a reasoning span is its text)
        return sorted("".join(x.replace("</think>", "").replace("<think>", "").split()))

    assert bare((s.answer or "") + (s.reasoning or "")) == bare(text)


@given(TEXT)
def test_a_reply_without_tags_is_all_answer(text):
    assert split_reasoning(text) == split_reasoning(text).__class__(text, None)


def _generate(server: FakeOpenAIServer, spec: str, reasoning_effort: str | None = None, **kw: object):
    async def go():
        model = open_model(spec, ModelOptions(base_url=server.base_url, reasoning_effort=reasoning_effort),
                           no_cache=True)
        try:
            return (await model.generate([GenerateRequest("Q", chat=True, **kw)]))[0]  # type: ignore[arg-type]
        finally:
            await model.aclose()
    return asyncio.run(go())


def test_reasoning_content_and_its_tokens_are_kept_apart_from_the_answer():
    with FakeOpenAIServer(canned_text="Action: 1", reasoning_content="Action: 0 loses to 2.") as s:
        r = _generate(s, "openai-compatible:deepseek-reasoner", max_tokens=20)
    assert r.ok and r.text == "Action: 1" and r.reasoning == "Action: 0 loses to 2."
    assert r.tokens_reasoning == len("Action: 0 loses to 2.")


def test_o_series_requests_follow_its_rules(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with FakeOpenAIServer(canned_text="Action: 1", reasoning_rules=True) as s:
        r = _generate(s, "openai:o1-mini", max_tokens=20, temperature=0.0)
        assert r.ok, r.error
        body = s.requests[-1].body
        # and a model outside the family still gets max_tokens and its temperature
        other = _generate(s, "openai:gpt-4o-mini", max_tokens=20, temperature=0.0)
        assert other.ok and "max_tokens" in s.requests[-1].body and s.requests[-1].body["temperature"] == 0.0
    assert body["max_completion_tokens"] == 20 and "max_tokens" not in body and "temperature" not in body


THINK = "<think>If I choose Action: 0 the opponent answers 1, so I</think>\n\nAction: 2"


@pytest.mark.parametrize("max_tokens,status", [(200, "parsed"), (30, "parse_failed")])
def test_nashgap_reads_the_answer_never_the_reasoning(tmp_path, cli, max_tokens, status):
    with FakeOpenAIServer(canned_text=THINK) as s:
        r = cli("nashgap", "--model", "openai-compatible:r1", "--base-url", s.base_url, "--chat", "--policy",
                "sample", "--num-games", "2", "--num-trials", "1", "--max-tokens", str(max_tokens), "--quiet",
                "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (trials,) = (tmp_path / "o").glob("*/trials*.jsonl")
    for rec in map(json.loads, trials.read_text().splitlines()):
        assert rec["status"] == status
        assert rec["reasoning"].startswith("If I") and "<think>" not in (rec["raw_response"] or "")
        if status == "parsed":
            assert rec["raw_response"] == "Action: 2" and rec["policy"] is not None
        else:  # cut inside its thinking: no action, although the thinking names one
            assert rec["raw_response"] == "" and rec["llm_decision"] is None and rec["finish_reason"] == "length"
            assert rec["error"].startswith("the reply ended inside its reasoning")


def test_chbench_names_a_reply_cut_inside_its_reasoning(tmp_path, cli):
    """CHBench's moves say what the other suites say of a reply cut inside its thinking."""
    long_think = "<think>" + "If I choose 1 the other player answers 2, and so on. " * 20 + "</think>\n\n2"
    with FakeOpenAIServer(canned_text=long_think) as s:
        r = cli("chbench", "run", "--models", "openai-compatible:r1", "--opponents", "level-k:1", "--base-url",
                s.base_url, "--policy", "sample", "--rounds", "1", "--games", "1", "--seed", "1", "--quiet",
                "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (rounds,) = (tmp_path / "o").glob("*/rounds.jsonl")
    rec = json.loads(rounds.read_text().splitlines()[0])
    assert rec["row_status"] == "parse_failed" and rec["row_action"] is None
    assert rec["row_error"].startswith("the reply ended inside its reasoning"), rec["row_error"]


@pytest.mark.parametrize("max_tokens", ["400", "30"], ids=["closed", "cut"])
def test_chbench_advisor_sessions_keep_the_thinking_and_never_pass_on_a_cut_message(tmp_path, cli, max_tokens):
    """--mechanism chat (fuzz 10 D2): each advisor message's thinking is kept beside it, and a
    message cut inside its thinking ends the session as a parse failure naming that — it was
    passed on to the decision prompt as an empty message."""
    reply = "<think>" + "If I advise 1 they answer 2, and so on. " * 3 + "</think>\n\nI advise 1. Action: 1"
    with FakeOpenAIServer(canned_text=reply) as s:
        r = cli("chbench", "run", "--models", "openai-compatible:r1", "--opponents", "level-k:1", "--base-url",
                s.base_url, "--mechanism", "chat", "--chat", "--policy", "sample", "--rounds", "1", "--games", "1",
                "--seed", "1", "--quiet", "--output-dir", str(tmp_path / "o"),
                "--max-tokens", max_tokens)
    assert r.returncode == 0, r.stderr
    (rounds,) = (tmp_path / "o").glob("*/rounds.jsonl")
    rec = json.loads(rounds.read_text().splitlines()[0])
    turns = rec["row_consultation"]
    assert turns and all(t["reasoning"].startswith("If I advise 1") for t in turns), turns
    if max_tokens == "400":
        assert [t["text"] for t in turns] == ["I advise 1. Action: 1"] * len(turns) and len(turns) == 4
        assert rec["row_prompt"] and "Alex: I advise 1" in rec["row_prompt"]
    else:
        assert len(turns) == 1 and turns[0]["text"] == "" and turns[0]["finish_reason"] == "length"
        assert rec["row_status"] == "parse_failed" and rec["row_action"] is None and rec.get("row_prompt") is None
        assert "the reply ended inside its reasoning" in rec["row_error"], rec["row_error"]


def test_story_generation_keeps_the_thinking_and_a_cut_story_is_no_story(tmp_path, cli):
    """`tmgbench stories generate` with a reasoning model (fuzz 10 D2): the thinking is the
    attempt's reasoning, the story is read after it, and a reply cut inside it says so."""
    with FakeOpenAIServer(canned_text="<think>" + "a story about two firms " * 10 + "</think>[Characters]: x") as s:
        for name, extra in (("whole", []), ("cut", ["--max-tokens", "30"])):
            r = cli("tmgbench", "stories", "generate", "--model", "openai-compatible:r1", "--base-url", s.base_url,
                    "--games", "111", "--variants", "1", "--max-attempts", "1", "--no-cache", "--output-dir",
                    str(tmp_path / name), *extra)
            assert r.returncode in (0, 1), r.stderr
    (whole,) = (tmp_path / "whole").glob("*/generation.jsonl")
    (rec,) = [json.loads(x) for x in whole.read_text().splitlines()]
    assert rec["reasoning"].startswith("a story about") and rec["raw_response"] == "[Characters]: x"
    (cut,) = (tmp_path / "cut").glob("*/generation.jsonl")
    (rec,) = [json.loads(x) for x in cut.read_text().splitlines()]
    assert rec["status"] == "parse_failed" and rec["error"].startswith("the reply ended inside its reasoning"), rec


# -- --reasoning-effort and --think-tags --------------------------------------------------------


def test_reasoning_effort_is_sent_with_chat_requests_and_is_part_of_the_cache_identity(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with FakeOpenAIServer(canned_text="Action: 1", reasoning_rules=True) as s:
        r = _generate(s, "openai:o3-mini", max_tokens=20, reasoning_effort="high")
        assert r.ok, r.error
        body = s.requests[-1].body
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 20
    opened = [open_model("openai:o3-mini", ModelOptions(base_url="http://127.0.0.1:9/v1", chat=True, reasoning_effort=e))
              for e in (None, "low", "high")]
    ids = [m.describe() for m in opened]
    assert "reasoning_effort" not in ids[0] and ids[1]["reasoning_effort"] == "low" and len({str(i) for i in ids}) == 3
    # the completions endpoint takes none: a flag that would change nothing is refused
    from stratbench.errors import InputError

    with pytest.raises(InputError, match="--reasoning-effort is a chat model's option; run it with --chat"):
        open_model("openai-compatible:r1", ModelOptions(base_url="http://127.0.0.1:9/v1", chat=False,
                                                        reasoning_effort="low"))


def test_think_tags_name_where_another_models_thinking_is():
    from stratbench.models.base import GenerateResult
    from stratbench.models.reasoning import answer_only
    from stratbench.parsing.reasoning import parse_tags

    tags = parse_tags(" <reasoning> , </reasoning>")
    assert tags == (("<reasoning>", "</reasoning>"),)
    r = answer_only(GenerateResult("<reasoning>Action: 0 loses</reasoning>\nAction: 2"), tags)
    assert (r.text, r.reasoning) == ("Action: 2", "Action: 0 loses")
    cut = answer_only(GenerateResult("<reasoning>Action: 0 loses, so"), tags)
    assert cut.text == "" and cut.reasoning == "Action: 0 loses, so"
    # with other tags, <think> is text of the answer
    assert answer_only(GenerateResult("<think>x</think>A"), tags).text == "<think>x</think>A"


@pytest.mark.parametrize("value,why", [("<think>", "give the opening and the closing tag"),
                                       ("<a>,</a>,<b>", "give the opening and the closing tag"),
                                       (" ,</a>", "give the opening and the closing tag"),
                                       ("<a>,<a>", "must differ")])
def test_a_bad_think_tags_value_is_one_line_before_any_folder(tmp_path, cli, value, why):
    r = cli("nashgap", "--model", "random", "--num-games", "1", "--think-tags", value,
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--think-tags" in r.stderr and why in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_custom_think_tags_in_a_run_and_its_record(tmp_path, cli):
    reply = "<reasoning>If I choose Action: 0 they answer 1</reasoning>\n\nAction: 2"
    with FakeOpenAIServer(canned_text=reply) as s:
        r = cli("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--chat", "--policy",
                "sample", "--num-games", "1", "--num-trials", "1", "--think-tags", "<reasoning>,</reasoning>",
                "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (run,) = (tmp_path / "o").iterdir()
    (rec,) = map(json.loads, (run / "trials.jsonl").read_text().splitlines())
    assert rec["raw_response"] == "Action: 2" and rec["reasoning"].startswith("If I choose")
    meta = json.loads((run / "run.json").read_text())
    assert meta["config"]["think_tags"] == "<reasoning>,</reasoning>" and "reasoning_effort" not in meta["config"]


@pytest.mark.parametrize("args,why", [
    (["--model", "random", "--reasoning-effort", "high"], "--reasoning-effort applies to HTTP models"),
    (["--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1", "--reasoning-effort", "extreme"],
     "--reasoning-effort must be one of none, minimal, low, medium, high"),
])
def test_a_reasoning_effort_that_cannot_apply_is_one_line_before_any_folder(tmp_path, cli, args, why):
    r = cli("nashgap", *args, "--num-games", "1", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_chbench_max_tokens_gives_a_reasoning_model_room_and_is_recorded_only_when_given(tmp_path, cli):
    """CHBench's paper budgets (16 tokens an answer) cut a reasoning model inside its thinking;
    --max-tokens gives every answer and message its budget (sent, recorded in run.json)."""
    long_think = "<think>" + "If I choose 1 the other player answers 2, and so on. " * 20 + "</think>\n\n2"
    with FakeOpenAIServer(canned_text=long_think) as s:
        for flags in ((), ("--max-tokens", "4000")):
            out = tmp_path / str(len(flags))
            r = cli("chbench", "run", "--models", "openai-compatible:r1", "--opponents", "level-k:1", "--base-url",
                    s.base_url, "--policy", "sample", "--rounds", "1", "--games", "1", "--seed", "1", "--quiet",
                    *flags, "--output-dir", str(out))
            assert r.returncode == 0, r.stderr
            (run,) = out.iterdir()
            rec = json.loads((run / "rounds.jsonl").read_text().splitlines()[0])
            config = json.loads((run / "run.json").read_text())["config"]
            if flags:
                assert rec["row_status"] == "parsed" and rec["row_action"] == 1 and config["max_tokens"] == 4000
                assert s.requests[-1].body["max_tokens"] == 4000
            else:
                assert rec["row_status"] == "parse_failed" and "max_tokens" not in config


@pytest.mark.parametrize(("out", "reasoning", "kept"), [(3, 5000, None), (30, 30, 30), (30, 12, 12), (0, 1, None)])
def test_reasoning_tokens_are_a_part_of_the_output_never_more(out, reasoning, kept):
    """``reasoning_tokens: 5000`` of ``completion_tokens: 3`` is no count of a part of the output:
    unknown (None), never recorded as given."""
    from stratbench.models.base import GenerateResult

    assert GenerateResult("Action: 1", tokens_out=out, tokens_reasoning=reasoning).tokens_reasoning == kept


def test_openais_reasoning_models_are_sampled_not_scored(tmp_path, cli, monkeypatch):
    """openai:o1-mini gives no log-probabilities (fuzz 10 A M2: the default logprob policy made
    every call an HTTP 400): an exact policy is refused before the run; the default samples."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(canned_text="Action: 1", reasoning_rules=True) as s:
        args = ("nashgap", "--model", "openai:o1-mini", "--base-url", s.base_url, "--num-games", "1",
                "--num-trials", "1", "--quiet")
        r = cli(*args, "--policy", "logprob", "--output-dir", str(tmp_path / "a"))
        assert r.returncode == 2 and "gives no log-probabilities; use --policy sample" in r.stderr, r.stderr
        assert not (tmp_path / "a").exists()
        r = cli(*args, "--output-dir", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    (rec,) = [json.loads(x) for f in (tmp_path / "b").glob("*/trials.jsonl") for x in f.read_text().splitlines()]
    assert rec["status"] == "parsed" and rec["raw_response"] == "Action: 1"


@pytest.mark.parametrize("name,family", [
    ("o1-mini", True), ("o3", True), ("gpt-5-mini", True),
    ("ft:o4-mini-2025-04-16:acme::abc", True),  # a fine-tuned o-series model (fuzz 11 A M5: HTTP 400 on every call)
    ("gpt-4o", False), ("ft:gpt-4o-mini:acme::x", False), ("omni", False),
])
def test_openais_reasoning_family_includes_its_fine_tunes(name, family):
    from stratbench.models.openai_replies import is_reasoning_family

    assert is_reasoning_family(name) is family
