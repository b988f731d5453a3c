"""TMGBench end to end: the games command, reference players, the embedded raw model in log-prob
mode, and sampled answers over real HTTP — including an injection attempt that must not run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tmgbench.run import TmgbenchConfig, run_tmgbench


def test_games_command_json(cli):
    r = cli("tmgbench", "games", "--format", "json")
    assert r.returncode == 0, r.stderr
    games = json.loads(r.stdout)
    assert len(games) == 144 and len({g["id"] for g in games}) == 144
    for g in games:
        assert {"id", "row", "col", "payoff_A", "payoff_B", "pure_ne"} <= set(g)
    pd = next(g for g in games if g["id"] == "111")
    assert (pd["row"], pd["col"]) == (6, 7) and pd["pure_ne"] == [["A2", "B1"]]
    assert sorted(len(g["pure_ne"]) for g in games).count(0) == 18


def test_oracle_and_empty_reference_scores(tmp_path):
    oracle = run_tmgbench(TmgbenchConfig(model="oracle", output_dir=str(tmp_path), seed=1))
    s = oracle.summary
    assert (s["par_pct"], s["id_pct"], s["bd_pct"]) == (100.0, 0.0, 0.0)
    for name in ("standard", "practical", "inconsistency", "sister_symmetry"):
        assert (oracle.folder / f"{name}_heatmap.png").stat().st_size > 1000
    empty = run_tmgbench(TmgbenchConfig(model="empty", output_dir=str(tmp_path), seed=1)).summary
    assert empty["par_pct"] == pytest.approx(12.5)
    assert (empty["par_0_pct"], empty["par_1_pct"], empty["par_2_pct"]) == (100.0, 0.0, 0.0)
    assert empty["id_pct"] == pytest.approx(25.0) and empty["id_2_pct"] == pytest.approx(50.0)
    assert empty["bd_pct"] == 0.0


def test_embedded_logprob_answer_distribution_and_cache(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("STRATBENCH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = dict(model="embedded", games="111,444,244", seed=3, output_dir=str(tmp_path))
    first = run_tmgbench(TmgbenchConfig(**cfg))
    recs = read_jsonl(first.folder / "answers.jsonl")
    assert [r["game_id"] for r in recs] == ["444", "111", "244"]  # grid order (3,4), (6,7), (9,10)
    for r in recs:
        assert r["status"] == "parsed" and len(r["distribution"]) == 16
        assert sum(r["distribution"].values()) == pytest.approx(1, abs=1e-12)
        assert 0 < r["label_mass"] <= 1
    s = first.summary
    assert s["policy"] == "logprob" and s["n_grids"] == 3 and s["repeats"] == 1
    assert 0 <= s["par_pct"] <= 100
    assert first.totals["model_calls"] == 3
    again = run_tmgbench(TmgbenchConfig(**cfg))
    assert again.totals["model_calls"] == 0 and again.summary["par_pct"] == s["par_pct"]


def test_sampled_answers_parsed_and_injection_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"```python\nanswer = __import__('os').system('touch {marker}')\n```"
    with FakeOpenAIServer(canned_text=payload) as server:
        res = run_tmgbench(TmgbenchConfig(
            model="openai-compatible:fake", base_url=server.base_url, policy="sample",
            prompting="CoT", games="111,122", repeats=2, seed=1, no_cache=True,
            output_dir=str(tmp_path / "a")))
    assert not marker.exists()
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert len(recs) == 4 and all(r["status"] == "parse_failed" for r in recs)
    assert res.summary["parse_failure_rate"] == 1.0 and res.summary["par_pct"] == 0.0
    good = '```python\nanswer = [("A2", "B1")]\n```'
    with FakeOpenAIServer(canned_text=good) as server:
        res = run_tmgbench(TmgbenchConfig(
            model="openai-compatible:fake", base_url=server.base_url, policy="sample",
            prompting="DA", games="111", repeats=3, seed=1, no_cache=True,
            output_dir=str(tmp_path / "b")))
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert [r["answer"] for r in recs] == [[3], [3], [3]]
    assert res.summary["par_pct"] == 100.0  # (A2, B1) is 111's only equilibrium


@pytest.mark.parametrize("args, needle", [
    (["--prompting", "XYZ"], "XYZ"),
    (["--form", "zigzag"], "zigzag"),
    (["--model", "oracle", "--form", "nested", "--k", "3"], "k must be 2"),
    (["--games", "999"], "999"),
    (["--model", "embedded", "--policy", "logprob", "--prompting", "CoT"], "DA"),
])
def test_bad_flags(tmp_path, cli, args, needle):
    r = cli("tmgbench", "run", "--output-dir", str(tmp_path / "o"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


FIXTURES = Path(__file__).parents[2] / "data" / "tmgbench_stories"


def test_story_setting_variants_mean_and_std(tmp_path):
    stories = tmp_path / "story-based"
    stories.mkdir()
    for f in FIXTURES.glob("*_0.txt"):
        for k in (0, 1):
            (stories / f.name.replace("_0.txt", f"_{k}.txt")).write_text(f.read_text())
    res = run_tmgbench(TmgbenchConfig(model="empty", setting="story", stories_dir=str(stories),
                                      seed=1, output_dir=str(tmp_path / "out")))
    s = res.summary
    assert s["n_variants"] == 2 and set(s["variants"]) == {"0", "1"}
    # 111 and 122 have equilibria, 444 has none: "always empty" gets 1 of 3 right in each variant
    assert s["par_pct"] == pytest.approx(100 / 3) and s["par_pct_std"] == 0.0
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert sorted({(r["game_id"], r["variant"]) for r in recs}) == [
        (g, k) for g in ("111", "122", "444") for k in (0, 1)]


def test_story_that_does_not_match_its_game_is_rejected(tmp_path, cli):
    stories = tmp_path / "s"
    stories.mkdir()
    text = (FIXTURES / "111_0.txt").read_text()
    (stories / "122_0.txt").write_text(text)  # the Prisoner's Dilemma story filed as game 122
    r = cli("tmgbench", "run", "--model", "oracle", "--setting", "story", "--stories-dir", str(stories),
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and "122_0.txt" in r.stderr and "Traceback" not in r.stderr
    r = cli("tmgbench", "stories", "verify", str(stories))
    assert r.returncode == 1 and "MISMATCH" in r.stdout


def _cut(path: Path, keep: int) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:keep]) + '{"game_id": "1')  # and a torn record


def test_resume_atomic_and_complex_runs_end_identical(tmp_path, cli):
    full = run_tmgbench(TmgbenchConfig(model="uniform", seed=3, output_dir=str(tmp_path / "a")))
    ref = read_jsonl(full.folder / "answers.jsonl")
    _cut(full.folder / "answers.jsonl", 50)
    r = cli("tmgbench", "run", "--resume", str(full.folder), "--quiet")
    assert r.returncode == 0, r.stderr
    strip = lambda rs: [{k: v for k, v in x.items() if k != "latency_s"} for x in rs]  # noqa: E731
    assert strip(read_jsonl(full.folder / "answers.jsonl")) == strip(ref)
    assert json.loads((full.folder / "summary.json").read_text())["par_pct"] == full.summary["par_pct"]

    r = cli("tmgbench", "run", "--model", "oracle", "--form", "parallel", "--k", "3", "--num-tasks", "6",
            "--seed", "5", "--quiet", "--output-dir", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    (folder,) = list((tmp_path / "c").iterdir())
    ref = read_jsonl(folder / "tasks.jsonl")
    _cut(folder / "tasks.jsonl", 2)
    r = cli("tmgbench", "run", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    assert strip(read_jsonl(folder / "tasks.jsonl")) == strip(ref)


def test_resume_keeps_the_folder_shard_and_kind(tmp_path):
    from stratbench.errors import InputError
    from stratbench.suites.tmgbench.complex_run import ComplexConfig, run_complex

    shard = run_tmgbench(TmgbenchConfig(model="uniform", games="111,122,444", seed=8, shard="1/2",
                                        output_dir=str(tmp_path / "s")))
    with pytest.raises(InputError, match="the folder is shard 1/2, not 2/2"):
        run_tmgbench(TmgbenchConfig(shard="2/2"), resume_dir=shard.folder)
    again = run_tmgbench(TmgbenchConfig(max_concurrency=1), resume_dir=shard.folder)
    meta = json.loads((again.folder / "run.json").read_text())
    assert meta["config"]["shard"] == {"index": 1, "count": 2}  # run.json keeps the config it started with
    assert len(meta["resumed_at"]) == 1 and again.totals["records"] == 2
    tasks = run_complex(ComplexConfig(model="oracle", form="nested", num_tasks=2, seed=1, output_dir=str(tmp_path / "c")))
    with pytest.raises(InputError, match="not tmgbench atomic"):
        run_tmgbench(TmgbenchConfig(), resume_dir=tasks.folder)
    with pytest.raises(InputError, match="not tmgbench complex"):
        run_complex(ComplexConfig(), resume_dir=shard.folder)


def test_merge_refuses_an_answer_held_twice(tmp_path):
    from stratbench.errors import InputError
    from stratbench.runner.jsonl import write_jsonl_atomic
    from stratbench.workflows.merge import merge_runs

    shards = [run_tmgbench(TmgbenchConfig(model="uniform", games="111,122,444", seed=8, shard=f"{i}/2",
                                          output_dir=str(tmp_path / "s"))).folder for i in (1, 2)]
    recs = read_jsonl(shards[0] / "answers.jsonl")
    write_jsonl_atomic(shards[0] / "answers.jsonl", recs + recs[:1])  # a line written twice: dropped with a note
    merged = merge_runs(shards, tmp_path / "ok")
    assert len(read_jsonl(merged / "answers.jsonl")) == 3
    write_jsonl_atomic(shards[0] / "answers.jsonl", recs + [{**recs[0], "latency_s": 99.0}])  # another record, same answer
    with pytest.raises(InputError, match="the shards hold 1 answers twice"):
        merge_runs(shards, tmp_path / "m")
    write_jsonl_atomic(shards[0] / "answers.jsonl", recs[1:])  # one answer lost
    # (each shard is read as its own run first: the shard that lost an answer is named)
    with pytest.raises(InputError, match=f"{re.escape(str(shards[0]))}/answers.jsonl: the finished run holds only 1 of "
                                         "the run's 2 answers"):
        merge_runs(shards, tmp_path / "m")
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


STORIES = Path(__file__).parents[2] / "data" / "tmgbench_stories"


@pytest.mark.parametrize("setting", [
    {"policy": "sample", "prompting": "CoT", "repeats": 2},
    {"policy": "sample", "setting": "story", "stories_dir": str(STORIES)},
])
def test_a_run_whose_every_record_is_an_error_counts_them_and_exits_1(tmp_path, cli, setting):
    """No record usable: the summary still counts the errors, run.json's totals say them and the
    command exits 1 (it used to say "errors": 0 and exit 0)."""
    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("400",)) as server:
        res = run_tmgbench(TmgbenchConfig(model="openai-compatible:fake", base_url=server.base_url, games="111,444",
                                          seed=1, no_cache=True, output_dir=str(tmp_path / "lib"), **setting))
        recs = read_jsonl(res.folder / "answers.jsonl")
        assert recs and all(r["status"] == "error" for r in recs)
        s = json.loads((res.folder / "summary.json").read_text())
        assert s["status_counts"]["error"] == len(recs) and s["error_rate"] == 1.0
        meta = json.loads((res.folder / "run.json").read_text())
        assert meta["totals"]["errors"] == len(recs) and res.n_errors == len(recs)
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in setting.items()]
        r = cli("tmgbench", "run", "--model", "openai-compatible:fake", "--base-url", server.base_url,
                "--games", "111,444", "--seed", "1", "--no-cache", "--output-dir", str(tmp_path / "cli"), *flags)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, needle", [
    (["--seed", "-1"], "--seed must be at least 0 (got -1)"),
    (["--games", ""], "--games: give at least one value"),
    (["--games", "111,111"], "--games: '111' is listed twice"),
    (["--games", "111,,444"], "--games: empty item"),
    (["--model", ""], "--model must not be empty"),
    (["--temperature", "nan"], "--temperature must be a finite number"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--max-concurrency", "0"], "--max-concurrency must be at least 1"),
    (["--repeats", "1000000000000"], "--repeats must be at most"),
    (["--form", "sequential", "--num-tasks", "0"], "--num-tasks must be at least 1"),
    (["--form", "sequential", "--num-tasks", "1000000000000"], "--num-tasks must be at most"),
    (["--form", "sequential", "--k", "0"], "--k must be at least 1"),
    (["--k", "3"], "--k applies to complex forms only"),
])
def test_bad_flag_values_one_line(tmp_path, cli, args, needle):
    r = cli("tmgbench", "run", "--model", "oracle", "--output-dir", str(tmp_path / "o"), *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert needle in line
    assert not (tmp_path / "o").exists()


def test_story_generation_bad_flags_one_line(tmp_path, cli):
    for args, needle in ((["--variants", "0"], "--variants must be at least 1"),
                         (["--max-attempts", "1000"], "--max-attempts must be at most 100"),
                         (["--games", "111,111"], "'111' is listed twice"),
                         (["--seed", "-1"], "--seed must be at least 0")):
        r = cli("tmgbench", "stories", "generate", "--output-dir", str(tmp_path / "o"), *args)
        assert r.returncode == 2 and "Traceback" not in r.stderr and needle in r.stderr, (args, r.stderr)
    assert not (tmp_path / "o").exists()


STRICT = '```python\nanswer = [{"A2", "B1"}] # list-type\n```'
FLEXIBLE = 'I think both defect, so answer = [("A2", "B1")] in the end.'


@pytest.mark.parametrize("reply, max_tokens, chat, parse, note", [
    (STRICT, 200, True, "strict", None),
    (FLEXIBLE, 200, True, "flexible", "answer written outside a ```python code block; text after the answer on its line"),
    # the block is whole but the reply was cut by the token budget: never strict
    (STRICT + "\nBecause A2 dominates A1 for player A.", len(STRICT) + 5, True, "flexible", "cut at the token limit"),
    # a raw model continues the prompt's opened ```python block
    (STRICT[len("```python\n"):], 200, False, "strict", None),
])
def test_sampled_answers_are_strict_or_flexible(tmp_path, reply, max_tokens, chat, parse, note):
    with FakeOpenAIServer(canned_text=reply) as server:
        res = run_tmgbench(TmgbenchConfig(
            model="openai-compatible:fake", base_url=server.base_url, policy="sample", chat=chat,
            prompting="CoT", games="111,444", repeats=2, seed=1, no_cache=True, max_tokens=max_tokens,
            output_dir=str(tmp_path)))
    recs = read_jsonl(res.folder / "answers.jsonl")
    assert len(recs) == 4
    for r in recs:
        assert r["status"] == "parsed" and r["answer"] == [3] and r["parse"] == parse
        assert r["finish_reason"] == ("length" if note == "cut at the token limit" else "stop")
        assert r.get("parse_note") == note
    s = res.summary
    assert s["par_pct"] == 50.0  # (A2, B1) is 111's answer, not 444's (no equilibrium)
    if parse == "strict":
        assert (s["strict_parse_rate"], s["flexible_parse_rate"]) == (1.0, 0.0)
        assert (s["strict_par_pct"], s["strict_id_pct"], s["strict_bd_pct"]) == (s["par_pct"], s["id_pct"], s["bd_pct"])
    else:
        assert (s["strict_parse_rate"], s["flexible_parse_rate"]) == (0.0, 1.0)
        assert s["strict_par_pct"] == 0.0 and s["strict_id_pct"] == 12.5  # every answer a failure


def test_http_logprob_is_refused_up_front_and_sample_is_its_default(tmp_path, cli):
    """Over HTTP without the top-k walk the 16 multi-token answer lines need one echo request each
    (minutes per game): `--policy logprob` is refused before anything is sent or written; with no
    --policy such an HTTP model samples."""
    from stratbench.errors import InputError

    with FakeOpenAIServer(canned_text=STRICT[len("```python\n"):]) as server:  # a raw model's continuation
        with pytest.raises(InputError, match="--policy logprob over HTTP .* use --policy sample, or a local model"):
            run_tmgbench(TmgbenchConfig(model="openai-compatible:fake", base_url=server.base_url, policy="logprob",
                                        games="111", seed=1, output_dir=str(tmp_path / "a")))
        assert server.requests == [] and not (tmp_path / "a").exists()
        r = cli("tmgbench", "run", "--model", "openai-compatible:fake", "--base-url", server.base_url,
                "--policy", "logprob", "--games", "111", "--output-dir", str(tmp_path / "b"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--policy sample" in r.stderr, r.stderr
        res = run_tmgbench(TmgbenchConfig(model="openai-compatible:fake", base_url=server.base_url, games="111",
                                          repeats=1, seed=1, no_cache=True, output_dir=str(tmp_path / "c")))
    assert res.summary["policy"] == "sample" and res.summary["strict_parse_rate"] == 1.0


@pytest.mark.parametrize("kw, needle", [
    ({"policy": "choice", "prompting": "CoT"}, "--policy choice scores direct answers only"),
    ({"policy": "logprob", "chat": True}, "with --chat use --policy choice"),
    ({"policy": "maybe"}, "use logprob, choice or sample"),
    ({"timeout": 0.0}, "--timeout must be at least"),
    ({"retries": -1}, "--retries must be at least 0"),
    ({"wait_for_server": -1.0}, "--wait-for-server must be at least 0"),
])
def test_bad_policy_and_runtime_settings_are_refused_before_any_model_loads(tmp_path, kw, needle):
    from stratbench.errors import InputError

    with pytest.raises(InputError, match=needle):
        run_tmgbench(TmgbenchConfig(model="nosuch:thing", games="111", seed=1, output_dir=str(tmp_path), **kw))
    assert not any(tmp_path.iterdir())


def test_runtime_settings_reach_the_model_and_a_resume_takes_them_from_its_command(tmp_path, monkeypatch):
    from stratbench.players.runtime import RuntimeOptions

    seen = []
    real = RuntimeOptions.model_options

    def spy(config, *args, **kwargs):
        opts = real(config, *args, **kwargs)
        seen.append((opts.timeout_s, opts.max_retries, opts.wait_for_server_s))
        return opts

    monkeypatch.setattr(RuntimeOptions, "model_options", spy)
    with FakeOpenAIServer(canned_text=STRICT) as server:
        res = run_tmgbench(TmgbenchConfig(model="openai-compatible:fake", base_url=server.base_url, games="111,444",
                                          repeats=1, seed=1, no_cache=True, timeout=7.5, retries=2, wait_for_server=3.0,
                                          output_dir=str(tmp_path)))
        meta = json.loads((res.folder / "run.json").read_text())
        assert (meta["config"]["timeout"], meta["config"]["retries"], meta["config"]["wait_for_server"]) == (7.5, 2, 3.0)
        run_tmgbench(TmgbenchConfig(timeout=9.0, retries=1), resume_dir=res.folder)
    assert seen == [(7.5, 2, 3.0), (9.0, 1, 3.0)]


class CharTokenizer:
    """The fake server's tokenizer (one character per token), as the top-k walk needs it."""

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def piece(self, token: int) -> str:
        return chr(token)


@pytest.mark.parametrize("scoring", ["topk-walk", "echo", "unsupported", None])
def test_http_logprob_runs_only_with_the_topk_walk(tmp_path, monkeypatch, scoring):
    """`--policy logprob` over HTTP depends on the model's `describe()["multi_token_scoring"]`:
    with "topk-walk" it runs (and is the default policy), with anything else — or no such key — it
    is refused in one line before the result folder exists."""
    import stratbench.models as models
    from stratbench.errors import InputError
    from stratbench.models.openai_api import OpenAICompatibleModel

    def opener(spec, options=None, *, no_cache=False, cache_path=None):
        m = OpenAICompatibleModel("openai-compatible", "fake", base_url=options.base_url, tokenizer=CharTokenizer())
        described = m.describe()
        if scoring != "topk-walk":  # the same model, describing another way (or none)
            described.pop("multi_token_scoring", None)
            if scoring is not None:
                described["multi_token_scoring"] = scoring
            monkeypatch.setattr(m, "describe", lambda: dict(described))
        return m

    monkeypatch.setattr(models, "open_model", opener)
    with FakeOpenAIServer() as server:
        cfg = dict(model="openai-compatible:fake", base_url=server.base_url, games="111", seed=1, no_cache=True,
                   output_dir=str(tmp_path / "out"))
        if scoring != "topk-walk":
            with pytest.raises(InputError, match="--policy logprob over HTTP needs the top-k walk"):
                run_tmgbench(TmgbenchConfig(policy="logprob", **cfg))
            assert server.requests == [] and not (tmp_path / "out").exists()
            res = run_tmgbench(TmgbenchConfig(repeats=1, max_tokens=8, **cfg))  # no --policy: sample
            assert res.summary["policy"] == "sample"
            return
        for policy in ("logprob", None):  # the walk makes logprob the default too
            res = run_tmgbench(TmgbenchConfig(policy=policy, **cfg))
            (rec,) = read_jsonl(res.folder / "answers.jsonl")
            assert (rec["status"], rec["policy"], res.summary["policy"]) == ("parsed", "logprob", "logprob")
            assert sum(rec["distribution"].values()) == pytest.approx(1.0) and 0 < rec["label_mass"] <= 1
            assert res.n_errors == 0


def test_chat_template_is_for_http_models_only(tmp_path):
    from stratbench.errors import InputError

    with pytest.raises(InputError, match="--chat-template applies to OpenAI-compatible HTTP models"):
        run_tmgbench(TmgbenchConfig(model="gguf:nosuch.gguf", chat_template="x.gguf", games="111", seed=1,
                                    output_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())
