"""The OpenAI-compatible backend's newer routes against the fake server on 127.0.0.1: the top-k walk
for multi-token continuations (the same log-probs as the echo route), a client-side chat template
for exact choice scoring of conversations, the cache identity of models opened without them, and
waiting for a server that restarts, with requests and retries counted."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest
from fake_openai_server import FakeOpenAIServer, expected_text_logprob, top_logprobs
from model_calls import run
from run_records import unfinish

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, ScoreRequest
from stratbench.models.openai_api import ChatTemplate, OpenAICompatibleModel


class CharTokenizer:
    """The fake server's tokenizer (one character per token), as the walk needs it."""

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def piece(self, token: int) -> str:
        return chr(token)


def make_model(server: FakeOpenAIServer, **kw) -> OpenAICompatibleModel:
    opts = dict(base_url=server.base_url, retry_base_delay_s=0.002, retry_max_delay_s=0.02, timeout_s=5)
    opts.update(kw)
    return OpenAICompatibleModel("openai-compatible", "fake-model", **opts)


# TMGBench-like answer lines: multi-token continuations sharing prefixes
ANSWERS = ("", "A", "B", "A, B", "A, C", "B, C", "A, B, C", "C", "None", "No answer")


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def test_models_without_the_new_options_describe_themselves_as_before(server):
    for provider, url in (("openai-compatible", server.base_url), ("together", None)):
        kw = {"base_url": url} if url else {}
        if provider == "together":
            import os
            os.environ.setdefault("TOGETHER_API_KEY", "k")
        m = OpenAICompatibleModel(provider, "m", **kw)
        assert set(m.describe()) == {"spec", "backend", "provider", "model", "base_url", "endpoint"}
        assert m.multi_token_scoring == "echo" and m.top_logprobs == 5 and m.repeat_penalty is None
    chat = OpenAICompatibleModel("openai-compatible", "m", base_url=server.base_url, endpoint="chat")
    assert chat.multi_token_scoring == "unsupported" and "multi_token_scoring" not in chat.describe()
    walk = OpenAICompatibleModel("openai-compatible", "m", base_url=server.base_url, tokenizer=CharTokenizer())
    assert walk.multi_token_scoring == "topk-walk"
    assert walk.describe()["multi_token_scoring"] == "topk-walk" and walk.describe()["top_logprobs"] == 20


@pytest.mark.parametrize("prompt", ["Answer: ", "Which cells are equilibria?\nAnswer:", "x"])
def test_topk_walk_gives_the_echo_routes_logprobs(prompt):
    with FakeOpenAIServer() as s:
        echo = make_model(s, top_logprobs=0)
        (by_echo,) = run(echo, "score", [ScoreRequest(prompt, ANSWERS)])
        n_echo = s.request_count
        s.reset()
        walker = make_model(s, tokenizer=CharTokenizer(), top_logprobs=20)
        (by_walk,) = run(walker, "score", [ScoreRequest(prompt, ANSWERS)])
        bodies = [r.body for r in s.requests]
    assert by_echo.ok and by_walk.ok, (by_echo.error, by_walk.error)
    assert by_walk.logprobs == pytest.approx(by_echo.logprobs, abs=1e-9)
    assert by_walk.logprobs == pytest.approx([expected_text_logprob(prompt, c) for c in ANSWERS], abs=1e-9)
    assert by_walk.n_tokens == by_echo.n_tokens == [len(c) for c in ANSWERS]
    assert n_echo == len(ANSWERS) - 1  # "" costs nothing
    # echo requests only for what a node's top-k missed
    echoed = sorted(b["prompt"][len(prompt):] for b in bodies if b.get("echo"))
    for c in echoed:
        assert c in ANSWERS
        assert any(c[j] not in dict(top_logprobs(prompt + c[:j], 20)) for j in range(len(c)))
    walked = [c for c in ANSWERS if c and c not in echoed]
    assert walked, "the walk scored nothing: the test proves nothing"
    assert all(not b.get("echo") and b["max_tokens"] == 1 for b in bodies if not b.get("echo"))


def test_topk_walk_falls_back_to_echo_when_tokens_cannot_be_checked(server):
    class Merging(CharTokenizer):  # the server's tokenizer merges ", " here: pieces do not spell it
        def tokenize(self, text: str) -> list[int]:
            return [ord(c) for c in text.replace(", ", "\x01")]

        def piece(self, token: int) -> str:
            return ", " if token == 1 else chr(token)

    best = top_logprobs("Answer: ", 1)[0][0]  # walked: in the top-k
    conts = ("A, B", best)
    walker = make_model(server, tokenizer=Merging(), top_logprobs=20)
    (res,) = run(walker, "score", [ScoreRequest("Answer: ", conts)])
    assert res.ok, res.error
    assert res.logprobs == pytest.approx([expected_text_logprob("Answer: ", c) for c in conts], abs=1e-9)
    # ", " is never one of the fake server's top-k tokens: "A, B" is echoed
    assert [r.body["prompt"] for r in server.requests if r.body.get("echo")] == ["Answer: A, B"]


def test_topk_walk_error_ends_as_an_error_result(server):
    server.script("ok", "500", "500", "500")
    walker = make_model(server, tokenizer=CharTokenizer(), top_logprobs=20, max_retries=2, max_concurrency=1)
    best = top_logprobs("Answer: ", 1)[0][0]  # the walk asks for the node after it: three 500s
    (res,) = run(walker, "score", [ScoreRequest("Answer: ", (best + "A", best + "B"))])
    assert res.logprobs is None and "HTTP 500" in res.error
    assert not any(r.body.get("echo") for r in server.requests)  # an error, never an echo substitute


# ------------------------------------------------------------------ client-side chat template

TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")
CONVERSATION = (("system", "You play a game."), ("user", "Pick 0 or 1."))


def write_config(tmp_path, add_bos: bool | None):
    conf = {"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": {"content": "</s>"}}
    if add_bos is not None:
        conf["add_bos_token"] = add_bos
    p = tmp_path / "tokenizer_config.json"
    p.write_text(json.dumps(conf), encoding="utf-8")
    return p


@pytest.mark.parametrize("add_bos", [True, False, None])
def test_conversation_is_rendered_here_and_scored_on_completions(server, tmp_path, add_bos):
    model = make_model(server, chat_template=str(write_config(tmp_path, add_bos)), top_logprobs=0)
    assert model.supports_chat_scoring
    assert model.describe()["chat_template"].startswith("tokenizer_config.json:sha256:")
    rendered = "<s><|system|>You play a game.\n<|user|>Pick 0 or 1.\n<|assistant|>"
    # the server adds its own BOS to a completions prompt (unless the config says it does not)
    sent = rendered if add_bos is False else rendered[len("<s>"):]
    (res,) = run(model, "score", [ScoreRequest("Action: ", ("0", "1"), messages=CONVERSATION)])
    assert res.ok, res.error
    assert res.rendered == rendered + "Action: "
    assert res.logprobs == pytest.approx([expected_text_logprob(sent + "Action: ", c) for c in "01"], abs=1e-9)
    assert {r.body["prompt"] for r in server.requests} == {sent + "Action: 0", sent + "Action: 1"}
    assert all(r.path.endswith("/v1/completions") for r in server.requests)


def test_jinja_file_and_folder(tmp_path, server):
    (tmp_path / "chat_template.jinja").write_text(TEMPLATE.replace("{{ bos_token }}", ""), encoding="utf-8")
    t = ChatTemplate.load(tmp_path)
    assert t.render(CONVERSATION)[1].startswith("<|system|>")
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "t.jinja").write_text(TEMPLATE, encoding="utf-8")
    with pytest.raises(InputError, match="bos_token"):
        ChatTemplate.load(lone / "t.jinja")
    with pytest.raises(InputError, match="no such file"):
        ChatTemplate.load(tmp_path / "missing.gguf")
    (lone / "bad.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="no chat_template"):
        ChatTemplate.load(lone / "bad.json")


def test_conversation_without_a_template_is_an_error_result_and_refused_up_front(server):
    model = make_model(server, top_logprobs=0)
    assert not model.supports_chat_scoring
    (res,) = run(model, "score", [ScoreRequest("Action: ", ("0",), messages=CONVERSATION)])
    assert res.logprobs is None and "--chat-template" in res.error
    assert server.request_count == 0


def test_gguf_template_and_tokenizer(server):
    pytest.importorskip("llama_cpp")
    from stratbench.models.llama import embedded_instruct_path

    try:
        path, _ = embedded_instruct_path()
    except InputError as e:
        pytest.skip(str(e))
    t = ChatTemplate.load(path)  # SmolLM2-135M-Instruct: ChatML, as llama-cpp-python's chat route renders it
    assert t.has_template and t.tokenizer is not None
    rendered, sent = t.render(CONVERSATION)
    assert rendered == sent == ("<|im_start|>system\nYou play a game.<|im_end|>\n<|im_start|>user\n"
                                "Pick 0 or 1.<|im_end|>\n<|im_start|>assistant\n")
    ids = t.tokenizer.tokenize("<|im_start|>assistant\nAction: 1")
    assert len(ids) < len("<|im_start|>assistant\nAction: 1") / 2  # special-token text parsed, not spelled
    assert "".join(t.tokenizer.piece(i) for i in ids[1:]).endswith("Action: 1")
    model = make_model(server, chat_template=str(path))
    assert model.multi_token_scoring == "topk-walk" and model.supports_chat_scoring
    assert model.describe()["chat_template"].startswith(path.name + ":sha256:")


# ------------------------------------------------------------- waiting, requests, retries


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_wait_for_server_rides_out_a_restart_and_counts_requests():
    port = free_port()
    first = FakeOpenAIServer(port=port).start()
    model = OpenAICompatibleModel("openai-compatible", "fake-model", base_url=first.base_url, timeout_s=2,
                                  max_retries=1, retry_base_delay_s=0.01, retry_max_delay_s=0.05,
                                  wait_for_server_s=20)
    second = FakeOpenAIServer(port=port)

    async def go():
        try:
            (a,) = await model.generate([GenerateRequest("hi", max_tokens=2)])
            first.stop()  # the server goes down...
            restart = threading.Timer(1.5, second.start)  # ...and comes back 1.5 s later
            restart.start()
            t0 = time.monotonic()
            (b,) = await model.generate([GenerateRequest("hi", max_tokens=2)])
            restart.join()
            return a, b, time.monotonic() - t0
        finally:
            await model.aclose()

    try:
        a, b, waited = asyncio.run(go())
    finally:
        second.stop()
    assert a.ok and b.ok, (a.error, b.error)
    assert b.text == a.text and waited >= 1.0
    assert second.request_count == 1
    extra = model.usage.extra
    assert extra["retries"] >= 2  # beyond max_retries=1: it waited
    assert extra["http_requests"] == 2 + extra["retries"]


def test_without_wait_a_down_server_fails_after_the_retries():
    port = free_port()
    model = OpenAICompatibleModel("openai-compatible", "fake-model", base_url=f"http://127.0.0.1:{port}/v1",
                                  timeout_s=2, max_retries=2, retry_base_delay_s=0.001, retry_max_delay_s=0.002)
    (res,) = run(model, "generate", [GenerateRequest("hi")])
    assert res.text is None and "after 3 attempts" in res.error
    assert model.usage.extra == {**model.usage.extra, "http_requests": 3, "retries": 2}


def test_wait_for_server_gives_up_after_its_time():
    port = free_port()
    model = OpenAICompatibleModel("openai-compatible", "fake-model", base_url=f"http://127.0.0.1:{port}/v1",
                                  timeout_s=2, max_retries=0, retry_base_delay_s=0.001, retry_max_delay_s=0.002,
                                  wait_for_server_s=0.5)
    t0 = time.monotonic()
    (res,) = run(model, "generate", [GenerateRequest("hi")])
    assert 0.4 <= time.monotonic() - t0 < 5
    assert res.text is None and "unavailable for 0.5 s" in res.error
    assert model.usage.extra["http_requests"] == model.usage.extra["retries"] + 1 >= 2


RESUME_TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"


def _templated_run(tmp_path, cli, server):
    """A finished two-game nashgap chat run of ``server`` with --chat-template t.jinja: (template,
    its text, folder)."""
    template = tmp_path / "t.jinja"
    template.write_text(RESUME_TEMPLATE)
    r = cli("nashgap", "--model", "openai-compatible:m", "--base-url", server.base_url, "--num-games", "2",
            "--num-trials", "1", "--seed", "1", "--chat", "--chat-template", str(template), "--no-cache",
            "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    return template, RESUME_TEMPLATE, folder


def test_a_resume_whose_chat_template_file_changed_is_refused(tmp_path, cli):
    """run.json names the template's digest; a resume with the file edited since would finish the
    run with records of two templates: one line, exit 2, the folder as it was. Put back, it resumes."""
    with FakeOpenAIServer() as s:
        template, first, folder = _templated_run(tmp_path, cli, s)
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        template.write_text(first.replace("<assistant>", "[ASSISTANT]"))
        r = cli("nashgap", "--resume", str(folder), "--no-cache", "--quiet")
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "is not the one the run started with" in r.stderr and "t.jinja:sha256:" in r.stderr, r.stderr
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
        template.write_text(first)
        r = cli("nashgap", "--resume", str(folder), "--no-cache", "--quiet")
        assert r.returncode == 0, r.stderr


def test_a_resume_whose_chat_template_is_gone_takes_the_same_template_by_another_path(tmp_path, cli):
    """The run's template moved away (the folder copied to another machine): the resume says so and
    takes --chat-template in its place when its content is run.json's digest, saved from then on;
    another template, or the flag beside a template still there, is one line and the folder as it
    was (fuzz 12 A E1: the line named a flag not given, and giving it was refused)."""
    with FakeOpenAIServer() as s:
        template, first, folder = _templated_run(tmp_path, cli, s)
        trials = unfinish(folder)
        there = tmp_path / "there.jinja"
        there.write_text(first)
        r = cli("nashgap", "--resume", str(folder), "--chat-template", str(there), "--quiet")
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"reads its saved template {template}, which is still there; drop --chat-template" in r.stderr
        template.unlink()
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        r = cli("nashgap", "--resume", str(folder), "--quiet")
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"the chat template saved with the run ({template}) is gone; give the same template" in r.stderr
        other = tmp_path / "other.jinja"
        other.write_text(first.replace("<assistant>", "[ASSISTANT]"))
        r = cli("nashgap", "--resume", str(folder), "--chat-template", str(other), "--quiet")
        assert r.returncode == 2 and "is not the one the run started with" in r.stderr, r.stderr
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
        r = cli("nashgap", "--resume", str(folder), "--chat-template", str(there), "--no-cache", "--quiet")
        assert r.returncode == 0, r.stderr
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "finished" and meta["config"]["chat_template"] == str(there)
    assert len(trials.read_text().splitlines()) == 2


def test_a_resume_of_a_run_without_a_template_refuses_one(tmp_path, cli):
    """--chat-template beside --resume of a run started without one would be ignored: one line."""
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}\n{% endfor %}")
    r = cli("nashgap", "--model", "random", "--num-games", "1", "--num-trials", "1", "--quiet", "--output-dir",
            str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    r = cli("nashgap", "--resume", str(folder), "--chat-template", str(template))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "was started without one" in r.stderr and "drop --chat-template" in r.stderr, r.stderr
