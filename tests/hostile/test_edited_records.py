"""Result folders whose records or summaries were edited by hand: a record read back must be one
the run could have written (refused on resume, merge and compare with its file and line, nothing
changed), and the report shows a run's numbers only while they are what its records give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def fake_server():
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as s:
        yield s


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the report shows a run's numbers only while they are what its records give ----------------

def _edit_summary(folder: Path) -> str:
    s = json.loads((folder / "summary.json").read_text())
    s["mean_nash_gap"] = 987654.321
    (folder / "summary.json").write_text(json.dumps(s))
    return "summary.json: does not agree with the run's records (mean_nash_gap is 987654.321"


def _edit_run_json(**change: object):
    def edit(folder: Path) -> str:
        meta = json.loads((folder / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps({**meta, **change}))
        return "run.json: " + ("status" if "status" in change else "written in result format 3")
    return edit


def _edit_record(key: str, value: object):
    def edit(folder: Path) -> str:
        lines = (folder / "trials.jsonl").read_text().splitlines()
        rec = json.loads(lines[0])
        rec[key] = value
        (folder / "trials.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
        return "trials.jsonl: line 1:"
    return edit


def _cut_records(folder: Path) -> str:
    lines = (folder / "trials.jsonl").read_text().splitlines()
    (folder / "trials.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    return "the finished run holds only 5 of the run's 6 trials"


def _add_summary_key(folder: Path) -> str:  # (shown by the report as a measured metric, with its CI)
    s = json.loads((folder / "summary.json").read_text())
    s.update(mean_fake_score=987654.321, mean_fake_score_ci95=[987654.0, 987655.0])
    (folder / "summary.json").write_text(json.dumps(s))
    return "summary.json: does not agree with the run's records (mean_fake_score is 987654.321, a value the records do not give"


def _delete_summary_keys(folder: Path) -> str:  # (the failure counts gone: failures hidden)
    s = json.loads((folder / "summary.json").read_text())
    for key in ("status_counts", "parse_failure_rate"):
        s.pop(key)
    (folder / "summary.json").write_text(json.dumps(s))
    return "summary.json: lacks 2 of the"


@pytest.mark.parametrize("edit", [_edit_summary, _edit_run_json(status="exploded"), _edit_run_json(format_version=3),
                                  _edit_record("game_id", 99), _edit_record("nash_gap", -12345), _cut_records,
                                  _add_summary_key, _delete_summary_keys],
                         ids=["summary-value", "status", "newer-format", "record-game", "record-gap", "cut-records",
                              "summary-key-added", "summary-keys-deleted"])
def test_a_report_leaves_out_the_numbers_of_an_edited_run(tmp_path, cli, edit):
    r = cli("nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet",
            "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    shown = json.loads((folder / "summary.json").read_text())["mean_nash_gap"]
    r = cli("report", str(folder), "--output", str(tmp_path / "clean"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert "not what its records give" not in (tmp_path / "clean" / "index.html").read_text()
    why = edit(folder)
    before = _snapshot(folder)
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert why in line and "the report leaves out its numbers" in line, line
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "not what its records give" in page
    assert page.count("987654") <= 1  # named in the reason only, never shown as a result
    assert "<img" not in page and "<img" in (tmp_path / "clean" / "index.html").read_text()  # no figure, table
    from stratbench.render.html import fmt_num

    assert fmt_num(shown) not in page and fmt_num(shown) in (tmp_path / "clean" / "index.html").read_text()
    assert _snapshot(folder) == before  # the report only reads


# -- records edited to values no run writes: refused on resume, named with file and line ---------

def _run_and_edit(tmp_path, cli, args: list[str], file: str, key: str, value: object) -> Path:
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / file).read_text().splitlines()
    rec = json.loads(lines[0])
    if callable(value):  # an edit computed from the record (and the next one)
        value(rec, [json.loads(x) for x in lines[1:]])
    else:
        rec[key] = value
    (folder / file).write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    return folder


_NASHGAP = ["nashgap", "--model", "random", "--num-games", "3", "--num-trials", "2", "--seed", "5", "--quiet"]
_TMG = ["tmgbench", "run", "--model", "uniform", "--games", "421,431", "--seed", "2", "--quiet"]
_CH = ["chbench", "run", "--models", "level-k:2", "--opponents", "level-k:1", "--rounds", "3", "--games", "1,2",
       "--seed", "5", "--quiet"]
_CX = ["tmgbench", "run", "--form", "sequential", "--k", "3", "--num-tasks", "2", "--model", "oracle", "--seed", "1",
       "--quiet"]
_TOMB = ["tom", "baseline", "--game", "rps", "--partner", "single_action", "--episodes", "3", "--rounds", "5",
         "--seed", "1"]


def _oracle_wrong(rec, rest):  # the oracle's answers all changed, with the score they would get
    wrong = [[next(c for c in (1, 2, 3, 4) if [c] != e)] for e in rec["expected"]]
    rec.update(answers=wrong, per_game_correct=[False] * len(wrong), n_correct_games=0, all_correct=False,
               correct=False)


EDITED_RECORDS = {
    "complex-score": (_CX, "tasks.jsonl", "correct", False, "correct False, but its answers score True"),
    "complex-reference": (_CX, "tasks.jsonl", "answers", _oracle_wrong, "but oracle answers [[1], [1], [1]] in task 0"),
    "complex-form": (_CX, "tasks.jsonl", "form", "parallel", "form 'parallel', but task 0 has 'sequential'"),
    "complex-task": (_CX, "tasks.jsonl", "task_game_ids", ["111", "112", "113"], "task_game_ids ['111', '112', '113'], "
                     "but task 0 has"),
    "nashgap-value": (_NASHGAP, "trials.jsonl", "llm_value", 1e300, "llm_value = 1e+300, but its policy has"),
    # an edit of 1e-6 is no rounding: the same computation differs by ~1e-15 (fuzz pass 8, D8)
    "nashgap-1e-6": (_NASHGAP, "trials.jsonl", "nash_gap", lambda rec, rest: rec.update(nash_gap=rec["nash_gap"] + 1e-6),
                     "but its policy has"),
    "nashgap-logprob": (_NASHGAP, "trials.jsonl", "logprobs", [3, -1, -2], "a log-probability above 0"),
    "nashgap-first-listed": (_NASHGAP, "trials.jsonl", "first_listed_prob", 0.9, "first_listed_prob 0.9, but its policy"),
    "nashgap-agent": (_NASHGAP, "trials.jsonl", "agent", "other", "agent 'other', but this run's player is 'random'"),
    "nashgap-label-mass": (_NASHGAP, "trials.jsonl", "label_mass", 0.9, "without the log-probabilities"),
    "nashgap-seed": (_NASHGAP, "trials.jsonl", "seed", 12345, "seed 12345, but the run's llm_seed"),
    "ch-status": (_CH, "rounds.jsonl", "row_status", "parse_failed", "a move has an action exactly when it did not"),
    "tmg-distribution": (_TMG, "answers.jsonl", "distribution", {"1": 5.0}, "sums to 5.0, not 1"),
    "tmg-policy": (_TMG, "answers.jsonl", "policy", "sample", "policy 'sample', but this run's is 'scripted'"),
    "tmg-player": (_TMG, "answers.jsonl", "player", "oracle", "player 'oracle', but this run's player is 'uniform'"),
    "tmg-cell": (_TMG, "answers.jsonl", "col", 9, "game 421 at row 1, col 9; it is at row 1, col 1"),
    "ch-payoff": (_CH, "rounds.jsonl", "row_payoff", 999.0, "row_payoff 999.0, but the game pays"),
    "ch-policy": (_CH, "rounds.jsonl", "row_policy", [1.5, -0.5], "no distribution over the game's 2 actions"),
    "ch-mechanism": (_CH, "rounds.jsonl", "mechanism", "zzz", "mechanism 'zzz' is not its match's ('baseline')"),
    "ch-reference": (_CH, "rounds.jsonl", "row_policy", [0.5, 0.5], "but level-k:2 plays"),  # DATA-2
    "ch-null-policy": (_CH, "rounds.jsonl", "row_policy", None, "with neither a policy nor the raw answer"),
    "ch-round-status": (_CH, "rounds.jsonl", "status", "parse_failed", "but its moves make the round 'complete'"),
    "ch-error": (_CH, "rounds.jsonl", "row_error", "boom", "row_error 'boom' on a ok move"),
    "ch-latency": (_CH, "rounds.jsonl", "row_latency_s", -1, "row_latency_s -1 is below 0"),
    "tmg-reference": (_TMG, "answers.jsonl", "distribution", {"4": 1.0}, "uniform answers {"),  # DATA-2
    # a scripted player's record holds nothing only a model's call writes (fuzz pass 8, D6)
    "nashgap-scripted-reply": (_NASHGAP, "trials.jsonl", "raw_response", "I pick 0",
                               'raw_response "I pick 0", but random writes null in game 0, trial 0'),
    "nashgap-scripted-usage": (_NASHGAP, "trials.jsonl", "usage", {"tokens_in": 10**9}, "usage {\"tokens_in\""),
    "tmg-scripted-reply": (_TMG, "answers.jsonl", "raw_response", "I pick 1",
                           'raw_response "I pick 1" on a record of uniform, a scripted player'),
    "tmg-scripted-answer": (_TMG, "answers.jsonl", "answer", [1], "answer [1] on a record of uniform, a scripted player"),
    "ch-scripted-reasoning": (_CH, "rounds.jsonl", "row_reasoning", "hmm",
                              'row_reasoning "hmm" on a record of level-k:2, a scripted player'),
    "ch-scripted-prompt": (_CH, "rounds.jsonl", "col_prompt", "Pick 1 or 2",
                           'col_prompt "Pick 1 or 2" on a record of level-k:2, a scripted player'),
    "complex-scripted-reply": (_CX, "tasks.jsonl", "raw_responses", ["x"],
                               'raw_responses ["x"], which oracle, a reference player, never writes'),
    # the tabular baseline is played again: its episode is fixed by the seed (fuzz pass 8, D2)
    "tom-baseline-regret": (_TOMB, "episodes.jsonl", "regret_per_step", 0.0,
                            "regret_per_step 0.0, but the tabular-rmax agent's episode 0 gives"),
    "tom-baseline-actions": (_TOMB, "episodes.jsonl", "my_actions", [0, 0, 0, 0, 0],
                             "my_actions [0, 0, 0, 0, 0], but the tabular-rmax agent's episode 0 gives"),
}


@pytest.mark.parametrize("case", list(EDITED_RECORDS.values()), ids=list(EDITED_RECORDS))
def test_a_record_edited_to_a_value_no_run_writes_is_refused(tmp_path, cli, case):
    args, file, key, value, why = case
    folder = _run_and_edit(tmp_path, cli, args, file, key, value)
    before = _snapshot(folder)
    resume = [*args[:2]] if args[0] in ("tmgbench", "chbench", "tom") else [args[0]]
    r = cli(*resume, "--resume", str(folder))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: {folder}/{file}: line 1: ") and why in r.stderr, r.stderr
    assert _snapshot(folder) == before
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))  # and the report shows none of it
    assert r.returncode == 0 and why in r.stderr and "the report leaves out its numbers" in r.stderr, r.stderr


@pytest.mark.parametrize("case", ["nashgap-value", "tmg-player", "ch-payoff", "complex-score", "tom-baseline-regret"])
@pytest.mark.parametrize("shard", [False, True], ids=["running", "shard"])
def test_compare_and_report_read_every_record_of_an_unfinished_run_or_a_shard(tmp_path, cli, case, shard):
    """What run.json says of a run (still running, one shard) skips only the recomputation of its
    summaries: its records are read as a resume reads them (fuzz pass 8, D1)."""
    args, file, key, value, why = EDITED_RECORDS[case]
    args = [*args, "--shard", "1/2"] if shard else args
    r = cli(*args, "--output-dir", str(tmp_path / "clean"))
    (clean,) = (tmp_path / "clean").iterdir()
    folder = _run_and_edit(tmp_path, cli, args, file, key, value)
    if not shard:
        for f in (clean, folder):
            meta = json.loads((f / "run.json").read_text())
            (f / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    before = _snapshot(folder)
    if shard:  # one shard is no run to compare (its units are a part of the run's)
        r = cli("compare", str(clean), str(folder))
        assert r.returncode == 2 and r.stderr.strip() == (
            f"error: {clean}: one shard of a run (shard 1/2); merge its shards with stratbench merge, or compare "
            "what it holds with --allow-partial"), r.stderr
    if case != "complex-score":  # (complex forms are not compared yet: said before their records are read)
        r = cli("compare", str(clean), str(folder), "--allow-partial")
        assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/{file}: line 1: ") and why in r.stderr, \
            r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and why in r.stderr and "the report leaves out its numbers" in r.stderr, r.stderr
    r = cli("report", str(clean), "--output", str(tmp_path / "rep2"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("args,file", [(_NASHGAP, "trials.jsonl"), (_TMG, "answers.jsonl"), (_CH, "rounds.jsonl")],
                         ids=["nashgap", "tmgbench", "chbench"])
def test_compare_names_the_file_and_line_of_a_record_without_a_key(tmp_path, cli, args, file):
    """fuzz pass 8, M4: not `A / B: a record cannot be compared (KeyError: 'status')`."""
    folder = _run_and_edit(tmp_path, cli, args, file, "", lambda rec, rest: rec.pop("status"))
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    r = cli("compare", str(folder), str(folder), "--allow-partial")
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/{file}: line 1: "), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "KeyError" not in r.stderr, r.stderr


def _next_start(rec, rest):  # another state the partner could start in, not the one its seed draws
    rec["initial_state"] = (rest[0]["initial_state"] + 1) % 3


def _undrawn_action(rec, rest):  # another action its policy gives a chance, not the one drawn, paid as played
    from stratbench.suites.tom.games import get_game

    game, a, b = get_game(rec["game"]), rec["my_action"], rec["partner_action"]
    other = next(i for i, p in enumerate(rec["policy"]) if p > 0 and i != a)
    rec.update(my_action=other, payoff_me=float(game.payoff_me[other, b]),
               payoff_partner=float(game.payoff_partner[other, b]))


def _unlikely_prediction(rec, rest):
    assert min(rec["tom_policy"]) < max(rec["tom_policy"])
    rec["prediction"] = rec["tom_policy"].index(min(rec["tom_policy"]))


@pytest.mark.parametrize("key,value,why", [("payoff_me", 999.0, "payoff_me 999.0, but the game pays"),
                                           ("policy", [0.5, 0.5], "policy [0.5, 0.5] is no distribution"),
                                           ("prompting", "SP", "prompting 'SP', but this run's is 'LM'"),
                                           ("initial_state", _next_start, "but episode 0's seed starts the partner in"),
                                           ("my_action", _undrawn_action, "but round 0's seed draws"),
                                           ("prediction", _unlikely_prediction,
                                            "but its tom_policy's most likely action is"),
                                           ("tom_status", "parse_failed", "on an LM-prompting round, which has none"),
                                           ("status", "error", "status 'error' (the round that stopped its episode), "
                                            "but it has partner_action")])
def test_an_edited_tom_round_is_refused(tmp_path, cli, fake_server, key, value, why):
    """Also what the round's own fields fix: the action its seed draws from its policy, the
    prediction its ToM distribution makes, a stopped round's missing moves."""
    folder = _run_and_edit(tmp_path, cli, ["tom", "run", "--model", "openai-compatible:fake", "--base-url",
                                           fake_server.base_url, "--rounds", "4", "--episodes", "1", "--seed", "5"],
                           "rounds.jsonl", key, value)
    before = _snapshot(folder)
    r = cli("tom", "run", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/rounds.jsonl: line 1: ") and why in r.stderr
    assert _snapshot(folder) == before


def test_compare_reads_records_as_a_resume_does(tmp_path, cli):
    folder = _run_and_edit(tmp_path, cli, _NASHGAP, "trials.jsonl", "status", "bogus")
    r = cli(*_NASHGAP, "--output-dir", str(tmp_path / "clean"))
    (clean,) = (tmp_path / "clean").iterdir()
    r = cli("compare", str(clean), str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/trials.jsonl: line 1: status"), r.stderr


def _other_action(rec, rest):  # the round's action changed (and paid as played), its answer's text kept
    from stratbench.suites.tom.games import get_game

    game, b = get_game(rec["game"]), rec["partner_action"]
    a = (rec["my_action"] + 1) % 3
    rec.update(my_action=a, payoff_me=float(game.payoff_me[a, b]), payoff_partner=float(game.payoff_partner[a, b]))


def _failed_answer_parsed(rec, rest):  # the first stopped round's unreadable answer marked parsed and played
    stopped = next(r for r in [rec, *rest] if r["status"] == "parse_failed")
    call = [c for c in stopped["calls"] if c["kind"] == "action"][-1]
    call.update(status="parsed", parse="strict")
    call.pop("reason", None)
    stopped.update(status="parsed", my_action=0, partner_action=0, payoff_me=0.0, payoff_partner=0.0)
    rec.clear()
    rec.update(stopped)


@pytest.mark.parametrize("edit,why", [(_other_action, "my_action 2, but its action call's answer reads 1"),
                                      (_failed_answer_parsed, "(action) is 'parsed', but its text gives no answer")],
                         ids=["action", "parsed"])
def test_a_generated_tom_answer_is_read_again_from_its_text(tmp_path, cli, fake_server, edit, why):
    """QA prompting: the round's action is what its answer's text reads, as the episode read it."""
    folder = _run_and_edit(tmp_path, cli, ["tom", "run", "--model", "openai-compatible:fake", "--base-url",
                                           fake_server.base_url, "--prompting", "QA", "--rounds", "3",
                                           "--episodes", "1", "--seed", "5"], "rounds.jsonl", "", edit)
    before = _snapshot(folder)
    r = cli("tom", "run", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/rounds.jsonl: line 1: ") and why in r.stderr, \
        r.stderr
    assert _snapshot(folder) == before


def test_a_tom_shard_cut_after_it_finished_is_not_merged(tmp_path, cli, fake_server):
    args = ["tom", "run", "--model", "openai-compatible:fake", "--base-url", fake_server.base_url, "--rounds", "4",
            "--episodes", "2", "--seed", "5", "--output-dir", str(tmp_path / "s")]
    for i in (1, 2):
        r = cli(*args, "--shard", f"{i}/2")
        assert r.returncode == 0, r.stderr
    one, two = sorted((tmp_path / "s").iterdir())
    lines = (one / "rounds.jsonl").read_text().splitlines()
    (one / "rounds.jsonl").write_text("\n".join(lines[:2]) + "\n")  # episode 0 loses its last two rounds
    r = cli("merge", str(one), str(two), "--output-dir", str(tmp_path / "m"))
    # (the shard is named: merge reads each shard as its own run first)
    assert r.returncode == 2 and f"{one}/rounds.jsonl: the run's records of episode 0 stop short (2 records) though " \
        f"the run finished: it was cut or edited; finish the run again with --resume {one}" in r.stderr, r.stderr
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())
    r = cli(*args[:-2], "--output-dir", str(tmp_path / "whole"))  # a whole run cut so: the records are named
    assert r.returncode == 0, r.stderr
    (whole,) = (tmp_path / "whole").iterdir()
    lines = (whole / "rounds.jsonl").read_text().splitlines()
    (whole / "rounds.jsonl").write_text("\n".join(lines[:2] + lines[4:]) + "\n")
    r = cli("report", str(whole), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and "summary.json" not in r.stderr, r.stderr
    assert "rounds.jsonl: the run's records of episode 0 stop short (2 records) though the run finished" in r.stderr


def test_a_scorecard_whose_run_was_edited_shows_no_table_and_resumes_nothing(tmp_path, cli, fake_server):
    r = cli("scorecard", "--model", "openai-compatible:fake", "--base-url", fake_server.base_url, "--budget", "smoke",
            "--seed", "2", "--no-report", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    (trials,) = [p for p in folder.rglob("trials*.jsonl") if "fake" in str(p)][:1]
    lines = trials.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["first_listed_prob"] = 0.123456
    trials.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    before = _snapshot(folder)
    r = cli("scorecard", "--resume", str(folder), "--no-report")
    assert r.returncode == 2 and "first_listed_prob 0.123456" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert _snapshot(folder) == before
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"))
    assert r.returncode == 0 and "leaves out the scorecard's table" in r.stderr, r.stderr
    assert "the scorecard is not shown" in (tmp_path / "rep" / "index.html").read_text()


@pytest.mark.parametrize("mode,edit,why", [
    ("pure", {"status": "parse_failed", "policy": None, "llm_decision": None},
     "status 'parse_failed', but its raw_response reads as parsed when read again"),
    ("pure", {"raw_response": "no answer here"}, "status 'parsed', but its raw_response reads as parse_failed"),
    ("pure", {"parse": "flexible"}, "parse 'flexible', but its raw_response is a strict answer"),
    ("mixed", {"raw_response": '{"0": 0.25, "1": 0.75}'}, "but its raw_response says [0.25, 0.75]"),
], ids=["status", "raw", "parse", "mixed-raw"])
def test_a_sampled_answer_is_read_again_from_its_raw_text(tmp_path, cli, mode, edit, why):
    """DATA-1: a generated answer's status, decision and kind are what its raw text says when read
    again as the player read it (an edited status beside the model's own words is no result)."""
    from fake_openai_server import FakeOpenAIServer

    reply = "Action: 1" if mode == "pure" else '{"0": 0.5, "1": 0.5}'
    with FakeOpenAIServer(canned_text=reply) as s:
        r = cli("nashgap", "--model", "openai-compatible:fake", "--base-url", s.base_url, "--policy", "sample",
                *(["--mixed-strategy"] if mode == "mixed" else []), "--bucket", "2x2_lowVar_" + mode,
                "--num-games", "2", "--num-trials", "1",
                "--seed", "3", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    (file,) = folder.glob("trials*.jsonl")
    lines = file.read_text().splitlines()
    rec = json.loads(lines[0])
    assert rec["status"] == "parsed" and rec["parse"] == "strict", rec
    file.write_text("\n".join([json.dumps({**rec, **edit}), *lines[1:]]) + "\n")
    before = _snapshot(folder)
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {file}: line 1: ") and why in r.stderr, r.stderr
    assert _snapshot(folder) == before


_SAMPLED = {
    "tmg-answer": ('answer = [("A1", "B2")]', ["tmgbench", "run", "--policy", "sample", "--games", "421,431"],
                   "answers.jsonl", {"answer": [3]}, "answer [3], but its raw_response says [2]"),
    "tmg-status": ('answer = [("A1", "B2")]', ["tmgbench", "run", "--policy", "sample", "--games", "421,431"],
                   "answers.jsonl", {"status": "parse_failed"},
                   "status 'parse_failed', but its raw_response reads as parsed"),
    "ch-action": ("2", ["chbench", "run", "--opponents", "level-k:1", "--policy", "sample", "--rounds", "2",
                        "--games", "1"], "rounds.jsonl", {"row_action": 0, "row_payoff": 1.0, "col_payoff": 1.0},
                  "row_action 0, but its raw answer reads as action 1 when read again"),
    "ch-raw": ("2", ["chbench", "run", "--opponents", "level-k:1", "--policy", "sample", "--rounds", "2",
                     "--games", "1"], "rounds.jsonl", {"row_raw": "I will not say"},
               "row_action 1, but its raw answer reads as no action"),
}


@pytest.mark.parametrize("case", list(_SAMPLED.values()), ids=list(_SAMPLED))
def test_a_generated_answer_of_tmgbench_or_chbench_is_read_again(tmp_path, cli, case):
    """DATA-1 beyond the Nash gap: a TMGBench answer and a CHBench move read as parsed are what
    their raw text says when read again."""
    from fake_openai_server import FakeOpenAIServer

    reply, args, file, edit, why = case
    model = ["--models" if args[0] == "chbench" else "--model", "openai-compatible:fake"]
    with FakeOpenAIServer(canned_text=reply) as s:
        r = cli(*args[:2], *model, "--base-url", s.base_url, *args[2:], "--seed", "5", "--quiet",
                "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / file).read_text().splitlines()
    rec = json.loads(lines[0])
    (folder / file).write_text("\n".join([json.dumps({**rec, **edit}), *lines[1:]]) + "\n")
    before = _snapshot(folder)
    r = cli(*args[:2], "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/{file}: line 1: ") and why in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_a_reference_players_trial_is_played_again(tmp_path, cli):
    """DATA-2: a scripted player's decision is fixed by its game, trial and seed: an edited one is
    refused (the random player's seeded action here)."""
    r = cli(*_NASHGAP, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    lines = (folder / "trials.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["llm_decision"] = (rec["llm_decision"] + 1) % len(rec["policy"])
    (folder / "trials.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    before = _snapshot(folder)
    for cmd in (["nashgap", "--resume", str(folder)], ["compare", str(folder), str(folder)]):
        r = cli(*cmd)
        assert r.returncode == 2 and f"trials.jsonl: line 1: llm_decision {rec['llm_decision']}, but random plays" \
            in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("args,why", [(_NASHGAP, "summary.json: no num_trials_per_game"),
                                      (_TMG, "summary.json: no player"),
                                      (_CH, "summary.json: lacks 8 of the 8 values")], ids=["nashgap", "tmgbench", "chbench"])
def test_an_emptied_summary_is_named_by_report_and_compare(tmp_path, cli, args, why):
    """A summary.json emptied by hand: one line naming it (report: a warning, the run left out;
    compare: exit 2), never an internal error, never a run shown with nothing said."""
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    (folder / "summary.json").write_text("{}")
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and why in r.stderr and "the report leaves out its numbers" in r.stderr, r.stderr
    if args[0] != "chbench":  # (CHBench's compare reads the records alone)
        r = cli("compare", str(folder), str(folder))
        assert r.returncode == 2 and why in r.stderr and "internal error" not in r.stderr, r.stderr


def test_merge_and_compare_never_write_into_a_result_folder(tmp_path, cli):
    """Not into their inputs, and not into any other run's folder either: a file dropped there
    would be read as the run's (a comparison written over trials.jsonl destroyed its records)."""
    for i in (1, 2):
        assert cli(*_NASHGAP, "--shard", f"{i}/2", "--output-dir", str(tmp_path / "s")).returncode == 0
    assert cli(*_NASHGAP, "--output-dir", str(tmp_path / "o")).returncode == 0
    (other,) = (tmp_path / "o").iterdir()
    before = _snapshot(other)
    one, two = sorted((tmp_path / "s").iterdir())
    r = cli("compare", str(one), str(two), "--allow-partial", "--output", str(other / "trials.jsonl"))
    assert r.returncode == 2 and f"inside the result folder {other}" in r.stderr, r.stderr
    (tmp_path / "link.json").symlink_to(other / "trials.jsonl")  # nor through a link to a run's file
    r = cli("compare", str(one), str(two), "--allow-partial", "--output", str(tmp_path / "link.json"))
    assert r.returncode == 2 and f"inside the result folder {other}" in r.stderr, r.stderr
    r = cli("merge", str(one), str(two), "--output-dir", str(other / "merged"))
    assert r.returncode == 2 and f"inside the result folder {other}" in r.stderr, r.stderr
    assert _snapshot(other) == before and not (other / "merged").exists()


def _undrawn_row(rec, rest):  # another row its policy gives a chance, not the one its seed drew
    rec["llm_decision"] = next(i for i, p in enumerate(rec["policy"]) if p > 0 and i != rec["llm_decision"])


@pytest.mark.parametrize("key,value,why", [("status", "parse_failed", "a trial that failed decided nothing"),
                                           ("renormalized", True, "renormalized true on a log-probability trial"),
                                           ("llm_decision", _undrawn_row, "but its seed draws row")],
                         ids=["status", "renormalized", "decision"])
def test_an_edited_log_prob_trial_is_refused(tmp_path, cli, fake_server, key, value, why):
    """A log-prob trial's decision is the row its seed draws from its policy; a failed trial
    decided nothing; only a stated distribution is ever rescaled."""
    folder = _run_and_edit(tmp_path, cli, ["nashgap", "--model", "openai-compatible:fake", "--base-url",
                                           fake_server.base_url, "--num-games", "2", "--num-trials", "2", "--seed", "3",
                                           "--quiet"], "trials.jsonl", key, value)
    before = _snapshot(folder)
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/trials.jsonl: line 1: ") and why in r.stderr, \
        r.stderr
    assert _snapshot(folder) == before


def test_an_edited_llm_seed_in_run_json_is_refused(tmp_path, cli):
    """run.json's llm_seed edited: a resume would go on under another seed beside the old records."""
    r = cli(*_NASHGAP, "--output-dir", str(tmp_path / "o"))
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "run.json").read_text())
    meta["config"]["llm_seed"] = 10
    (folder / "run.json").write_text(json.dumps(meta))
    r = cli("nashgap", "--resume", str(folder))
    assert r.returncode == 2 and "but the run's llm_seed 10 gives" in r.stderr and "run.json's llm_seed" in r.stderr


def _undrawn_move(rec, rest):  # the row seat's action changed to another its policy allows, paid as played
    from stratbench.suites.chbench.catalogue import select_games

    a = next(i for i, p in enumerate(rec["row_policy"]) if p > 0 and i != rec["row_action"])
    (ch,) = select_games(str(rec["game_id"]))
    g = ch.game
    rec.update(row_action=a, row_payoff=float(g.payoff_row[a, rec["col_action"]]),
               col_payoff=float(g.payoff_col[a, rec["col_action"]]))


def test_a_scored_chbench_move_is_the_one_its_seed_draws(tmp_path, cli, fake_server):
    folder = _run_and_edit(tmp_path, cli, ["chbench", "run", "--models", "openai-compatible:fake", "--opponents",
                                           "level-k:1", "--base-url", fake_server.base_url, "--rounds", "2", "--games",
                                           "1", "--seed", "5", "--quiet"], "rounds.jsonl", "", _undrawn_move)
    before = _snapshot(folder)
    r = cli("chbench", "run", "--resume", str(folder))
    assert r.returncode == 2 and "but the round's seed draws" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def _complex_parsed(rec, rest):  # an unreadable complex-form task marked parsed with the right answers
    rec.update(status="parsed", parse="strict", answers=rec["expected"], per_game_correct=[True] * len(rec["expected"]),
               n_correct_games=len(rec["expected"]), all_correct=True, correct=True, parse_failed=False)


def _complex_ok(rec, rest):
    _complex_parsed(rec, rest)
    rec["status"] = "ok"


@pytest.mark.parametrize("edit,why", [(_complex_parsed, "but its raw_responses read as parse_failed when read again"),
                                      (_complex_ok, "status 'ok', but openai-compatible:fake is a model")],
                         ids=["parsed", "ok"])
def test_a_complex_form_task_is_read_again_from_its_replies(tmp_path, cli, fake_server, edit, why):
    folder = _run_and_edit(tmp_path, cli, ["tmgbench", "run", "--form", "sequential", "--k", "2", "--num-tasks", "1",
                                           "--model", "openai-compatible:fake", "--base-url", fake_server.base_url,
                                           "--seed", "2", "--quiet"], "tasks.jsonl", "", edit)
    before = _snapshot(folder)
    r = cli("tmgbench", "run", "--resume", str(folder))
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.fixture(scope="module")
def answering_server():  # answers every complex-form question in the requested format, with reasoning
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(canned_text='```python\nanswer = [{"A1", "B1"}]\n```', reasoning_content="hmm") as s:
        yield s


@pytest.mark.parametrize("form,edit,why", [
    ("sequential", lambda rec, rest: rec.update(parse="flexible"),
     "parse 'flexible', but its raw_responses read as 'strict' when read again"),
    ("sequential", lambda rec, rest: rec.update(parse_note="cut at the token limit"),
     "parse_note \"cut at the token limit\", but its raw_responses read as null"),
    ("sequential", lambda rec, rest: rec.update(finish_reasons=["stop", "length"]),
     "parse 'strict', but its raw_responses read as 'flexible' when read again"),
    ("sequential", lambda rec, rest: rec.update(finish_reasons=["stop"]),
     "finish_reasons [\"stop\"] are not the 2 finish reasons of its replies"),
    ("sequential", lambda rec, rest: rec.update(myopic_answer=[1], gave_myopic=True),
     "gave_myopic true, which a sequential task never writes"),
    ("parallel", lambda rec, rest: rec.update(reasonings=["a", "b"]),
     "reasonings [\"a\", \"b\"] are not the thinking of its 1 replies"),
])
def test_how_a_complex_form_task_was_read_is_read_again(tmp_path, cli, answering_server, form, edit, why):
    """fuzz pass 8, D3: a task's parse, parse note, finish reasons and reasonings are its replies'
    as the run read them, and it holds no key its form never writes."""
    folder = _run_and_edit(tmp_path, cli, ["tmgbench", "run", "--form", form, "--k", "2", "--num-tasks", "1",
                                           "--model", "openai-compatible:fake", "--base-url",
                                           answering_server.base_url, "--policy", "sample", "--seed", "2", "--quiet"],
                           "tasks.jsonl", "", edit)
    before = _snapshot(folder)
    r = cli("tmgbench", "run", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/tasks.jsonl: line 1: ") and why in r.stderr, \
        r.stderr
    assert _snapshot(folder) == before
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and why in r.stderr and "the report leaves out its numbers" in r.stderr, r.stderr


@pytest.mark.parametrize("args,form,why", [
    (_TMG, "parallel", "config.form is 'parallel', but the folder is an atomic run"),
    (_CX, "parallel", "config.form is 'parallel', but its tasks are form 'sequential' (tasks.jsonl)"),
    (_CX, "atomic", "config.form is 'atomic', but the folder is a complex-form run"),
])
def test_a_tmgbench_run_whose_form_was_edited_names_run_json(tmp_path, cli, args, form, why):
    """fuzz pass 8, D4 and M5: refused before anything is written, naming run.json (not the records)."""
    folder = _run_and_edit(tmp_path, cli, args, "answers.jsonl" if args is _TMG else "tasks.jsonl", "",
                           lambda rec, rest: None)
    meta = json.loads((folder / "run.json").read_text())
    meta["config"]["form"] = form
    (folder / "run.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    for cmd in (["tmgbench", "run", "--resume", str(folder)], ["compare", str(folder), str(folder)]):
        r = cli(*cmd)
        assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/run.json: ") and why in r.stderr, r.stderr
    assert _snapshot(folder) == before


@pytest.mark.parametrize("prompting,change,why", [
    ("QA", {"predict": False}, "line 1: prediction (a prediction), but run.json's config has predict false"),
    ("LM", {"predict": False}, "line 1: tom_policy (a prediction), but run.json's config has predict false"),
    ("QA", {"tom_variant": "partner_first"},
     "line 1: its ToM call asked after the action, but run.json's config has tom_variant 'partner_first'"),
    ("QA", {"max_tries": 1}, "but run.json's config has max_tries 1"),
    ("LM", {"history": False}, "run.json: config.history is False, but summary.json says True"),
    ("QA", {"label_set": "canonical"}, "(action) is 'parsed', but its text gives no answer when read again"),
])
def test_a_tom_runs_config_is_what_its_rounds_were_played_with(tmp_path, cli, fake_server, prompting, change, why):
    """fuzz pass 8, D7: the config keys that shape the rounds (predictions, when they are asked, the
    tries of a call, the labels answers are read with; those only the summary repeats) are checked
    against them on resume and compare, before anything is written."""
    folder = _run_and_edit(tmp_path, cli, ["tom", "run", "--model", "openai-compatible:fake", "--base-url",
                                           fake_server.base_url, "--prompting", prompting, "--rounds", "3",
                                           "--episodes", "1", "--seed", "5"], "rounds.jsonl", "", lambda rec, rest: None)
    meta = json.loads((folder / "run.json").read_text())
    meta["config"].update(change)
    (folder / "run.json").write_text(json.dumps(meta))
    before = _snapshot(folder)
    for cmd in (["tom", "run", "--resume", str(folder)], ["compare", str(folder), str(folder)]):
        r = cli(*cmd)
        assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _snapshot(folder) == before


def test_a_tom_partner_state_is_where_its_state_machine_goes(tmp_path, cli, fake_server):
    folder = _run_and_edit(tmp_path, cli, ["tom", "run", "--model", "openai-compatible:fake", "--base-url",
                                           fake_server.base_url, "--rounds", "3", "--episodes", "1", "--seed", "5",
                                           "--partner", "tit_for_tat"], "rounds.jsonl", "", lambda rec, rest: None)
    lines = (folder / "rounds.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["partner_state"] = next(s for s in range(3) if s != rec["partner_state"])
    (folder / "rounds.jsonl").write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    before = _snapshot(folder)
    r = cli("tom", "run", "--resume", str(folder))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {folder}/rounds.jsonl: line 2: partner_state"), r.stderr
    assert "but the partner moves to" in r.stderr, r.stderr
    assert _snapshot(folder) == before


def test_compare_of_complex_form_runs_says_so_without_blaming_the_records(tmp_path, cli):
    r = cli(*_CX, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and "complex-form runs are not compared yet" in r.stderr, r.stderr
    assert "edited by hand" not in r.stderr


@pytest.mark.parametrize("schema,field,value", [
    ("chbench", "row_action", "1"), ("chbench", "row_action", True), ("chbench", "row_action", 1.0),
    ("chbench", "round", "1"), ("chbench", "row_payoff", "1.0"),
    ("tom", "t", "0"), ("tom", "t", False), ("tom", "initial_state", 0.0),
])
def test_a_number_edited_to_another_json_type_is_named_not_a_crash(schema, field, value):
    """The record check was pydantic's lax mode: "1", true and 1.0 passed as ints, and the
    suites' readers then failed comparing or indexing with them — an internal error on resume,
    report and trend (fuzz 15 T1). Strict: one line naming the field; an int is still a float."""
    from stratbench.errors import InputError
    from stratbench.runner.validation import check_schema
    from stratbench.suites.chbench.records import RoundRecord as ChRound
    from stratbench.suites.tom.records import RoundRecord as TomRound

    tp = {"chbench": ChRound, "tom": TomRound}[schema]
    with pytest.raises(InputError, match=rf"rounds.jsonl: line 1: {field}: "):
        check_schema([{field: value}], tp, "rounds.jsonl")
    check_schema([{field: 1 if field != "row_payoff" else 1}], tp, "rounds.jsonl")  # (an int, also as a float)


def test_compare_of_an_atomic_run_whose_every_answer_failed_says_there_is_nothing_to_compare(tmp_path, cli):
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(fault_rate=1.0, fault_kinds=("500",)) as s:
        r = cli("tmgbench", "run", "--model", "openai-compatible:fake", "--base-url", s.base_url, "--games", "111",
                "--retries", "0", "--no-cache", "--quiet", "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 1, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    assert not (folder / "grids.json").exists()
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and "holds no scored record" in r.stderr, r.stderr
    assert "complex-form" not in r.stderr


# -- one shard read as its own run: by the report, and by merge before it merges (fuzz 25 B F2-F4) ---

def _nashgap_shards(tmp_path: Path, cli) -> list[Path]:
    for i in (1, 2):
        r = cli(*_NASHGAP, "--shard", f"{i}/2", "--output-dir", str(tmp_path / "sh"))
        assert r.returncode == 0, r.stderr
    return sorted((tmp_path / "sh").iterdir())


def test_a_single_shards_edited_summary_is_left_out_of_the_report(tmp_path, cli):
    """A finished shard's summary.json is the summary of its own records: recomputed by the shard's
    own plan and compared, as a whole run's is (it was shown as saved)."""
    shard, _ = _nashgap_shards(tmp_path, cli)
    r = cli("report", str(shard), "--output", str(tmp_path / "clean"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr  # (a shard as written: no warning)
    why = _edit_summary(shard)
    r = cli("report", str(shard), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert f"{shard}/{why}" in line and "the report leaves out its numbers" in line, line
    assert "987654" not in (tmp_path / "rep" / "index.html").read_text().replace("987654.321, the records", "")


def _move_a_record(a: Path, b: Path) -> str:
    first, *rest = (b / "trials.jsonl").read_text().splitlines(keepends=True)
    (b / "trials.jsonl").write_text("".join(rest))
    with open(a / "trials.jsonl", "a") as fh:
        fh.write(first)
    return f"{a}/trials.jsonl: line 5: a record for (1, 0), which this run does not have"


def _edit_totals(a: Path, b: Path) -> str:
    meta = json.loads((a / "run.json").read_text())
    meta["totals"]["records"] += 1
    (a / "run.json").write_text(json.dumps(meta))
    return f"{a}/run.json: totals.records is 5, but the run's records count 4: records were cut since it finished " \
           "(or run.json was edited)"


def _tear_the_last_line(a: Path, b: Path) -> str:
    text = (b / "trials.jsonl").read_text()
    (b / "trials.jsonl").write_text(text[: len(text) - 40])
    return f"{b}/trials.jsonl: line 2 is cut short (a torn write, or a copy cut off), though the run finished; " \
           f"finish it again with --resume {b}"


def _cut_a_unit(a: Path, b: Path) -> str:
    lines = (b / "trials.jsonl").read_text().splitlines(keepends=True)
    (b / "trials.jsonl").write_text("".join(lines[:-1]))
    meta = json.loads((b / "run.json").read_text())
    meta["totals"]["records"] -= 1  # (the count kept in step: only the plan tells)
    (b / "run.json").write_text(json.dumps(meta))
    return f"{b}/trials.jsonl: the finished run holds only 1 of the run's 2 trials (none for trial (1, 1))"


@pytest.mark.parametrize("edit", [_move_a_record, _edit_totals, _tear_the_last_line, _cut_a_unit],
                         ids=["record moved between shards", "totals", "torn last line", "unit cut, count kept"])
def test_merge_reads_each_shard_as_its_own_run(tmp_path, cli, edit):
    """merge checked the union of the shards only: a record moved from one shard's file into the
    other's, or an edited count, merged though resume, compare and the report refuse the shard; a
    torn line was dropped with a message naming no shard."""
    a, b = _nashgap_shards(tmp_path, cli)
    said = edit(a, b)
    before = {p: p.read_bytes() for f in (a, b) for p in f.iterdir()}
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and said in r.stderr, r.stderr
    assert {p: p.read_bytes() for f in (a, b) for p in f.iterdir()} == before
    assert not (tmp_path / "m").exists()
    if edit is _tear_the_last_line:  # the command it names works: the shard is finished again, then merges
        r = cli("nashgap", "--resume", str(b), "--quiet")
        assert r.returncode == 0, r.stderr
        r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"), "--quiet")
        assert r.returncode == 0, r.stderr


def test_suite_file_shards_of_different_files_name_the_setting(tmp_path, cli):
    for i, seeds in ((1, "[1, 2]"), (2, "[1, 3]")):
        (tmp_path / f"s{i}.toml").write_text(f'seeds = {seeds}\nmodels = ["random"]\n[nashgap]\nnum_games = 2\n'
                                             'num_trials = 2\n')
        r = cli("suite", "run", str(tmp_path / f"s{i}.toml"), "--shard", f"{i}/2", "--output-dir",
                str(tmp_path / f"sh{i}"), "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
    (a,), (b,) = (tmp_path / "sh1").iterdir(), (tmp_path / "sh2").iterdir()
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and r.stderr == f"error: {b} and {a} come from different suite files (seeds: [1, 3] " \
                                             "vs [1, 2])\n", r.stderr


@pytest.mark.parametrize("damage,said", [
    (lambda p: p.write_text(p.read_text()[:40]), "suite_metadata.json is not valid JSON (a corrupt or truncated file)"),
    (lambda p: p.unlink(), "not a suite-file folder (no suite_metadata.json)"),
    (lambda p: p.write_text('{"suite": "nashgap", "config": {}}'),
     "not a suite-file folder (its suite_metadata.json is not a suite file's)"),
    (lambda p: p.write_text("[1, 2]"), "not a suite-file folder (its suite_metadata.json is not a suite file's)"),
], ids=["truncated", "missing", "another kind", "a list"])
def test_a_damaged_suite_metadata_is_named_on_resume_and_merge(tmp_path, cli, damage, said):
    (tmp_path / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random"]\n[nashgap]\nnum_games = 2\nnum_trials = 2\n')
    for i in (1, 2):
        r = cli("suite", "run", str(tmp_path / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(tmp_path / "sh"),
                "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
    a, b = sorted((tmp_path / "sh").iterdir())
    damage(b / "suite_metadata.json")
    r = cli("suite", "run", "--resume", str(b))
    assert r.returncode == 2 and r.stderr == f"error: --resume {b}: {said}\n", r.stderr
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("how", ["fewer digits", "two units"])
def test_a_derived_table_retyped_is_caught_but_not_a_last_digit_rounding(tmp_path, cli, how):
    """Every table a run writes is compared with its records (fuzz 26 B F4); a number is the same
    only when printed alike, to one unit of its last digit (fuzz 27 F1: '2.8437' retyped '2' passed)."""
    import re

    r = cli(*_CH, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    r = cli("report", str(folder), "--output", str(tmp_path / "clean"), "--figures", "none")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    table = folder / "levels.md"
    text = table.read_text()
    m = re.search(r"(?<![\d.])\d+\.\d{2,}", text)  # a decimal number the table prints
    assert m is not None, text
    number, places = m.group(0), len(m.group(0).split(".")[1])
    unit = 10 ** -places
    edited = {"fewer digits": str(int(float(number))), "two units": f"{float(number) + 2 * unit:.{places}f}"}[how]
    table.write_text(text[:m.start()] + edited + text[m.end():])
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"), "--figures", "none")
    assert r.returncode == 0 and f"{table}: does not agree with the run's records" in r.stderr, r.stderr
    if how == "two units":  # one unit of the last digit is the rounding of another machine's last bits
        table.write_text(text[:m.start()] + f"{float(number) + unit:.{places}f}" + text[m.end():])
        r = cli("report", str(folder), "--output", str(tmp_path / "rep1"), "--figures", "none")
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def _edit_totals(**change: int):
    def edit(folder: Path) -> None:
        meta = json.loads((folder / "run.json").read_text())
        meta["totals"].update(change)
        (folder / "run.json").write_text(json.dumps(meta))
    return edit


def _add_chbench_player(folder: Path) -> None:
    s = json.loads((folder / "summary.json").read_text())
    per_player = s["mechanisms"]["baseline"]
    per_player["gpt-fake"] = dict(next(iter(per_player.values())))
    (folder / "summary.json").write_text(json.dumps(s))


def _add_fit_player(folder: Path) -> None:
    fit = json.loads((folder / "fit.json").read_text())
    key = next(k for k, v in fit.items() if isinstance(v, dict))
    fit[key] = {**fit[key], "gpt-fake": 2.999}
    (folder / "fit.json").write_text(json.dumps(fit))


@pytest.mark.parametrize("args,edit,why", [
    (_TOMB, _edit_totals(settings=7), "run.json: totals.settings is 7, but the run's records count 1"),
    (_CH, _edit_totals(matches=99), "run.json: totals.matches is 99, but the run's records count"),
    (_CH, _add_chbench_player, "summary.json: does not agree with the run's records (mechanisms.baseline.gpt-fake is"),
    (_CH, _add_fit_player, "fit.json: does not agree with the run's records ("),
], ids=["tom-baseline-settings", "chbench-matches", "chbench-player-added", "chbench-fit-player-added"])
def test_counts_and_players_added_by_hand_withhold_the_run(tmp_path, cli, args, edit, why):
    """run.json's counts that the records give (not only records and errors), and a player or key
    a summary or table holds that the records do not give, are edits (fuzz 28 B F4, F6)."""
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    edit(folder)
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert why in line and "the report leaves out its numbers" in line, line


def test_a_merged_baseline_counts_its_settings_once(tmp_path, cli):
    """Shards of a ToM baseline each play every setting: the merged run.json counts each once (it
    summed the shards' counts), and its report shows it (fuzz 28 B F6's check found it)."""
    for i in (1, 2):
        r = cli(*_TOMB, "--shard", f"{i}/2", "--output-dir", str(tmp_path / "s"))
        assert r.returncode == 0, r.stderr
    r = cli("merge", *map(str, sorted((tmp_path / "s").iterdir())), "--output-dir", str(tmp_path / "m"))
    assert r.returncode == 0 and "tom baseline merged from 2 shards" in " ".join(r.stdout.split()), r.stderr
    (merged,) = (tmp_path / "m").iterdir()
    assert json.loads((merged / "run.json").read_text())["totals"]["settings"] == 1
    r = cli("report", str(merged), "--output", str(tmp_path / "rep"))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


@pytest.mark.parametrize("args,name,source", [
    (_TOMB, "summary_2.json", "summary.json"),  # (rendered as a second headline table)
    (_CH, "utilities_memory.md", "utilities_baseline.md"),  # (a table of a mechanism never played)
    (_CH, "level_distribution_memory.png", "level_distribution.png"),  # (a figure it never drew)
    (_NASHGAP, "summary_mixed_strategy.json", "summary.json"),  # (a mode never played: compared)
], ids=["second-summary", "unplayed-table", "figure", "unplayed-mode"])
def test_a_file_added_to_a_finished_run_withholds_it_and_compare_refuses_it(tmp_path, cli, args, name, source):
    """Only files the records give are the run's: one added by hand (or copied from another run)
    was shown, or compared, as the run's own (fuzz 29 B F1/F2)."""
    r = cli(*args, "--output-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    assert not (folder / name).exists()
    (folder / name).write_bytes((folder / source).read_bytes() if source else b'{"421": {"par": 1.0}}')
    r = cli("report", str(folder), "--output", str(tmp_path / "rep"))
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert r.returncode == 0 and f"{folder / name}: a file the run's records do not give" in line, r.stderr
    r = cli("compare", str(folder), str(folder))
    assert r.returncode == 2 and f"{folder / name}: a file the run's records do not give" in r.stderr, r.stderr
