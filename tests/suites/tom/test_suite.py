"""The registered ToM entries (`tom`, `tom-baseline`) as the workflows and the report use them:
suite-file jobs, headline numbers, comparison units, and which entry owns a folder."""

from __future__ import annotations

import csv

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.suites import get_suite, suite_for_run
from stratbench.suites.base import SuiteModel
from stratbench.suites.tom.baseline_run import BaselineConfig, run_tom_baseline
from stratbench.workflows.suite_file import plan_suite_file, run_suite_file


def test_jobs_cover_games_partners_and_seeds_and_refuse_scripted_players():
    tom = get_suite("tom")
    jobs = tom.jobs("f.toml", {"games": ["rps", "ipd"], "partner": "tft", "rounds": 3, "prompting": "qa"},
                    [SuiteModel("openai-compatible:x", "x", policy="sample")], [1, 2])
    assert [(j.setting, j.seed) for j in jobs] == [("rps/tft", 1), ("rps/tft", 2), ("ipd/tft", 1), ("ipd/tft", 2)]
    assert all(j.config.prompting == "QA" and j.config.rounds == 3 and j.config.chat is False for j in jobs)
    for spec in ("random", "Nash", "first-action"):
        with pytest.raises(InputError, match="is a scripted player of nashgap.*tom runs need a language model"):
            tom.jobs("f.toml", {}, [SuiteModel(spec, spec)], [0])
    with pytest.raises(InputError, match="unknown key"):
        tom.jobs("f.toml", {"roundz": 3}, [SuiteModel("openai-compatible:x", "x")], [0])
    assert not get_suite("tom-baseline").in_suite_files


def test_suite_file_runs_tom_sections(tmp_path):
    with FakeOpenAIServer(canned_text=" J") as server:
        f = tmp_path / "s.toml"
        f.write_text(f'seeds = [4]\nmodels = [{{spec = "openai-compatible:fake", label = "fake", base_url = '
                     f'"{server.base_url}"}}]\n[tom]\nprompting = "QA"\nrounds = 2\nepisodes = 2\n'
                     'partners = ["single_action", "tit_for_tat"]\n')
        _, jobs = plan_suite_file(f)
        assert len(jobs) == 2
        res = run_suite_file(f, output_dir=str(tmp_path / "out"))
    assert res.n_errors == 0 and len(res.runs) == 2
    rows = list(csv.DictReader((res.folder / "runs.csv").open()))
    assert {(r["part"], r["metric"]) for r in rows} == {
        (f"rps/{p}/QA", m) for p in ("single_action", "tit_for_tat_best_response") for m in ("regret_per_step", "tom_accuracy")}
    assert all(r["value"] for r in rows)


def test_baseline_folders_belong_to_tom_baseline_and_compare_per_episode(tmp_path):
    folder = run_tom_baseline(BaselineConfig(["rps"], ["single_action", "mixed"], 3, 5, 0, str(tmp_path))).folder
    meta = read_run_json(folder)
    assert suite_for_run(meta).name == "tom-baseline"
    legacy = {**meta, "config": dict(meta["config"])}
    del legacy["kind"]
    assert suite_for_run(legacy).name == "tom-baseline"  # folders written before run.json had "kind"
    suite = get_suite("tom-baseline")
    head = suite.headline(folder)
    assert [(h["part"], h["metric"]) for h in head] == [
        (f"rps/{p}/tabular", m) for p in ("single_action", "mixed") for m in ("regret_per_step", "tom_accuracy")]
    units = suite.compare_units(folder)
    assert set(units) == {"rps/single_action/tabular", "rps/mixed/tabular"}
    assert all(set(u) == {0, 1, 2} for u in units.values())


def test_report_draws_regret_curves_from_curves_json_when_the_png_is_gone(tmp_path, cli):
    folder = run_tom_baseline(BaselineConfig(["ibs"], ["tit_for_tat"], 2, 4, 0, str(tmp_path / "runs"))).folder
    r = cli("report", str(folder), "--output", str(tmp_path / "with"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert not list((tmp_path / "with").glob("*regret_curve*.png"))  # the run's own PNG is embedded
    (folder / "regret_curve.png").unlink()
    r = cli("report", str(folder), "--output", str(tmp_path / "without"), "--quiet")
    assert r.returncode == 0, r.stderr
    (png,) = list((tmp_path / "without").glob("*regret_curve*.png"))
    assert png.read_bytes().startswith(b"\x89PNG") and "drawn from curves.json" in (
        tmp_path / "without" / "index.html").read_text()
