"""Every generation strategy of every suite, run for real twice on the same instruction-tuned model
at temperature 0: directly (`embedded-instruct --chat`: SmolLM2-135M-Instruct, its GGUF's ChatML
template rendered by llama-cpp-python's default chat handler) and through llama-cpp-python's own
OpenAI-compatible server serving that GGUF (`openai-compatible:<alias> --base-url … --chat`, which
sends `repeat_penalty: 1.0` so the server's greedy answers are unpenalised, as the local route's).

The two runs must agree record by record: the same records, statuses, raw answers, parsed actions,
parse kinds, finish reasons and token counts (the server's usage counts the prompt it rendered
itself). What only one route can record — the local route keeps the template-rendered prompt, the
server route the text it sent — is checked on its own: every request the server got, its messages
rendered with the GGUF's template, is a prompt the local route rendered, with the same budget and
stops (and the server request says temperature 0 and repeat_penalty 1.0).

Tiny budgets (1 game; 1 episode of 1-2 rounds; 2 rounds; 12-32 tokens) keep the module within about
a minute and a half on 2 cores."""

from __future__ import annotations

import copy
import json
import math
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
from llama_server import llama_server, skip_without_instruct_server

skip_without_instruct_server()

from stratbench.errors import InputError  # noqa: E402
from stratbench.models.llama import LlamaCppModel, embedded_instruct_path  # noqa: E402
from stratbench.models.openai_api import ChatTemplate, OpenAICompatibleModel  # noqa: E402
from stratbench.parsing.actions import parse_action  # noqa: E402
from stratbench.runner.jsonl import read_jsonl  # noqa: E402
from stratbench.suites.chbench import players as ch_players  # noqa: E402
from stratbench.suites.chbench.run import ChbenchConfig, run_chbench  # noqa: E402
from stratbench.suites.nashgap.answers import parse_distribution  # noqa: E402
from stratbench.suites.nashgap.answers import parse_kind as nashgap_parse_kind  # noqa: E402
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap  # noqa: E402
from stratbench.suites.tmgbench.answers import parse_answer_set  # noqa: E402
from stratbench.suites.tmgbench.config import METHODS  # noqa: E402
from stratbench.suites.tmgbench.run import TmgbenchConfig, run_tmgbench  # noqa: E402
from stratbench.suites.tmgbench.run import parse_kind as tmgbench_parse_kind  # noqa: E402
from stratbench.suites.tom.games import get_game  # noqa: E402
from stratbench.suites.tom.gen_prompts import GenPrompts  # noqa: E402
from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model  # noqa: E402
from stratbench.suites.tom.prompts import flatten  # noqa: E402
from stratbench.suites.tom.strategies import GENERATION_PROMPTINGS, read_option  # noqa: E402

LOCAL = "embedded-instruct"
ALIAS = "smollm2"
SERVED = f"openai-compatible:{ALIAS}"
CHATML = "<|im_start|>"
ASSISTANT_TURN = "<|im_start|>assistant\n"
# ToM's SocialLM reads its prediction by exact choice scoring after the chat template, which a chat
# endpoint cannot do: over the server it needs --chat-template (the completions endpoint scores the
# client-rendered text), tested on its own (test_sociallm_over_the_server_with_its_template)
TOM_SERVED = tuple(p for p in GENERATION_PROMPTINGS if p != "SocialLM")
# scored values over HTTP come back rounded in float32 (tests/suites/test_choice_server.py)
SCORE_TOL = 5e-3

# The local model's threads: the server's (llama-cpp-python's default: half the cores). The answers
# do not depend on it (llama.cpp splits work by rows); the local default, every core, is several
# times slower on a machine that is busy with anything else, as a test machine often is.
LOCAL_THREADS = max((os.cpu_count() or 1) // 2, 1)
# ToM: the calls each strategy makes beyond an action and a prediction
TOM_KINDS = {"Reflexion": {"action", "tom", "reflection"},
             "S2A": {"s2a_context", "action", "s2a_tom_context", "tom"},
             "S2ACoT": {"s2a_context", "action", "s2a_tom_context", "tom"}}
# what may differ between two equal runs: timings and cache flags
VOLATILE = frozenset({"latency_s", "row_latency_s", "col_latency_s", "seconds", "cached"})
# what the routes record differently: the local route the prompt after the template, the server
# route (which does not say what it rendered) the text it sent; checked by `Run.requests` instead
PROMPT_KEYS = frozenset({"rendered", "rendered_prompt", "prompt", "row_prompt", "col_prompt"})


class Run:
    """One run's result folder, its records by file, and every generation request it made as
    (the prompt after the chat template, max_tokens, stop sequences)."""

    def __init__(self, folder: Path, requests: list[tuple[str, int, tuple[str, ...]]],
                 bodies: list[dict[str, Any]]) -> None:
        self.folder = folder
        self.requests = requests
        self.bodies = bodies  # the server route: the JSON bodies posted

    def records(self, name: str) -> list[dict[str, Any]]:
        return read_jsonl(self.folder / name)


@pytest.fixture(scope="module")
def server():
    path, _ = embedded_instruct_path()
    with llama_server(path, ALIAS) as url:
        yield url


@pytest.fixture(scope="module")
def template():
    """The GGUF's chat template as the server's chat route renders it."""
    return ChatTemplate.load(embedded_instruct_path()[0])


def fresh_server_prompt(url: str) -> None:
    """Make llama-cpp-python's server evaluate the next prompt from its first token, as the local
    route does. The server keeps the last prompt's KV cache and evaluates only what follows the
    longest common prefix; llama.cpp's numbers depend on how a prompt is split into decodes, and a
    greedy answer can change with it (seen: ToM Reflexion's second call, 'Your answer is: Option J'
    fresh, 'Thoughts: ...' on the reused prefix). A one-token prompt that shares no first token with
    a chat prompt leaves nothing to reuse."""
    import httpx

    r = httpx.post(url + "/completions", json={"prompt": "x", "max_tokens": 1, "temperature": 0.0}, timeout=60)
    assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def twice(server, template):
    """`twice(run, make, out)`: the same config (`make(model, base_url, folder)`) run locally and
    through the server, each with its generation requests captured."""

    def run_one(run: Callable[[Any], Any], config: Any) -> Run:
        requests: list[tuple[str, int, tuple[str, ...]]] = []
        bodies: list[dict[str, Any]] = []
        local_init, local_sync = LlamaCppModel.__init__, LlamaCppModel._generate_sync
        post = OpenAICompatibleModel._post

        def init_local(self, *args, n_threads=None, **kwargs):
            local_init(self, *args, n_threads=n_threads or LOCAL_THREADS, **kwargs)

        def spy_local(self, req):
            res = local_sync(self, req)
            requests.append((res.rendered, req.max_tokens, tuple(req.stop)))
            return res

        async def spy_post(self, path, body):
            bodies.append(copy.deepcopy(body) | {"path": path})
            fresh_server_prompt(server)
            if path == "chat/completions":
                conv = [(m["role"], m["content"]) for m in body["messages"]]
                requests.append((template.render(conv)[0], body["max_tokens"], tuple(body.get("stop", ()))))
            return await post(self, path, body)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(LlamaCppModel, "__init__", init_local)
            mp.setattr(LlamaCppModel, "_generate_sync", spy_local)
            mp.setattr(OpenAICompatibleModel, "_post", spy_post)
            res = run(config)
        return Run(res.folder, requests, bodies)

    def both(run: Callable[[Any], Any], make: Callable[[str, str | None, str], Any], out: Path) -> tuple[Run, Run]:
        local = run_one(run, make(LOCAL, None, str(out / "local")))
        served = run_one(run, make(SERVED, server, str(out / "served")))
        return local, served

    return both


def comparable(rec: Any) -> Any:
    """A record without timings, cache flags and recorded prompts; the served model's spec read
    as the local one (it names the player in ids and `agent` fields)."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in VOLATILE | PROMPT_KEYS}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return json.loads(json.dumps(strip(rec)).replace(SERVED, LOCAL))


def differences(a: Any, b: Any, where: str = "", tol: float = 0.0) -> list[str]:
    """Where two records differ, leaf by leaf (for a readable failure: both raw answers shown)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{where}.{k}", tol)]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]", tol)]
    if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=0, abs_tol=tol):
        return []
    return [] if a == b else [f"{where}: local {a!r} != server {b!r}"]


def assert_same_records(local: list[dict[str, Any]], served: list[dict[str, Any]], what: str,
                        tol: float = 0.0) -> None:
    """Equal records; `tol`: how far floats may differ (scored log-probs, 0 for generated answers)."""
    assert local, f"{what}: no records"
    assert len(local) == len(served), what
    for a, b in zip(local, served):
        diff = differences(comparable(a), comparable(b), tol=tol)
        assert not diff, f"{what}:\n" + "\n".join(diff)


def assert_same_requests(local: Run, served: Run) -> None:
    """The same generation requests: every prompt the local route rendered (ChatML) is what the
    server's template makes of the messages it got, with the same budget and stops; each server
    request asked for greedy, unpenalised decoding."""
    assert local.requests and all(r[0].startswith(CHATML) and r[0].endswith(ASSISTANT_TURN) for r in local.requests)
    assert Counter(local.requests) == Counter(served.requests)
    assert served.bodies and all(b["path"] == "chat/completions" for b in served.bodies)
    for b in served.bodies:
        assert b["model"] == ALIAS and b["temperature"] == 0 and b["repeat_penalty"] == 1.0, b


def no_errors(records: list[dict[str, Any]], *status_keys: str) -> None:
    for r in records:
        for k in status_keys:
            assert r[k] in ("ok", "parsed", "parse_failed", "complete"), (k, r)


# -- Nash gap: --chat --policy sample, both modes -------------------------------------------------


NASHGAP_FILES = ("trials_pure_actions.jsonl", "trials_mixed_strategy.jsonl")


@pytest.fixture(scope="module")
def nashgap(twice, tmp_path_factory):
    def make(model, base_url, out):
        return NashgapConfig(model=model, base_url=base_url, chat=True, policy="sample", num_games=1, num_trials=1,
                             seed=7, max_tokens=32, temperature=0.0, combined=True, no_cache=True,
                             max_concurrency=1, output_dir=out)
    return twice(run_nashgap, make, tmp_path_factory.mktemp("nashgap"))


@pytest.mark.parametrize("name", NASHGAP_FILES)
def test_nashgap_sampled_answers_are_the_servers(nashgap, name):
    local, served = nashgap
    a, b = local.records(name), served.records(name)
    key = lambda r: (r["game_id"], r["trial_id"], r["rotation"])  # noqa: E731
    a, b = sorted(a, key=key), sorted(b, key=key)
    assert len(a) == 1  # 1 game × 1 trial
    no_errors(a + b, "status")
    for r in a:
        assert r["rendered"].startswith(CHATML) and r["finish_reason"] in ("stop", "length")
        assert isinstance(r["raw_response"], str) and r["usage"]["tokens_out"] > 0
    assert all(r["rendered"] is None for r in b)  # llama-cpp-python's server does not say what it rendered
    assert_same_records(a, b, name)
    for r in a + b:  # what each route recorded is what its raw text says: nothing substituted
        nashgap_consistent(r)


def nashgap_consistent(r: dict[str, Any]) -> None:
    text, labels = r["raw_response"], ("0", "1", "2")
    if r["mode"] == "pure":
        p = parse_action(text, labels)
        assert (r["status"] == "parsed") == p.ok, r
        if p.ok:
            assert r["llm_decision"] == p.action
            assert r["parse"] == nashgap_parse_kind(text, labels, "pure", p.action, r["finish_reason"])
    else:
        q = parse_distribution(text, labels)
        assert (r["status"] == "parsed") == q.ok, r
        if q.ok:
            assert r["llm_decision"] == pytest.approx(q.probs)
            assert r["parse"] == nashgap_parse_kind(text, labels, "mixed", None, r["finish_reason"])
    if r["status"] != "parsed":
        assert r["parse"] is None and r["error"] and r["llm_decision"] is None and r["nash_gap"] is None


def test_nashgap_requests_are_the_same(nashgap):
    assert_same_requests(*nashgap)
    assert len(nashgap[0].requests) == 2  # a pure and a mixed answer


# -- TMGBench: every prompting strategy, sampled -------------------------------------------------


@pytest.fixture(scope="module")
def tmgbench(twice, tmp_path_factory):
    root = tmp_path_factory.mktemp("tmgbench")
    out = {}
    for method in METHODS:
        def make(model, base_url, folder, method=method):
            return TmgbenchConfig(model=model, base_url=base_url, chat=True, policy="sample", prompting=method,
                                  games="111", repeats=1, max_tokens=12, seed=1, temperature=0.0, no_cache=True,
                                  max_concurrency=1, output_dir=folder)
        out[method] = twice(run_tmgbench, make, root / method)
    return out


@pytest.mark.parametrize("method", METHODS)
def test_tmgbench_every_strategy_answers_as_the_server(tmgbench, method):
    local, served = tmgbench[method]
    (a,), (b,) = local.records("answers.jsonl"), served.records("answers.jsonl")
    no_errors([a, b], "status")
    assert a["rendered_prompt"].startswith(CHATML) and "rendered_prompt" not in b
    assert a["finish_reason"] in ("stop", "length") and a["usage"]["tokens_out"] > 0
    assert (a["prompting"], a["policy"]) == (method, "sample")
    assert_same_records([a], [b], method)
    for r in (a, b):
        p = parse_answer_set(r["raw_response"])
        assert p.ok == (r["status"] == "parsed"), r
        if p.ok:
            assert r["answer"] == sorted(p.cells) and r["parse"] == tmgbench_parse_kind(p.strict, r["finish_reason"])
        else:
            assert r["error"] == p.error and "parse" not in r and "answer" not in r
    assert_same_requests(local, served)
    assert len(local.requests) == 1
    # the conversation sent: the paper's system prompt, then the task
    (body,) = served.bodies
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


# -- ToM: every generation strategy ----------------------------------------------------------------


@pytest.fixture(scope="module")
def tom(twice, tmp_path_factory):
    """One episode of the battle of the sexes (there, unlike the prisoner's dilemma, the tiny
    model's first action parses under every strategy, so each strategy's later calls are made too),
    one round (Reflexion two: it reflects from round 2 on), short answers, one try per call."""
    root = tmp_path_factory.mktemp("tom")
    out = {}
    for p in TOM_SERVED:
        long = p == "Reflexion"

        def make(model, base_url, folder, p=p, long=long):
            return TomRunConfig(model=model, base_url=base_url, chat=True, prompting=p, game="ibs",
                                partner="tit_for_tat", rounds=2 if long else 1, episodes=1, seed=1,
                                max_tokens=24 if long else 12, max_tries=1, temperature=0.0, keep_prompts=True,
                                no_cache=True, max_concurrency=1, output_dir=folder)
        out[p] = twice(run_tom_model, make, root / p)
    return out


@pytest.mark.parametrize("prompting", TOM_SERVED)
def test_tom_every_generation_strategy_answers_as_the_server(tom, prompting):
    local, served = tom[prompting]
    a, b = local.records("rounds.jsonl"), served.records("rounds.jsonl")
    # the strategy's own calls were made (if the model's answers change, pick a budget that keeps them)
    assert {c["kind"] for r in a for c in r["calls"]} >= TOM_KINDS.get(prompting, {"action", "tom"})
    no_errors(a + b, "status")
    for r in a + b:
        assert all(c["status"] in ("parsed", "parse_failed") for c in r["calls"]), r["calls"]
    for r in a:
        for c in r["calls"]:
            assert c["prompt"].startswith(CHATML) and c["finish_reason"] in ("stop", "length")
    assert_same_records(a, b, prompting)
    for r in a + b:
        tom_consistent(r)
    assert_same_requests(local, served)
    # the server route records the text it sent: the user's message, or a follow-up conversation flattened
    sent = [[(m["role"], m["content"]) for m in body["messages"]] for body in served.bodies]
    want = Counter(conv[0][1] if len(conv) == 1 else flatten(tuple(conv)) for conv in sent)
    assert Counter(c["prompt"] for r in b for c in r["calls"]) == want


def tom_consistent(r: dict[str, Any]) -> None:
    """Each action / prediction call's status and value are what its raw text says."""
    labels = GenPrompts(get_game("ibs"), "neutral", 2).labels
    for c in r["calls"]:
        if c["kind"] not in ("action", "tom"):
            continue
        p = read_option(c["text"] or "", labels, c["finish_reason"])
        if c["status"] == "parsed":
            assert (c["text"] or "").strip() and p.ok and c["parse"] == p.parse, c
            assert r["my_action" if c["kind"] == "action" else "prediction"] == p.action
        else:
            assert c["status"] == "parse_failed" and not p.ok and "parse" not in c, c
    if r["status"] != "parsed":
        assert "my_action" not in r


def test_sociallm_over_the_server_with_its_template(twice, server, tmp_path):
    """SocialLM's scored prediction needs the chat template: refused up front without
    --chat-template (nothing written); with it, the same records as the local route (generated
    actions identical, scored predictions within float32 rounding)."""
    with pytest.raises(InputError, match="SocialLM with --chat scores the options after the model's chat template"):
        run_tom_model(TomRunConfig(model=SERVED, base_url=server, chat=True, prompting="SocialLM", game="ipd",
                                   rounds=1, output_dir=str(tmp_path / "refused")))
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    gguf = str(embedded_instruct_path()[0])

    def make(model, base_url, folder):
        return TomRunConfig(model=model, base_url=base_url, chat=True, prompting="SocialLM", game="ibs",
                            partner="tit_for_tat", rounds=1, episodes=1, seed=1, max_tokens=12, max_tries=1,
                            temperature=0.0, no_cache=True, max_concurrency=1, output_dir=folder,
                            chat_template=gguf if base_url else None)

    local, served = twice(run_tom_model, make, tmp_path / "SocialLM")
    a, b = local.records("rounds.jsonl"), served.records("rounds.jsonl")
    assert a and any("tom_policy" in c for r in a for c in r["calls"])
    no_errors(a + b, "status")
    assert_same_records(a, b, "SocialLM", tol=SCORE_TOL)


# -- CHBench: sampled moves under the chat mechanism -------------------------------------------------


@pytest.fixture(scope="module")
def chbench(twice, tmp_path_factory):
    """1 game, 2 rounds, the model as the row player against the scripted `first-action` column
    player; advisor messages of 24 tokens. (Not `random`: a scripted player's draws are seeded by
    the match id, which names the model's spec, so they differ between the routes.)"""
    def make(model, base_url, out):
        return ChbenchConfig(models=[model], opponents=["first-action"], self_play=False, games="1", rounds=2,
                             bootstrap=0, restarts=1, chat=True, base_url=base_url, policy="sample",
                             mechanisms=["chat"], temperature=0.0, seed=3, no_cache=True,
                             max_concurrency=1, output_dir=out)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ch_players, "MESSAGE_TOKENS", 24)
        return twice(run_chbench, make, tmp_path_factory.mktemp("chbench"))


def test_chbench_sampled_moves_and_advisor_turns_are_the_servers(chbench):
    local, served = chbench
    a, b = local.records("rounds.jsonl"), served.records("rounds.jsonl")
    assert len(a) == 2  # 2 rounds
    no_errors(a + b, "status", "row_status", "col_status")
    for r in a:
        assert r["row_prompt"].startswith(CHATML) and r["row_finish_reason"] in ("stop", "length")
    turns = a[0]["row_consultation"]
    assert [t["speaker"] for t in turns] == ["Alex", "Sam", "Alex", "Sam"] and all(t["text"] for t in turns)
    assert_same_records(a, b, "chbench")
    for r in a + b:
        raw, st, kind = r["row_raw"], r["row_status"], r["row_parse"]
        parsed = parse_action(raw.strip(), ("1", "2"))
        if st == "parsed":
            assert parsed.action == r["row_action"] is not None  # no silent substitution
            strict = raw.strip() in ("1", "2") and r["row_finish_reason"] != "length"
            assert kind == ("strict" if strict else "flexible")
        else:
            assert st == "parse_failed" and r["row_action"] is None and kind is None and r["row_error"]
    assert_same_requests(local, served)
    assert len(local.requests) == 2 + 4  # a decision per round, and the advisor session's 4 messages
