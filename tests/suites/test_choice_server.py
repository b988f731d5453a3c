"""Exact choice scoring over HTTP equals the local route: the embedded instruct model
(SmolLM2-135M-Instruct) played as `embedded-instruct` (llama.cpp in this process) and as
`openai-compatible:smollm2` behind llama-cpp-python's own OpenAI-compatible server on the same
GGUF, given to the client with `--chat-template` (the client renders the template and scores the
labels on the completions endpoint). Per decision: both policies are probability vectors over the
actions (sum 1), the label mass is recorded, the prompt as the model saw it is the same text, and
the two routes agree within llama.cpp's numerical noise (TOL_P, TOL_LOGPROB: measured, the
server's float32 rounding). That the local route is identical across runs is pinned by the suites'
own instruct tests (nashgap/test_chat.py, chbench/test_instruct.py), not repeated here.

Nash gap (4 games, pure actions, `--chat --policy choice`) and ToM (1 episode of 2 rounds,
`--prompting LM --chat`: its choice policy); about 20 s on an idle 2-core machine. The new flag's
refusals (a local or scripted player, a template that is not there: one line, nothing written) are
in the hostile-input corpus (tests/hostile/cases_flags.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from llama_server import llama_server, skip_without_instruct_server

skip_without_instruct_server()

from stratbench.models.llama import embedded_instruct_path  # noqa: E402
from stratbench.runner.jsonl import read_jsonl  # noqa: E402
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap  # noqa: E402
from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model  # noqa: E402

LOCAL = "embedded-instruct"
ALIAS = "smollm2"
SERVER = f"openai-compatible:{ALIAS}"
# Local vs server, measured (2-core x86 machine, 2026-11-23, llama-cpp-python's server with its
# prompt cache; the same on every run): Nash gap max |Δp| 1.1e-16 and max |Δ log-prob| 1.13e-7
# per label; ToM 1.15e-8 and 9.7e-8 (CHBench, 1 game of 2 rounds: 0 and 1.13e-7, not run here:
# its labels sit outside the top 20, so each is an echo request, ~20 s of the server's Python).
# The logits agree; the server's log-probs are rounded in float32 (labels' log-probs here are
# -0.3 to -2.2, where a float32 step is 6e-8 to 2.4e-7). Here the two routes evaluate the same
# tokens in the same batch shapes; on another CPU the local route's 16-row padding may meet other
# kernels than the server's unpadded batch, so the bounds leave room for llama.cpp's rounding noise
# there and still catch a real discrepancy (another rendering, a token more or less, another stem
# moves these log-probs by far more than 5e-3).
TOL_P = 1e-3
TOL_LOGPROB = 5e-3


@pytest.fixture(scope="module")
def server():
    """(base URL, the GGUF the server serves: the chat template given to the client)."""
    path, _ = embedded_instruct_path()
    with llama_server(path, ALIAS) as url:
        yield url, str(path)


def check_distribution(policy: list[float], mass: float, n: int) -> None:
    assert len(policy) == n and all(0 <= p <= 1 for p in policy)
    assert abs(math.fsum(policy) - 1.0) < 1e-9
    assert 0 < mass <= 1 + 1e-6


def logprobs_of(policy: list[float], mass: float) -> list[float]:
    """Each label's log-probability from the renormalised policy and the label mass."""
    return [math.log(p * mass) for p in policy]


def deltas(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


# -- Nash gap ------------------------------------------------------------------------------------


def _nashgap(out: Path, **kw) -> Path:
    cfg = NashgapConfig(**{"policy": "choice", "chat": True, "num_games": 4, "num_trials": 1, "seed": 7,
                           "no_cache": True, "output_dir": str(out)} | kw)
    return run_nashgap(cfg).folder


@pytest.fixture(scope="module")
def nashgap_runs(server, tmp_path_factory):
    url, gguf = server
    local = _nashgap(tmp_path_factory.mktemp("ng_local"), model=LOCAL)
    # no --policy: with --chat and a template an HTTP model defaults to choice, as a local one does
    http = _nashgap(tmp_path_factory.mktemp("ng_server"), model=SERVER, base_url=url, chat_template=gguf,
                    policy=None)
    return local, http


def test_nashgap_choice_over_http_equals_the_local_route(nashgap_runs, server):
    local, http = nashgap_runs
    a, b = read_jsonl(local / "trials.jsonl"), read_jsonl(http / "trials.jsonl")
    assert len(a) == len(b) == 4
    dp = dlp = 0.0
    for x, y in zip(a, b, strict=True):
        assert (x["game_id"], x["prompt_sha256"]) == (y["game_id"], y["prompt_sha256"])
        for r in (x, y):
            assert r["status"] == "parsed" and r["error"] is None, r["error"]
            check_distribution(r["policy"], r["label_mass"], 3)
            assert r["label_mass"] == pytest.approx(math.fsum(math.exp(v) for v in r["logprobs"]), rel=1e-9)
        assert x["rendered"] == y["rendered"]  # the client renders the template as the local route does
        dp = max(dp, deltas(x["policy"], y["policy"]))
        dlp = max(dlp, deltas(x["logprobs"], y["logprobs"]))
    assert dp < TOL_P and dlp < TOL_LOGPROB, (dp, dlp)
    meta_l, meta_s = (json.loads((f / "run.json").read_text()) for f in (local, http))
    assert meta_l["agent"]["policy"] == meta_s["agent"]["policy"] == "choice"
    assert "chat_template" not in meta_l["config"]  # recorded only when given
    assert meta_s["config"]["chat_template"] == server[1]
    assert meta_s["agent"]["model"]["chat_template"].startswith(Path(server[1]).name)
    for f in (local, http):
        s = json.loads((f / "summary.json").read_text())
        assert s["status_counts"]["error"] == 0 and s["mean_label_mass"] is not None


# -- ToM -----------------------------------------------------------------------------------------


def _tom(out: Path, **kw):
    cfg = TomRunConfig(chat=True, prompting="LM", game="ipd", partner="tit_for_tat", rounds=2, episodes=1, seed=1,
                       keep_prompts=True, no_cache=True, output_dir=str(out), **kw)
    res = run_tom_model(cfg)
    return res, read_jsonl(res.folder / "rounds.jsonl")


def test_tom_choice_over_http_equals_the_local_route(server, tmp_path_factory):
    url, gguf = server
    (res_l, a) = _tom(tmp_path_factory.mktemp("tom_local"), model=LOCAL)
    (res_s, b) = _tom(tmp_path_factory.mktemp("tom_server"), model=SERVER, base_url=url, chat_template=gguf)
    assert res_l.n_errors == res_s.n_errors == 0
    assert res_l.summary["policy"] == res_s.summary["policy"] == "choice"
    assert len(a) == len(b) == 2
    dp = dlp = 0.0
    compared = 0
    for x, y in zip(a, b, strict=True):
        for r in (x, y):
            assert r["status"] == "parsed", r.get("error")
            check_distribution(r["policy"], r["label_mass"], 2)
            check_distribution(r["tom_policy"], r["tom_label_mass"], 2)
        if x["prompts"] != y["prompts"]:  # an earlier draw differed: another history (not seen so far)
            continue
        compared += 1
        for key, mass in (("policy", "label_mass"), ("tom_policy", "tom_label_mass")):
            dp = max(dp, deltas(x[key], y[key]))
            dlp = max(dlp, deltas(logprobs_of(x[key], x[mass]), logprobs_of(y[key], y[mass])))
    assert compared >= 1  # the first round's prompts are the same text on both routes
    assert dp < TOL_P and dlp < TOL_LOGPROB, (dp, dlp)
