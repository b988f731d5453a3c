"""Replies whose content the reader does not take (a tool call, an image, a refusal) are the call's
error naming it, on every backend — never an empty answer counted as the model's parse failure
(fuzz 12 A D1, the content-parts case of fuzz 11 on Anthropic, Gemini and a chat refusal)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stratbench.models.anthropic_api import _result as anthropic_result
from stratbench.models.gemini_api import _result as gemini_result

USAGE = {"input_tokens": 5, "output_tokens": 3}


@pytest.mark.parametrize("content,stop,why", [
    ([{"type": "tool_use", "id": "t", "name": "f", "input": {}}], "tool_use", "content block 0 is of type 'tool_use'"),
    ([{"type": "text", "text": "I pick "}, {"type": "image", "source": {}}], "end_turn",
     "content block 1 is of type 'image'"),
    ([{"type": "text", "text": "I cannot help with that."}], "refusal", "the model refused (stop_reason refusal)"),
    ([], "refusal", "the model refused (stop_reason refusal)"),
])
def test_anthropic_blocks_that_are_not_read_are_an_error(content, stop, why):
    r = anthropic_result({"type": "message", "content": content, "stop_reason": stop, "usage": USAGE}, 0.1)
    assert r.text is None and why in (r.error or ""), r


def test_anthropic_redacted_thinking_beside_text_is_still_the_answer():
    r = anthropic_result({"type": "message", "stop_reason": "end_turn", "usage": USAGE,
                          "content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "Action: 1"}]},
                         0.1)
    assert r.ok and r.text == "Action: 1", r


def _gemini(parts, usage=SimpleNamespace(prompt_token_count=5, candidates_token_count=3, thoughts_token_count=None)):
    cand = SimpleNamespace(content=SimpleNamespace(parts=parts), finish_reason=SimpleNamespace(name="STOP"))
    return SimpleNamespace(usage_metadata=usage, candidates=[cand], prompt_feedback=None)


def _part(**kw):
    base = dict(text=None, thought=None, function_call=None, function_response=None, inline_data=None, file_data=None,
                executable_code=None, code_execution_result=None)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("part,why", [
    (_part(function_call={"name": "f"}), "part 0 holds function_call, which is not read"),
    (_part(inline_data={"mime_type": "image/png"}), "part 0 holds inline_data, which is not read"),
])
def test_gemini_parts_that_are_not_read_are_an_error(part, why):
    r = gemini_result(_gemini([part]), 0.1)
    assert r.text is None and why in (r.error or ""), r


def test_gemini_text_without_a_count_of_it_is_unknown_usage_not_zero():
    usage = SimpleNamespace(prompt_token_count=5, candidates_token_count=None, thoughts_token_count=None)
    r = gemini_result(_gemini([_part(text="Action: 1")], usage), 0.1)
    assert r.ok and r.text == "Action: 1" and r.usage_unknown, r


def _sdk_part(**kw):
    from google.genai import types

    return types.Part.model_validate(kw)


@pytest.mark.parametrize("part,why", [
    ({"toolCall": {"id": "t1"}}, "part 0 holds tool_call, which is not read"),
    ({"toolResponse": {"id": "t1"}}, "part 0 holds tool_response, which is not read"),
    ({"audioTranscription": {"text": "Action: 2"}}, "part 0 holds audio_transcription, which is not read"),
    ({}, "part 0 holds no text"),
])
def test_every_gemini_part_kind_but_text_is_an_error_on_the_sdks_own_parts(part, why):
    """The SDK's Part asked for its fields: kinds a fixed list missed (tool calls, a transcription)
    and a part the SDK dropped as unknown are errors, not an empty answer (fuzz 13 A D1)."""
    r = gemini_result(_gemini([_sdk_part(**part)]), 0.1)
    assert r.text is None and why in (r.error or ""), r


def test_a_gemini_part_holding_nothing_beside_text_leaves_the_answer():
    r = gemini_result(_gemini([_sdk_part(), _sdk_part(text="Action: 1"), _sdk_part(thoughtSignature=b"x")]), 0.1)
    assert r.ok and r.text == "Action: 1", r


def test_a_backend_whose_reading_changed_is_asked_again_not_served_its_old_reading(tmp_path):
    """The cache stores a reply's reading: a backend whose reader was fixed (reply_reader 2) keys its
    generations apart from the old readings, so an upgrade does not serve a refusal cached as an
    empty answer (fuzz 13 A D2); scores likewise by their score_reader (a chat score of a refusal,
    fuzz 16); backends at reader 1 keep their keys."""
    from stratbench.models.base import GenerateRequest, ScoreRequest
    from stratbench.models.cache import request_key

    req = GenerateRequest("p")
    assert request_key("generate", {"m": 1}, req, 2) != request_key("generate", {"m": 1}, req)
    assert request_key("generate", {"m": 1}, req, 1) == request_key("generate", {"m": 1}, req)
    score = ScoreRequest("p", ("1", "2"))
    assert request_key("score", {"m": 1}, score, 2) != request_key("score", {"m": 1}, score)
    assert request_key("score", {"m": 1}, score, 1) == request_key("score", {"m": 1}, score)
    from stratbench.models.anthropic_api import AnthropicModel
    from stratbench.models.gemini_api import GeminiModel
    from stratbench.models.openai_api import OpenAICompatibleModel

    assert AnthropicModel.reply_reader == 2 and GeminiModel.reply_reader == OpenAICompatibleModel.reply_reader == 3
    url = "http://127.0.0.1:9/v1"
    assert OpenAICompatibleModel("openai-compatible", "m", base_url=url, endpoint="chat").score_reader == 3
    assert OpenAICompatibleModel("openai-compatible", "m", base_url=url, endpoint="completions").score_reader == 1


def test_a_gemini_part_holding_text_and_a_call_is_an_error():
    """(fuzz 14 A D1: the text was read and the call in the same part dropped)"""
    r = gemini_result(_gemini([_sdk_part(text="Action: 1", functionCall={"name": "f", "args": {}})]), 0.1)
    assert r.text is None and "part 0 holds function_call" in (r.error or ""), r
