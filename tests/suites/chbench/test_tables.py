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


def test_sampled_players_report_strict_and_flexible_parse_rates(tmp_path):
    """Per player: strict + flexible + parse failures + errors = 1 over its moves; fits and
    utilities count parsed actions only (strict or flexible); players without generated answers
    have no parse rates."""
    from stratbench.suites.chbench.tables import analyse_records

    cfg = _cfg(tmp_path, models=["m"], opponents=["random"], games="1", rounds=4, bootstrap=0, restarts=1)
    head = {"mechanism": "baseline", "game_id": 1, "game": "pd", "row_player": "m", "col_player": "random",
            "match_id": "baseline|1|m|random"}
    moves = [(1, "parsed", "strict"), (0, "parsed", "flexible"), (None, "parse_failed", None), (None, "error", None)]
    recs = []
    for t, (a, st, kind) in enumerate(moves, 1):
        done = a is not None
        recs.append({**head, "round": t, "row_action": a, "row_status": st, "row_parse": kind,
                     "row_finish_reason": "stop", "col_action": 0, "col_status": "ok",
                     "row_payoff": 5.0 if a == 1 else 3.0 if done else None,
                     "col_payoff": 0.0 if a == 1 else 3.0 if done else None,
                     "status": "complete" if done else st})
    s = analyse_records(tmp_path, cfg, recs)["mechanisms"]["baseline"]
    m = s["m"]
    assert (m["strict_parse_rate"], m["flexible_parse_rate"], m["parse_failure_rate"], m["error_rate"]) == (
        0.25, 0.25, 0.25, 0.25)
    assert m["n_actions"] == 2 and m["mean_utility"] == 4.0
    assert (m["strict_n_actions"], m["strict_mean_utility"]) == (1, 5.0)  # the flexible answer counts as failed
    assert "strict_parse_rate" not in s["random"]
    table = (tmp_path / "parsing.md").read_text()
    assert "| baseline | m | 4 | 0.2500 | 0.2500 | 0.2500 | 0.2500 | 4.0000 | 5.0000 |" in table
    assert "random" not in table


def test_a_sampled_player_that_never_answered_is_listed_without_a_fit(tmp_path):
    from stratbench.suites.chbench.tables import analyse_records

    cfg = _cfg(tmp_path, models=["m"], opponents=["random"], games="1", rounds=2, bootstrap=0, restarts=1)
    head = {"mechanism": "baseline", "game_id": 1, "game": "pd", "row_player": "m", "col_player": "random",
            "match_id": "baseline|1|m|random"}
    recs = [{**head, "round": t, "row_action": None, "row_status": "parse_failed", "row_parse": None,
             "row_finish_reason": "length", "col_action": 0, "col_status": "ok", "row_payoff": None,
             "col_payoff": None, "status": "parse_failed"} for t in (1, 2)]
    summary = analyse_records(tmp_path, cfg, recs)
    m = summary["mechanisms"]["baseline"]["m"]
    assert (m["n_actions"], m["parse_failure_rate"], m["strict_parse_rate"], m["flexible_parse_rate"]) == (0, 1.0, 0.0, 0.0)
    assert m["mean_utility"] is None and m["strict_mean_utility"] is None
    assert (summary["strict_parse_rate"], summary["flexible_parse_rate"]) == (0.0, 0.0)
    assert "\nm," not in (tmp_path / "levels.csv").read_text()  # no fit, no level rows
