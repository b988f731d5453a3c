"""Functional-ToM partners: the finite-state machines' rules."""

from __future__ import annotations

from stratbench.suites.tom.partners import make_partner


def test_tit_for_tat_rules() -> None:
    rps, ibs, ipd = (make_partner("tit_for_tat", g) for g in ("rps", "ibs", "ipd"))
    # state 0 = START (opens as if you had played action 0), state 1+a = "you last played a"
    assert [rps.action_of(1 + a) for a in range(3)] == [1, 2, 0]  # beats your last move
    assert rps.action_of(0) == 1 and ibs.action_of(0) == 0
    assert make_partner("tft", "rps", first_move=0).action_of(0) == 0
    assert [ibs.action_of(1 + a) for a in range(2)] == [0, 1]
    assert [ipd.action_of(1 + a) for a in range(2)] == [0, 1]
    assert ipd.action_of(0) == 0 and ipd.transition(0, 1) == 2
