"""The CLI (commands, flags, defaults, aliases) and the response-cache keys stay as recorded."""

from __future__ import annotations

import json

from cli_spec import cli_spec
from scenarios import DATA

from stratbench.models.base import GenerateRequest, ScoreRequest
from stratbench.models.cache import request_key


def test_cli_commands_flags_and_defaults_are_unchanged():
    want = json.loads((DATA / "cli_spec.json").read_text())
    got = json.loads(json.dumps(cli_spec()))
    assert sorted(got) == sorted(want), "commands differ"
    for cmd in want:
        assert got[cmd] == want[cmd], f"`stratbench {cmd}` parameters differ"


def cache_keys() -> dict[str, str]:
    """Keys of fixed requests: a refactor that changed them would make every cached answer a miss."""
    ident = {"spec": "embedded", "backend": "llama.cpp", "file": "abc", "n_ctx": 4096,
             "prefix_reuse": False, "llama_cpp_python": "0.3.9"}
    api = {"spec": "openai:gpt-4o-mini", "backend": "openai-compatible", "provider": "openai",
           "model": "gpt-4o-mini", "base_url": "https://api.openai.com/v1", "endpoint": "chat"}
    return {
        "score": request_key("score", ident, ScoreRequest("Answer: I choose action ", ("1", "2", "3"))),
        "generate": request_key("generate", api, GenerateRequest("Pick one.", max_tokens=64, temperature=1.0,
                                                                 seed=7, sample_index=2, chat=True, system="Be brief.")),
        "generate_default": request_key("generate", ident, GenerateRequest("x")),
    }


def test_cache_keys_are_unchanged():
    assert cache_keys() == json.loads((DATA / "cache_keys.json").read_text())
