"""The repeated-game engine: each seat sees its own side, rounds are recorded with payoffs."""

from __future__ import annotations

import asyncio

from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.players import ScriptedPlayer, scripted_agent
from stratbench.suites.chbench.repeated import COL, ROW, perspective, play_match

PD = build_catalogue()[0].game  # prisoner's dilemma, A = [[3, 0], [5, 1]]


def test_perspective_puts_own_payoffs_in_rows():
    g = NormalFormGame([[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]])
    v = perspective(g, COL)
    assert v.shape == (3, 2)
    assert v.payoff_row[2, 1] == g.payoff_col[1, 2] and v.payoff_col[2, 1] == g.payoff_row[1, 2]
    assert perspective(g, ROW) is g


def test_engine_records_payoffs_and_scripted_level1_defects_in_pd():
    row = ScriptedPlayer("level-k:1", scripted_agent("level-k:1"))
    col = ScriptedPlayer("random", scripted_agent("random"))
    recs = asyncio.run(play_match(PD, row, col, 20, seed=3))
    assert len(recs) == 20 and all(r["status"] == "complete" for r in recs)
    assert all(r["row_action"] == 1 for r in recs)  # defect is dominant: level 1 always defects
    for r in recs:
        assert r["row_payoff"] == PD.payoff_row[r["row_action"], r["col_action"]]
        assert r["col_payoff"] == PD.payoff_col[r["row_action"], r["col_action"]]
    again = asyncio.run(play_match(PD, row, col, 20, seed=3))
    assert [r["col_action"] for r in again] == [r["col_action"] for r in recs]
