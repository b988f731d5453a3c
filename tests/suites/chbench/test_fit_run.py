"""`chbench fit` through the Python API: run_fit(FitConfig) goes through the shared lifecycle."""

from __future__ import annotations

import json

import pytest

from stratbench.errors import InputError
from stratbench.suites.chbench.catalogue import build_catalogue, recoverable
from stratbench.suites.chbench.fit import CHAgent, simulate_rounds, write_observations_csv
from stratbench.suites.chbench.fit_run import FitConfig, run_fit


def _data(tmp_path):
    rows = simulate_rounds(recoverable(build_catalogue()), CHAgent("a", "poisson", lam=1.0),
                           CHAgent("b", "level_k", alpha=(0.1, 0.6, 0.2, 0.1), epsilon=(0.1, 0.1, 0.1)),
                           rounds=20, seed=1)
    path = tmp_path / "play.csv"
    write_observations_csv(path, rows)
    return path


def test_run_fit_writes_fits_summary_and_run_json(tmp_path):
    res = run_fit(FitConfig(str(_data(tmp_path)), restarts=2, output_dir=str(tmp_path / "out")))
    assert res.folder.parent == tmp_path / "out" and res.folder.name.startswith("chbench_fit_")
    assert sorted(p.name for p in res.folder.iterdir()) == ["fit.json", "run.json", "summary.json"]
    fits = json.loads((res.folder / "fit.json").read_text())
    assert res.summaries["fits"] == fits and set(fits) == {"a", "b"}
    assert res.summary == json.loads((res.folder / "summary.json").read_text())
    assert set(res.summary["players"]["a"]) == {"poisson_lambda", "poisson_mean_level", "level_k_mean_level", "n_obs",
                                                "poisson_mean_level_ci95", "level_k_mean_level_ci95",
                                                "poisson_identified", "poisson_mean_level_range",
                                                "level_k_identified", "level_k_mean_level_range"}
    meta = json.loads((res.folder / "run.json").read_text())
    assert (meta["suite"], meta["kind"], meta["status"]) == ("chbench", "fit", "finished")
    assert set(meta["config"]) == {"data", "k_hat", "restarts", "seed", "corrections", "action_base", "bootstrap",
                                   "allow_uncertain"}
    assert meta["totals"] == {"players": 2} == res.totals and res.n_errors == 0


def test_bad_input_leaves_no_folder_and_fits_are_not_resumable(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InputError, match="file not found"):
        run_fit(FitConfig(str(tmp_path / "missing.csv"), output_dir=str(out)))
    with pytest.raises(InputError, match="--k-hat"):
        run_fit(FitConfig(str(_data(tmp_path)), k_hat=0, output_dir=str(out)))
    assert not out.exists()
    res = run_fit(FitConfig(str(_data(tmp_path)), restarts=1, output_dir=str(out)))
    with pytest.raises(InputError, match="cannot be resumed"):
        run_fit(FitConfig(""), resume_dir=res.folder)


def _numbered(path, base: int):
    """The file at `path` with each action written as its number counted from `base`."""
    import csv

    cat = {g.id: g.game for g in build_catalogue()}
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        g = cat[int(r["game_id"])]
        r["row_action"] = str(g.row_labels.index(r["row_action"]) + base)
        r["col_action"] = str(g.col_labels.index(r["col_action"]) + base)
    out = path.with_name(f"{path.stem}_{base}.csv")
    write_observations_csv(out, rows)
    return out


def test_fit_command_reads_numbers_only_with_an_action_base(tmp_path, cli):
    labelled = _data(tmp_path)
    one_based = _numbered(labelled, 1)
    out = tmp_path / "out"
    r = cli("chbench", "fit", "--data", str(one_based), "--output-dir", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"error: --data {one_based}: line 2: action ") and "--action-base" in line
    assert not out.exists()
    r = cli("chbench", "fit", "--data", str(one_based), "--action-base", "1", "--restarts", "2", "--bootstrap", "0",
            "--output-dir", str(out / "one"))
    assert r.returncode == 0, r.stderr
    r = cli("chbench", "fit", "--data", str(labelled), "--restarts", "2", "--bootstrap", "0",
            "--output-dir", str(out / "labels"))
    assert r.returncode == 0, r.stderr
    (f_one,), (f_lab,) = (list((out / k).iterdir()) for k in ("one", "labels"))
    fit_one, fit_lab = (json.loads((f / "fit.json").read_text()) for f in (f_one, f_lab))
    assert fit_one == fit_lab and abs(fit_one["a"]["poisson"]["lambda"] - 1.0) <= 0.35
    assert json.loads((f_one / "run.json").read_text())["config"]["action_base"] == 1


def test_fit_has_the_level_cis_ratios_and_kl_of_a_run(tmp_path):
    res = run_fit(FitConfig(str(_data(tmp_path)), restarts=2, bootstrap=10, output_dir=str(tmp_path / "out")))
    for player, fits in res.summaries["fits"].items():
        for model in ("poisson", "level_k"):
            f = fits[model]
            lo, hi = f["mean_level_ci95"]
            assert lo <= hi
            assert set(f["likelihood_improvement_ratio"]) == {"3->4", "4->5"}
            assert len(f["kl_consecutive_levels"]) == 3
            assert res.summary["players"][player][f"{model}_mean_level_ci95"] == [lo, hi]
    assert res.summary["bootstrap"] == 10
    again = run_fit(FitConfig(str(_data(tmp_path)), restarts=2, bootstrap=10, output_dir=str(tmp_path / "again")))
    assert again.summaries["fits"] == res.summaries["fits"]  # seeded: the same numbers
    none = run_fit(FitConfig(str(_data(tmp_path)), restarts=1, bootstrap=0, output_dir=str(tmp_path / "none")))
    assert all(f[m]["mean_level_ci95"] is None for f in none.summaries["fits"].values() for m in ("poisson", "level_k"))


def test_fit_refuses_uncertain_games_unless_corrected_or_allowed(tmp_path):
    rows = simulate_rounds(build_catalogue(), CHAgent("a", "poisson", lam=1.0), CHAgent("b", "poisson", lam=1.0),
                           rounds=3, seed=1)
    data = tmp_path / "all.csv"
    write_observations_csv(data, rows)
    out = tmp_path / "out"
    with pytest.raises(InputError, match="game 8's payoffs are uncertain"):
        run_fit(FitConfig(str(data), restarts=1, bootstrap=0, output_dir=str(out)))
    assert not out.exists()
    res = run_fit(FitConfig(str(data), restarts=1, bootstrap=0, allow_uncertain=True, output_dir=str(out)))
    assert json.loads((res.folder / "run.json").read_text())["config"]["allow_uncertain"] is True


@pytest.mark.parametrize("change, fragment", [
    ({"action_base": 2}, "--action-base 2: use 0"),
    ({"action_base": True}, "--action-base True"),
    ({"bootstrap": -1}, "--bootstrap must be at least 0 (got -1)"),
    ({"restarts": 1.5}, "--restarts must be an integer (got 1.5)"),
    ({"corrections": "nope.json"}, "--corrections nope.json: file not found"),
])
def test_bad_fit_settings_are_one_line_and_write_nothing(tmp_path, change, fragment):
    from dataclasses import replace

    out = tmp_path / "out"
    with pytest.raises(InputError) as e:
        run_fit(replace(FitConfig(str(_data(tmp_path)), output_dir=str(out)), **change))
    assert fragment in str(e.value) and "\n" not in str(e.value)
    assert not out.exists()
