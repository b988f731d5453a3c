"""Result folders edited by hand are refused on resume before anything in them changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.parametrize("edit,why", [
    ({"seed": "x"}, "--seed must be an integer (got 'x')"),
    # a resume would draw new seeds: other bootstrap intervals beside the old records
    ({"seed": None}, "seed is null (a run saves the seed it drew)"),
    ({"llm_seed": None}, "llm_seed is null (a run saves the seed it drew)"),
    ({"num_games": -1}, "--num-games must be at least 1 (got -1)"),
    ({"temperature": float("nan")}, None),  # refused as run.json is read: no NaN in a result file
    # values only the config's own validate() refuses, as it does a new run's
    ({"payoff_min": 500}, "payoff range must be finite with min < max (got 500, 100.0)"),
    ({"bucket": "nope"}, "unknown --bucket 'nope'; known: 2x2_lowVar_pure, 2x2_lowVar_mixed, 3x3_midVar_pure, "
                            "3x3_midVar_mixed, 4x4_highVar_pure, 4x4_highVar_mixed"),
    # a file a run reads, of another type: refused, never opened (fuzz 9 T1, T2)
    ({"chat_template": {"a": 1}}, "--chat-template must be a string (got {'a': 1})"),
    ({"price_table": 1}, "--price-table must be a string (got 1)"),
])
def test_a_saved_config_edited_to_nonsense_is_refused_before_the_folder_changes(tmp_path, cli, edit, why):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    trials = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join(trials[:2]) + "\n")  # interrupted after 2 records
    meta.update(status="running", config={**meta["config"], **edit})
    (folder / "run.json").write_text(json.dumps(meta))
    before = {p.name: p.read_bytes() for p in Path(folder).iterdir()}
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2
    if why is None:
        assert r.stderr.strip() == f"error: --resume {folder}/run.json: config.temperature: nan is not a finite number"
    else:
        assert r.stderr.strip() == (f"error: --resume {folder}/run.json's saved config is not valid: {why}; "
                                    "the folder is left as it is")
    assert {p.name: p.read_bytes() for p in Path(folder).iterdir()} == before


# -- collections: a finished run is trusted only while it is the planned run, all there ----------

@pytest.fixture(scope="module")
def fake_server():
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as s:
        yield s


def _scorecard(tmp_path, cli, url):
    r = cli("scorecard", "--model", "openai-compatible:fake", "--base-url", url, "--budget", "smoke", "--seed", "2",
            "--no-report", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cells(folder: Path) -> object:
    import run_records

    card = run_records.strip(json.loads((folder / "scorecard.json").read_text()), run_records.VOLATILE)
    return [{k: v for k, v in c.items() if k != "runs"} for c in card["cells"]]  # type: ignore[index]


def test_a_scorecard_whose_saved_budget_was_edited_is_refused(tmp_path, cli, fake_server):
    """The table would claim a paper-budget measurement over the smoke runs' numbers."""
    folder = _scorecard(tmp_path, cli, fake_server.base_url)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["config"]["budget"] = "quick"
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "edited" in r.stderr or "same runs" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_a_finished_run_of_a_collection_edited_to_another_config_is_refused(tmp_path, cli, fake_server):
    folder = _scorecard(tmp_path, cli, fake_server.base_url)
    (run,) = [p.parent for p in folder.rglob("run.json") if "2x2_lowVar_pure" in str(p) and "fake" in str(p)]
    meta = json.loads((run / "run.json").read_text())
    meta["config"]["num_games"] = meta["config"]["num_games"] + 1
    (run / "run.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "num_games" in r.stderr and "was edited" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_a_finished_run_whose_records_were_cut_is_finished_again(tmp_path, cli, fake_server):
    """Records lost from a finished run are run again on resume (with a note), never scored as if
    the run were whole: the scorecard ends as it was."""
    folder = _scorecard(tmp_path, cli, fake_server.base_url)
    want = _cells(folder)
    (rounds,) = folder.glob("chbench/openai-compatible-fake/*/rounds.jsonl")
    lines = rounds.read_text().splitlines()
    rounds.write_text("\n".join(lines[:5]) + "\n")
    r = cli("scorecard", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    assert f"5 of its {len(lines)} records are left" in r.stderr, r.stderr
    assert len(rounds.read_text().splitlines()) == len(lines)
    assert _cells(folder) == want


def test_the_report_never_shows_an_edited_scorecard_cell(tmp_path, cli, fake_server):
    """compare refuses a scorecard.json that disagrees with its records; the report shows a
    warning in the table's place instead of the edited score."""
    folder = _scorecard(tmp_path, cli, fake_server.base_url)
    card = json.loads((folder / "scorecard.json").read_text())
    (cell,) = [c for c in card["cells"] if c["player"] == "openai-compatible:fake" and c["suite"] == "tmgbench"]
    cell.update(status="ok", value=50.0, normalized=50.0)
    (folder / "scorecard.json").write_text(json.dumps(card))
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning:")]  # said on stderr too
    assert "scorecard.json" in line and "leaves out the scorecard's table" in line, r.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "disagrees with its records" in page and "the scorecard is not shown" in page
    assert "scorecard-" not in page.split("disagrees with its records")[1].split("</section>")[0]


def test_negative_totals_in_a_saved_run_are_refused(tmp_path, cli):
    """A resume adds its counts to the saved ones: negative ones would be summed into a lie."""
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta.update(status="running", totals={"records": -5, "errors": -1, "model_calls": -3})
    (folder / "run.json").write_text(json.dumps(meta))
    before = {p.name: p.read_bytes() for p in Path(folder).iterdir()}
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: --resume {folder}/run.json: totals.records: Input should be greater than or equal to 0"
    assert {p.name: p.read_bytes() for p in Path(folder).iterdir()} == before


def test_a_saved_config_edited_to_another_player_is_refused(tmp_path, cli, fake_server):
    """Finishing the run would mix the second player's records with the first's."""
    r = cli("nashgap", "--model", "openai-compatible:fake", "--base-url", fake_server.base_url, "--num-games", "3",
            "--seed", "5", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    trials = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join(trials[:2]) + "\n")
    meta.update(status="running", config={**meta["config"], "model": "random"})
    (folder / "run.json").write_text(json.dumps(meta))
    before = {p.name: p.read_bytes() for p in Path(folder).iterdir()}
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "run.json was edited" in r.stderr and "'random'" in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in Path(folder).iterdir()} == before


def _two_runs_the_second_edited(tmp_path, cli, key: str, value: object) -> tuple[Path, Path]:
    """Finished runs of `random` and `nash` on the same games; the second's first trial has
    `key` set to `value`."""
    runs = []
    for player in ("random", "nash"):
        r = cli("nashgap", "--model", player, "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
                "--output-dir", str(tmp_path / player))
        assert r.returncode == 0, r.stderr
        runs.append(next((tmp_path / player).iterdir()))
    trials = runs[1] / "trials.jsonl"
    first, *rest = trials.read_text().splitlines()
    rec = json.loads(first)
    rec[key] = value
    trials.write_text("\n".join([json.dumps(rec), *rest]) + "\n")
    return runs[0], runs[1]


def test_a_scored_trial_edited_to_hold_no_number_is_named_by_compare_and_resume(tmp_path, cli):
    runs = _two_runs_the_second_edited(tmp_path, cli, "exploitability", None)
    trials = runs[1] / "trials.jsonl"
    r = cli("compare", str(runs[0]), str(runs[1]))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "exploitability = None, not a number (edited by hand)" in r.stderr and len(r.stderr.splitlines()) == 1
    before = {p.name: p.read_bytes() for p in runs[1].iterdir()}
    r = cli("nashgap", "--resume", str(runs[1]))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {trials}: line 1: a scored trial"), r.stderr
    assert {p.name: p.read_bytes() for p in runs[1].iterdir()} == before


def _logprob_trial():
    """A 3×3 game's entry, the exact policy of the log-probs [−∞, −0.1, −2.4], and the pure trial a
    log-prob player writes with them (as read back from trials.jsonl)."""
    from stratbench.games.normal_form import NormalFormGame
    from stratbench.players import exact_policy
    from stratbench.runner.jsonl import dumps
    from stratbench.solvers.zerosum import solve_zero_sum
    from stratbench.suites.nashgap.games import GameEntry
    from stratbench.suites.nashgap.players import Decision
    from stratbench.suites.nashgap.records import make_record

    game = NormalFormGame.zero_sum([[1.0, -2.0, 0.5], [-1.0, 3.0, 0.0], [0.0, 1.0, -1.0]])
    entry = GameEntry(0, game, solve_zero_sum(game.payoff_row), None, 5)
    lps = [float("-inf"), -0.1, -2.4]
    pol = exact_policy(lps)
    assert not isinstance(pol, str)
    d = Decision("parsed", action=1, policy=list(pol.probs), label_mass=pol.mass, logprobs=lps)
    return entry, pol, json.loads(dumps(dict(make_record(entry, 0, "pure", 7, "prompt", d, "gguf:m"))))


def test_a_minus_infinity_log_prob_written_as_null_is_read_back(tmp_path, cli):
    """A label the backend gives no probability (outside a chat endpoint's top log-probs, or a
    cached −∞) is written as null: a resume reads its own folder back (the trial as a log-prob
    player writes it passes the record checks a resume applies). A scripted player's trial never
    holds log-probs, null or not (fuzz pass 8, D6)."""
    import numpy as np

    from stratbench.runner.validation import check_schema
    from stratbench.suites.nashgap.records import TrialRecord, record_problem

    check_schema([{"logprobs": [None, -0.5, -1.2]}], TrialRecord, "trials.jsonl")
    entry, pol, written = _logprob_trial()
    assert written["logprobs"] == [None, -0.1, -2.4]
    assert record_problem(written, {0: 3}, {0: entry}, "pure", "gguf:m", 1) is None
    assert np.isclose(written["label_mass"], pol.mass)

    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / "trials.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["logprobs"] = [None, -0.1, -2.4]
    rec["label_mass"] = pol.mass  # (with its label mass, as a log-prob trial has it)
    (folder / "trials.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:3]]) + "\n")
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    # (named by the first check it fails: random's policy is not what those log-probs give)
    assert r.returncode == 2 and "(edited by hand)" in r.stderr and (
        "but random writes null in game 0, trial 0" in r.stderr or "is not what its log-probabilities" in r.stderr), r.stderr


def test_a_scorecards_think_tags_edited_away_are_refused_and_compare_checks_its_list(tmp_path, cli, fake_server):
    """think_tags edited to null in a scorecard's metadata: its runs made with the tags are not the
    plan's (fuzz 11 B D4: a resume ran the rest without them, one model read two ways; None was
    taken as 'for the run to resolve'); an entry's errors edited: compare names it as the report
    does (fuzz 11 B R1)."""
    r = cli("scorecard", "--model", "openai-compatible:fake", "--base-url", fake_server.base_url, "--budget", "smoke",
            "--seed", "2", "--think-tags", "<r>,</r>", "--no-report", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["config"]["models"][0]["think_tags"] = None
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and 'has think_tags = "<r>,</r>" where the collection\'s plan has null' in r.stderr, r.stderr
    assert _snapshot(folder) == before
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet", "--figures", "none")
    assert r.returncode == 0 and "think_tags" in r.stderr and "leaves out" in r.stderr, r.stderr
    meta["config"]["models"][0]["think_tags"] = "<r>,</r>"
    meta["runs"][0]["errors"] = 3
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and "is listed with errors 3, but the run's is 0" in r.stderr, r.stderr


@pytest.mark.parametrize("key,value", [("think_tags", "<r>,</r>"), ("reasoning_effort", "high")])
def test_a_setting_added_to_a_scorecards_metadata_is_named_by_report_and_resume(tmp_path, cli, finished_scorecard,
                                                                                 key, value):
    """A run saves no key for a setting it was not given: one added to the metadata by hand was
    never compared, and a resume ran the rest with it (fuzz 12 B D1)."""
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["config"]["models"][0][key] = value
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    said = f"has {key} = null where the collection's plan has {json.dumps(value)}"
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and said in r.stderr, r.stderr
    assert _snapshot(folder) == before
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet", "--figures", "none")
    assert r.returncode == 0 and said in r.stderr and "leaves out" in r.stderr, r.stderr


@pytest.mark.parametrize("key,value", [("think_tags", "<r>,</r>")])  # (an effort needs a chat model: refused so)
def test_a_setting_added_to_the_plan_of_a_scorecard_whose_runs_are_unfinished_is_refused(tmp_path, cli,
                                                                                       finished_scorecard, key, value):
    """An interrupted run resumes from its own run.json: a setting added to the collection's plan
    must be checked against it too, or the rest of the scorecard is played another way than its
    started runs (fuzz 13 B R1: with no run finished, nothing was checked)."""
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["status"] = "running"
    meta["config"]["models"][0][key] = value
    for entry in meta["runs"]:
        entry["status"] = "running"
        run = folder / entry["folder"] / "run.json"
        run.write_text(json.dumps({**json.loads(run.read_text()), "status": "running"}))
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"has {key} = null where the collection's plan has {json.dumps(value)}" in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.fixture(scope="module")
def finished_scorecard(tmp_path_factory, fake_server):
    import os
    import subprocess
    import sys

    def run_cli(*args: str):
        return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, CI="1"))

    root = tmp_path_factory.mktemp("card")
    return _scorecard(root, run_cli, fake_server.base_url)


@pytest.mark.parametrize("edit,fragment", [
    (lambda m: m["runs"][0].update(folder="nashgap/nothing/here"), "is missing"),
    (lambda m: m["runs"][0].update(folder="../elsewhere"), "no folder inside the collection"),
    (lambda m: m["runs"][0].update(key="zzz|a|1|b"), "no run of the saved plan"),
    (lambda m: m["runs"].append(dict(m["runs"][0])), "listed twice"),
    (lambda m: m.update(runs="abc"), "is not a list of run entries"),
    (lambda m: m.update(format_version=99), "written in result format 99 by a newer stratbench"),
])
def test_an_edited_list_of_runs_is_refused_and_nothing_changes(tmp_path, cli, finished_scorecard, edit, fragment):
    """A refused resume leaves the folder as it was: an edited entry no longer drops the entries
    after it from the list (whose runs a later resume would then do again beside them)."""
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["status"] = "running"
    edit(meta)
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and "Traceback" not in r.stderr and fragment in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("key,value,fragment", [
    ("nash_gap", float("nan"), "nash_gap: nan is not a finite number"),
    ("llm_value", float("inf"), "llm_value: inf is not a finite number"),
    ("game_id", 99, "trials.jsonl: line 1: a record for (99, 0), which this run does not have"),
])
def test_compare_names_a_record_no_run_writes(tmp_path, cli, key, value, fragment):
    runs = _two_runs_the_second_edited(tmp_path, cli, key, value)
    r = cli("compare", str(runs[0]), str(runs[1]))
    assert r.returncode == 2 and "Traceback" not in r.stderr and fragment in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("key,value,fragment", [
    ("policy", [0.5, 0.5], "is no probability distribution over the game's 3 rows"),
    ("policy", [1.5, -0.5, 0.0], "is no probability distribution"),
    ("nash_gap", -12345.0, "nash_gap = -12345.0 below 0"),
    ("llm_decision", 9, "llm_decision 9 is no row of the game"),
])
def test_a_resume_refuses_a_record_no_policy_could_have_made(tmp_path, cli, key, value, fragment):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-rows", "3", "--num-trials", "2", "--seed", "5",
            "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / "trials.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec[key] = value
    (folder / "trials.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:3]]) + "\n")
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and "Traceback" not in r.stderr and fragment in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def _resume_after_edit(cli, folder: Path, file: str, key: str, value: object) -> object:
    lines = (folder / file).read_text().splitlines()
    rec = json.loads(lines[0])
    rec[key] = value
    (folder / file).write_text("\n".join([json.dumps(rec), *lines[1:-1]]) + "\n")
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = cli(*(["chbench", "run"] if "chbench" in str(folder) else ["tom", "run"]), "--resume", str(folder))
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    return r


@pytest.mark.parametrize("key,value,fragment", [("row_action", 9, "row_action 9 is no action of the game"),
                                                ("round", 99, "round 99 is outside 1..3"),
                                                ("game_id", 2, "is not its match's game")])
def test_chbench_refuses_a_round_no_match_played(tmp_path, cli, key, value, fragment):
    r = cli("chbench", "run", "--models", "random", "--opponents", "level-k:1", "--games", "1", "--rounds", "3",
            "--seed", "1", "--bootstrap", "0", "--restarts", "1", "--quiet", "--output-dir", str(tmp_path / "chbench"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "chbench").iterdir()
    r = _resume_after_edit(cli, folder, "rounds.jsonl", key, value)
    assert r.returncode == 2 and "Traceback" not in r.stderr and fragment in r.stderr, r.stderr


@pytest.mark.parametrize("key,value,fragment", [("initial_state", 999, "initial_state 999 is outside"),
                                                ("my_action", 999, "my_action 999 is outside"),
                                                ("t", 999, "t 999 is outside 0..2")])
def test_tom_refuses_a_round_no_episode_played(tmp_path, cli, fake_server, key, value, fragment):
    r = cli("tom", "run", "--model", "openai-compatible:fake", "--base-url", fake_server.base_url, "--prompting", "QA",
            "--rounds", "3", "--episodes", "2", "--seed", "1", "--output-dir", str(tmp_path / "tom"))
    assert r.returncode in (0, 1), r.stderr
    (folder,) = (tmp_path / "tom").iterdir()
    r = _resume_after_edit(cli, folder, "rounds.jsonl", key, value)
    assert r.returncode == 2 and "Traceback" not in r.stderr and fragment in r.stderr, r.stderr


def test_a_duplicated_record_line_is_dropped_with_one_note(tmp_path, cli):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join([*lines[:3], lines[0]]) + "\n")
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("1 duplicated record line(s) dropped") == 1, r.stderr
    assert len((folder / "trials.jsonl").read_text().splitlines()) == len(lines)


def test_a_saved_model_edited_to_an_unknown_backend_names_the_folder(tmp_path, cli):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta.update(status="running", config={**meta["config"], "model": "nosuch:thing", "player": "nosuch:thing"})
    (folder / "run.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: --resume {folder}: unknown model backend 'nosuch'"), r.stderr
    assert _snapshot(folder) == before


# -- suite versions: a run is carried on only by the definition of its suite that started it ------

def _nashgap_runs(tmp_path: Path, cli, n: int = 1, shards: bool = False) -> list[Path]:
    out = []
    for i in range(1, n + 1):
        extra = ["--shard", f"{i}/{n}"] if shards else []
        r = cli("nashgap", "--model", "random", "--num-games", "2", "--num-trials", "2", "--seed", "5", "--quiet",
                *extra, "--output-dir", str(tmp_path / f"o{i}"))
        assert r.returncode == 0, r.stderr
        (folder,) = (tmp_path / f"o{i}").iterdir()
        out.append(folder)
    return out


def _set_version(folder: Path, v: object) -> None:
    meta = json.loads((folder / "run.json").read_text())
    meta["suite_version"] = v
    (folder / "run.json").write_text(json.dumps(meta))


def test_a_new_run_records_its_suite_version(tmp_path, cli):
    from stratbench.suites import get_suite

    (folder,) = _nashgap_runs(tmp_path, cli)
    assert json.loads((folder / "run.json").read_text())["suite_version"] == get_suite("nashgap").version == 1


@pytest.mark.parametrize("v,why", [
    (2, "written by version 2 of the nashgap suite; this stratbench has version 1 (upgrade stratbench)"),
    (0, "suite_version must be a positive integer (got 0)"),
    ("1", "suite_version: Input should be a valid integer"),  # (run.json's schema, strict: a string is no int)
])
def test_a_run_of_another_suite_version_is_not_resumed_merged_or_compared(tmp_path, cli, v, why):
    a, b = _nashgap_runs(tmp_path, cli, 2, shards=True)
    _set_version(b, v)
    before = {p: p.read_bytes() for f in (a, b) for p in f.iterdir()}
    r = cli("nashgap", "--resume", str(b))
    said = f"error: --resume {b}/run.json: {why}" if isinstance(v, str) else f"error: --resume {b}: {why}"
    assert r.returncode == 2 and r.stderr.strip() == said, r.stderr
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = cli("compare", str(a), str(b))
    assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert {p: p.read_bytes() for f in (a, b) for p in f.iterdir()} == before
    assert not (tmp_path / "m").exists()


def _inproc(*argv: str) -> tuple[int, str]:
    """`stratbench argv` in this process (so a monkeypatched suite version applies): (exit code, stderr)."""
    import contextlib
    import io

    from stratbench.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(list(argv))
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
    return code, err.getvalue()


def test_an_older_suite_version_is_reported_as_saved_but_never_resumed_or_compared_with_a_newer(
        tmp_path, cli, monkeypatch):
    """A suite that bumped its version (here, as if nashgap were at 2): its version-1 runs are shown by the
    report as they were saved, but no resume, merge or compare mixes them with the new definition."""
    a, b = _nashgap_runs(tmp_path, cli, 2)
    _set_version(b, 2)
    from stratbench.suites import get_suite
    from stratbench.suites.nashgap.run import NashgapPlan
    from stratbench.workflows.verify import check_run

    monkeypatch.setattr(type(get_suite("nashgap")), "version", 2)
    monkeypatch.setattr(NashgapPlan, "version", 2)
    code, err = _inproc("compare", str(a), str(b))
    assert code == 2 and "is a run of version 1 of the nashgap suite and" in err, err
    code, err = _inproc("merge", str(a), "--output-dir", str(tmp_path / "m"))
    assert code == 2 and "a run of version 1 of the nashgap suite; this stratbench runs version 2" in err, err
    meta = json.loads((a / "run.json").read_text())
    (a / "summary.json").write_text((a / "summary.json").read_text().replace("{", '{"mean_nash_gap": 99, ', 1))
    check_run(a)  # an older definition's run is not recomputed: shown as saved
    monkeypatch.undo()
    with pytest.raises(Exception, match="mean_nash_gap"):
        check_run(a)  # (the same edit in a run of this version is caught)
    meta["status"] = "running"
    (a / "run.json").write_text(json.dumps(meta))
    monkeypatch.setattr(type(get_suite("nashgap")), "version", 2)
    monkeypatch.setattr(NashgapPlan, "version", 2)
    code, err = _inproc("nashgap", "--resume", str(a))
    assert code == 2 and "a run of version 1 of the nashgap suite; this stratbench runs version 2" in err, err


# -- a Nash-gap run's games are the ones its saved config gives (fuzz pass 8, D5, D9) -----------

def _games_edit(change):
    def edit(folder: Path) -> str:
        games = json.loads((folder / "games.json").read_text())
        change(games)
        (folder / "games.json").write_text(json.dumps(games))
        return "games.json"
    return edit


def _config_edit(**change: object):
    def edit(folder: Path) -> str:
        meta = json.loads((folder / "run.json").read_text())
        meta["config"].update(change)
        (folder / "run.json").write_text(json.dumps(meta))
        return "run.json" if {"combined", "mixed_strategy"} & set(change) else "games.json"
    return edit


@pytest.mark.parametrize("edit,why", [
    (_games_edit(lambda g: g[0].update(nash_equilibrium_row=[1 / 3, 1 / 3, 1 / 3])), "game 0 has nash_equilibrium_row"),
    (_games_edit(lambda g: g[0].update(row_labels=["a", "b", "c"])), "game 0 has row_labels"),
    (_games_edit(lambda g: g[0].update(bucket="2x2_lowVar_pure")), "game 0 has bucket \"2x2_lowVar_pure\""),
    (_games_edit(lambda g: g[0].update(saddle_point=not g[0]["saddle_point"])), "game 0 has saddle_point"),
    (_games_edit(lambda g: g[0].update(value=g[0]["value"] + 1e-6)), "game 0 has value"),
    (_games_edit(lambda g: g[0].update(payoff_col=1)), "game 0 is not a game a run writes (keys payoff_col)"),
    (_games_edit(lambda g: g.reverse()), "game 0 has game_id 2"),
    (_config_edit(seed=2), "game 0 has seed 5, but run.json's config gives 2"),
    (_config_edit(num_games=9), "holds 3 games, but run.json's config gives 9"),
    (_config_edit(num_rows=4), "game 0 has num_rows 3, but run.json's config gives 4"),
    (_config_edit(payoff_max=50.0), "game 0 has payoff_matrix"),
    (_config_edit(decimals=1), "game 0 has payoff_matrix"),
    (_config_edit(bucket="3x3_midVar_mixed"), "game 0 has bucket null, but run.json's config gives \"3x3_midVar_mixed\""),
    (_config_edit(games_file="/etc/passwd"), "game 0 has seed 5, but its payoffs give null"),
    (_config_edit(combined=True), "its config is a combined run, but the folder holds trials.jsonl"),
    (_config_edit(mixed_strategy=True), "its config plays mixed strategies, but trials.jsonl holds pure trials"),
])
def test_a_nashgap_run_whose_games_are_not_its_configs_is_refused(tmp_path, cli, edit, why):
    """Generated games are generated again from run.json's config (and solved) wherever the run is
    read: games.json and the config keys that define the games agree, or the folder is refused
    before anything is written (a resume of an edited `combined` would play every trial again)."""
    args = ["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet"]
    r = cli(*args, "--output-dir", str(tmp_path / "a"))
    (clean,) = (tmp_path / "a").iterdir()
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    (folder,) = (tmp_path / "o").iterdir()
    file = edit(folder)
    before = _snapshot(folder)
    for cmd in (["nashgap", "--resume", str(folder)], ["compare", str(clean), str(folder)]):
        r = cli(*cmd)
        assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/{file}: ") and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and why in r.stderr and "the report leaves out its numbers" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_nashgap_shards_whose_configs_give_other_games_are_not_merged(tmp_path, cli):
    for i in (1, 2):
        r = cli("nashgap", "--model", "random", "--num-games", "4", "--num-trials", "2", "--seed", "1", "--shard",
                f"{i}/2", "--quiet", "--output-dir", str(tmp_path / "s"))
        assert r.returncode == 0, r.stderr
    shards = sorted((tmp_path / "s").iterdir())
    for f in shards:
        meta = json.loads((f / "run.json").read_text())
        meta["config"]["seed"] = 5
        (f / "run.json").write_text(json.dumps(meta))
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and r.stderr.startswith(
        f"error: {shards[0]}/games.json: game 0 has seed 1, but run.json's config gives 5"), r.stderr
    assert not (tmp_path / "m").exists()


def test_a_games_file_runs_games_json_is_what_its_payoffs_give(tmp_path, cli):
    """A games file's payoffs (and labels) are the run's as saved; what a run derives from them is
    derived again, and the saved count of games is games.json's."""
    f = tmp_path / "g.json"
    f.write_text('[{"payoff_matrix": [[0.333, 0], [0, 1]], "row_labels": ["U", "D"]}, '
                 '{"payoff_matrix": [[3, 1, 2], [0, 2, 1]]}]')
    r = cli("nashgap", "--games-file", str(f), "--model", "random", "--num-trials", "2", "--quiet", "--output-dir",
            str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    for edit, why in ((_games_edit(lambda g: g[0].update(nash_equilibrium_row=[0.5, 0.5])),
                       "game 0 has nash_equilibrium_row [0.5, 0.5], but its payoffs give"),
                      (_config_edit(num_games=1), "holds 2 games, but run.json's config gives 1"),
                      (_config_edit(decimals=1), "game 0 has payoffs beyond run.json's decimals 1")):
        saved = _snapshot(folder)
        edit(folder)
        r = cli("nashgap", "--resume", str(folder))
        assert r.returncode == 2 and why in r.stderr, r.stderr
        for name, data in saved.items():
            (folder / name).write_bytes(data)


@pytest.mark.parametrize("key,value", [("errors", 3), ("records", 99)])
def test_an_edited_count_in_run_json_is_refused_where_it_is_read(tmp_path, cli, key, value):
    """fuzz pass 8, D6: records and errors are counted again from the records (compare, report, a
    resume of a finished run); the model's calls and cost cannot be, and stay as saved."""
    args = ["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet"]
    r = cli(*args, "--output-dir", str(tmp_path / "a"))
    (clean,) = (tmp_path / "a").iterdir()
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta["totals"].update({key: value, "model_calls": 500, "cost_usd": 12.5})
    (folder / "run.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    counted = {"errors": 0, "records": 6}[key]
    why = f"run.json: totals.{key} is {value}, but the run's records count {counted}: run.json was edited"
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.strip() == f"error: --resume {folder}/{why}; the folder is left as it is", \
        r.stderr
    r = cli("compare", str(clean), str(folder))
    assert r.returncode == 2 and r.stderr.strip() == f"error: {folder}/{why}", r.stderr
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and why in r.stderr, r.stderr
    assert "12.5" not in (tmp_path / "rep" / "index.html").read_text()  # (its counts are not shown)
    assert _snapshot(folder) == before
    meta["totals"].update({key: counted})  # the calls and cost alone: kept as saved
    (folder / "run.json").write_text(json.dumps(meta))
    r = cli("compare", str(clean), str(folder))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("edit,why", [
    ({"corrections": 1}, "--corrections must be a string (got 1)"),
    ({"opponents": "level-k:1"}, "opponents must be a list (got 'level-k:1')"),
    ({"models": "random"}, "models must be a list (got 'random')"),
])
def test_a_chbench_config_of_another_type_is_one_line_in_resume_and_compare(tmp_path, cli, edit, why):
    """(fuzz 9 T1, T2: each was an internal error with a crash file)"""
    r = cli("chbench", "run", "--models", "random", "--opponents", "level-k:1", "--games", "1", "--rounds", "2",
            "--seed", "1", "--bootstrap", "3", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta["config"].update(edit)
    (folder / "run.json").write_text(json.dumps(meta))
    before = {p.name: p.read_bytes() for p in Path(folder).iterdir()}
    for args in (("chbench", "run", "--resume", str(folder)), ("compare", str(folder), str(folder))):
        r = cli(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and why in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in Path(folder).iterdir()} == before


# -- a scorecard.json is shown only while every field of it is what its records give (fuzz 9 D4) --

def _model_cell(card: dict) -> dict:
    return next(c for c in card["cells"] if c["player"] == "openai-compatible:fake" and c["suite"] == "nashgap")


@pytest.mark.parametrize("edit,fragment", [
    (lambda card: _model_cell(card).update(reference="optimal"), "reference 'optimal' disagrees with its records"),
    (lambda card: _model_cell(card).update(exact=True), "exact True disagrees with its records"),
    (lambda card: _model_cell(card).update(runs=_model_cell(card)["runs"][:-1]), "runs ["),
    (lambda card: card["players"].pop(), "players are not the scorecard's"),
    (lambda card: card["suites"][0].update(title="Best"), "suites are not the scorecard's"),
])
def test_every_field_of_scorecard_json_is_checked_against_the_records(tmp_path, cli, finished_scorecard, edit,
                                                                      fragment):
    """A cell relabelled as a reference, a CI dropped as if exact, a row removed from the table:
    compare refuses, the report leaves the table out with a warning."""
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    card = json.loads((folder / "scorecard.json").read_text())
    edit(card)
    (folder / "scorecard.json").write_text(json.dumps(card))
    r = cli("compare", str(finished_scorecard), str(folder))
    assert r.returncode == 2 and fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and fragment in r.stderr and "leaves out the scorecard's table" in r.stderr, r.stderr


# -- a suite file's suite_metadata.json is shown and resumed only while its runs give it (fuzz 9 D3) --

@pytest.fixture(scope="module")
def finished_suite_file(tmp_path_factory):
    import os
    import subprocess
    import sys

    def run_cli(*args: str):
        return subprocess.run([sys.executable, "-m", "stratbench", *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, CI="1"))

    root = tmp_path_factory.mktemp("suite")
    (root / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random"]\n[nashgap]\nnum_games = 3\nnum_trials = 2\n')
    r = run_cli("suite", "run", str(root / "s.toml"), "--output-dir", str(root / "o"), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    (folder,) = (root / "o").iterdir()
    return folder


def _swap_folders(m: dict) -> None:
    m["runs"][0]["folder"], m["runs"][1]["folder"] = m["runs"][1]["folder"], m["runs"][0]["folder"]


@pytest.mark.parametrize("edit,fragment", [
    (lambda m: m["runs"][0]["headline"][0].update(value=0.0), "is listed with a headline its records do not give"),
    (lambda m: m["runs"][1].update(seed=1), "is listed with seed 1, but the run's is 2"),
    (lambda m: m["runs"][0].update(folder="../../elsewhere"), "no folder inside the collection"),
    (lambda m: m["runs"][0].update(folder="/tmp"), "no folder inside the collection"),
    (lambda m: m["runs"].append(dict(m["runs"][0])), "listed twice"),
    (_swap_folders, "has seed = 2 where the collection's plan has 1"),
    (lambda m: m["config"].update(seeds=[1]), "plan"),
    (lambda m: m["config"]["nashgap"].update(num_games=4), "has num_games = 3 where the collection's plan has 4"),
    (lambda m: m["runs"].pop(), "does not list its run 'nashgap|random|2|'"),
    (lambda m: m.update(kind="scorecard"), "kind 'scorecard', suite_version 1 are not a suite file's"),
])
def test_a_suite_files_edited_metadata_is_withheld_by_the_report_and_refused_by_resume(
        tmp_path, cli, finished_suite_file, edit, fragment):
    """runs.csv was rewritten from an edited list on resume (a headline of 0.0, two seed-1 rows)
    and the report showed the list as it stood: now the report leaves it out with a warning, and
    a resume of the finished suite refuses it, nothing changed."""
    folder = _edited_suite_copy(tmp_path, finished_suite_file, edit)
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    (line,) = [x for x in r.stderr.splitlines() if "suite_metadata.json" in x]
    assert r.returncode == 0 and line.startswith("warning:") and "leaves out the collection's" in line, r.stderr
    assert fragment in line or fragment == "plan" and "its plan is not the runs its config gives" in line, r.stderr
    before = _snapshot(folder)
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert fragment in r.stderr or fragment == "plan" and "same runs" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def _edited_suite_copy(tmp_path: Path, finished: Path, edit) -> Path:
    """A copy of the finished suite-file folder whose suite_metadata.json ``edit`` changed."""
    import shutil

    folder = tmp_path / "suite"
    shutil.copytree(finished, folder)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    edit(meta)
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    return folder


def test_a_suite_folder_whose_metadata_was_deleted_is_reported_with_a_warning(tmp_path, cli, finished_suite_file):
    import shutil

    folder = tmp_path / "suite"
    shutil.copytree(finished_suite_file, folder)
    r = cli("report", str(folder), "-o", str(tmp_path / "rep0"), "--quiet")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr  # (the folder as written: no warning)
    (folder / "suite_metadata.json").unlink()
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and "suite_metadata.json: missing" in r.stderr, r.stderr


@pytest.mark.parametrize("edit,said", [
    (lambda m: m["totals"].update(records=999), "totals.records is 999, but its runs' run.json files add up to"),
    (lambda m: m["runs"][0].update(errors=5), "is listed with errors 5, but the run's is 0"),
    # whatever its status says, and totals emptied (fuzz 11 B D3)
    (lambda m: m.update(status="running") or m["totals"].update(records=999), "totals.records is 999"),
    (lambda m: m.update(totals={}), "totals has no runs or records"),
    # a whole suite relabelled a shard (fuzz 11 B R1)
    (lambda m: m.update(shard="1/2"), "runs lists 'nashgap|random|2|', which its shard '1/2' does not play"),
    # a total none of its runs counts, shown by the report (fuzz 29 B F7)
    (lambda m: m["totals"].update(model_cost_usd=99.0), "totals.model_cost_usd is 99.0, which none of its runs counts"),
    # named as suite_metadata.json's, not the suite file's (fuzz 29 B F6)
    (lambda m: m["config"].update(zz_added=1), "suite_metadata.json: its config is not a suite file's ("),
], ids=["totals", "a run's errors", "totals while running", "totals emptied", "relabelled a shard", "total added",
        "config key added"])
def test_a_suite_folders_edited_counts_are_named_by_the_report(tmp_path, cli, finished_suite_file, edit, said):
    """(fuzz 10 B D6: the report showed them as they stood)"""
    folder = _edited_suite_copy(tmp_path, finished_suite_file, edit)
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and said in r.stderr and "leaves out" in r.stderr, r.stderr


@pytest.mark.parametrize("where", ["headline", "record"])
def test_a_suite_file_shard_edited_by_hand_is_not_merged(tmp_path, cli, where):
    """`merge` of suite-file shards copied an edited headline into the merged runs.csv and an edited
    record into the merged folder (fuzz 10 B D3): each shard is now read as the report reads it."""
    (tmp_path / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random"]\n[nashgap]\nnum_games = 2\nnum_trials = 2\n')
    for i in (1, 2):
        r = cli("suite", "run", str(tmp_path / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(tmp_path / "sh"),
                "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
    shards = sorted((tmp_path / "sh").iterdir())
    meta = json.loads((shards[0] / "suite_metadata.json").read_text())
    if where == "headline":
        meta["runs"][0]["headline"][0]["value"] = 0.0
        (shards[0] / "suite_metadata.json").write_text(json.dumps(meta))
    else:
        trials = shards[0] / meta["runs"][0]["folder"] / "trials.jsonl"
        recs = [json.loads(x) for x in trials.read_text().splitlines()]
        recs[0]["nash_gap"] = 7.77
        trials.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and str(shards[0]) in r.stderr, r.stderr
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


# -- a finished run's config raised to more units: refused like ToM's episodes (fuzz 9 D5, M2) -----

def _raised(tmp_path, cli, args: list[str], key: str, value: int) -> Path:
    r = cli(*args, "--seed", "1", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta["config"][key] = value
    (folder / "run.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize("args,key,value,resume,compared", [
    (["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--quiet"], "num_trials", 3,
     ["nashgap"], "trials.jsonl: the finished run holds only 6 of the run's 9 trials (2 of 3 per game)"),
    (["tom", "baseline", "--game", "rps", "--partner", "single_action", "--episodes", "3", "--rounds", "5"],
     "episodes", 4, ["tom", "baseline"], "episodes.jsonl: the finished run holds only 3 of the run's 4 episodes"),
    (["chbench", "run", "--models", "random", "--opponents", "level-k:1", "--games", "1", "--rounds", "3",
      "--bootstrap", "3", "--quiet"], "rounds", 4, ["chbench", "run"], "config.rounds is 4"),
])
def test_a_finished_run_whose_config_was_raised_is_refused_not_played_on(tmp_path, cli, args, key, value, resume,
                                                                       compared):
    """A "3-trial" run holding 2 trials per game was compared and reported as it stood, and a
    resume of the finished run played the new trials (new model calls): compare, the report and
    the resume now refuse it, as they refuse ToM's raised episodes."""
    folder = _raised(tmp_path, cli, args, key, value)
    before = _snapshot(folder)
    r = cli(*resume, "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
    assert "the finished run holds only" in r.stderr and "its config was edited" in r.stderr, r.stderr
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and compared in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and compared in r.stderr and "leaves out its numbers" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_a_finished_run_whose_records_were_cut_is_still_finished_again(tmp_path, cli):
    """(the rule above leaves this alone: run.json's count says records were lost, not added)"""
    folder = _raised(tmp_path, cli, ["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2",
                                     "--quiet"], "num_trials", 2)
    lines = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join(lines[:-2]) + "\n")
    r = cli("nashgap", "--resume", str(folder), "--quiet")
    assert r.returncode == 0, r.stderr
    assert len((folder / "trials.jsonl").read_text().splitlines()) == len(lines)


# -- a scorecard folder missing its scorecard.json, or relabelled (fuzz 9 M5) ------------------------

def test_a_finished_scorecard_without_its_scorecard_json_is_reported_with_a_warning(tmp_path, cli,
                                                                                   finished_scorecard):
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    (folder / "scorecard.json").unlink()
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and "no readable scorecard.json" in r.stderr, r.stderr
    assert "leaves out the scorecard's table" in r.stderr, r.stderr


def test_a_scorecard_whose_kind_was_edited_is_refused(tmp_path, cli, finished_scorecard):
    import shutil

    folder = tmp_path / "card"
    shutil.copytree(finished_scorecard, folder)
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta.update(kind="suite", suite_version=2)
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    why = "kind 'suite', suite_version 2 are not a scorecard's (edited by hand)"
    r = cli("compare", str(finished_scorecard), str(folder))
    assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and why in r.stderr and "leaves out the scorecard's table" in r.stderr, r.stderr
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("key,value", [("agent", "openai:gpt-4o"), ("m", 2)])
def test_a_tom_baseline_run_json_relabelled_to_another_agent_is_refused(tmp_path, cli, key, value):
    """The report filed the run under the name run.json gave (as an edited config.player of the
    other suites was, fuzz 9 D2)."""
    folder = _raised(tmp_path, cli, ["tom", "baseline", "--game", "rps", "--partner", "single_action", "--episodes",
                                     "2", "--rounds", "5"], key, value)
    why = f"run.json's saved config is not valid: {key} is {value!r} but the baseline plays"
    before = _snapshot(folder)
    for args in (("tom", "baseline", "--resume", str(folder)), ("compare", str(folder), str(folder))):
        r = cli(*args)
        assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and why in r.stderr and "leaves out its numbers" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_a_finished_tmgbench_run_whose_repeats_were_raised_is_refused(tmp_path, cli):
    """(fuzz 10 B D1: the rule above, for TMGBench's sampled repeats, which compare and the report
    took as they stood)"""
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as s:
        folder = _raised(tmp_path, cli, ["tmgbench", "run", "--model", "openai-compatible:m", "--base-url", s.base_url,
                                         "--policy", "sample", "--games", "111,222", "--repeats", "2", "--quiet"],
                         "repeats", 3)
    before = _snapshot(folder)
    said = "run.json's config asks for 3 repeats of each game but the finished run played 2"
    r = cli("tmgbench", "run", "--resume", str(folder))
    assert r.returncode == 2 and "the finished run holds only 4 of the run's 6 answers" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet")
    assert r.returncode == 0 and said in r.stderr and "leaves out its numbers" in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("edit", ["none", "table value", "table player", "metadata runs", "merged",
                                  "table value while running", "table value, metadata deleted",
                                  "table value, metadata emptied", "table value, metadata renamed"])
def test_a_tiered_suites_tables_are_checked_by_the_report(tmp_path, cli, edit):
    """The report showed a tiered suite's big tables and list of runs as they stood (fuzz 10 B D2):
    a mean Nash gap of 2.585 shown as 0.001, a player renamed. They are now recomputed from the
    cells' records; a folder as written (and a merge of its shards) is shown without a warning."""
    import csv

    base = ["suite", "tiered", "--use-dummy", "--num-games-per-bucket", "2", "--num-trials", "2", "--seeds", "42",
            "--bucket-ids", "2x2_lowVar_pure,3x3_midVar_mixed", "--quiet"]
    if edit == "merged":
        for i in (1, 2):
            r = cli(*base, "--shard", f"{i}/2", "--output-dir", str(tmp_path / "sh"))
            assert r.returncode == 0, r.stderr
        r = cli("merge", *map(str, sorted((tmp_path / "sh").iterdir())), "--output-dir", str(tmp_path / "t"), "--quiet")
        assert r.returncode == 0, r.stderr
    else:
        r = cli(*base, "--output-dir", str(tmp_path / "t"))
        assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "t").iterdir()
    table = folder / "big_table_all_runs.csv"
    rows = list(csv.reader(table.open(newline="")))
    if edit.startswith("table value"):
        rows[1][rows[0].index("mean_nash_gap")] = "0.001"
    elif edit == "table player":
        rows[2][rows[0].index("player")] = "openai:gpt-4o"
    if edit.startswith("table"):
        with table.open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    if edit in ("metadata runs", "table value while running"):  # (a running suite's tables: fuzz 11 B D3)
        meta = json.loads((folder / "suite_metadata.json").read_text())
        if edit == "metadata runs":
            meta["runs"] = meta["runs"][1:]
        else:
            meta["status"] = "running"
        (folder / "suite_metadata.json").write_text(json.dumps(meta))
    if "metadata" in edit and edit != "metadata runs":  # the check skipped with it (fuzz 26 B F1)
        meta = json.loads((folder / "suite_metadata.json").read_text())
        if edit.endswith("deleted"):
            (folder / "suite_metadata.json").unlink()
        else:
            (folder / "suite_metadata.json").write_text(json.dumps({} if edit.endswith("emptied")
                                                                   else dict(meta, suite="tiered_suite_old")))
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet", "--figures", "none")
    assert r.returncode == 0, r.stderr
    if edit in ("none", "merged"):
        assert "warning" not in r.stderr, r.stderr
    elif "metadata" in edit and edit != "metadata runs":
        said = {"deleted": "missing (deleted?)", "emptied": "suite 'None' is no collection's",
                "renamed": "suite 'tiered_suite_old' is no collection's"}[edit.rsplit(" ", 1)[1]]
        assert said in r.stderr and "leaves out the collection's tables" in r.stderr, r.stderr
        assert "0.001" not in (tmp_path / "rep" / "index.html").read_text()
    else:
        assert "edited by hand" in r.stderr and "leaves out the collection's tables" in r.stderr, r.stderr


def test_a_tom_run_whose_label_set_was_edited_is_named_as_an_edit(tmp_path, cli):
    """A saved label set no game has: the resume names run.json (fuzz 10 B M4: it said 'rps:
    unknown label set', naming neither the file nor the folder); a URL saved for a local model
    when the flag was ignored is dropped, as the other suites drop it."""
    r = cli("tom", "run", "--model", "embedded", "--game", "rps", "--rounds", "2", "--episodes", "1", "--seed", "1",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    edited = dict(meta, status="running", config=dict(meta["config"], label_set="numeric"))
    (folder / "run.json").write_text(json.dumps(edited))
    before = _snapshot(folder)
    r = cli("tom", "run", "--resume", str(folder))
    assert r.returncode == 2 and f"{folder}/run.json: its saved config is not valid" in r.stderr, r.stderr
    assert "unknown label set 'numeric'" in r.stderr and _snapshot(folder) == before
    (folder / "run.json").write_text(json.dumps(dict(meta, status="running",
                                                     config=dict(meta["config"], base_url="http://127.0.0.1:9/v1"))))
    r = cli("tom", "run", "--resume", str(folder))
    assert r.returncode == 0, r.stderr


def test_a_scored_answers_distribution_and_label_mass_are_what_its_log_probabilities_give():
    """TMGBench's scored record: its distribution and label mass are checked against the
    log-probabilities beside them (fuzz 17 A D3: two entries swapped moved ID% and BD%, a deleted
    label_mass the mean label mass); nashgap's log-prob trial has its label mass (D4: null taken,
    the mean recomputed without it)."""
    import numpy as np

    from stratbench.players import exact_policy
    from stratbench.suites.nashgap.records import record_problem
    from stratbench.suites.tmgbench.prompts import completion_candidates
    from stratbench.suites.tmgbench.run import _scored_problem, subset_key

    cands = completion_candidates()
    lps = [-3.0 - 0.3 * i if i % 4 else float("-inf") for i in range(len(cands))]
    pol = exact_policy(lps)
    assert not isinstance(pol, str)
    rec = {"status": "parsed", "label_mass": pol.mass,
           "logprobs": {subset_key(s): (None if x == float("-inf") else x) for (s, _), x in zip(cands, lps)},
           "distribution": {subset_key(s): float(p) for (s, _), p in zip(cands, pol.probs)}}
    rec = json.loads(json.dumps(rec))
    assert _scored_problem(rec) is None
    k1, k2 = list(rec["distribution"])[1:3]
    swapped = {**rec["distribution"], k1: rec["distribution"][k2], k2: rec["distribution"][k1]}
    assert "is not what its log-probabilities give" in _scored_problem({**rec, "distribution": swapped})
    assert "label_mass None, but its log-probabilities give" in _scored_problem({**rec, "label_mass": None})
    assert "label_mass 0.5, but" in _scored_problem({**rec, "label_mass": 0.5})
    assert "without the log-probabilities" in _scored_problem({**rec, "logprobs": None})
    assert "status 'error' with log-probabilities" in _scored_problem({**rec, "status": "error"})
    # (fuzz 18 A D1: the log-probabilities deleted with the label mass, then the distribution edited;
    # a subset dropped from both)
    bare = {**rec, "logprobs": None, "label_mass": None}
    assert "a model's distribution without the log-probabilities" in _scored_problem(bare)
    assert _scored_problem(bare, scripted=True) is None  # (a scripted player's distribution is its own check)
    k = next(iter(rec["logprobs"]))
    fewer = {**rec, "logprobs": {x: v for x, v in rec["logprobs"].items() if x != k}}
    assert f"logprobs over {len(cands) - 1} answer subsets, not the {len(cands)}" in _scored_problem(fewer)

    entry, pol3, written = _logprob_trial()
    assert record_problem(written, {0: 3}, {0: entry}, "pure", "gguf:m", 1) is None and np.isclose(
        written["label_mass"], pol3.mass)
    assert "no label_mass beside its log-probabilities" in record_problem(
        {**written, "label_mass": None}, {0: 3}, {0: entry}, "pure", "gguf:m", 1)
    # an error trial keeps the numbers that made it one: a top-k whose spellings of a label add up
    # past 1 (fuzz 18 A D2: the run's own folder was refused as edited by hand)
    failed = {**written, "status": "error", "error": "a label's log-probability is above 0", "logprobs": [None, 0.000113, -12],
              "policy": None, "llm_decision": None, "label_mass": None}
    for k in ("nash_gap", "exploitability", "llm_value"):
        failed[k] = None
    assert record_problem(failed, {0: 3}, {0: entry}, "pure", "gguf:m", 1) is None
    # a scored trial's policy is what its log-probabilities give, over every row (fuzz 19 A D1: a policy
    # edited with its metrics was summarised; all-null log-probs; two of three rows)
    for edit in ({"policy": [0.0, 0.95, 0.05]}, {"logprobs": [None, None, None], "label_mass": 0.0},
                 {"logprobs": [-0.1, -2.4], "label_mass": float(np.exp(-0.1) + np.exp(-2.4))}):
        why = record_problem({**written, **edit}, {0: 3}, {0: entry}, "pure", "gguf:m", 1)
        assert why is not None and "is not what its log-probabilities" in why, (edit, why)
    assert "a log-probability above 0" in record_problem({**written, "logprobs": [None, 0.000113, -12]}, {0: 3},
                                                         {0: entry}, "pure", "gguf:m", 1)
