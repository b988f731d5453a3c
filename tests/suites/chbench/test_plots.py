"""CHBench's one figure: level distributions, for a run's summary and for a fit's fit.json."""

from __future__ import annotations

from stratbench.suites.chbench.plots import fit_panels, level_distributions, run_panels

SUMMARY = {"mechanisms": {
    "baseline": {"level-k:1": {"level_k_level_distribution": [0.0, 1.0, 0.0, 0.0],
                               "poisson_level_distribution": [0.2, 0.4, 0.3, 0.1]},
                 "random": {"level_k_level_distribution": [1.0, 0.0, 0.0, 0.0],
                            "poisson_level_distribution": None}},
    "memory": {"level-k:1": {"level_k_level_distribution": [0.1, 0.9, 0.0, 0.0],
                             "poisson_level_distribution": [0.3, 0.4, 0.2, 0.1]}},
}}


def test_run_panels_are_ch_models_by_mechanisms():
    rows = run_panels(SUMMARY)
    assert [[title for title, _ in row] for row in rows] == [
        ["Level-K CH — baseline", "Level-K CH — memory"], ["Poisson CH — baseline", "Poisson CH — memory"]]
    assert set(rows[1][0][1]) == {"level-k:1"}  # a player without a fitted distribution has no bars
    assert run_panels({"mechanisms": {}}) == []


def test_fit_panels_are_one_row_of_ch_models():
    fits = {"a": {"level_k": {"level_distribution": [0.5, 0.5]}, "poisson": {"level_distribution": [1, 0]}},
            "b": {"level_k": {"level_distribution": "not a list"}}}
    (row,) = fit_panels(fits)
    assert [t for t, _ in row] == ["level_k", "poisson"]
    assert set(row[0][1]) == {"a"} and set(row[1][1]) == {"a"}


def test_one_function_draws_both_layouts_as_png():
    for rows in (run_panels(SUMMARY), fit_panels({"p<1>": {"poisson": {"level_distribution": [0.5, 0.5]}}})):
        png = level_distributions(rows, "Level distributions of $model")
        assert png.startswith(b"\x89PNG")
