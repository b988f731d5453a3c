"""CHBench repeated play: prompts, the engine, model players under each mechanism, runs, resume,
shards and the level tables."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest

from stratbench.games.normal_form import NormalFormGame
from stratbench.models.base import GenerateResult, LanguageModel, ScoreResult
from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.players import ModelPlayer, ScriptedPlayer, scripted_agent
from stratbench.suites.chbench.prompts import (
    Conversations,
    consultation_prompt,
    decision_prompt,
)
from stratbench.suites.chbench.run import ChbenchConfig, all_matches, merge_shards, run_chbench
from stratbench.suites.chbench.repeated import COL, ROW, PastRound, perspective, play_match

PD = build_catalogue()[0].game  # prisoner's dilemma, A = [[3, 0], [5, 1]]


class FakeLM(LanguageModel):
    """Deterministic model: scores favour `favour`; generation answers from `answers` in turn."""

    def __init__(self, favour: int = 1, answers: list[str | None] | None = None) -> None:
        super().__init__()
        self.favour = favour
        self.answers = answers or ["2"]
        self.score_prompts: list[str] = []
        self.gen_prompts: list[str] = []

    async def score(self, requests):
        out = []
        for r in requests:
            self.score_prompts.append(r.prompt)
            lp = [-5.0] * len(r.continuations)
            lp[self.favour] = -0.01
            out.append(ScoreResult(lp, [1] * len(lp), tokens_in=10))
        return out

    async def generate(self, requests):
        out = []
        for r in requests:
            self.gen_prompts.append(r.prompt)
            a = self.answers[(len(self.gen_prompts) - 1) % len(self.answers)]
            out.append(GenerateResult(a, tokens_in=10, tokens_out=3) if a is not None
                       else GenerateResult(None, error="server down"))
        return out


# ----------------------------------------------------------------------------- prompts


def test_baseline_decision_prompt_follows_figure_6():
    own, opp = PD.payoff_row, PD.payoff_col
    p = decision_prompt(own, opp, 30, 7, "baseline")
    assert p.startswith("Game Rules:\n\nYou are going to play a two-player repeated game of 30 rounds. "
                        "In each round, you have 2 possible actions to choose from: (1, 2), resulting in 4 possible outcomes:")
    assert "[2] If you choose 1 and your opponent chooses 2, you will receive 0 points and your opponent will receive 5 points." in p
    assert "For the No.7 round, please choose just one of the following options by returning only one number from (1, 2)." in p
    assert p.endswith("Your Choice:\n\nYour choice is :")
    assert "Historical" not in p and "Conversations" not in p


def test_memory_prompts_full_and_partial_and_prefix_growth():
    own, opp = PD.payoff_row, PD.payoff_col
    hist = [PastRound(t, t % 2, 0, float(own[t % 2, 0]), float(opp[t % 2, 0])) for t in range(1, 13)]
    full = decision_prompt(own, opp, 30, 13, "memory", hist)
    part = decision_prompt(own, opp, 30, 13, "memory10", hist)
    assert "Round 1: you chose 2 and your opponent chose 1; you received 5 points" in full
    assert "Round 1:" not in part and "Round 2:" not in part and "Round 3:" in part and "Round 12:" in part
    first = decision_prompt(own, opp, 30, 1, "memory", [])
    assert "No rounds have been played yet." in first
    # the part before the query only grows: round t's prompt up to its records is a prefix of t+1's
    a = decision_prompt(own, opp, 30, 12, "memory", hist[:11])
    cut = a.index(".\n\nQuestion:")
    assert full.startswith(a[:cut])
    missing = decision_prompt(own, opp, 30, 2, "memory", [PastRound(1, None, 0, None, None)])
    assert "Round 1: you gave no valid choice and your opponent chose 1; no points were awarded." in missing


def test_chat_prompts_have_conversations_and_review_sections():
    own, opp = PD.payoff_row, PD.payoff_col
    conv = Conversations(before=(("Alex", "What should I do?"), ("Sam", "Defect.")))
    p = decision_prompt(own, opp, 30, 3, "chat", conv=conv)
    assert "Your advisor Sam is highly intelligent" in p and "Alex: What should I do?\nSam: Defect." in p
    cm = decision_prompt(own, opp, 30, 15, "chat_memory", [], Conversations(reviews=(conv.before,)))
    assert "hold a discussion review every 10 rounds" in cm
    assert "After 10 rounds:Alex: What should I do?" in cm and "After 20 rounds:\n\nQuestion:" in cm
    adv = consultation_prompt(own, opp, 30, "chat", [], conv, advisor=True)
    assert "You are Sam, and you are highly intelligent" in adv and adv.endswith("Your response:")
    assert "what would you like to say to him next?" in adv


# ----------------------------------------------------------------------------- engine + players


def test_perspective_puts_own_payoffs_in_rows():
    g = NormalFormGame([[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]])
    v = perspective(g, COL)
    assert v.shape == (3, 2)
    assert v.payoff_row[2, 1] == g.payoff_col[1, 2] and v.payoff_col[2, 1] == g.payoff_row[1, 2]
    assert perspective(g, ROW) is g


def test_engine_records_payoffs_and_scripted_level1_defects_in_pd():
    row = ScriptedPlayer("level-k:1", scripted_agent("level-k:1"))
    col = ScriptedPlayer("random", scripted_agent("random"))
    recs = asyncio.run(play_match(PD, row, col, 20, seed=3))
    assert len(recs) == 20 and all(r["status"] == "complete" for r in recs)
    assert all(r["row_action"] == 1 for r in recs)  # defect is dominant: level 1 always defects
    for r in recs:
        assert r["row_payoff"] == PD.payoff_row[r["row_action"], r["col_action"]]
        assert r["col_payoff"] == PD.payoff_col[r["row_action"], r["col_action"]]
    again = asyncio.run(play_match(PD, row, col, 20, seed=3))
    assert [r["col_action"] for r in again] == [r["col_action"] for r in recs]


def test_model_player_logprob_memory_sees_history_and_stores_policy():
    lm = FakeLM(favour=0)
    p = ModelPlayer("fake", lm, "memory", "logprob")
    opp = ScriptedPlayer("level-k:1", scripted_agent("level-k:1"))
    recs = asyncio.run(play_match(PD, p, opp, 3, seed=1))
    assert [r["row_action"] for r in recs] == [0, 0, 0]  # exact policy puts ~0.99 on action 1
    assert recs[0]["row_policy"][0] > 0.98 and recs[0]["row_status"] == "parsed"
    assert "Round 2: you chose 1 and your opponent chose 2; you received 0 points" in lm.score_prompts[2]


def test_model_player_sample_records_parse_failures_and_errors_without_substitutes():
    lm = FakeLM(answers=["2", "I like turtles", None])
    p = ModelPlayer("fake", lm, "baseline", "sample")
    opp = ScriptedPlayer("random", scripted_agent("random"))
    recs = asyncio.run(play_match(PD, p, opp, 3, seed=1))
    assert [r["row_status"] for r in recs] == ["parsed", "parse_failed", "error"]
    assert [r["row_action"] for r in recs] == [1, None, None]
    assert recs[1]["status"] == "parse_failed" and recs[1]["row_payoff"] is None
    assert recs[1]["row_raw"] == "I like turtles" and recs[2]["status"] == "error"


def test_chat_mechanism_consults_advisor_twice_before_play_and_chat_memory_reviews():
    lm = FakeLM(favour=1, answers=["Hello advisor", "Play 2."])
    p = ModelPlayer("fake", lm, "chat", "logprob")
    recs = asyncio.run(play_match(PD, p, ScriptedPlayer("random", scripted_agent("random")), 2, seed=0))
    assert len(lm.gen_prompts) == 4  # two Q&A exchanges, before round 1 only
    assert [t["speaker"] for t in recs[0]["row_consultation"]] == ["Alex", "Sam", "Alex", "Sam"]
    assert "row_consultation" not in recs[1]
    assert "Alex: Hello advisor\nSam: Play 2." in lm.score_prompts[0]
    lm2 = FakeLM(favour=1, answers=["msg"])
    p2 = ModelPlayer("fake", lm2, "chat_memory", "logprob")
    recs2 = asyncio.run(play_match(PD, p2, ScriptedPlayer("random", scripted_agent("random")), 25, seed=0))
    assert [r["round"] for r in recs2 if "row_consultation" in r] == [11, 21]
    assert len(lm2.gen_prompts) == 8
    assert "Historical Game Records:" in lm2.gen_prompts[0] and "Round 10:" in lm2.gen_prompts[0]
    assert "After 10 rounds:Alex: msg" in lm2.score_prompts[-1] and "After 20 rounds:Alex: msg" in lm2.score_prompts[-1]


# ----------------------------------------------------------------------------- runs


def _cfg(tmp_path, **kw):
    base = dict(models=["level-k:2"], opponents=["random", "poisson:1.5"], rounds=10, games="1,2,8,11",
                bootstrap=5, restarts=3, output_dir=str(tmp_path))
    base.update(kw)
    return ChbenchConfig(**base)


def _strip(recs):
    return [{k: v for k, v in r.items() if not k.endswith("latency_s")} for r in recs]


def test_matches_cover_pairs_and_swap_roles_in_asymmetric_games(tmp_path):
    ms = all_matches(_cfg(tmp_path))
    # pairs: self-play + 2 opponents; 3 symmetric games once, game 8 (asymmetric) twice per non-self pair
    assert len(ms) == 3 * 4 + 2
    assert {(m.row, m.col) for m in ms if m.game.id == 8} == {
        ("level-k:2", "level-k:2"), ("level-k:2", "random"), ("random", "level-k:2"),
        ("level-k:2", "poisson:1.5"), ("poisson:1.5", "level-k:2")}
    assert len({m.seed(0) for m in ms}) == len(ms)


def test_run_writes_tables_fits_and_recovers_scripted_levels(tmp_path):
    folder, s, n_err = run_chbench(_cfg(tmp_path, games="all", rounds=30, bootstrap=0))
    assert n_err == 0
    for f in ("rounds.jsonl", "fit.json", "summary.json", "levels.md", "levels.csv", "utilities_baseline.md",
              "utility_variance.md", "level_distribution.png", "observations_baseline.csv", "run.json"):
        assert (folder / f).is_file(), f
    b = s["mechanisms"]["baseline"]
    assert abs(b["level-k:2"]["level_k_mean_level"] - 2.0) < 0.15
    assert b["random"]["poisson_mean_level"] < 0.15
    assert abs(b["poisson:1.5"]["poisson_lambda"] - 1.5) < 0.5
    fit = json.loads((folder / "fit.json").read_text())
    lk = fit["baseline"]["level-k:2"]["level_k"]
    assert set(lk) >= {"alpha", "epsilon", "level_distribution", "mean_level", "neg_log_likelihood", "k_hat",
                       "per_opponent", "likelihood_improvement_ratio", "kl_consecutive_levels"}
    assert set(lk["per_opponent"]) == {"level-k:2", "random", "poisson:1.5"}
    assert "| level-k:2 |" in (folder / "levels.md").read_text()
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "finished" and meta["totals"]["matches"] == len(all_matches(_cfg(tmp_path, games="all")))


def test_resume_after_a_torn_file_equals_an_uninterrupted_run(tmp_path):
    f1, s1, _ = run_chbench(_cfg(tmp_path / "a"))
    full = read_jsonl(f1 / "rounds.jsonl")
    f2, _, _ = run_chbench(_cfg(tmp_path / "b"))
    recs = read_jsonl(f2 / "rounds.jsonl")
    write_jsonl_atomic(f2 / "rounds.jsonl", recs[:37])  # 3 whole matches + part of the 4th
    with open(f2 / "rounds.jsonl", "a") as fh:
        fh.write('{"match_id": "torn')
    f3, s3, _ = run_chbench(ChbenchConfig(), resume_dir=str(f2))
    assert f3 == f2
    assert _strip(read_jsonl(f2 / "rounds.jsonl")) == _strip(full)
    assert s3 == s1


def test_three_shards_merged_equal_the_unsharded_run(tmp_path):
    f0, s0, _ = run_chbench(_cfg(tmp_path / "whole"))
    shards = [run_chbench(_cfg(tmp_path / f"s{i}"), shard=f"{i}/3")[0] for i in (1, 2, 3)]
    sizes = [len(read_jsonl(f / "rounds.jsonl")) for f in shards]
    assert sum(sizes) == len(read_jsonl(f0 / "rounds.jsonl")) and min(sizes) > 0
    out = tmp_path / "merged"
    out.mkdir()
    s = merge_shards(shards, out)
    assert _strip(read_jsonl(out / "rounds.jsonl")) == _strip(read_jsonl(f0 / "rounds.jsonl"))
    assert s == s0


def test_cli_bad_inputs_exit_2_without_a_folder(cli, tmp_path):
    for args, msg in ((["--mechanism", "telepathy"], "unknown --mechanism"),
                      (["--models", "level-k:9"], "scripted levels"),
                      (["--models", "nosuch:model"], ""),
                      (["--games", "99"], "no game 99")):
        r = cli("chbench", "run", "--output-dir", str(tmp_path), "--opponents", "random", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and msg in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_cli_run_scripted_quiet_prints_folder(cli, tmp_path):
    r = cli("chbench", "run", "--models", "level-k:1", "--opponents", "random", "--games", "1,3",
            "--rounds", "5", "--bootstrap", "0", "--output-dir", str(tmp_path), "--quiet")
    assert r.returncode == 0, r.stderr
    folder = r.stdout.strip().splitlines()[-1]
    s = json.loads(open(f"{folder}/summary.json").read())
    assert s["n_matches"] == 4 and s["n_rounds"] == 20 and s["error_rate"] == 0.0
    assert re.search(r"chbench_\d{8}_\d{6}", folder)


def test_a_failed_plot_is_recorded_in_the_summary_and_the_numbers_kept(tmp_path, monkeypatch):
    import stratbench.suites.chbench.tables as tables

    def boom(folder, summary):
        raise RuntimeError("no display")

    monkeypatch.setattr(tables, "plot_level_distributions", boom)
    folder, s, _ = run_chbench(_cfg(tmp_path, games="1", rounds=4, bootstrap=0))
    on_disk = json.loads((folder / "summary.json").read_text())
    assert on_disk["plot_error"] == "RuntimeError: no display"
    assert on_disk["mechanisms"]["baseline"]["level-k:2"]["n_actions"] > 0
    assert not (folder / "level_distribution.png").exists()
