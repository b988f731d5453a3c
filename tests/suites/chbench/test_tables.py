"""CHBench analysis of a run's records: the numbers survive a failed plot."""

from __future__ import annotations

import json

from stratbench.suites.chbench.run import ChbenchConfig, run_chbench


def _cfg(tmp_path, **kw):
    base = dict(models=["level-k:2"], opponents=["random", "poisson:1.5"], rounds=10, games="1,2,8,11",
                bootstrap=5, restarts=3, output_dir=str(tmp_path))
    base.update(kw)
    return ChbenchConfig(**base)


def test_a_failed_plot_is_recorded_in_the_summary_and_the_numbers_kept(tmp_path, monkeypatch):
    import stratbench.suites.chbench.plots as plots

    def boom(panels, title):
        raise RuntimeError("no display")

    monkeypatch.setattr(plots, "level_distributions", boom)
    folder = run_chbench(_cfg(tmp_path, games="1", rounds=4, bootstrap=0)).folder
    on_disk = json.loads((folder / "summary.json").read_text())
    assert on_disk["plot_error"] == "RuntimeError: no display"
    assert on_disk["mechanisms"]["baseline"]["level-k:2"]["n_actions"] > 0
    assert not (folder / "level_distribution.png").exists()
