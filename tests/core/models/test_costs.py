"""What a hosted run costs: `--dry-run` (the plan, no request) and `--max-cost` (a clean, resumable
stop), against the fake Anthropic Messages API (tests/helpers/fake_anthropic_server.py).

* The dry run plays the command with a model that makes no request: the calls it counts are the
  requests the real run makes, its output column is the requests' whole budget, its prompt tokens
  the text at about four characters a token; no key is needed, no folder and no cache entry stays.
* ``--max-cost`` stops before a call whose worst case would pass the ceiling, as Ctrl-C stops
  (exit 3, the resume command named); the resumed run makes exactly the requests the stopped one
  did not, and scores what an uninterrupted run scores.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from fake_anthropic_server import FakeAnthropicServer
from fake_openai_server import FakeOpenAIServer
from run_records import unfinish

from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, LanguageModel, ScoreRequest
from stratbench.models.cache import request_key
from stratbench.models.costs import DryRunModel, approx_tokens, cost_session, load_prices
from stratbench.models.prices import SHIPPED_PRICES

CLAUDE = "anthropic:claude-3-5-sonnet-20241022"


class _Formatted(FakeAnthropicServer):
    """Answers as a model that follows each prompt's format: ToM's ``Option: <J, F or B>`` with the
    first option, every other prompt ``Action: 1`` (so no ToM answer is asked again)."""

    def _answer(self, body):
        last = body["messages"][-1]["content"]
        m = re.search(r"Option: <(\w+)", last if isinstance(last, str) else json.dumps(last))
        self.text = f"Option: {m.group(1)}" if m else "Action: 1"
        return super()._answer(body)


def _planned(stdout: str) -> tuple[int, int, int]:
    """(calls, prompt tokens, output budget) of the plan's per-model total line."""
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith(CLAUDE) and "(all runs)" in ln]
    nums = re.findall(r"\d[\d,]*", line.split("(all runs)")[1])
    return int(nums[0].replace(",", "")), int(nums[1].replace(",", "")), int(nums[2].replace(",", ""))


def _scores(folder: Path) -> dict[tuple[str, str], object]:
    card = json.loads(next(folder.glob("scorecard_*/scorecard.json")).read_text())
    return {(c["suite"], c["player"]): c.get("score") for c in card["cells"]}


def test_the_dry_run_is_the_real_runs_calls_and_max_cost_stops_and_resumes(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    scratch = tmp_path / "tmp"  # the command's own temp folder: another run's scratch folder is not seen
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    args = ("scorecard", "--model", CLAUDE, "--budget", "smoke", "--no-cache")
    with _Formatted() as s:
        r = cli(*args, "--base-url", s.base_url, "--dry-run", "--output-dir", str(tmp_path / "dry"))
        assert r.returncode == 0, r.stderr
        assert s.requests == [] and not (tmp_path / "dry").exists()  # no request, no key needed, no folder
        assert not list(scratch.iterdir())  # its scratch folder (stratbench-dry-run-*) removed
        calls, tokens_in, budget = _planned(r.stdout)
        assert "no request was made" in r.stdout and re.search(r"total: at most \d+\.\d\d USD", r.stdout)
        for suite in ("nashgap/run_2x2_lowVar_pure", "tmgbench", "chbench", "tom"):  # one line per run
            assert re.search(rf"^{re.escape(suite)} · {CLAUDE}\s+\d", r.stdout, re.M), suite
        assert "3, 15 (as of " in r.stdout  # the shipped price, dated

        monkeypatch.setenv("ANTHROPIC_API_KEY", s.key)
        r = cli(*args, "--base-url", s.base_url, "--quiet", "--output-dir", str(tmp_path / "whole"))
        assert r.returncode == 0, r.stderr
        assert len(s.requests) == calls  # every call planned, none more
        assert sum(q.body["max_tokens"] for q in s.requests) == budget
        chars = sum(len(m["content"]) for q in s.requests for m in q.body["messages"]) + \
            sum(len(q.body.get("system", "")) for q in s.requests)
        assert abs(tokens_in - chars / 4) <= 0.02 * tokens_in + len(s.requests)
        whole = _scores(tmp_path / "whole")

        s.requests.clear()
        r = cli(*args, "--base-url", s.base_url, "--quiet", "--output-dir", str(tmp_path / "cut"), "--max-cost", "0.05")
        assert r.returncode == 3, r.stderr
        assert "stopped before a call that could take the cost past --max-cost 0.05 USD" in r.stderr
        assert "continue with: stratbench scorecard --resume" in r.stderr and "Traceback" not in r.stderr
        first = len(s.requests)
        assert 0 < first < calls
        (folder,) = (tmp_path / "cut").glob("scorecard_*")
        r = cli("scorecard", "--resume", str(folder), "--quiet", "--max-cost", "5")
        assert r.returncode == 0, r.stderr
        assert len(s.requests) == calls  # the stopped call and everything after it, nothing twice
        assert _scores(tmp_path / "cut") == whole


def test_a_max_cost_with_no_price_or_no_amount_is_one_line_before_any_folder(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    base = ("nashgap", "--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1",
            "--output-dir", str(out))
    for extra, said in ((("--max-cost", "1"), "--max-cost: no price for openai-compatible:m"),
                        (("--max-cost", "0"), "--max-cost 0: give a positive number"),
                        (("--max-cost", "nan"), "--max-cost nan: give a positive number"),
                        (("--max-cost", "1e-400"), "--max-cost 1e-400: give a positive number"),  # as typed
                        (("--max-cost", "1", "--dry-run"), "give one of them"),
                        (("--dry-run", "--resume", str(tmp_path)), "--dry-run plans a new run")):
        r = cli(*base, *extra)
        assert r.returncode == 2 and said in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert not out.exists()
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1, "output_per_million": 2}}))
    r = cli(*base[:-2], "--dry-run", "--price-table", str(prices), "--num-games", "2", "--num-trials", "1",
            "--policy", "sample")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^openai-compatible:m\s+2\s", r.stdout, re.M) and f"1, 2 ({prices})" in r.stdout


def test_a_model_without_a_price_is_said_so_and_a_local_model_is_free(cli):
    r = cli("tom", "run", "--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1", "--dry-run",
            "--episodes", "1", "--rounds", "2")
    assert r.returncode == 0, r.stderr
    assert "no price: give --price-table" in r.stdout and "total: unknown (no price for openai-compatible:m)" in r.stdout
    r = cli("nashgap", "--dry-run", "--num-games", "2")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^embedded\s+2\s.*free \(runs here\)", r.stdout, re.M) and "total: at most 0.00 USD" in r.stdout


def test_the_dry_model_answers_without_a_call_and_its_reply_is_no_cache_key():
    class Never(LanguageModel):
        spec = "openai:gpt-4o"
        supports_chat = True

        async def score(self, requests):
            raise AssertionError("a dry run called the backend")

        generate = score

    with cost_session(load_prices(None), dry_run=True) as session:
        m = DryRunModel(Never(), session)
        (sc,) = asyncio.run(m.score([ScoreRequest("x" * 40, ("A", "B", "C", "D"))]))
        (g,) = asyncio.run(m.generate([GenerateRequest("y" * 41, max_tokens=7, dry_reply="Option: J")]))
    assert sc.ok and sum(2.718281828459045 ** x for x in sc.logprobs) == pytest.approx(1.0)
    assert g.text == "Option: J" and g.tokens_out == 7
    line = session.plan[("", "openai:gpt-4o")]
    assert (line.calls, line.tokens_in, line.tokens_out) == (2, 10 + 11, 1 + 7) and approx_tokens("y" * 41) == 11
    assert request_key("generate", {}, GenerateRequest("p", dry_reply="Action: 1")) == \
        request_key("generate", {}, GenerateRequest("p"))


def test_the_shipped_prices_are_dated_and_sourced_and_a_users_table_goes_over_them(tmp_path):
    for spec, p in SHIPPED_PRICES.items():
        assert ":" in spec and p.as_of and p.source.startswith("https://") and 0 < p.input_per_million <= p.output_per_million * 1.0 + 1e-9
    f = tmp_path / "p.json"
    f.write_text(json.dumps({CLAUDE: {"input_per_million": 1, "output_per_million": 1},
                             "x:y": {"input_per_million": 2, "output_per_million": 3}}))
    prices = load_prices(str(f))
    assert prices[CLAUDE].input_per_million == 1 and prices["x:y"].output_per_million == 3
    assert prices["openai:gpt-4o"] == SHIPPED_PRICES["openai:gpt-4o"]
    for entry, why in (({"input_per_million": 2}, "has input_per_million"),  # a missing price is not free
                       ({"input_per_million": 1, "output_per_milion": 9}, "has input_per_million, output_per_milion"),
                       ({}, "has no prices"), ({"input_per_million": 1, "output_per_million": -1}, "has a price that")):
        f.write_text(json.dumps({"x:y": entry}))
        with pytest.raises(InputError, match=f"'x:y' {why}"):
            load_prices(str(f))


def test_a_max_cost_stop_needs_no_signal(tmp_path):
    """A command whose caller ignores SIGINT (``nohup``, ``cmd &`` in a script) still stops at
    --max-cost (exit 3, resumable), and a refused key still stops it (exit 2): no signal is sent."""
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True, env=env,
                              timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))

    with _Formatted() as s:
        base = ("nashgap", "--model", CLAUDE, "--base-url", s.base_url, "--num-games", "4", "--num-trials", "2",
                "--quiet")
        r = run(*base, "--output-dir", str(tmp_path / "a"), "--max-cost", "0.0001")
        assert r.returncode == 3 and "--max-cost 0.0001 USD" in r.stderr, r.stderr
        env["ANTHROPIC_API_KEY"] = "sk-ant-WRONG"
        r = run(*base, "--output-dir", str(tmp_path / "b"))
        assert r.returncode == 2 and "HTTP 401" in r.stderr, r.stderr


# ------------------------------------------------------------------ scored calls over HTTP: their requests


class CharTokenizer:
    """The fake OpenAI server's tokenizer (one character a token), for the top-k walk."""

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def piece(self, token: int) -> str:
        return chr(token)


ANSWERS = ("", "A", "B", "A, B", "A, C", "B, C", "A, B, C", "C", "None", "No answer")  # TMGBench-like


@pytest.mark.parametrize("kw", [dict(top_logprobs=5), dict(top_logprobs=0), dict(endpoint="chat"),
                                dict(tokenizer="chars", top_logprobs=20), dict(tokenizer="chars", top_logprobs=2)])
def test_a_scored_call_is_planned_and_guarded_as_the_requests_it_makes(kw):
    """A scored answer set on a completions endpoint takes the top-k request, the top-k walk's
    (one per node) and an echo per answer that needs one: the plan and the --max-cost guard count
    what the backend says it may take (`request_prompts`), which is never fewer than it sends."""
    from fake_openai_server import FakeOpenAIServer
    from model_calls import run

    from stratbench.models.costs import call_bound
    from stratbench.models.openai_api import OpenAICompatibleModel

    if kw.get("tokenizer") == "chars":
        kw = {**kw, "tokenizer": CharTokenizer()}
    answers = ("A", "B") if kw.get("endpoint") == "chat" else ANSWERS
    req = ScoreRequest("Which cells are equilibria?\nAnswer:", answers)
    with FakeOpenAIServer() as s:
        model = OpenAICompatibleModel("openai-compatible", "m", base_url=s.base_url, **kw)
        (res,) = run(model, "score", [req])
        assert res.ok, res.error
        bound = call_bound(model, req)
        assert s.request_count <= bound.requests and bound.tokens_out == bound.requests
        if kw.get("top_logprobs") in (0, 5):  # the top-k (when asked) and an echo for every answer not in it
            assert bound.requests == (kw["top_logprobs"] > 0) + len([a for a in answers if a])
        if kw.get("endpoint") == "chat":
            assert bound.requests == s.request_count == 1
        # the dry run counts the same
        with cost_session({}, dry_run=True) as session:
            asyncio.run(DryRunModel(model, session).score([req]))
        (line,) = session.plan.values()
        assert line.calls == bound.requests and line.tokens_in == bound.tokens_in


def test_a_nashgap_plan_over_http_counts_the_top_k_request_and_every_echo(tmp_path, cli):
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1, "output_per_million": 1}}))
    with FakeOpenAIServer() as s:
        base = ("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "5", "--seed", "3",
                "--price-table", str(prices), "--no-cache")
        r = cli(*base, "--dry-run")
        assert r.returncode == 0, r.stderr
        planned = int(re.search(r"^openai-compatible:m\s+(\d+)\s", r.stdout, re.M).group(1))
        r = cli(*base, "--output-dir", str(tmp_path / "o"), "--quiet")
        assert r.returncode == 0, r.stderr
        assert s.request_count <= planned <= 5 * 4  # at most the top-k request and 3 echoes a game
        assert planned > 5 * 3  # (the top-k request was once left out)


def test_calls_whose_provider_reports_no_usage_count_at_their_worst_case(tmp_path, cli):
    """A server that reports no usage is not free: --max-cost stops the run before the plan's cost
    is reached, and the line says how many calls were counted at their worst case."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    with FakeOpenAIServer(canned_text="Action: 1", fault_rate=1.0, fault_kinds=("usage:null",)) as s:
        base = ("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "30",
                "--num-trials", "1", "--policy", "sample", "--max-tokens", "200", "--price-table", str(prices),
                "--no-cache", "--max-concurrency", "1")
        r = cli(*base, "--dry-run")
        total = float(re.search(r"total: at most ([\d.]+) USD", r.stdout).group(1))
        r = cli(*base, "--output-dir", str(tmp_path / "o"), "--max-cost", str(round(total / 4, 2)))
        assert r.returncode == 3, r.stderr
        assert "calls whose provider reported no usage counted at their worst case" in r.stderr, r.stderr
        assert 0 < s.request_count < 30


def test_a_run_that_ends_past_max_cost_says_so(tmp_path, cli):
    """The guard reserves each call's estimated worst case; prompts that take more tokens than the
    estimate (the fake server counts one a character, four times the estimate) take the cost past
    the ceiling, and the command's last line says so rather than ending as if under it."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 0}}))
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        base = ("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "4",
                "--num-trials", "1", "--policy", "sample", "--price-table", str(prices), "--no-cache",
                "--max-concurrency", "4")
        r = cli(*base, "--dry-run")
        total = float(re.search(r"total: at most ([\d.]+) USD", r.stdout).group(1))
        r = cli(*base, "--output-dir", str(tmp_path / "o"), "--max-cost", f"{total * 1.05:.4f}")
    last = r.stderr.strip().splitlines()[-1]
    if r.returncode == 0:
        assert last.startswith("warning: the cost went past --max-cost") and "the worst case estimated before each" in last, r.stderr
    else:
        assert r.returncode == 3 and "past it: the calls' reported tokens came to more than the worst case" in last, r.stderr


def test_the_price_table_a_run_or_suite_file_names_prices_its_plan_and_its_resume(tmp_path, cli):
    """A resumed run's --max-cost prices with the table its saved config names, and a suite file's
    [nashgap] price_table prices its --dry-run: no "no price" where the runs price with it."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        r = cli("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "6",
                "--num-trials", "1", "--policy", "sample", "--price-table", str(prices), "--no-cache",
                "--max-concurrency", "1", "--output-dir", str(tmp_path / "o"), "--max-cost", "0.5")
        assert r.returncode == 3, r.stderr
        (folder,) = (tmp_path / "o").iterdir()
        r = cli("nashgap", "--resume", str(folder), "--max-cost", "50", "--quiet")
        assert r.returncode == 0, r.stderr
        suite = tmp_path / "suite.toml"
        suite.write_text(f'models = [{{ spec = "openai-compatible:m", base_url = "{s.base_url}" }}]\nseeds = [1]\n'
                         f'[nashgap]\nnum_games = 2\nnum_trials = 1\npolicy = "sample"\nprice_table = "{prices}"\n')
        r = cli("suite", "run", str(suite), "--dry-run")
        assert r.returncode == 0, r.stderr
        assert "no price" not in r.stdout and f"1000, 1000 ({prices})" in r.stdout, r.stdout


def _records(folder: Path) -> dict[tuple[object, ...], dict[str, object]]:
    """A run's records by their unit, without what a call's timing changes."""
    out = {}
    for line in (folder / "trials.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec.pop("latency_s", None)
        out[(rec["game_id"], rec["trial_id"], rec["rotation"])] = rec
    return out


def test_a_ceiling_below_the_calls_in_flight_waits_for_them_and_stops_only_when_one_call_cannot_fit(tmp_path, cli):
    """--max-cost below "--max-concurrency × one call's worst case" (here about 2.5 games' worst case,
    8 calls at once): a call that would pass the ceiling waits for the calls in flight to settle
    instead of stopping the run before any request; the run stops when a call cannot fit with none
    in flight. Each resume makes progress, and the records are an unlimited run's."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    with FakeOpenAIServer() as s:
        base = ("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "4", "--seed", "1",
                "--num-trials", "1", "--price-table", str(prices), "--no-cache", "--quiet")
        r = cli(*base, "--dry-run")
        each = float(re.search(r"total: at most ([\d.]+) USD", r.stdout).group(1)) / 4
        r = cli(*base, "--output-dir", str(tmp_path / "whole"))
        assert r.returncode == 0, r.stderr
        whole = _records(next((tmp_path / "whole").iterdir()))
        r = cli(*base, "--output-dir", str(tmp_path / "cut"), "--max-cost", f"{2.5 * each:.4f}")
        assert r.returncode == 3 and "stopped before a call" in r.stderr, r.stderr
        (folder,) = (tmp_path / "cut").iterdir()
        done = _records(folder)
        assert 0 < len(done) < 4 and all(done[k] == whole[k] for k in done)
        for _ in range(4):
            r = cli("nashgap", "--resume", str(folder), "--max-cost", f"{2.5 * each:.4f}", "--quiet")
            assert r.returncode in (0, 3) and "Traceback" not in r.stderr, r.stderr
            now = _records(folder)
            assert len(now) > len(done)  # every resume makes progress
            done = now
            if r.returncode == 0:
                break
        assert done == whole


def test_a_cached_re_run_costs_nothing_under_any_ceiling(tmp_path, cli):
    """Every answer in the response cache (a re-run of a finished run, the same seed): --max-cost
    below one call's worst case does not stop it — the cache answers above the guard, and a hit
    reserves nothing. (An unseeded nashgap draws other games each run: those are new calls.)"""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    with FakeOpenAIServer() as s:
        base = ("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--num-games", "3", "--seed", "4",
                "--num-trials", "1", "--price-table", str(prices), "--quiet")
        r = cli(*base, "--output-dir", str(tmp_path / "first"))
        assert r.returncode == 0, r.stderr
        before = s.request_count
        r = cli(*base, "--output-dir", str(tmp_path / "again"), "--max-cost", "0.0001")
        assert r.returncode == 0, r.stderr
        assert s.request_count == before
    first, again = (_records(next((tmp_path / d).iterdir())) for d in ("first", "again"))
    assert len(again) == 3 and {k: {**v, "usage": None} for k, v in again.items()} == \
        {k: {**v, "usage": None} for k, v in first.items()}


def _cut_at_max_cost(cli, cwd: Path, *args: str) -> Path:
    r = cli(*args, "--output-dir", "o", "--max-cost", "0.5", cwd=cwd)
    assert r.returncode == 3, r.stderr
    (folder,) = (cwd / "o").iterdir()
    return folder


def test_a_scorecard_saves_its_price_table_and_its_resume_prices_with_it(tmp_path, cli):
    """scorecard --price-table p.json (relative) saves the table, absolute, with the scorecard and
    its Nash-gap runs (which price their cost with it: model_cost_usd); a resume from another
    folder with its own --max-cost prices with it, and another table there is one line."""
    from fake_openai_server import FakeOpenAIServer

    start, other = tmp_path / "start", tmp_path / "other"
    start.mkdir()
    other.mkdir()
    prices = start / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    (other / "q.json").write_text(prices.read_text())
    with FakeOpenAIServer() as s:
        folder = _cut_at_max_cost(cli, start, "scorecard", "--model", "openai-compatible:m", "--base-url", s.base_url,
                                  "--budget", "smoke", "--no-cache", "--no-report", "--quiet", "--price-table", "p.json")
        meta = json.loads((folder / "suite_metadata.json").read_text())
        assert meta["config"]["price_table"] == str(prices)
        runs = [json.loads(p.read_text()) for p in folder.glob("nashgap/*/*/run.json")]
        assert runs and all(r["config"]["price_table"] == str(prices) for r in runs)
        assert all("model_cost_usd" in r["totals"] for r in runs if r["status"] == "finished")
        r = cli("scorecard", "--resume", str(folder), "--price-table", "q.json", "--max-cost", "500", cwd=other)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"prices its cost with {prices}" in r.stderr, r.stderr
        r = cli("scorecard", "--resume", str(folder), "--max-cost", "500", "--no-report", "--quiet", cwd=other)
        assert r.returncode == 0, r.stderr


def test_a_scorecard_whose_saved_price_table_is_gone_resumes_with_another(tmp_path, cli):
    """The scorecard's table moved away: its resume says so and takes --price-table in its place,
    saved from then on; its finished Nash-gap runs (which named the gone table) stand (fuzz 11 A E1:
    'file not found' of a flag not given, and the saved path overrode a new one: never finished)."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1, "output_per_million": 1}}))
    new = tmp_path / "new.json"
    new.write_text(prices.read_text())
    with FakeOpenAIServer() as s:
        r = cli("scorecard", "--model", "openai-compatible:m", "--base-url", s.base_url, "--budget", "smoke",
                "--no-cache", "--no-report", "--quiet", "--price-table", str(prices), "--max-cost", "0.01",
                "--output-dir", "o", cwd=tmp_path)
        assert r.returncode == 3, r.stderr
        (folder,) = (tmp_path / "o").iterdir()
        runs = [json.loads(p.read_text()) for p in folder.glob("nashgap/*/*/run.json")]
        assert any(x["status"] == "finished" and x["config"]["price_table"] == str(prices) for x in runs)
        prices.unlink()
        r = cli("scorecard", "--resume", str(folder), "--no-report", "--quiet", cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"the price table saved with the scorecard ({prices}) is gone; give it" in r.stderr, r.stderr
        r = cli("scorecard", "--resume", str(folder), "--price-table", str(new), "--max-cost", "500", "--no-report",
                "--quiet", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["config"]["price_table"] == str(new) and meta["status"] == "finished"


def test_relative_file_settings_are_saved_absolute_and_a_suite_files_are_its_folders(tmp_path, cli):
    """--price-table p.json and --chat-template t.jinja are saved absolute: the run resumes from
    another folder (and --price-table naming the same file by another path is taken). A suite
    file's [nashgap] price_table is read from the file's folder, not the shell's."""
    from fake_openai_server import FakeOpenAIServer

    start, other = tmp_path / "start", tmp_path / "other"
    start.mkdir()
    other.mkdir()
    prices = start / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    (start / "t.jinja").write_text("{% for m in messages %}{{ m['content'] }}\n{% endfor %}")
    with FakeOpenAIServer() as s:
        folder = _cut_at_max_cost(cli, start, "nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url,
                                  "--num-games", "6", "--num-trials", "1", "--chat", "--policy", "choice",
                                  "--chat-template", "t.jinja", "--price-table", "p.json", "--no-cache",
                                  "--max-concurrency", "1", "--quiet")
        config = json.loads((folder / "run.json").read_text())["config"]
        assert (config["price_table"], config["chat_template"]) == (str(prices), str(start / "t.jinja"))
        r = cli("nashgap", "--resume", str(folder), "--price-table", "../start/p.json", "--max-cost", "500", "--quiet",
                cwd=other)
        assert r.returncode == 0, r.stderr
        assert json.loads((folder / "run.json").read_text())["status"] == "finished"

        (start / "suite.toml").write_text(
            f'models = [{{ spec = "openai-compatible:m", base_url = "{s.base_url}" }}]\nseeds = [1]\n'
            '[nashgap]\nnum_games = 2\nnum_trials = 1\npolicy = "sample"\nprice_table = "p.json"\nno_cache = true\n')
        r = cli("suite", "run", "../start/suite.toml", "--dry-run", cwd=other)
        assert r.returncode == 0, r.stderr
        assert "no price" not in r.stdout and f"1000, 1000 ({prices})" in r.stdout, r.stdout
        r = cli("suite", "run", "../start/suite.toml", "--output-dir", "s", "--no-report", "--quiet", "--max-cost", "500",
                cwd=other)
        assert r.returncode == 0, r.stderr
        (run,) = (other / "s").glob("suite_*/nashgap/*/*/run.json")
        assert json.loads(run.read_text())["config"]["price_table"] == str(prices)


def test_a_price_key_that_is_the_spec_but_for_whitespace_is_named(tmp_path, cli):
    """A price table whose key has a trailing space: the "no price" line (--max-cost) and the plan
    (--dry-run) name the near-miss key instead of asking for a --price-table that was given."""
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m ": {"input_per_million": 1, "output_per_million": 1}}))
    base = ("nashgap", "--model", "openai-compatible:m", "--base-url", "http://127.0.0.1:9/v1", "--num-games", "1",
            "--price-table", str(prices), "--output-dir", str(tmp_path / "o"))
    r = cli(*base, "--max-cost", "1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "the table has 'openai-compatible:m '" in r.stderr and "give one with" not in r.stderr, r.stderr
    r = cli(*base, "--dry-run")
    assert r.returncode == 0 and "no price: the table has 'openai-compatible:m '" in r.stdout, r.stdout


def test_a_run_whose_saved_price_table_is_gone_resumes_with_another(tmp_path, cli):
    """The table a run priced its cost with, moved away (a results folder copied to another
    machine): the resume says so and takes --price-table in its place (fuzz 10 A E1: the saved
    path overrode the flag, and the run could never be finished)."""
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1, "output_per_million": 2}}))
    with FakeOpenAIServer(canned_text="Action: 1") as s:
        r = cli("nashgap", "--model", "openai-compatible:m", "--base-url", s.base_url, "--policy", "sample",
                "--num-games", "2", "--num-trials", "1", "--seed", "1", "--price-table", str(prices), "--quiet",
                "--output-dir", str(tmp_path / "o"))
        assert r.returncode == 0, r.stderr
        (folder,) = (tmp_path / "o").iterdir()
        trials = unfinish(folder)
        moved = tmp_path / "elsewhere.json"
        prices.rename(moved)
        r = cli("nashgap", "--resume", str(folder), "--base-url", s.base_url, "--quiet")
        assert r.returncode == 2 and "the price table saved with the run" in r.stderr and "is gone" in r.stderr, r.stderr
        other = tmp_path / "other.json"  # another table in its place: 500 times dearer
        other.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 500, "output_per_million": 1000}}))
        moved.unlink()
        r = cli("nashgap", "--resume", str(folder), "--base-url", s.base_url, "--price-table", str(other), "--quiet")
        assert r.returncode == 0, r.stderr
    assert len(trials.read_text().splitlines()) == 2
    # run.json names the table the whole cost is priced with: no mix of the two (fuzz 11 A D2)
    meta = json.loads((folder / "run.json").read_text())
    t = meta["totals"]
    assert meta["config"]["price_table"] == str(other)
    assert t["model_cost_usd"] == pytest.approx((t["model_tokens_in"] * 500 + t["model_tokens_out"] * 1000) / 1e6)
    with FakeOpenAIServer(canned_text="Action: 1") as s:  # and the next resume asks for nothing gone
        r = cli("nashgap", "--resume", str(folder), "--base-url", s.base_url, "--quiet")
        assert r.returncode == 0, r.stderr


def test_an_unfinished_suite_whose_price_table_is_gone_resumes_with_another(tmp_path, cli):
    """A suite file's [nashgap] price table moved away while the suite was unfinished: the resume
    says which table is gone and takes --price-table in its place, as a run's and a scorecard's
    resumes do (fuzz 12 B R1: the flag was taken and ignored, the suite could never be finished)."""
    from fake_openai_server import FakeOpenAIServer

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"openai-compatible:m": {"input_per_million": 1000, "output_per_million": 1000}}))
    new = tmp_path / "new.json"
    new.write_text(prices.read_text())
    with FakeOpenAIServer() as s:
        (tmp_path / "s.toml").write_text(
            f'models = [{{ spec = "openai-compatible:m", base_url = "{s.base_url}" }}]\nseeds = [1, 2]\n'
            '[nashgap]\nnum_games = 3\nnum_trials = 1\npolicy = "sample"\nprice_table = "p.json"\nno_cache = true\n'
            'max_concurrency = 1\n')
        r = cli("suite", "run", "s.toml", "--output-dir", "o", "--no-report", "--quiet", "--max-cost", "0.01",
                cwd=tmp_path)
        assert r.returncode == 3, r.stderr
        (folder,) = (tmp_path / "o").iterdir()
        prices.unlink()
        r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet", cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"[nashgap] section ({prices}) is gone; give it (or another) with --price-table" in r.stderr, r.stderr
        r = cli("suite", "run", "--resume", str(folder), "--price-table", "nothing.json", "--no-report", "--quiet",
                cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--price-table nothing.json" in r.stderr, r.stderr
        assert json.loads((folder / "suite_metadata.json").read_text())["status"] == "running"
        r = cli("suite", "run", "--resume", str(folder), "--price-table", str(new), "--max-cost", "500",
                "--no-report", "--quiet", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert json.loads((folder / "suite_metadata.json").read_text())["status"] == "finished"
    runs = [json.loads(p.read_text()) for p in folder.glob("nashgap/*/*/run.json")]
    assert len(runs) == 2 and all(x["status"] == "finished" for x in runs)
    assert any(x["config"]["price_table"] == str(new) for x in runs)


@pytest.mark.parametrize("flag,wanted", [("report", False), ("no_report", True)])
def test_a_dry_run_writes_no_report_of_its_scratch_folder(flag, wanted):
    """The dry run's folder is thrown away: its report (minutes for a CHBench suite, whose fits are
    recomputed to check them — pass 26 B F6) is never asked for, whatever the command's flag."""
    from stratbench.cli.plan import _dry_run

    seen: dict[str, object] = {}
    _dry_run(lambda **kw: seen.update(kw), {flag: not wanted, "output_dir": "x"}, {})
    assert seen[flag] is wanted and seen["output_dir"] != "x"
