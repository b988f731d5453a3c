"""The written schema (:mod:`stratbench.suites.tom.records`) covers what the runs write: every key of
every record, summary and run.json totals is a documented field."""

from __future__ import annotations

import json
from typing import get_type_hints

import pytest
from fake_openai_server import FakeOpenAIServer

from stratbench.runner.jsonl import read_jsonl
from stratbench.suites.tom import records
from stratbench.suites.tom.baseline_run import BaselineConfig, run_tom_baseline
from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model


def fields(td) -> set[str]:
    return set(get_type_hints(td))


def required(td) -> set[str]:
    return set(td.__required_keys__)


def test_baseline_records_summary_and_totals_match_the_schema(tmp_path):
    folder = run_tom_baseline(BaselineConfig(["rps", "ipd"], ["tit_for_tat"], 3, 6, 0, str(tmp_path), "1/2")).folder
    for r in read_jsonl(folder / records.EPISODES_FILE):
        assert required(records.BaselineEpisodeRecord) <= set(r) <= fields(records.BaselineEpisodeRecord)
    summary = json.loads((folder / "summary.json").read_text())
    assert required(records.BaselineSummary) <= set(summary) <= fields(records.BaselineSummary)
    for row in summary["settings"]:
        assert set(row) == fields(records.BaselineRow)
    totals = json.loads((folder / "run.json").read_text())["totals"]
    assert set(totals) == fields(records.BaselineTotals)


@pytest.mark.parametrize("prompting", ["QA", "PlansInsights", "S2A"])
def test_run_records_summary_and_totals_match_the_schema(tmp_path, prompting):
    with FakeOpenAIServer(canned_text=" J") as server:
        folder = run_tom_model(TomRunConfig(model="openai-compatible:fake", base_url=server.base_url,
                                            prompting=prompting, rounds=2, episodes=2, shard="2/2", no_cache=True,
                                            output_dir=str(tmp_path))).folder
    rounds = read_jsonl(folder / records.ROUNDS_FILE)
    assert rounds
    for r in rounds:
        assert required(records.RoundRecord) <= set(r) <= fields(records.RoundRecord)
        for c in r.get("calls", []):
            assert required(records.CallRecord) <= set(c) <= fields(records.CallRecord)
    summary = json.loads((folder / "summary.json").read_text())
    assert required(records.RunSummary) <= set(summary) <= fields(records.RunSummary)
    totals = json.loads((folder / "run.json").read_text())["totals"]
    own = {k for k in totals if not k.startswith("model_")}  # model_*: the backend's usage (runner.schema)
    assert own == fields(records.RunTotalsTom) | {"records", "errors"}
    assert {"model_calls", "model_cache_hits", "model_errors", "model_tokens_in", "model_tokens_out"} <= set(totals)
