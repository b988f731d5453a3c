"""`stratbench suite run FILE`: several suites × models × seeds from one TOML/YAML file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from stratbench.workflows.suite_file import plan_suite_file, run_suite_file

TOML = """
name = "smoke"
seeds = [1, 2]
models = ["random", {spec = "first-action", label = "first"}]

[nashgap]
num_games = 4
num_trials = 2


[chbench]
opponents = ["level-k:1"]
games = "1,2"
rounds = 5
bootstrap = 0
restarts = 2
"""


def test_suite_file_runs_every_suite_model_and_seed_and_resumes(tmp_path, cli):
    f = tmp_path / "suite.toml"
    f.write_text(TOML)
    res = run_suite_file(f, output_dir=str(tmp_path / "out"))
    assert res.n_errors == 0
    got = sorted((r["suite"], r["model"], r["seed"]) for r in res.runs)
    assert got == sorted([("nashgap", m, s) for m in ("random", "first") for s in (1, 2)]
                         + [("chbench", "(all models)", s) for s in (1, 2)])
    meta = json.loads((res.folder / "suite_metadata.json").read_text())
    assert meta["status"] == "finished" and meta["name"] == "smoke"
    for r in res.runs:
        assert (res.folder / r["folder"] / "run.json").is_file()
    rows = list(csv.DictReader((res.folder / "runs.csv").open()))
    expl = [r for r in rows if r["suite"] == "nashgap" and r["metric"] == "mean_exploitability"]
    assert len(expl) == 4 and all(float(r["value"]) > 0 for r in expl)
    levels = {r["part"] for r in rows if r["suite"] == "chbench"}
    assert levels == {"baseline/random", "baseline/first-action", "baseline/level-k:1"}
    # an interrupted suite: forget the last run; --resume runs only it, through the CLI
    meta["runs"] = meta["runs"][:-1]
    meta["status"] = "running"
    (res.folder / "suite_metadata.json").write_text(json.dumps(meta))
    r = cli("suite", "run", "--resume", str(res.folder), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    again = json.loads((res.folder / "suite_metadata.json").read_text())
    assert again["status"] == "finished" and len(again["runs"]) == len(res.runs)


def test_suite_file_with_tmgbench_from_the_cli_writes_a_report(tmp_path, cli):
    f = tmp_path / "suite.yaml"
    # scripted players differ per suite (TMGBench's are oracle/empty/uniform)
    f.write_text("seeds: [3]\nmodels: [uniform, oracle]\ntmgbench:\n  games: '421,426,425'\n  repeats: 1\n")
    r = cli("suite", "run", str(f), "--output-dir", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 0, r.stderr
    folder = r.stdout.strip().splitlines()[-1]
    assert (tmp_path / "o").exists() and json.loads(open(f"{folder}/suite_metadata.json").read())["status"] == "finished"
    assert "tmgbench" in open(f"{folder}/report/index.html").read()


def test_suite_file_errors_are_one_line_and_write_nothing(tmp_path, cli):
    cases = {
        "a.toml": ('seeds = [1]\nmodels = ["random"]\n[nashgap]\nnum_gamez = 3\n', "[nashgap] unknown key(s) num_gamez"),
        "b.toml": ('models = ["random"]\n', "no suite section"),
        "c.toml": ('models = ["random"]\n[nashgap]\nseed = 4\n', "sets seed"),
        "d.toml": ('models = ["random"]\n[chess]\n', "unknown key(s) chess"),
        "e.toml": ('models = ["random", "random"]\n[nashgap]\n', "appear twice"),
        "f.toml": ('models = ["nosuchbackend:x"]\n[nashgap]\n', ""),
        "g.toml": ("models = [\n", "invalid TOML"),
    }
    for name, (text, msg) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        r = cli("suite", "run", str(p), "--output-dir", str(tmp_path / "out"))
        assert r.returncode == 2, (name, r.stderr)
        assert msg in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    p = _write(tmp_path, "h.toml", f'models = ["random"]\noutput_dir = "{afile}/sub"\n[nashgap]\nnum_games = 1\n')
    r = cli("suite", "run", str(p), "--quiet", "--no-report")  # the file's output_dir is named, not a flag never given
    assert r.returncode == 2 and r.stderr.startswith(f"error: {p}: output_dir {afile}/sub: "), r.stderr
    assert "--output-dir" not in r.stderr and afile.read_text() == "x"
    _, jobs = plan_suite_file(_write(tmp_path, "ok.toml", TOML))
    assert len(jobs) == 2 * 2 + 2  # nashgap per model and seed, chbench per seed


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_suite_file_shards_merge_into_the_unsharded_suite(tmp_path, cli):
    import filecmp

    f = _write(tmp_path, "s.toml", TOML)
    whole = run_suite_file(f, output_dir=str(tmp_path / "whole")).folder
    shards = [run_suite_file(f, output_dir=str(tmp_path / f"s{i}"), shard=f"{i}/2").folder for i in (2, 1)]
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    merged = Path(r.stdout.strip().splitlines()[-1])
    a = json.loads((whole / "suite_metadata.json").read_text())["runs"]
    b = json.loads((merged / "suite_metadata.json").read_text())["runs"]
    assert [x["key"] for x in a] == [x["key"] for x in b]
    strip = lambda rows: [{k: v for k, v in x.items() if k != "folder"} for x in rows]  # noqa: E731
    assert strip(a) == strip(b)
    from stratbench.runner.jsonl import read_jsonl

    def recs(path):
        return [{k: v for k, v in r.items() if "latency" not in k} for r in read_jsonl(path)]

    compared = 0
    for x, y in zip(a, b):  # each run's records and summary equal (folder names carry timestamps)
        for fa in sorted((whole / x["folder"]).glob("*.jsonl")):
            assert recs(fa) == recs(merged / y["folder"] / fa.name), fa.name
            compared += 1
        assert filecmp.cmp(whole / x["folder"] / "summary.json", merged / y["folder"] / "summary.json",
                           shallow=False)
    assert compared >= len(a)
    # the totals: every run's counts summed, the same in the whole suite and the merge
    want = json.loads((whole / "suite_metadata.json").read_text())["totals"]
    assert want == json.loads((merged / "suite_metadata.json").read_text())["totals"]
    runs = [json.loads((whole / x["folder"] / "run.json").read_text())["totals"] for x in a]
    assert want["runs"] == len(a) == 6 and want["records"] == sum(t["records"] for t in runs) > 0
    assert want["errors"] == 0 and want["model_calls"] == 0
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m3"))
    assert r.returncode == 0, r.stderr
    assert f"suite of 6 runs merged from 2 shards — {want['records']} records, 0 errors, 0 model calls" in r.stdout
    r = cli("merge", str(shards[0]), "--output-dir", str(tmp_path / "m2"))
    assert r.returncode == 2 and "missing" in r.stderr and not (tmp_path / "m2").exists()


LAUGHS = "a: &a [lol, lol, lol]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\nmodels: [random]\nnashgap: {}\n"


def test_hostile_suite_files_are_one_line_each(tmp_path):
    import pytest

    from stratbench.errors import InputError

    head = 'seeds = [1]\nmodels = ["random"]\n'
    cases = {
        "float.toml": (head + "[nashgap]\nnum_games = 2.5\n", "[nashgap] num_games: expected an integer, got 2.5"),
        "bool.toml": (head + "[nashgap]\nnum_trials = true\n", "[nashgap] num_trials: expected an integer, got true"),
        "text.toml": (head + '[nashgap]\ntemperature = "hot"\n', "[nashgap] temperature: expected a number, got 'hot'"),
        "list.toml": (head + '[chbench]\nopponents = "level-k:1"\n', "[chbench] opponents: expected a list"),
        "inf.toml": (head + "[nashgap]\ntemperature = inf\n", "nashgap.temperature: inf is not a finite number"),
        "seeds.toml": ('seeds = [1, 2, 1]\nmodels = ["random"]\n[nashgap]\n', "seeds: 1 is listed twice"),
        "seedtype.toml": ('seeds = [1.5]\nmodels = ["random"]\n[nashgap]\n', "seeds[0]: expected an integer, got 1.5"),
        "spec.toml": ('models = [{spec = ""}]\n[nashgap]\n', "models[0]: spec: must not be empty"),
        "label.toml": ('models = [{spec = "random", label = 3}]\n[nashgap]\n', "models[0]: label: expected a string, got 3"),
        "chat.toml": ('models = [{spec = "random", chat = "yes"}]\n[nashgap]\n', "models[0]: chat: expected true or false"),
        "key.toml": ('models = [{spec = "random", lable = "r"}]\n[nashgap]\n', "models[0]: unknown key(s) lable"),
        "nomodels.toml": ("[nashgap]\n", "models: missing"),
        "emptymodels.toml": ("models = []\n[nashgap]\n", "models: List should have at least 1 item"),
        "item.toml": ("models = [3]\n[nashgap]\n", "models[0]: expected a model spec or a table"),
        "name.yaml": ("name: [x]\nmodels: [random]\nnashgap: {}\n", "name: expected a string, got a list"),
        "laughs.yaml": (LAUGHS, "anchors (&name) are not allowed"),
        "deep.yaml": ("models: [random]\nnashgap: {x: " + "[" * 3000 + "]" * 3000 + "}\n", "nested deeper than 64"),
        "deep.toml": (head + "[nashgap]\nx = " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than 64"),
        "dup.yaml": ("models: [random]\nmodels: [nash]\nnashgap: {}\n", "duplicate key 'models'"),
        "surrogate.yaml": ('models: ["\\ud800"]\nnashgap: {}\n', "lone surrogate"),
        # one run twice (fuzz pass 8, D10): refused as duplicate models and seeds are
        "games.toml": ('seeds = [1]\nmodels = ["embedded"]\n[tom]\ngames = ["rps", "rps"]\n',
                       "[tom] games: 'rps' is listed twice"),
        "spelt.toml": ('seeds = [1]\nmodels = ["embedded"]\n[tom]\ngames = ["rps", "RPS"]\n',
                       "[tom] games: 'rps' is listed twice"),
        "partners.toml": ('seeds = [1]\nmodels = ["embedded"]\n[tom]\npartners = ["tit_for_tat", "tit_for_tat"]\n',
                          "[tom] partners: 'tit_for_tat' is listed twice"),
        "mechanisms.toml": (head + '[chbench]\nmechanisms = ["baseline", "baseline"]\n',
                            "[chbench] mechanisms: 'baseline' is listed twice"),
    }
    for name, (text, fragment) in cases.items():
        p = _write(tmp_path, name, text)
        with pytest.raises(InputError) as e:
            plan_suite_file(p)
        msg = str(e.value)
        assert msg.startswith(f"{p}: ") and fragment in msg and "\n" not in msg, (name, msg)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(('name = "café"\n' + head + "[nashgap]\n").encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xe9 at offset 11, line 1\)"):
        plan_suite_file(latin)
    with pytest.raises(InputError, match="missing.toml: suite file not found"):
        plan_suite_file(tmp_path / "missing.toml")
    (tmp_path / "folder.toml").mkdir()
    with pytest.raises(InputError, match="folder.toml: is a directory"):
        plan_suite_file(tmp_path / "folder.toml")


def test_section_types_are_checked_before_anything_runs(tmp_path, cli):
    p = _write(tmp_path, "s.toml", 'seeds = [1]\nmodels = ["random"]\n[nashgap]\nnum_games = 2.5\nnum_trials = 1\n')
    r = cli("suite", "run", str(p), "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.strip() == f"error: {p}: [nashgap] num_games: expected an integer, got 2.5"
    assert not (tmp_path / "out").exists()
    _, jobs = plan_suite_file(_write(tmp_path, "ok.yaml", "seeds: 4\nmodels: [random]\nnashgap: {temperature: 1}\n"))
    assert [j.seed for j in jobs] == [4] and jobs[0].config.temperature == 1


def test_chbench_takes_its_server_from_the_model_tables(tmp_path):
    """One CHBench run holds every model: the server a model table names is that run's (it was
    refused as "--base-url is required"); two different servers are one clear line."""
    import pytest

    from stratbench.errors import InputError

    url = "http://user:PW@127.0.0.1:9/v1"
    f = tmp_path / "s.toml"
    f.write_text(f'seeds = [1]\nmodels = [{{spec = "openai-compatible:m", base_url = "{url}"}}]\n'
                 '[chbench]\nrounds = 2\ngames = "1"\n')
    _, jobs = plan_suite_file(f)
    assert [j.config.base_url for j in jobs] == [url]
    f.write_text(f'seeds = [1]\nmodels = [{{spec = "openai-compatible:m", base_url = "{url}"}}, '
                 '{spec = "openai-compatible:n", base_url = "http://other:1/v1"}]\n[chbench]\nrounds = 2\n')
    with pytest.raises(InputError, match=r"\[chbench\] the models name different servers") as e:
        plan_suite_file(f)
    assert "PW" not in str(e.value)


def test_a_resumed_suite_file_takes_a_server_that_moved_from_the_file_given_again(tmp_path, cli):
    """The suite file given again to ``--resume`` may differ from the saved plan in its base URLs
    only (a server that moved; base URLs are runtime settings); any other edit is still refused."""
    from fake_openai_server import FakeOpenAIServer

    f = tmp_path / "s.toml"

    def write(url: str, games: int = 3) -> None:
        f.write_text(f'seeds = [1]\nmodels = [{{spec = "openai-compatible:m", base_url = "{url}"}}]\n'
                     f'[nashgap]\nnum_games = {games}\nnum_trials = 1\npolicy = "sample"\nno_cache = true\n')

    with FakeOpenAIServer(canned_text="Action: 1") as old:
        old_url = old.base_url
        write(old_url)
        old.script("ok", *["401"] * 20)
        r = cli("suite", "run", str(f), "--output-dir", str(tmp_path / "out"), "--no-report", "--quiet")
        assert r.returncode == 2 and "HTTP 401" in r.stderr, r.stderr
    (folder,) = (tmp_path / "out").iterdir()
    with FakeOpenAIServer(canned_text="Action: 1") as new:
        write(new.base_url, games=4)
        r = cli("suite", "run", str(f), "--resume", str(folder), "--no-report", "--quiet")
        assert r.returncode == 2 and "differs from the plan saved" in r.stderr, r.stderr
        assert "drop the file argument" in r.stderr  # (its URL has no credentials: the saved plan finishes)
        write(new.base_url)
        r = cli("suite", "run", str(f), "--resume", str(folder), "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
        assert new.requests
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["status"] == "finished" and old_url in json.dumps(meta["config"])
    (run,) = meta["runs"]
    assert len((folder / run["folder"] / "trials.jsonl").read_text().splitlines()) == 3


def test_an_edited_file_of_a_suite_whose_url_has_credentials_is_sent_back_to_the_first_file(tmp_path, cli):
    """The saved plan keeps no password, so only the file the suite started with can finish it: the
    refusal of an edited file says to put that one back, not to drop the file argument (which is
    refused in turn for the missing password; fuzz 28 A F1)."""
    from fake_openai_server import FakeOpenAIServer

    f = tmp_path / "s.toml"
    with FakeOpenAIServer(canned_text="Action: 1") as server:
        url = server.base_url.replace("http://", "http://user:PW@")
        for games in (3, 4):
            f.write_text(f'seeds = [1]\nmodels = [{{spec = "openai-compatible:m", base_url = "{url}"}}]\n'
                         f'[nashgap]\nnum_games = {games}\nnum_trials = 1\npolicy = "sample"\nno_cache = true\n')
            if games == 3:
                server.script("ok", *["401"] * 20)
                r = cli("suite", "run", str(f), "--output-dir", str(tmp_path / "out"), "--no-report", "--quiet")
                assert r.returncode == 2 and "HTTP 401" in r.stderr, r.stderr
                (folder,) = (tmp_path / "out").iterdir()
        r = cli("suite", "run", str(f), "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 2 and "put back the file the suite was started with" in r.stderr, r.stderr
    assert "drop the file argument" not in r.stderr and "PW" not in r.stderr


def test_a_sections_server_is_its_http_models_and_not_the_local_players(tmp_path):
    """A section's base_url is the server of its HTTP models: a local or scripted player of the
    same section runs here, with none (a run command refuses --base-url for such a player)."""
    url = "http://127.0.0.1:9/v1"
    f = tmp_path / "s.toml"
    f.write_text('seeds = [1]\nmodels = ["random", "openai-compatible:m"]\n'
                 f'[nashgap]\nnum_games = 2\nbase_url = "{url}"\n')
    _, jobs = plan_suite_file(f)
    assert {j.config.model[0] if isinstance(j.config.model, list) else j.config.model: j.config.base_url
            for j in jobs} == {"random": None, "openai-compatible:m": url}


def test_a_suite_files_relative_files_are_read_from_its_folder_wherever_it_runs(tmp_path, cli):
    """games_file = "g.json" names the file beside the suite file — not a file of that name in the
    folder the command runs in, when the suite starts, is resumed or reported from elsewhere."""
    proj, here, there = tmp_path / "proj", tmp_path / "here", tmp_path / "there"
    for d in (proj, here, there):
        d.mkdir()
    r = cli("nashgap", "--model", "nash", "--num-games", "2", "--seed", "4", "--quiet", "--output-dir",
            str(tmp_path / "g"))
    assert r.returncode == 0, r.stderr
    (games,) = (tmp_path / "g").glob("run_*/games.json")
    (proj / "g.json").write_text(games.read_text())
    decoy = json.loads(games.read_text())[:1]  # one game, where the suite's file has two
    (here / "g.json").write_text(json.dumps(decoy))
    (proj / "suite.toml").write_text('models = ["random"]\nseeds = [1]\n[nashgap]\nnum_games = 2\nnum_trials = 1\n'
                                     'games_file = "g.json"\n')
    r = cli("suite", "run", "../proj/suite.toml", "--output-dir", "out", cwd=here)
    assert r.returncode == 0, r.stderr
    (suite,) = (here / "out").iterdir()
    (run,) = suite.glob("nashgap/random/run_*")
    lines = (run / "trials.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 2  # the suite file's two games, not the decoy's one
    # killed after one record: resumed and reported from another folder
    meta = json.loads((run / "run.json").read_text())
    meta["status"] = "running"
    (run / "run.json").write_text(json.dumps(meta))
    (run / "trials.jsonl").write_text(lines[0])
    smeta = json.loads((suite / "suite_metadata.json").read_text())
    smeta["status"] = "running"
    (suite / "suite_metadata.json").write_text(json.dumps(smeta))
    r = cli("suite", "run", "--resume", str(suite), cwd=there)
    assert r.returncode == 0 and "not found" not in r.stderr, r.stderr
    def records(text: str) -> list[dict]:
        return [{k: v for k, v in json.loads(x).items() if k != "latency_s"} for x in text.splitlines()]

    assert records((run / "trials.jsonl").read_text()) == records("".join(lines))
    r = cli("report", str(suite), cwd=there)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_suite_playing_a_games_file_without_num_games_is_reported_resumed_and_merged_as_written(tmp_path, cli):
    """The run takes the file's number of games (3) where the plan had the default (100): the
    untouched folder was called edited by report, resume and merge (fuzz 11 B D1)."""
    r = cli("nashgap", "--llm-type", "random", "--num-games", "3", "--seed", "1", "--output-dir", str(tmp_path / "g"),
            "--quiet")
    assert r.returncode == 0, r.stderr
    (games,) = (tmp_path / "g").glob("*/games.json")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "g.json").write_bytes(games.read_bytes())
    (cfg / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random"]\n[nashgap]\nnum_trials = 2\ngames_file = "g.json"\n')
    r = cli("suite", "run", str(cfg / "s.toml"), "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet", "--figures", "none")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    for i in (1, 2):
        r = cli("suite", "run", str(cfg / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(tmp_path / "sh"),
                "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
    r = cli("merge", *map(str, sorted((tmp_path / "sh").iterdir())), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr


def test_a_finished_suite_whose_price_table_moved_away_is_reported_and_resumed(tmp_path, cli):
    """A price table prices a run's cost, never a record: a finished suite whose file's table was
    moved away (the folder copied to another machine) is reported with its tables and resumed
    (fuzz 11 B D2: 'file not found', the tables left out, the resume refused)."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "p.json").write_text('{"random": {"input_per_million": 1, "output_per_million": 2}}')
    (cfg / "s.toml").write_text('seeds = [1]\nmodels = ["random"]\n[nashgap]\nnum_trials = 2\nnum_games = 2\n'
                                'price_table = "p.json"\n')
    r = cli("suite", "run", str(cfg / "s.toml"), "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    (cfg / "p.json").rename(tmp_path / "elsewhere.json")
    r = cli("report", str(folder), "-o", str(tmp_path / "rep"), "--quiet", "--figures", "none")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr


def test_an_unfinished_suites_gone_chat_template_is_named_with_what_to_do(tmp_path):
    """(fuzz 14 B E3: the line named --chat-template, which `suite run` has not)"""
    import pytest

    from stratbench.errors import InputError
    from stratbench.workflows.suite_file import _refuse_gone_templates

    there = tmp_path / "t.jinja"
    there.write_text("x")
    _refuse_gone_templates({"nashgap": {"chat_template": str(there)}, "seeds": [1]}, tmp_path)
    with pytest.raises(InputError, match=r"\[tom\] section \(.*gone.jinja\) is gone; put the same file back"):
        _refuse_gone_templates({"tom": {"chat_template": str(tmp_path / "gone.jinja")}}, tmp_path)


def test_an_unfinished_suite_whose_games_file_changed_is_refused_and_finishes_with_the_original(tmp_path, cli):
    """The runs not yet started read the games file when they start: one replaced while the suite
    was interrupted was played beside the runs that played the original (fuzz 16 B D1). The suite
    saves each input file's digest (suite_metadata.json "inputs"); a resume, and a merge of shards,
    refuse a changed one — the original put back finishes the suite."""
    games = {}
    for seed in (1, 2):
        r = cli("nashgap", "--llm-type", "random", "--num-games", "3", "--seed", str(seed), "--output-dir",
                str(tmp_path / f"g{seed}"), "--quiet")
        assert r.returncode == 0, r.stderr
        (games[seed],) = (tmp_path / f"g{seed}").glob("*/games.json")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "g.json").write_bytes(games[1].read_bytes())
    (cfg / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random"]\n[nashgap]\nnum_trials = 2\ngames_file = "g.json"\n')
    r = cli("suite", "run", str(cfg / "s.toml"), "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert list(meta["inputs"]) == ["nashgap.games_file"] and meta["inputs"]["nashgap.games_file"].startswith("sha256:")
    meta["runs"], meta["status"] = meta["runs"][:1], "running"  # interrupted after its first run
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    (cfg / "g.json").write_bytes(games[2].read_bytes())
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 2 and "[nashgap] games_file" in r.stderr and "has changed since the suite started" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    (cfg / "g.json").write_bytes(games[1].read_bytes())
    r = cli("suite", "run", "--resume", str(folder), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    # shards played with different games are not one suite
    shards = []
    for i, seed in ((1, 1), (2, 2)):
        (cfg / "g.json").write_bytes(games[seed].read_bytes())
        r = cli("suite", "run", str(cfg / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(tmp_path / f"sh{i}"),
                "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
        (s,) = (tmp_path / f"sh{i}").iterdir()
        shards.append(str(s))
    r = cli("merge", *shards, "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 2 and "the shards read different input files" in r.stderr and not (tmp_path / "m").exists()
    # the digests made to agree by hand: the games the runs saved still tell (fuzz 21 B D1)
    first = json.loads((Path(shards[0]) / "suite_metadata.json").read_text())
    second = json.loads((Path(shards[1]) / "suite_metadata.json").read_text())
    second["inputs"] = first["inputs"]
    (Path(shards[1]) / "suite_metadata.json").write_text(json.dumps(second))
    r = cli("merge", *shards, "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 2 and "played other games" in r.stderr and not (tmp_path / "m").exists(), r.stderr


def test_a_suite_file_with_its_own_price_table_refuses_another_from_the_flag(tmp_path, cli):
    """The section's table prices the runs (run.json's cost), so --price-table with another table
    priced the plan and the --max-cost ceiling one way and the runs, and a resume's ceiling, the
    other, without a word (fuzz 16 B M1). The same table, or none, is taken."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "p.json").write_text('{"openai:gpt-4o": {"input_per_million": 1, "output_per_million": 2}}')
    (tmp_path / "q.json").write_text('{"openai:gpt-4o": {"input_per_million": 1000, "output_per_million": 2000}}')
    (cfg / "s.toml").write_text('seeds = [1]\nmodels = ["openai:gpt-4o"]\n[nashgap]\nnum_trials = 2\nnum_games = 2\n'
                                'price_table = "p.json"\n')
    for extra in (["--dry-run"], ["--max-cost", "5"]):
        r = cli("suite", "run", str(cfg / "s.toml"), "--price-table", str(tmp_path / "q.json"), *extra,
                "--output-dir", str(tmp_path / "o"), "--no-report", "--quiet")
        assert r.returncode == 2 and "prices its runs with its own price_table" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    for table in (cfg / "p.json", None):
        r = cli("suite", "run", str(cfg / "s.toml"), *(["--price-table", str(table)] if table else []), "--dry-run",
                "--quiet")
        assert r.returncode == 0, r.stderr


def test_input_digests_read_what_the_runs_read_and_refuse_what_they_cannot(tmp_path):
    """A stories folder's digest covers its top-level *.txt entries only (what the story loader
    reads): a dangling link or a named pipe beside them is not read (a pipe hung the digest, fuzz
    17 B H1; an unreadable entry dropped the folder's digest, so a changed story went unnoticed,
    D1), and a story that is no regular file is one line (a link to /dev/zero: MemoryError, T1)."""
    import os

    import pytest

    from stratbench.errors import InputError
    from stratbench.workflows.suite_plan import input_digests

    st = tmp_path / "st"
    st.mkdir()
    (st / "111_0.txt").write_text("a story")
    os.symlink(tmp_path / "nowhere", st / "notes")
    os.mkfifo(st / "pipe")
    (st / "sub").mkdir()
    data = {"seeds": [1], "tmgbench": {"stories_dir": str(st)}, "nashgap": {"games_file": str(tmp_path / "gone.json")}}
    first = input_digests(data)
    # (a path that names nothing is no input: a classic-setting suite's stories_dir; a file that is
    # gone is named by the run that reads it, fuzz 18 B D1)
    assert first["nashgap.games_file"] == "absent" and first["tmgbench.stories_dir"].startswith("sha256:")
    (st / "111_0.txt").write_text("another story")
    assert input_digests(data) != first
    (st / "111_0.txt").write_text("a story")
    assert input_digests(data) == first
    os.symlink("/dev/zero", st / "112_0.txt")
    with pytest.raises(InputError, match=r"^s.toml: \[tmgbench\] stories_dir: /.*/112_0.txt: a device, not a regular file$"):
        input_digests(data, "s.toml")


def test_a_resumed_suites_inputs_edited_by_hand_are_refused(tmp_path):
    """(fuzz 17 B D2: {}, null or other keys let a resume finish on a changed games file)"""
    import pytest

    from stratbench.errors import InputError
    from stratbench.workflows.suite_file import _refuse_changed_inputs
    from stratbench.workflows.suite_plan import input_digests

    g = tmp_path / "g.json"
    g.write_text("[]")
    planned = {"seeds": [1], "nashgap": {"games_file": str(g)}}
    good = input_digests(planned)
    _refuse_changed_inputs(planned, {"inputs": good}, tmp_path)
    _refuse_changed_inputs(planned, {}, tmp_path)  # (a folder from before digests were kept)
    for edited in ({}, None, {"tom.games_file": good["nashgap.games_file"]}, {**good, "x.games_file": "sha256:0"},
                   {"nashgap.games_file": 5}):
        with pytest.raises(InputError, match="is not the digests of the files its plan reads"):
            _refuse_changed_inputs(planned, {"inputs": edited}, tmp_path)
    g.write_text("[ ]")
    with pytest.raises(InputError, match=r"\[nashgap\] games_file .* has changed since the suite started"):
        _refuse_changed_inputs(planned, {"inputs": good}, tmp_path)
    # a setting whose path named nothing when the suite started is none of its runs' inputs (a
    # classic-setting suite's stories_dir): its resume is taken, whatever is there now (fuzz 18 B D1)
    unread = {"seeds": [1], "tmgbench": {"setting": "classic", "stories_dir": str(tmp_path / "not-made-yet")}}
    saved = input_digests(unread)
    assert saved == {"tmgbench.stories_dir": "absent"}
    _refuse_changed_inputs(unread, {"inputs": saved}, tmp_path)
    (tmp_path / "not-made-yet").mkdir()
    _refuse_changed_inputs(unread, {"inputs": saved}, tmp_path)
    # "absent" where the runs read the file is a hand edit (fuzz 19 B D1: it hid a changed games file)
    with pytest.raises(InputError, match="is not the digests of the files its plan reads"):
        _refuse_changed_inputs(planned, {"inputs": {"nashgap.games_file": "absent"}}, tmp_path)


def test_a_dry_run_names_a_sections_bad_price_table_as_the_files_setting(tmp_path, cli):
    """(fuzz 17 B M1: it was named as a --price-table flag the user never gave)"""
    (tmp_path / "sub").mkdir()
    for table, why in (("gone.json", "file not found"), ("sub", "is a directory, not a file")):
        (tmp_path / "s.toml").write_text('seeds = [1]\nmodels = ["openai:gpt-4o"]\n[nashgap]\nnum_trials = 2\n'
                                         f'num_games = 2\nprice_table = "{table}"\n')
        r = cli("suite", "run", str(tmp_path / "s.toml"), "--dry-run")
        assert r.returncode == 2 and r.stderr.startswith(f"error: {tmp_path / 's.toml'}: price_table ") \
            and why in r.stderr and "--price-table" not in r.stderr, r.stderr


def test_shards_differing_only_in_a_setting_none_of_them_reads_merge(tmp_path, cli):
    """A classic-setting suite's stories_dir is read by none of its runs: one shard run while the
    folder was there (a digest) and one after it was removed ("absent") are one suite (fuzz 19 B D2:
    merge refused them while a resume took the same change)."""
    import shutil

    st = tmp_path / "st"
    st.mkdir()
    (st / "111_0.txt").write_text("a story")
    (tmp_path / "s.toml").write_text('seeds = [1, 2]\nmodels = ["uniform"]\n[tmgbench]\nsetting = "classic"\n'
                                     'stories_dir = "st"\ngames = "421,431"\n')
    shards = []
    for i in (1, 2):
        r = cli("suite", "run", str(tmp_path / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(tmp_path / f"sh{i}"),
                "--no-report", "--quiet")
        assert r.returncode == 0, r.stderr
        shards.append(str(next((tmp_path / f"sh{i}").iterdir())))
        shutil.rmtree(st, ignore_errors=True)
    r = cli("merge", *shards, "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr


def test_shards_run_on_two_machines_merge_report_and_resume_and_other_games_are_refused(tmp_path, cli):
    """Shards of one suite file run where the file sits at another path (another machine): each
    run's config names its own machine's games file, so the merged suite reports and resumes
    without calling itself edited (fuzz 22 B D3); a shard that played other games is refused even
    with its input digests copied from the other shard (fuzz 22 B D1)."""
    import shutil

    r = cli("nashgap", "--llm-type", "random", "--num-games", "3", "--seed", "1", "--output-dir",
            str(tmp_path / "g"), "--quiet")
    assert r.returncode == 0, r.stderr
    (games,) = (tmp_path / "g").glob("*/games.json")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    (here / "g.json").write_bytes(games.read_bytes())
    (here / "s.toml").write_text('seeds = [1, 2]\nmodels = ["random", "nash"]\n[nashgap]\nnum_trials = 2\n'
                                 'games_file = "g.json"\n')
    shutil.copytree(here, there)

    def shard(where: Path, i: int) -> Path:
        out = tmp_path / f"{where.name}{i}"
        r = cli("suite", "run", str(where / "s.toml"), "--shard", f"{i}/2", "--output-dir", str(out), "--no-report",
                "--quiet")
        assert r.returncode == 0, r.stderr
        (s,) = out.iterdir()
        return s

    a, b = shard(here, 1), shard(there, 2)
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 0, r.stderr
    (merged,) = (tmp_path / "m").iterdir()
    r = cli("report", str(merged))
    assert r.returncode == 0 and "edited" not in r.stderr, r.stderr
    r = cli("suite", "run", "--resume", str(merged), "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr
    # the other machine's games file held other games; the shard's digests made to agree by hand
    r = cli("nashgap", "--llm-type", "random", "--num-games", "3", "--seed", "2", "--output-dir",
            str(tmp_path / "g2"), "--quiet")
    (other,) = (tmp_path / "g2").glob("*/games.json")
    (there / "g.json").write_bytes(other.read_bytes())
    shutil.rmtree(tmp_path / "there2")
    b = shard(there, 2)
    meta = json.loads((b / "suite_metadata.json").read_text())
    meta["inputs"] = json.loads((a / "suite_metadata.json").read_text())["inputs"]
    (b / "suite_metadata.json").write_text(json.dumps(meta))
    r = cli("merge", str(a), str(b), "--output-dir", str(tmp_path / "m2"), "--quiet")
    assert r.returncode == 2 and "played other games" in r.stderr and not (tmp_path / "m2").exists(), r.stderr


def test_shards_whose_chat_template_differed_are_refused_with_their_digests_copied(tmp_path, cli):
    """A shard run where the suite file's chat template says something else: its input digest
    tells, and so, with that digest copied from the other shard by hand, does the template digest
    its runs saved (fuzz 23 B D1: the two templates' runs merged as one suite)."""
    import shutil

    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(canned_text="Action: 1") as server:
        here, there = tmp_path / "here", tmp_path / "there"
        here.mkdir()
        (here / "t.jinja").write_text("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
                                      "<|assistant|>")
        (here / "s.toml").write_text(
            f'seeds = [1, 2]\nmodels = [{{spec = "openai-compatible:m", base_url = "{server.base_url}", '
            'label = "a", chat = true}]\n[nashgap]\nnum_games = 2\nnum_trials = 1\nchat_template = "t.jinja"\n')
        shutil.copytree(here, there)
        (there / "t.jinja").write_text((here / "t.jinja").read_text().replace("<|assistant|>", "<|assistant|>Answer: "))
        shards = []
        for i, where in ((1, here), (2, there)):
            r = cli("suite", "run", str(where / "s.toml"), "--shard", f"{i}/2", "--output-dir",
                    str(tmp_path / f"sh{i}"), "--no-report", "--quiet")
            assert r.returncode == 0, r.stderr
            (s,) = (tmp_path / f"sh{i}").iterdir()
            shards.append(s)
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 2 and "the shards read different input files" in r.stderr, r.stderr
    meta = json.loads((shards[1] / "suite_metadata.json").read_text())
    meta["inputs"] = json.loads((shards[0] / "suite_metadata.json").read_text())["inputs"]
    (shards[1] / "suite_metadata.json").write_text(json.dumps(meta))
    r = cli("merge", *map(str, shards), "--output-dir", str(tmp_path / "m"), "--quiet")
    assert r.returncode == 2 and "another chat template" in r.stderr and not (tmp_path / "m").exists(), r.stderr


def test_an_unknown_tmgbench_game_is_named_as_the_files_key(tmp_path):
    """Not as the flag ``--games`` the user never typed (fuzz 28 A F3)."""
    import pytest

    from stratbench.errors import InputError

    f = tmp_path / "s.toml"
    f.write_text('seeds = [1]\nmodels = [{spec = "uniform"}]\n[tmgbench]\ngames = "1,2"\n')
    with pytest.raises(InputError, match=r"^.*s\.toml: \[tmgbench\] games: unknown TMGBench game id '1'$"):
        plan_suite_file(f)
