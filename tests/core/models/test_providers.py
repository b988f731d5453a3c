"""The provider presets (deepseek:, qwen:, mistral:) and `stratbench models`.

A preset is an OpenAI-compatible provider's base URL and key variable: it needs no --base-url,
reads its own key (never another provider's), sends it as a bearer token, and --base-url still
overrides it (here: the fake server on 127.0.0.1). `stratbench models` lists every backend with its
key variable, whether that key is set here, and its capabilities."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.errors import InputError
from stratbench.models import ModelOptions, backend_traits, is_http_spec, load_model, open_model
from stratbench.models.base import GenerateRequest
from stratbench.models.providers import HTTP_PROVIDERS

PRESETS = {"deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
           "qwen": ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
           "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY")}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for p in HTTP_PROVIDERS.values():
        if p.key_env:
            monkeypatch.delenv(p.key_env, raising=False)


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_is_its_providers_url_and_key(monkeypatch, name):
    url, env = PRESETS[name]
    with pytest.raises(InputError, match=f"^{name}:m: set {env}$"):
        load_model(f"{name}:m")
    monkeypatch.setenv("OPENAI_API_KEY", "not-this-one")  # another provider's key is never sent
    with pytest.raises(InputError, match=f"set {env}"):
        load_model(f"{name}:m")
    monkeypatch.setenv(env, "sk-preset")
    m = load_model(f"{name}:m")
    assert m.base_url == url and m.endpoint == "chat"  # type: ignore[attr-defined]
    assert is_http_spec(f"{name}:m") and backend_traits(f"{name}:m").chat_model
    assert "sk-preset" not in json.dumps(m.describe())


def test_a_preset_sends_its_key_to_the_url_given_instead(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deep")

    async def go(url: str):
        model = open_model("deepseek:deepseek-reasoner", ModelOptions(base_url=url), no_cache=True)
        try:
            return (await model.generate([GenerateRequest("Q", chat=True, max_tokens=20)]))[0]
        finally:
            await model.aclose()

    with FakeOpenAIServer(canned_text="Action: 1", reasoning_content="1 beats 0.") as s:
        r = asyncio.run(go(s.base_url))
        (req,) = s.requests
    assert r.ok and r.text == "Action: 1" and r.reasoning == "1 beats 0."
    assert req.path.endswith("/chat/completions") and req.headers["authorization"] == "Bearer sk-deep"
    assert req.body["model"] == "deepseek-reasoner"


def test_an_unknown_backend_points_to_stratbench_models():
    with pytest.raises(InputError, match="stratbench models"):
        load_model("claude-3")


def test_models_lists_every_backend_with_its_key_and_capabilities(cli, monkeypatch):
    monkeypatch.setenv("MISTRAL_API_KEY", "sk-m")
    r = cli("models", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["spec"]: row for row in json.loads(r.stdout)}
    assert {"embedded", "embedded-instruct", "gguf:<model>", "hf:<model>", "openai:<model>", "deepseek:<model>",
            "qwen:<model>", "mistral:<model>", "openai-compatible:<model>"} <= set(rows)
    assert rows["mistral:<model>"]["key"] == "set" and rows["deepseek:<model>"]["key"] == "not set"
    assert rows["deepseek:<model>"]["key_env"] == "DEEPSEEK_API_KEY" and rows["embedded"]["key"] is None
    assert rows["embedded"]["logprobs"].startswith("exact") and rows["mistral:<model>"]["logprobs"].startswith("no")
    assert "sk-m" not in r.stdout
    r = cli("models")
    assert r.returncode == 0 and "DASHSCOPE_API_KEY" in r.stdout and "stratbench[hf]" in r.stdout, r.stdout


def test_a_provider_without_log_probabilities_samples(monkeypatch, cli, tmp_path):
    monkeypatch.setenv("MISTRAL_API_KEY", "sk-m")
    assert not load_model("mistral:mistral-small").supports_logprobs
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        r = cli("nashgap", "--model", "mistral:mistral-small", "--base-url", s.base_url, "--policy", "logprob",
                "--output-dir", str(tmp_path / "refused"))
        assert r.returncode == 2 and "no log-probabilities" in r.stderr and not (tmp_path / "refused").exists()
        r = cli("nashgap", "--model", "mistral:mistral-small", "--base-url", s.base_url, "--num-games", "2",
                "--num-trials", "1", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (trials,) = (tmp_path / "o").glob("*/trials*.jsonl")
    assert {json.loads(x)["status"] for x in trials.read_text().splitlines()} == {"parsed"}
    assert json.loads(next((tmp_path / "o").glob("*/run.json")).read_text())["agent"]["policy"] == "sample"
