"""`chbench run` through the Python API: matches, the written folder, resume, shards and their merge."""

from __future__ import annotations

import json

from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic
from stratbench.suites.chbench.run import ChbenchConfig, all_matches, merge_chbench, run_chbench


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
    res = run_chbench(_cfg(tmp_path, games="all", rounds=30, bootstrap=0))
    folder, s = res.folder, res.summary
    assert res.n_errors == 0
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
    r1 = run_chbench(_cfg(tmp_path / "a"))
    f1, s1 = r1.folder, r1.summary
    full = read_jsonl(f1 / "rounds.jsonl")
    f2 = run_chbench(_cfg(tmp_path / "b")).folder
    recs = read_jsonl(f2 / "rounds.jsonl")
    write_jsonl_atomic(f2 / "rounds.jsonl", recs[:37])  # 3 whole matches + part of the 4th
    with open(f2 / "rounds.jsonl", "a") as fh:
        fh.write('{"match_id": "torn')
    r3 = run_chbench(ChbenchConfig(), resume_dir=str(f2))
    f3, s3 = r3.folder, r3.summary
    assert f3 == f2
    assert _strip(read_jsonl(f2 / "rounds.jsonl")) == _strip(full)
    assert s3 == s1


def test_three_shards_merged_equal_the_unsharded_run(tmp_path):
    r0 = run_chbench(_cfg(tmp_path / "whole"))
    f0, s0 = r0.folder, r0.summary
    shards = [run_chbench(_cfg(tmp_path / f"s{i}", shard=f"{i}/3")).folder for i in (1, 2, 3)]
    sizes = [len(read_jsonl(f / "rounds.jsonl")) for f in shards]
    assert sum(sizes) == len(read_jsonl(f0 / "rounds.jsonl")) and min(sizes) > 0
    out = tmp_path / "merged"
    out.mkdir()
    s = merge_chbench(shards, out).summaries[""]
    assert _strip(read_jsonl(out / "rounds.jsonl")) == _strip(read_jsonl(f0 / "rounds.jsonl"))
    assert s == s0


def test_records_follow_the_schema_and_run_json_names_players_and_games(tmp_path):
    from typing import get_type_hints

    from stratbench.suites.chbench.records import RoundRecord

    res = run_chbench(_cfg(tmp_path, games="1,8", rounds=3, bootstrap=0))
    keys = set(get_type_hints(RoundRecord))
    required = RoundRecord.__required_keys__
    for r in read_jsonl(res.folder / "rounds.jsonl"):
        assert required <= set(r) <= keys, set(r) ^ keys
    meta = json.loads((res.folder / "run.json").read_text())
    assert (meta["suite"], meta["kind"]) == ("chbench", "run") and meta["players"] == {}
    assert [g["id"] for g in meta["games"]] == [1, 8] and meta["games"][1]["uncertain"]
    assert meta["totals"] == res.totals and set(res.totals) == {
        "matches", "records", "errors", "model_calls", "model_cache_hits", "model_errors", "model_tokens_in",
        "model_tokens_out"}


def test_resume_refuses_a_folder_of_another_kind(tmp_path):
    import pytest

    from stratbench.errors import InputError

    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"suite": "chbench", "kind": "fit", "config": {"data": "d"}}))
    with pytest.raises(InputError, match="not chbench run"):
        run_chbench(ChbenchConfig(), resume_dir=folder)
    (folder / "run.json").write_text(json.dumps({"suite": "chbench", "config": {"data": "d"}}))
    with pytest.raises(InputError, match="not a chbench run folder"):
        run_chbench(ChbenchConfig(), resume_dir=folder)


def test_bad_config_values_are_one_clear_error_before_any_folder(tmp_path):
    import pytest

    from stratbench.errors import InputError

    cases = (({"models": []}, "--models: give at least one value"),
             ({"mechanisms": ["baseline", "baseline"]}, "--mechanism: 'baseline' is listed twice"),
             ({"mechanisms": []}, "--mechanism: give at least one value"),
             ({"opponents": ["random", "random"]}, "--opponents: 'random' is listed twice"),
             ({"models": ["level-k:2", "level-k:2"]}, "--models: 'level-k:2' is listed twice"),
             ({"seed": -1}, "--seed must be at least 0 (got -1)"),
             ({"temperature": float("nan")}, "--temperature must be a finite number"),
             ({"rounds": 10**12}, "--rounds must be at most"),
             ({"bootstrap": -1}, "--bootstrap must be at least 0"),
             ({"k_hat": 1}, "--k-hat must be at least 2"),
             ({"max_concurrency": 0}, "--max-concurrency must be at least 1"),
             ({"self_play": "yes"}, "--self-play must be true or false"))
    for kw, needle in cases:
        with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            run_chbench(_cfg(tmp_path / "o", **kw))
    assert not (tmp_path / "o").exists()


def test_one_scripted_player_spelt_two_ways_is_named_twice(tmp_path):
    """fuzz 9 M3: level-k:01 beside level-k:1 (poisson:1.50 beside poisson:1.5) played as two
    players, two rows of the tables for one."""
    import pytest

    from stratbench.errors import InputError

    for models, opponents in ((["level-k:1"], ["level-k:01"]), (["random"], ["poisson:1.5", "poisson:1.50"]),
                              (["Random"], ["random"])):
        with pytest.raises(InputError, match="each player may be named once across --models and --opponents "
                                             r"\('.+' and '.+' are one player\)"):
            ChbenchConfig(models=models, opponents=opponents, output_dir=str(tmp_path)).validate()
    ChbenchConfig(models=["level-k:1"], opponents=["level-k:2", "poisson:1.5"], output_dir=str(tmp_path)).validate()
