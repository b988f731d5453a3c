"""The tiered research suite: the original's dry-run command, reproducibility, one folder per model,
suite files, resume and bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from stratbench.cli.suite import expand_multi_value_flags
from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl, write_jsonl_atomic
from stratbench.suites.nashgap.tiered import (
    DEFAULT_TOGETHER_MODEL_TIERS,
    ModelEntry,
    TieredConfig,
    model_entry,
    model_folder_keys,
    parse_model_tiers,
    run_tiered_suite,
)
from stratbench.suites.nashgap.tiered_config import load_suite_file

TABLES = ("big_table_all_runs.csv", "big_table_aggregated.csv", "big_table_aggregated.md")
ORIGINAL_COLUMNS = [
    "seed", "provider", "bucket_id", "equilibrium_target", "num_rows", "num_cols", "payoff_min",
    "payoff_max", "tier", "model", "mode", "num_games", "num_trials_per_game", "total_trials",
    "mean_nash_gap", "median_nash_gap", "std_nash_gap", "min_nash_gap", "max_nash_gap",
    "mean_llm_value", "reference_value", "parse_success_rate", "decision_source_counts",
]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_acceptance_dry_run_twice_gives_identical_tables(cli, tmp_path):
    """The original README's dry run, with two seeds, run twice as a user would."""
    cmd = ("suite", "tiered", "--use-dummy", "--num-games-per-bucket", "5", "--num-trials", "3",
           "--seeds", "42", "43")
    first = cli(*cmd, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = cli(*cmd, "--quiet", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    folders = sorted((tmp_path / "results").iterdir())
    assert len(folders) == 2 and all(f.name.startswith("tiered_suite_") for f in folders)
    a, b = folders
    assert second.stdout.strip() == str(Path("results") / b.name)
    for name in TABLES + ("suite_metadata.json",):
        assert (a / name).is_file() and (b / name).is_file()
    for name in TABLES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name

    # One folder per model: the six default Together models, none overwriting another.
    models = sorted(p.name for p in (a / "models").iterdir())
    expected = [(t, m) for t in "ABC" for m in DEFAULT_TOGETHER_MODEL_TIERS[t]]
    assert len(models) == len(expected) == 6
    for t, m in expected:
        assert any(name.startswith(f"together__{t}__") and name.endswith(m.split("/")[-1]) for name in models)
    for name in models:
        runs = [p for p in (a / "models" / name).iterdir() if (p / "run.json").is_file()]
        assert len(runs) == 2 * 6  # seeds × buckets

    rows = _rows(a / "big_table_all_runs.csv")
    assert list(rows[0])[:len(ORIGINAL_COLUMNS)] == ORIGINAL_COLUMNS
    assert len(rows) == 2 * 6 * 6 * 2  # seeds × buckets × models × modes
    assert {r["player"] for r in rows} == {"random"}
    assert {r["seed"] for r in rows} == {"42", "43"}
    # Table values are the run folders' own summaries.
    meta = json.loads((a / "suite_metadata.json").read_text())
    run0 = meta["runs"][0]
    summary = json.loads((a / run0["folder"] / "summary_pure_actions.json").read_text())
    row0 = next(r for r in rows if r["seed"] == str(run0["seed"]) and r["bucket_id"] == run0["bucket_id"]
                and r["model_folder"] == run0["model_folder"] and r["mode"] == "pure")
    assert float(row0["mean_nash_gap"]) == summary["mean_nash_gap"]
    assert float(row0["mean_exploitability"]) == summary["mean_exploitability"]
    assert int(row0["total_trials"]) == 5 * 3
    # A fully mixed 2×2 game gives every answer gap 0; exploitability still sees the random play.
    mixed2 = [r for r in rows if r["bucket_id"] == "2x2_lowVar_mixed"]
    assert all(float(r["mean_nash_gap"]) == pytest.approx(0.0, abs=1e-9) for r in mixed2)
    assert all(float(r["mean_exploitability"]) > 0 for r in mixed2)

    agg = _rows(a / "big_table_aggregated.csv")
    assert len(agg) == 6 * 6 * 2
    for r in agg:
        assert r["seeds"] == "42,43" and r["n_games_scored"] == "10"
        lo, hi, m = (float(r[k]) for k in ("mean_exploitability_ci95_low",
                                           "mean_exploitability_ci95_high", "mean_exploitability_mean"))
        assert lo <= m <= hi
    md = (a / "big_table_aggregated.md").read_text().splitlines()
    assert md[0].startswith("| provider | bucket_id | mode | tier | model |") and len(md) == 2 + 72

    assert meta["seeds"] == [42, 43] and meta["use_dummy"] is True
    assert meta["together_model_tiers"] == DEFAULT_TOGETHER_MODEL_TIERS
    assert meta["status"] == "finished" and len(meta["runs"]) == 72
    assert meta["totals"]["records"] == 72 * 2 * 5 * 3 and meta["totals"]["errors"] == 0


def test_multi_value_flags_are_expanded_like_argparse_nargs():
    args = ["suite", "tiered", "--use-dummy", "--seeds", "42", "43", "--providers", "together",
            "openai", "--bucket-ids", "2x2_lowVar_pure", "--quiet"]
    assert expand_multi_value_flags(args) == [
        "suite", "tiered", "--use-dummy", "--seeds", "42", "--seeds", "43", "--providers",
        "together", "--providers", "openai", "--bucket-ids", "2x2_lowVar_pure", "--quiet"]
    # other commands are untouched; comma lists and single values pass through
    assert expand_multi_value_flags(["nashgap", "--seed", "1", "2"]) == ["nashgap", "--seed", "1", "2"]
    assert expand_multi_value_flags(["suite", "tiered", "--seeds", "1,2"]) == ["suite", "tiered", "--seeds", "1,2"]


def test_models_that_share_a_name_get_their_own_folders():
    entries = [
        ModelEntry("together:org/x", "together", "A", "org/x"),
        ModelEntry("together:org/x", "together", "B", "org/x"),  # same model, another tier
        ModelEntry("openai:org/x", "openai", "A", "org/x"),  # same name, another provider
        model_entry("hf:/a/b", label="org x"),  # slugs like the first after cleaning
        model_entry("hf:/c/d", label="org-x"),
    ]
    keys = model_folder_keys(entries)
    assert len(set(keys)) == len(keys)
    assert keys[:3] == ["together__A__org-x", "together__B__org-x", "openai__A__org-x"]
    with pytest.raises(InputError, match="listed twice"):
        TieredConfig(providers=[], models=[model_entry("random"), model_entry("random")]).validate()


def test_tier_maps_are_checked():
    assert parse_model_tiers('{"A": ["m"]}', {}) == {"A": ["m"], "B": [], "C": []}
    assert parse_model_tiers(None, DEFAULT_TOGETHER_MODEL_TIERS) == DEFAULT_TOGETHER_MODEL_TIERS
    for bad in ('{"A": "m"}', "[]", '{"a": []}', "{", '{"B": [""]}'):
        with pytest.raises(InputError):
            parse_model_tiers(bad, {})


def test_api_models_need_their_key_unless_dummy(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = TieredConfig(providers=["openai"], bucket_ids=["2x2_lowVar_pure"], num_games_per_bucket=1,
                       num_trials=1, output_dir=str(tmp_path / "out"))
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        run_tiered_suite(cfg)
    assert not (tmp_path / "out").exists()  # nothing written on bad input
    cfg.use_dummy = True
    assert len(run_tiered_suite(cfg).runs) == 2  # gpt-4o and gpt-4o-mini, played by random


def test_api_tiers_over_http_count_failures_honestly(monkeypatch, tmp_path):
    """Tier models through the real OpenAI-compatible backend (a local fake server): refused calls
    are error records and unparseable answers parse failures, in the tables as rates."""
    from fake_openai_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(canned_text="Thinking...\nAction: 1") as server:
        server.script("400", "400")  # not retried: two error records
        cfg = TieredConfig(providers=["openai"], openai_model_tiers='{"A": ["fake-a"], "B": ["fake-b"]}',
                           bucket_ids=["2x2_lowVar_pure"], modes=["pure"], policy="sample",
                           num_games_per_bucket=3, num_trials=2, seeds=[1], base_url=server.base_url,
                           max_concurrency=1, no_cache=True, output_dir=str(tmp_path))
        res = run_tiered_suite(cfg)
        assert len(server.requests) == 2 * 3 * 2
    assert res.n_errors == 2
    first, second = res.rows
    assert (first["model"], second["model"]) == ("fake-a", "fake-b")
    assert json.loads(first["decision_source_counts"]) == {"error": 2, "ok": 0, "parse_failed": 0, "parsed": 4}
    assert first["error_rate"] == pytest.approx(2 / 6) and first["parse_success_rate"] == pytest.approx(4 / 6)
    assert second["error_rate"] == 0 and second["player"] == "openai:fake-b"
    # one at a time, the two refused calls are game 0's two trials: that game drops out of the means
    assert (first["n_games_scored"], second["n_games_scored"]) == (2, 3)


def test_suite_files_toml_and_yaml(tmp_path):
    toml = tmp_path / "suite.toml"
    toml.write_text(f"""
num_games_per_bucket = 3
num_trials = 2
seeds = [5, 6]
bucket_ids = ["3x3_midVar_mixed"]
modes = ["mixed"]
output_dir = "{tmp_path / 'out'}"
models = ["random", {{ spec = "nash", tier = "ref", label = "oracle" }}]
""")
    cfg = load_suite_file(toml)
    assert cfg.resolved_providers() == []  # explicit models only: no API tiers
    res = run_tiered_suite(cfg)
    assert sorted(p.name for p in (res.folder / "models").iterdir()) == ["scripted__random", "scripted__ref__oracle"]
    agg = {r["model"]: r for r in res.aggregated}
    assert set(agg) == {"random", "oracle"} and all(r["mode"] == "mixed" for r in res.aggregated)
    assert agg["oracle"]["mean_exploitability_mean"] == pytest.approx(0.0, abs=1e-7)
    assert agg["random"]["mean_exploitability_mean"] > 1.0
    assert agg["random"]["n_seeds"] == 2 and agg["random"]["n_games_scored"] == 6

    yaml_file = tmp_path / "suite.yaml"
    yaml_file.write_text("""
providers: [together, openai]
together_model_tiers: {A: [m1], C: [m2]}
openai_model_tiers:
  B: [gpt-4o-mini]
seeds: 9
use_dummy: true
num_workers: 3
models:
  - spec: hf:/ckpt/step-1000
    tier: B
    label: ckpt-1000
    policy: logprob
""")
    y = load_suite_file(yaml_file)
    assert y.seeds == [9] and y.use_dummy and y.max_concurrency == 3
    assert [(e.provider, e.tier, e.display) for e in y.validate()] == [
        ("together", "A", "m1"), ("together", "C", "m2"), ("openai", "B", "gpt-4o-mini"),
        ("hf", "B", "ckpt-1000")]

    for text, suffix, msg in (("seeds: [1\n", ".yaml", "invalid YAML"), ("seed = 1\n", ".toml", "unknown key"),
                              ('models = [{spec = "random", tierx = "A"}]\n', ".toml", "tierx"),
                              ('together_model_tiers = {D = ["x"]}\n', ".toml", "unknown tier"),
                              ("seeds = ['a']\n", ".toml", "expected an integer"), ("x", ".json", ".toml")):
        bad = tmp_path / f"bad{suffix}"
        bad.write_text(text)
        with pytest.raises(InputError, match=msg):
            load_suite_file(bad)


def test_interrupted_suite_resumes_to_the_same_tables(tmp_path):
    def config(out: str) -> TieredConfig:
        return TieredConfig(num_games_per_bucket=3, num_trials=2, seeds=[1, 2], providers=["openai"],
                            bucket_ids=["2x2_lowVar_pure", "3x3_midVar_mixed"], use_dummy=True,
                            output_dir=str(tmp_path / out))

    full = run_tiered_suite(config("full"))
    done = []

    def stop_after_three(cell, result, folder):  # type: ignore[no-untyped-def]
        done.append(folder)
        if len(done) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tiered_suite(config("cut"), on_cell=stop_after_three)
    folder = next((tmp_path / "cut").iterdir())
    meta = json.loads((folder / "suite_metadata.json").read_text())
    assert meta["status"] == "running" and len(meta["runs"]) == 3
    assert not (folder / "big_table_all_runs.csv").exists()
    # Make the third cell look killed mid-run: unfinished, with part of its trials on disk.
    run3 = done[2]
    rj = json.loads((run3 / "run.json").read_text())
    rj["status"] = "running"
    (run3 / "run.json").write_text(json.dumps(rj))
    trials = run3 / "trials_pure_actions.jsonl"
    write_jsonl_atomic(trials, read_jsonl(trials)[:2])
    (run3 / "summary_pure_actions.json").unlink()

    resumed = run_tiered_suite(TieredConfig(), resume_dir=folder)
    assert resumed.folder == folder and len(resumed.runs) == 8
    assert len(read_jsonl(trials)) == 3 * 2  # the cell finished in its own folder
    for name in TABLES:
        assert (folder / name).read_bytes() == (full.folder / name).read_bytes(), name
    with pytest.raises(InputError, match="not a tiered suite"):
        run_tiered_suite(TieredConfig(), resume_dir=tmp_path)


@pytest.mark.parametrize("args, message", [
    (["--bucket-ids", "2x2_lowVar_pure", "5x5_nope"], "unknown bucket id"),
    (["--providers", "together", "anthropic"], "unknown provider"),
    (["--together-model-tiers-json", "{A: [1]"], "--together-model-tiers-json"),
    (["--config", "suite.toml"], "invalid TOML"),
])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, message):
    (tmp_path / "suite.toml").write_text("seeds = [1\n")
    r = cli("suite", "tiered", "--use-dummy", *args, cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("name, text, fragment", [
    ("float.toml", "num_games_per_bucket = 2.5\n", "num_games_per_bucket: expected an integer, got 2.5"),
    ("bool.toml", "num_trials = true\n", "num_trials: expected an integer, got true"),
    ("str.yaml", "temperature: hot\n", "temperature: expected a number, got 'hot'"),
    ("seeds.toml", "seeds = [42, 43, 42]\n", "seeds: 42 is listed twice"),
    ("modes.toml", 'modes = ["pure", "pure"]\n', "modes: 'pure' is listed twice"),
    ("spec.yaml", "models:\n  - spec: ''\n", "models[0]: spec: must not be empty"),
    ("spec2.toml", "models = [{tier = \"A\"}]\n", "models[0]: spec: missing (required)"),
    ("label.toml", 'models = [{spec = "random", label = 1}]\n', "models[0]: label: expected a string, got 1"),
    ("labels.toml", 'models = [{spec = "random", label = "m"}, {spec = "nash", label = "m"}]\n', "'m' appears twice"),
    ("tiers.toml", 'models = [{spec = "random", tier = "A", label = "m"}, {spec = "nash", tier = "A", label = "m"}]\n',
     "'m' appears twice in tier A"),
    ("item.yaml", "models: [3]\n", "models[0]: expected a model spec or a table"),
    ("tiermap.toml", "together_model_tiers = 3\n", "together_model_tiers must be a table"),
    ("laughs.yaml", "a: &a [1]\nseeds: *a\n", "anchors (&name) are not allowed"),
    ("deep.yaml", "modes: " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than 64 levels"),
    ("surrogate.yaml", 'models: ["\\udfff"]\n', "lone surrogate"),
    ("dup.yaml", "seeds: [1]\nseeds: [2]\n", "duplicate key 'seeds'"),
])
def test_hostile_tiered_suite_files(tmp_path, name, text, fragment):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as e:
        load_suite_file(p)
    msg = str(e.value)
    assert msg.startswith(f"--config {p}: ") and fragment in msg and "\n" not in msg


def test_two_models_of_one_spec_in_different_tiers_are_fine(tmp_path):
    p = tmp_path / "ok.toml"
    p.write_text('use_dummy = true\nmodels = [{spec = "random", tier = "A"}, {spec = "random", tier = "B"}]\n')
    assert [m.tier for m in load_suite_file(p).models] == ["A", "B"]


def _small(out: Path) -> TieredConfig:
    return TieredConfig(num_games_per_bucket=3, num_trials=2, seeds=[1], providers=["openai"],
                        bucket_ids=["2x2_lowVar_pure", "3x3_midVar_mixed"], use_dummy=True, output_dir=str(out))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_run_of_a_cell_copied_beside_the_suites_own_is_never_taken_for_it(tmp_path):
    """The cell's folder was the first by name that carried its tag: a run copied in beside the
    suite's own was merged, resumed and tabled in its place (fuzz 29 A F1)."""
    import shutil

    from stratbench.suites.nashgap.tiered import check_tiered_folder

    done = run_tiered_suite(_small(tmp_path / "o"))
    listed = done.folder / done.runs[0]["folder"]
    shutil.copytree(listed, listed.parent / "pure_and_mixed_20000101_000000_copy")
    before = _files(done.folder)
    with pytest.raises(InputError, match=r"2 runs of the cell .*: remove the one its suite_metadata.json does not list"):
        run_tiered_suite(TieredConfig(), resume_dir=done.folder)
    meta = json.loads((done.folder / "suite_metadata.json").read_text())
    with pytest.raises(InputError, match=r"2 runs of the cell"):
        check_tiered_folder(done.folder, meta)
    assert _files(done.folder) == before


def test_a_resume_of_a_suite_whose_saved_plan_was_edited_is_refused(tmp_path):
    """Cells already run keep their settings: a plan edited to fewer games would play the cells
    left with 2 beside cells of 3, in one table (fuzz 29 A F2)."""
    def stop_after_one(cell, result, folder):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tiered_suite(_small(tmp_path / "o"), on_cell=stop_after_one)
    (folder,) = (tmp_path / "o").iterdir()
    meta = json.loads((folder / "suite_metadata.json").read_text())
    meta["config"]["num_games_per_bucket"] = 2
    (folder / "suite_metadata.json").write_text(json.dumps(meta))
    before = _files(folder)
    with pytest.raises(InputError, match=r"suite_metadata.json: its plan gives the cell .* num_games 2, but its run "
                                         r".* was run with 3: suite_metadata.json was edited by hand"):
        run_tiered_suite(TieredConfig(), resume_dir=folder)
    assert _files(folder) == before


def test_a_relative_price_table_of_a_tiered_suite_file_is_read_beside_it_and_saved_absolute(tmp_path, monkeypatch):
    """As a suite file's: read from the working folder, another table there priced the rest of a
    suite resumed elsewhere (fuzz 29 A F3)."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "p.json").write_text("{}")
    (tmp_path / "conf" / "t.toml").write_text('use_dummy = true\nprice_table = "p.json"\n')
    monkeypatch.chdir(tmp_path)
    cfg = load_suite_file("conf/t.toml")
    assert cfg.price_table == str(tmp_path / "conf" / "p.json")
