"""The Nash-gap suite end to end through the library: determinism, files, metrics, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.nashgap.players import Agent, Decision, DecisionRequest, RandomAgent
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

VOLATILE = ("latency_s",)


def strip(records):
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]


def run(tmp_path: Path, **kw):
    kw.setdefault("llm_type", "random")
    cfg = NashgapConfig(output_dir=str(tmp_path), **kw)
    return run_nashgap(cfg)


def test_same_seed_same_results_any_worker_count(tmp_path):
    a = run(tmp_path / "a", num_games=12, num_trials=6, seed=42, llm_type="random")
    b = run(tmp_path / "b", num_games=12, num_trials=6, seed=42, llm_type="random",
            parallel=True, num_workers=8)
    ra = read_jsonl(a.folder / "trials.jsonl")
    rb = read_jsonl(b.folder / "trials.jsonl")
    assert len(ra) == 72
    assert strip(ra) == strip(rb)
    assert a.summaries == b.summaries
    games_a = json.loads((a.folder / "games.json").read_text())
    games_b = json.loads((b.folder / "games.json").read_text())
    assert games_a == games_b
    c = run(tmp_path / "c", num_games=12, num_trials=6, seed=43, llm_type="random")
    assert strip(read_jsonl(c.folder / "trials.jsonl")) != strip(ra)


def test_combined_folder_layout_and_records(tmp_path):
    res = run(tmp_path, num_games=5, num_trials=3, seed=1, llm_type="random", combined=True)
    assert res.folder.name.startswith("pure_and_mixed_")
    names = sorted(p.name for p in res.folder.iterdir())
    assert names == ["games.json", "run.json", "summary_mixed_strategy.json",
                     "summary_pure_actions.json", "trials_mixed_strategy.jsonl",
                     "trials_pure_actions.jsonl"]
    pure = read_jsonl(res.folder / "trials_pure_actions.jsonl")
    mixed = read_jsonl(res.folder / "trials_mixed_strategy.jsonl")
    assert {r["mode"] for r in pure} == {"pure"} and {r["mode"] for r in mixed} == {"mixed"}
    for r in pure:
        assert isinstance(r["llm_decision"], int)
        for key in ("game_id", "trial_id", "llm_value", "best_response_value", "nash_gap",
                    "exploitability", "status", "raw_response", "latency_s"):
            assert key in r
    for r in mixed:
        assert len(r["llm_decision"]) == 3 and abs(sum(r["llm_decision"]) - 1) < 1e-12
    meta = json.loads((res.folder / "run.json").read_text())
    assert meta["suite"] == "nashgap" and meta["status"] == "finished"
    assert meta["config"]["seed"] == 1 and meta["config"]["combined"] is True
    assert meta["versions"]["numpy"] and meta["start_time"] and meta["end_time"]
    assert "commit" in meta["git"]
    summary = json.loads((res.folder / "summary_pure_actions.json").read_text())
    for key in ("num_games", "num_trials_per_game", "total_trials", "mean_nash_gap",
                "median_nash_gap", "std_nash_gap", "min_nash_gap", "max_nash_gap",
                "mean_llm_value", "mean_br_value", "mean_exploitability",
                "mean_exploitability_ci95", "mean_exploitability_normalized",
                "parse_failure_rate", "error_rate", "status_counts", "n_games"):
        assert key in summary, key
    assert summary["total_trials"] == 15 and summary["num_games"] == 5


def test_overwrite_and_unique_names(tmp_path):
    a = run(tmp_path, num_games=2, num_trials=1, seed=1, combined=True, overwrite=True)
    b = run(tmp_path, num_games=2, num_trials=1, seed=2, combined=True, overwrite=True)
    assert a.folder == b.folder == tmp_path / "pure_and_mixed_latest"
    assert json.loads((b.folder / "run.json").read_text())["config"]["seed"] == 2
    folders = {run(tmp_path, num_games=1, num_trials=1, seed=s).folder for s in range(4)}
    assert len(folders) == 4  # started within the same second, still distinct


def test_stored_equilibria_are_exact(tmp_path):
    res = run(tmp_path, num_games=30, num_trials=1, seed=7, num_rows=4, num_cols=5,
              payoff_min=-50, payoff_max=50)
    for g in json.loads((res.folder / "games.json").read_text()):
        a = np.array(g["payoff_matrix"])
        p = np.array(g["nash_equilibrium_row"])
        q = np.array(g["nash_equilibrium_col"])
        assert abs(p.sum() - 1) <= 1e-12 and abs(q.sum() - 1) <= 1e-12
        assert p.min() >= 0 and q.min() >= 0
        v = g["value"]
        assert abs(p @ a @ q - v) <= 1e-9
        assert (a @ q).max() - v <= 1e-9  # no row deviation gains
        assert v - (p @ a).min() <= 1e-9  # no column deviation gains
        assert np.array_equal(np.round(a, 2), a)  # shown precision is the game's precision


@pytest.mark.parametrize("mode", [{"combined": False}, {"mixed_strategy": True}])
def test_nash_agent_unexploitable_random_exploitable(tmp_path, mode):
    nash = run(tmp_path / "n", num_games=40, num_trials=5, seed=3, llm_type="nash", **mode)
    rnd = run(tmp_path / "r", num_games=40, num_trials=5, seed=3, llm_type="random", **mode)
    (sn,) = nash.summaries.values()
    (sr,) = rnd.summaries.values()
    assert abs(sn["mean_exploitability"]) <= 1e-9
    assert abs(sn["mean_nash_gap"]) <= 1e-9
    assert sr["mean_exploitability"] > 0.5
    lo, hi = sr["mean_exploitability_ci95"]
    assert 0 < lo < sr["mean_exploitability"] < hi


def test_nash_gap_blind_in_mixed_2x2_but_exploitability_is_not(tmp_path):
    # Every action is a best response to a fully mixed Nash opponent: gap 0 for any pure play.
    res = run(tmp_path, num_games=20, num_trials=4, seed=5, bucket="2x2_lowVar_mixed",
              llm_type="first-action")
    (s,) = res.summaries.values()
    assert abs(s["mean_nash_gap"]) < 1e-9
    assert s["mean_exploitability"] > 1.0


def test_buckets_recorded(tmp_path):
    res = run(tmp_path, num_games=4, num_trials=1, seed=9, bucket="4x4_highVar_pure",
              llm_type="maximin-pure")
    games = json.loads((res.folder / "games.json").read_text())
    assert all(g["bucket"] == "4x4_highVar_pure" and g["saddle_point"] for g in games)
    assert all(g["num_rows"] == 4 and g["seed"] == 9 for g in games)
    (s,) = res.summaries.values()
    # maximin-pure is optimal when the equilibrium is a saddle point
    assert abs(s["mean_exploitability"]) < 1e-9


class FlakyAgent(Agent):
    """Answers through text like a model: some good answers, some garbage, some failures."""

    name = "flaky"

    async def decide(self, request: DecisionRequest) -> Decision:
        from stratbench.parsing import parse_action

        k = request.trial_id % 3
        if k == 2:
            return Decision("error", error="HTTP 500 after 3 retries")
        text = "I choose 1" if k == 0 else "no idea, sorry"
        p = parse_action(text, request.labels)
        if p.ok:
            return Decision("parsed", action=p.action, raw_response=text)
        return Decision("parse_failed", raw_response=text, error=p.error)


def test_failures_are_counted_not_fabricated(tmp_path):
    cfg = NashgapConfig(output_dir=str(tmp_path), num_games=4, num_trials=3, seed=2, llm_type="random")
    res = run_nashgap(cfg, agent=FlakyAgent())
    recs = read_jsonl(res.folder / "trials.jsonl")
    (s,) = res.summaries.values()
    assert s["status_counts"] == {"ok": 0, "parsed": 4, "parse_failed": 4, "error": 4}
    assert s["parse_failure_rate"] == pytest.approx(1 / 3)
    assert s["error_rate"] == pytest.approx(1 / 3)
    assert res.n_errors == 4
    failed = [r for r in recs if r["status"] != "parsed"]
    assert all(r["llm_decision"] is None and r["nash_gap"] is None and r["policy"] is None
               for r in failed)
    parsed = [r for r in recs if r["status"] == "parsed"]
    assert all(r["llm_decision"] == 1 for r in parsed)
    # statistics only over parsed trials: the gap of always playing action 1
    gaps = [r["nash_gap"] for r in parsed]
    assert s["mean_nash_gap"] == pytest.approx(np.mean(gaps))


SLOW_SCRIPT = """
import asyncio, sys
from stratbench.suites.nashgap.players import RandomAgent
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

class Slow(RandomAgent):
    async def decide(self, request):
        await asyncio.sleep(0.01)
        return await super().decide(request)

cfg = NashgapConfig(output_dir=sys.argv[1], num_games=20, num_trials=10, seed=11, llm_type="random",
                    combined=True, parallel=True, num_workers=3)
if len(sys.argv) > 2:
    run_nashgap(cfg, agent=Slow(), resume_dir=sys.argv[2])
else:
    run_nashgap(cfg, agent=Slow())
"""


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(SLOW_SCRIPT)
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(script), str(out)])
    deadline = time.time() + 60
    trials = None
    while time.time() < deadline:
        found = list(out.glob("*/trials_pure_actions.jsonl"))
        if found and found[0].stat().st_size > 0 and len(found[0].read_text().splitlines()) >= 100:
            trials = found[0]
            break
        time.sleep(0.02)
    assert trials is not None, "run did not start writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    folder = trials.parent
    n_before = len(read_jsonl(trials))
    assert 0 < n_before < 200
    # a torn half-record, as a kill in the middle of a write leaves it
    with open(trials, "a") as fh:
        fh.write('{"game_id": 19, "trial_id"')
    done = subprocess.run([sys.executable, str(script), str(out), str(folder)], timeout=120)
    assert done.returncode == 0
    full = tmp_path / "full"
    subprocess.run([sys.executable, str(script), str(full)], timeout=120, check=True)
    (ref,) = list(full.iterdir())
    for name in ("trials_pure_actions.jsonl", "trials_mixed_strategy.jsonl"):
        assert strip(read_jsonl(folder / name)) == strip(read_jsonl(ref / name))
    for name in ("summary_pure_actions.json", "summary_mixed_strategy.json", "games.json"):
        assert json.loads((folder / name).read_text()) == json.loads((ref / name).read_text())
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "finished" and meta["resumed_at"]


def test_order_rotations_map_back_and_measure_position_bias(tmp_path):
    first = run(tmp_path / "f", num_games=6, num_trials=3, seed=4, llm_type="first-action",
                order_rotations=3)
    recs = read_jsonl(first.folder / "trials.jsonl")
    # trial t shows rotation t % 3; the first listed row is original row t % 3
    assert [r["rotation"] for r in recs[:3]] == [0, 1, 2]
    assert [r["llm_decision"] for r in recs[:3]] == [0, 1, 2]
    (s,) = first.summaries.values()
    assert s["position_bias"] == pytest.approx(1 - 1 / 3)
    # averaged over rotations, "always first" becomes uniform play
    games = json.loads((first.folder / "games.json").read_text())
    from stratbench.suites.nashgap.metrics import zero_sum_metrics

    uniform = [zero_sum_metrics(np.array(g["payoff_matrix"]), np.ones(3) / 3,
                                np.array(g["nash_equilibrium_col"]), g["value"]).exploitability
               for g in games]
    assert s["mean_mixture_exploitability"] == pytest.approx(np.mean(uniform))
    # an equilibrium player stays unexploitable under every presentation order
    nash = run(tmp_path / "n", num_games=6, num_trials=3, seed=4, llm_type="nash",
               order_rotations=3, mixed_strategy=True)
    (sn,) = nash.summaries.values()
    assert abs(sn["mean_exploitability"]) < 1e-9


# -- games files: shown at the precision they have, the game shown is the game scored ---------------


class PromptRecorder(RandomAgent):
    """A random player that keeps every prompt it is shown."""

    def __init__(self) -> None:
        self.prompts: dict[int, str] = {}

    async def decide(self, request: DecisionRequest) -> Decision:
        self.prompts[request.game_id] = request.prompt
        return await super().decide(request)


def _games_file(tmp_path: Path, matrices) -> Path:
    p = tmp_path / "games.json"
    p.write_text(json.dumps([{"payoff_matrix": m} for m in matrices]))
    return p


def test_games_file_shown_at_its_own_precision(tmp_path):
    f = _games_file(tmp_path, [[[1.125, -0.5], [0.25, 2]], [[1, -1], [-1, 1]]])
    agent = PromptRecorder()
    res = run_nashgap(NashgapConfig(games_file=str(f), num_trials=1, seed=3, output_dir=str(tmp_path / "o")),
                      agent=agent)
    # three decimals where the file has three (never "1.12"), none for whole numbers
    assert "0 | 1.125 | -0.500\n" in agent.prompts[0] and "1 | 0.250 |  2.000\n" in agent.prompts[0]
    assert "1.12 " not in agent.prompts[0]
    assert "0 |  1 | -1\n" in agent.prompts[1] and "1.00" not in agent.prompts[1]
    games = json.loads((res.folder / "games.json").read_text())
    assert games[0]["payoff_matrix"] == [[1.125, -0.5], [0.25, 2.0]]  # scored at full precision
    meta = json.loads((res.folder / "run.json").read_text())
    assert meta["config"]["decimals"] is None and meta["config"]["num_games"] == 2


def test_games_file_with_decimals_is_rounded_and_scored_as_shown(tmp_path):
    f = _games_file(tmp_path, [[[1.125, -0.5], [0.25, 2]], [[1 / 3, 0], [0, 1]]])
    agent = PromptRecorder()
    res = run_nashgap(NashgapConfig(games_file=str(f), decimals=1, num_trials=1, seed=3,
                                    output_dir=str(tmp_path / "o")), agent=agent)
    games = json.loads((res.folder / "games.json").read_text())
    assert [g["payoff_matrix"] for g in games] == [[[1.1, -0.5], [0.2, 2.0]], [[0.3, 0.0], [0.0, 1.0]]]
    assert "1.1 | -0.5" in agent.prompts[0] and "0.3 | 0.0" in agent.prompts[1]
    recs = read_jsonl(res.folder / "trials.jsonl")
    first = next(r for r in recs if r["game_id"] == 1)
    # the best response value is the rounded game's: 0.3 × 0.769... (the solved equilibrium), not 1/3's
    from stratbench.solvers.zerosum import solve_zero_sum

    assert first["best_response_value"] == pytest.approx(solve_zero_sum(np.array([[0.3, 0], [0, 1]])).value)


def test_games_file_beyond_ten_decimals_is_refused_before_any_folder(tmp_path):
    f = _games_file(tmp_path, [[[1, 0], [0, 1]], [[1 / 3, 0], [0, 1]]])
    with pytest.raises(InputError, match=r"game 1: payoff 0\.333.*more than 10 decimals.*--decimals N"):
        run_nashgap(NashgapConfig(games_file=str(f), llm_type="random", output_dir=str(tmp_path / "o")))
    assert not (tmp_path / "o").exists()


def test_games_file_without_seed_draws_and_records_one(tmp_path):
    f = _games_file(tmp_path, [[[1, -1], [-1, 1]]] * 3)
    seeds = set()
    for k in range(3):
        res = run_nashgap(NashgapConfig(games_file=str(f), num_trials=2, llm_type="random",
                                        output_dir=str(tmp_path / f"o{k}")))
        cfg = json.loads((res.folder / "run.json").read_text())["config"]
        assert cfg["num_games"] == 3 and cfg["llm_seed"] == cfg["seed"]
        seeds.add(cfg["seed"])
    assert len(seeds) == 3 and 0 not in seeds  # fresh each time, never a silent 0
    with pytest.raises(InputError, match="--shard 1/2 needs --seed"):
        run_nashgap(NashgapConfig(games_file=str(f), shard="1/2", llm_type="random", output_dir=str(tmp_path / "s")))


def test_generated_games_use_the_originals_range_and_two_decimals(tmp_path):
    res = run(tmp_path, num_games=30, num_trials=1, seed=4)
    cfg = json.loads((res.folder / "run.json").read_text())["config"]
    assert (cfg["payoff_min"], cfg["payoff_max"], cfg["decimals"]) == (-100.0, 100.0, 2)
    a = np.array([g["payoff_matrix"] for g in json.loads((res.folder / "games.json").read_text())])
    assert a.min() < -50 and a.max() > 50 and np.array_equal(np.round(a, 2), a)


def test_resume_refuses_bad_runtime_flags(tmp_path):
    res = run(tmp_path, num_games=2, num_trials=1, seed=4)
    with pytest.raises(InputError, match="--max-concurrency must be at least 1"):
        run_nashgap(NashgapConfig(max_concurrency=0), resume_dir=res.folder)


def test_a_broken_games_json_is_one_line_on_resume_and_merge(tmp_path):
    from stratbench.suites.nashgap.run import merge_shards

    shards = [run(tmp_path / "s", num_games=4, num_trials=1, seed=4, shard=f"{i}/2").folder for i in (1, 2)]
    games = shards[1] / "games.json"
    games.write_text(games.read_text()[:40])
    with pytest.raises(InputError, match=r"games\.json: invalid JSON"):
        run_nashgap(NashgapConfig(), resume_dir=shards[1])
    (tmp_path / "m").mkdir()
    with pytest.raises(InputError, match=r"games\.json: invalid JSON"):
        merge_shards(shards, tmp_path / "m")
    games.write_text('[{"game_id": 0}]')
    with pytest.raises(InputError, match=r"games\.json: not the games\.json of a Nash-gap run"):
        run_nashgap(NashgapConfig(), resume_dir=shards[1])


def test_a_price_table_nested_too_deep_is_one_line(tmp_path):
    from stratbench.suites.nashgap.config import load_price_table

    p = tmp_path / "prices.json"
    p.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    with pytest.raises(InputError, match="--price-table"):
        load_price_table(str(p))
    p.write_text('{"random": {"input_per_million": true, "output_per_million": 1}}')
    with pytest.raises(InputError, match="--price-table"):
        load_price_table(str(p))
