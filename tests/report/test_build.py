"""`stratbench report`: the HTML report of real result folders.

The key property is safety: model-written text (a raw answer, a model name) is shown as text, never
as markup. It is checked at the string level (always) and in headless Chromium (Debian's
`chromium`; the test skips only when no browser binary exists — `make test` installs it where
apt-get is available), which loads the page, dumps the DOM and takes a screenshot.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from chromium import chromium as _chromium
from chromium import console_lines
from chromium import run_chromium as _run_chromium
from fake_openai_server import FakeOpenAIServer

from stratbench.errors import InputError
from stratbench.render.html import Html, el, esc, fmt_ci, fmt_num, join, table
from stratbench.report.build import build_report
from stratbench.suites.nashgap.report import per_bucket_values, position_profiles
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

SCRIPT = "<script>window.__pwned=1;document.documentElement.setAttribute('data-pwned','1')</script>"
PAYLOAD = f"I choose {SCRIPT} & <img src=x onerror=\"document.title='PWNED'\"> Action: 1"
EVIL_MODEL = "openai-compatible:<b>evil</b>"


def _records(folder: Path, name: str = "trials.jsonl") -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]


def _games(folder: Path) -> dict:
    return {g["game_id"]: g for g in json.loads((folder / "games.json").read_text())}


@pytest.fixture(scope="module")
def xss_run(tmp_path_factory) -> Path:
    """A real Nash-gap run of an OpenAI-compatible model (the fake server) whose every answer
    carries a script, and whose model name carries markup."""
    out = tmp_path_factory.mktemp("xss")
    with FakeOpenAIServer(canned_text=PAYLOAD) as server:
        res = run_nashgap(NashgapConfig(num_games=4, num_trials=2, seed=3, model=EVIL_MODEL,
                                        base_url=server.base_url, policy="sample", no_cache=True,
                                        output_dir=str(out)))
    assert res.summaries["pure"]["status_counts"]["parsed"] == 8  # the answers were really recorded
    assert all(r["raw_response"] == PAYLOAD for r in _records(res.folder))
    return res.folder


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    """A results/ folder as `make demo` and friends leave it: two Nash-gap players on the same
    games, a TMGBench run (with its heat maps), a ToM baseline, a CH fit."""
    from stratbench.suites.chbench.catalogue import build_catalogue, recoverable
    from stratbench.suites.chbench.fit import (
        CHAgent,
        simulate_rounds,
        write_observations_csv,
    )
    from stratbench.suites.chbench.fit_run import FitConfig, run_fit
    from stratbench.suites.tmgbench.run import TmgbenchConfig, run_tmgbench
    from stratbench.suites.tom.baseline_run import BaselineConfig, run_tom_baseline

    out = tmp_path_factory.mktemp("results")
    for player in ("random", "nash"):
        run_nashgap(NashgapConfig(num_games=12, num_trials=3, seed=1, model=player, folder_tag=player,
                                  output_dir=str(out)))
    run_nashgap(NashgapConfig(num_games=6, num_trials=3, seed=5, model="first-action", order_rotations=3,
                              folder_tag="first", output_dir=str(out)))
    run_tmgbench(TmgbenchConfig(model="uniform", repeats=1, seed=1, output_dir=str(out)))
    run_tom_baseline(BaselineConfig(["rps"], ["single_action"], 8, 20, 0, str(out)))
    cat = recoverable(build_catalogue())
    rows = simulate_rounds(cat, CHAgent("ch-1.5", "poisson", lam=1.5), CHAgent("ch<0.5>", "poisson", lam=0.5),
                           rounds=60, seed=3)
    write_observations_csv(out / "play.csv", rows)
    run_fit(FitConfig(str(out / "play.csv"), 4, 2, 0, str(out)))
    return out


# ------------------------------------------------------------------------------------------------
# Escaping, at the string level (no browser needed)
# ------------------------------------------------------------------------------------------------


def test_builder_escapes_text_and_attributes_but_keeps_its_own_markup():
    cell = el("td", SCRIPT, title='x" onmouseover="alert(1)')
    assert "<script>" not in cell and "&lt;script&gt;" in cell
    assert 'title="x&quot; onmouseover=&quot;alert(1)"' in cell  # cannot break out of the attribute
    nested = el("div", el("b", "<i>"), "a & b")
    assert nested == "<div><b>&lt;i&gt;</b>a &amp; b</div>"
    assert esc(esc("<")) == "&lt;"  # Html is not escaped twice
    assert isinstance(join(["<", el("br")]), Html) and join(["<", el("br")]) == "&lt;<br>"
    t = table(["<h>"], [[SCRIPT, el("a", "ok", href="#x")]])
    assert "<script" not in t and '<a href="#x">ok</a>' in t
    with pytest.raises(ValueError):
        el("td onclick", "x")


def test_report_shows_model_text_as_text(xss_run: Path):
    res = build_report(xss_run)
    page = res.index.read_text(encoding="utf-8")
    assert res.index == xss_run / "report" / "index.html"
    assert "<script" not in page.lower()  # no script at all: the page has none of its own
    assert "<img src=x" not in page and "<b>evil</b>" not in page
    # ... and the answer and the model name are there, escaped, in the record sample
    assert html_escaped(SCRIPT) in page
    assert "openai-compatible:&lt;b&gt;evil&lt;/b&gt;" in page
    assert page.count(html_escaped(PAYLOAD)) == 8  # every sampled raw answer, whole
    assert "Content-Security-Policy" in page and "default-src &#x27;none&#x27;" in page
    # tokens and metadata from run.json
    totals = json.loads((xss_run / "run.json").read_text())["totals"]
    assert totals["model_tokens_in"] > 0 and f"<td>{totals['model_tokens_in']}</td>" in page
    commit = json.loads((xss_run / "run.json").read_text())["git"]["commit"]
    if commit:
        assert commit in page


def html_escaped(text: str) -> str:
    import html

    return html.escape(text, quote=True)


# ------------------------------------------------------------------------------------------------
# Headless Chromium
# ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary (Debian: apt-get install -y chromium; "
                    "`make test` installs it where it can)")
def test_report_renders_in_headless_chromium_and_script_stays_text(xss_run: Path, tmp_path: Path):
    from PIL import Image

    index = build_report(xss_run, tmp_path / "report").index
    url = index.resolve().as_uri()
    binary = _chromium()
    assert binary is not None
    dom = _run_chromium(binary, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "stratbench report" in html and "Sample records" in html
    # The script is text in a <pre>, it did not run (no attribute set), no element was injected.
    assert html_escaped(SCRIPT).replace("&#x27;", "'") in html
    assert "data-pwned" not in re.sub(r"&lt;script&gt;.*?&lt;/script&gt;", "", html)
    assert "<script" not in html.lower() and "<img src=\"x\"" not in html
    assert "<b>evil</b>" not in html and "&lt;b&gt;evil&lt;/b&gt;" in html
    assert "<title>stratbench report" in html and "PWNED" not in html.split("<body")[0]
    # No page errors and no blocked resource: Chromium logs every console message as CONSOLE.
    console = console_lines(dom.stderr)
    assert not console, console

    shot = tmp_path / "shot.png"
    r = _run_chromium(binary, "--window-size=1280,2200", f"--screenshot={shot}", url)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape[:2] == (2200, 1280)
    assert (img.min(axis=2) < 128).mean() > 0.01  # text and figures drawn, not a blank page
    packed = (img[..., 0].astype(np.uint32) << 16) | (img[..., 1].astype(np.uint32) << 8) | img[..., 2]
    assert np.unique(packed).size > 50  # embedded plots are in colour


# ------------------------------------------------------------------------------------------------
# Content of a folder of runs
# ------------------------------------------------------------------------------------------------


def test_report_of_a_results_folder(results_dir: Path):
    res = build_report(results_dir, max_records=3)
    page = res.index.read_text(encoding="utf-8")
    assert res.n_runs == 6 and res.n_suites == 0
    assert page.count('class="run"') == 6
    # Leaderboard: random and nash played the same 12 games; nash ranks first (Nash gap 0).
    lb = page.split('id="leaderboards"')[1].split('id="overview"')[0]
    assert "nashgap · pure · 12 games" in lb
    rows = re.findall(r"<tr><td>(\d)</td><td>([^<]+)</td>", lb)
    assert rows == [("1", "nash"), ("2", "random")]
    random_summary = json.loads(next(results_dir.glob("run_*_random/summary.json")).read_text())
    ci = random_summary["mean_nash_gap_ci95"]
    assert f"<td>{fmt_num(random_summary['mean_nash_gap'])} {fmt_ci(ci)}</td>" in lb  # mean with its CI
    # first-action played other games: it is never ranked against them
    assert "first-action" not in lb
    # TMGBench heat maps, the ToM regret curve, and the CH level distribution are embedded
    n_img = page.count('src="data:image/png;base64,')
    assert n_img >= 4 + 1 + 1 + 3 * 2 + 1
    for name in ("standard_heatmap.png", "practical_heatmap.png", "inconsistency_heatmap.png",
                 "sister_symmetry_heatmap.png", "regret_curve.png"):
        assert f"<figcaption>{name}</figcaption>" in page
    assert "Fitted cognitive-hierarchy level distributions" in page and "ch&lt;0.5&gt;" in page
    assert any(p.name.endswith("_level_distribution.png") for p in res.figures)
    # figures the report drew are PNG files next to it
    assert res.figures and all(p.parent == res.index.parent and p.read_bytes()[:4] == b"\x89PNG"
                               for p in res.figures)
    # sample records: at most 3 per file
    assert "trials.jsonl: 36 records; first 3 shown" in page
    assert "Position bias (pure)" in page and "Nash gap and exploitability per bucket (pure)" in page
    assert "3x3 saddle point" in page or "3x3 no saddle point" in page

    # A second report replaces the first (its own folder is not read as a run).
    again = build_report(results_dir, max_records=3)
    assert again.n_runs == 6 and sorted(again.figures) == sorted(p for p in res.index.parent.glob("*.png"))


def test_position_bias_and_buckets_agree_with_the_summary(results_dir: Path):
    """Independent recomputation: position 1 − 1/m is the summary's position_bias, the mean of the
    per-bucket per-game values is its mean Nash gap; rotations map back to the shown order."""
    for folder in results_dir.glob("run_*"):
        s = json.loads((folder / "summary.json").read_text())
        recs, games = _records(folder), _games(folder)
        (prof,) = position_profiles(recs, games)
        assert prof.player[0] - 1 / prof.m == pytest.approx(s["position_bias"], abs=1e-12)
        assert sum(prof.player) == pytest.approx(1.0)
        per_game = [v for b in per_bucket_values(recs, games).values() for v in b["nash_gap"]]
        assert np.mean(per_game) == pytest.approx(s["mean_nash_gap"], abs=1e-12)
        if folder.name.endswith("_first"):
            # first-action always takes the row shown first, whatever the rotation
            assert prof.player == pytest.approx([1.0, 0.0, 0.0])
            assert {r["rotation"] for r in recs} == {0, 1, 2}


def test_tiered_suite_folder(tmp_path: Path, cli):
    r = cli("suite", "tiered", "--use-dummy", "--num-games-per-bucket", "3", "--num-trials", "2",
            "--seeds", "42", "--bucket-ids", "2x2_lowVar_pure", "--providers", "openai",
            "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    (suite,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    res = build_report(suite)
    page = res.index.read_text(encoding="utf-8")
    assert res.n_suites == 1 and res.n_runs >= 2
    assert "big_table_aggregated.csv (headline columns)" in page and "suite_metadata.json" in page
    assert "mean_exploitability [95% CI]" in page
    # the models of the suite played the same games: one leaderboard per mode
    assert page.count("nashgap · pure · 3 games (2x2_lowVar_pure, seed 42)") == 1


def test_partial_and_unknown_folders_still_get_a_report(tmp_path: Path, xss_run: Path):
    broken = tmp_path / "runs" / "broken"
    shutil.copytree(xss_run, broken, ignore=shutil.ignore_patterns("report"))
    (broken / "summary.json").write_text("{not json")
    with open(broken / "trials.jsonl", "a") as fh:
        fh.write('{"game_id": 9, "torn')
    (broken / "run.json").unlink()
    odd = tmp_path / "runs" / "odd"
    odd.mkdir()
    (odd / "summary.json").write_text(json.dumps({"score": 0.5, "score_ci95": [0.4, 0.6], "note": "<i>x</i>"}))
    res = build_report(tmp_path / "runs")
    page = res.index.read_text(encoding="utf-8")
    assert res.n_runs == 2
    assert "summary.json: unreadable" in page and "run.json: missing" in page
    assert "malformed lines skipped" in page  # the torn tail is counted, the rest is shown
    assert "Nash gap and exploitability per bucket" in page  # from the intact records
    assert "<td>score</td><td>0.5000</td><td>[0.4000, 0.6000]</td>" in page
    assert "&lt;i&gt;x&lt;/i&gt;" in page and "<i>x</i>" not in page
    # nothing of the inputs was changed
    assert not (broken / "run.json").exists() and (broken / "summary.json").read_text() == "{not json"

    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("hello")
    page = build_report(empty).index.read_text()
    assert "no run.json, summary or records found" in page and "notes.txt" in page

    with pytest.raises(InputError, match="no such folder"):
        build_report(tmp_path / "missing")
    with pytest.raises(InputError, match="not a folder"):
        build_report(empty / "notes.txt")
    with pytest.raises(InputError, match="--figures"):
        build_report(empty, figures="some")


def test_report_command(tmp_path: Path, xss_run: Path, cli):
    out = tmp_path / "out"
    r = cli("report", str(xss_run), "--output", str(out), "--max-records", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out / "index.html") and (out / "index.html").exists()
    assert (out / "index.html").read_text().count(html_escaped(PAYLOAD)) == 2
    bad = cli("report", str(tmp_path / "nope"))
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr


def test_a_report_never_writes_over_a_folder_that_is_not_a_report(results_dir: Path, tmp_path: Path):
    """`-o DIR`: a new folder, an empty one, or an earlier report of ours — never a folder holding
    other files (its index.html would be replaced, `-o /` would write into the root)."""
    from stratbench.errors import InputError
    from stratbench.report.build import build_report

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("my own page")
    with pytest.raises(InputError, match=r"holds other files \(index.html, ...\), not a stratbench report"):
        build_report(results_dir, site)
    assert (site / "index.html").read_text() == "my own page" and len(list(site.iterdir())) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    build_report(results_dir, empty)
    build_report(results_dir, empty)  # our own report: replaced
    assert "my own page" not in (empty / "index.html").read_text()


def test_an_unfinished_run_holding_summaries_shows_none_of_them(tmp_path: Path, xss_run: Path):
    """A finished run resumed (to retry its errors) and stopped is `running` again with the summaries
    of its last finish beside records that have changed since (fuzz 25 B F1: the report showed the
    old mean Nash gap as the run's headline): its summaries, tables and figures are not shown, its
    records and metadata are, and the page says why and how to finish it."""
    run = tmp_path / "runs" / "resumed"
    shutil.copytree(xss_run, run, ignore=shutil.ignore_patterns("report"))
    summary = json.loads((run / "summary.json").read_text())
    summary["mean_nash_gap"] = 1234.5678
    (run / "summary.json").write_text(json.dumps(summary))
    page = build_report(tmp_path / "runs").index.read_text(encoding="utf-8")
    assert "<td>mean_nash_gap</td><td>1,234.6</td>" in page  # (build_report alone: no recomputation asked)
    meta = json.loads((run / "run.json").read_text())
    meta["status"] = "running"
    (run / "run.json").write_text(json.dumps(meta))
    page = build_report(tmp_path / "runs").index.read_text(encoding="utf-8")
    assert "mean_nash_gap" not in page and "1,234.6" not in page and "<img" not in page
    assert "were written when the run last finished, and it was resumed since (status running)" in page
    assert "Sample records" in page and "trials.jsonl" in page
