"""The papers' suite files under examples/papers: each plans (every section and model table
valid) and opens its models — the hosted backends and presets with their keys set, no request
sent — so `stratbench suite run examples/papers/<paper>.toml` fails only for a missing key."""

from __future__ import annotations

from pathlib import Path

import pytest

from stratbench.workflows.suite_plan import check_job_models, plan_suite_file

PAPERS = sorted((Path(__file__).resolve().parents[2] / "examples" / "papers").glob("*.toml"))
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "TOGETHER_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY")


@pytest.mark.parametrize("path", PAPERS, ids=[p.stem for p in PAPERS])
def test_a_papers_suite_file_plans_and_opens_its_models(monkeypatch, path):
    for k in KEYS:
        monkeypatch.setenv(k, "sk-test")
    _, jobs = plan_suite_file(path)
    assert jobs and {j.suite.split("-")[0] for j in jobs} <= {"nashgap", "tmgbench", "chbench", "tom"}
    assert path.stem in {j.suite for j in jobs} or path.stem in {j.suite.split("_")[0] for j in jobs}
    check_job_models(jobs)


def test_the_papers_are_all_there():
    assert [p.stem for p in PAPERS] == ["chbench", "tmgbench", "tom"]
