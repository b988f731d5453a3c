"""`stratbench chbench fit` as a user runs it."""

from __future__ import annotations

import json



def test_chbench_fit_command_recovers_lambda(tmp_path, cli):
    from stratbench.suites.chbench.catalogue import build_catalogue, recoverable
    from stratbench.suites.chbench.fit import CHAgent, simulate_rounds, write_observations_csv

    cat = recoverable(build_catalogue())
    rows = simulate_rounds(cat, CHAgent("poisson-1.5", "poisson", lam=1.5),
                           CHAgent("poisson-1.5b", "poisson", lam=1.5), rounds=200, seed=3)
    data = tmp_path / "play.csv"
    write_observations_csv(data, rows)
    r = cli("chbench", "fit", "--data", str(data), "--restarts", "3", "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    (folder,) = list((tmp_path / "out").iterdir())
    fits = json.loads((folder / "fit.json").read_text())
    assert set(fits) == {"poisson-1.5", "poisson-1.5b"}
    for f in fits.values():
        assert abs(f["poisson"]["lambda"] - 1.5) <= 0.5
        assert len(f["level_k"]["alpha"]) == 4 and f["level_k"]["k_hat"] == 4
    bad = cli("chbench", "fit", "--data", str(tmp_path / "missing.csv"), "--output-dir", str(tmp_path / "y"))
    assert bad.returncode == 2 and "missing.csv" in bad.stderr
