"""Functional-ToM games: the paper's payoff tables and action label sets."""

from __future__ import annotations

import numpy as np

from stratbench.suites.tom.games import GAMES


def test_payoff_tables_pinned() -> None:
    rps, ibs, ipd = GAMES["rps"], GAMES["ibs"], GAMES["ipd"]
    assert rps.payoff_me.tolist() == [[0, -1, 1], [1, 0, -1], [-1, 1, 0]]
    assert np.array_equal(rps.payoff_partner, -rps.payoff_me)
    assert ibs.payoff_me.tolist() == [[10, 0], [0, 7]]
    assert ibs.payoff_partner.tolist() == [[7, 0], [0, 10]]
    assert ipd.payoff_me.tolist() == [[8, 0], [10, 5]]
    assert ipd.payoff_partner.tolist() == [[8, 10], [0, 5]]
    assert (rps.r_max, ibs.r_max, ipd.r_max) == (1.0, 10.0, 10.0)
    # paper's label sets
    assert rps.action_labels("canonical") == ("Rock", "Paper", "Scissors")
    assert rps.action_labels("neutral") == ("J", "F", "B")
    assert ipd.action_labels("canonical") == ("Cooperate", "Defect")
    assert ibs.action_labels("unrelated") == ("Pasta", "Rice")
    assert ipd.action_index("defect") == 1 and rps.action_index("S", "rps_letters") == 2
