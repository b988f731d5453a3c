"""Golden tests: every scenario in scenarios.py must reproduce its recorded fingerprint."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import FakeOpenAIServer
from scenarios import DATA, SCENARIOS, compare_rules, diff, run_scenario


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as s:
        yield s


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_matches_its_golden_fingerprint(sc, tmp_path, server):
    want = json.loads((DATA / f"{sc.name}.json").read_text())
    got = json.loads(json.dumps(run_scenario(sc, tmp_path / sc.name, tmp_path / "cache",
                                             server.base_url if sc.server else None), sort_keys=True))
    rules = want.pop("compare")
    assert rules == compare_rules(sc.tol), f"{sc.name}: the golden's comparison rules are not the scenario's"
    problems = diff(want, got, rules["floats"]["rel_tol"])
    assert not problems, f"{sc.name}: {len(problems)} differences:\n" + "\n".join(problems[:40])
