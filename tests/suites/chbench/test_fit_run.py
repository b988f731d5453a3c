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
    assert set(res.summary["players"]["a"]) == {"poisson_lambda", "poisson_mean_level", "level_k_mean_level", "n_obs"}
    meta = json.loads((res.folder / "run.json").read_text())
    assert (meta["suite"], meta["kind"], meta["status"]) == ("chbench", "fit", "finished")
    assert set(meta["config"]) == {"data", "k_hat", "restarts", "seed", "corrections"}
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
