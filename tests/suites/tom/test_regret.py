"""Functional-ToM regret: the exact DP optimum against brute force, regret of the oracle and of a
random agent, ToM accuracy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stratbench.suites.tom.games import GAMES, get_game
from stratbench.suites.tom.partners import PARTNERS, make_partner
from stratbench.suites.tom.regret import (
    episode_regret,
    optimal_values,
    random_agent_expected_regret,
    realised_regret,
    regret_per_step,
    tom_accuracy,
)


# ---------------------------------------------------------------- DP vs brute force
def _brute_force(game_name: str, partner, T: int, s0: int) -> float:
    """Expectimax over full histories, using only the step interface's distributions."""
    g = get_game(game_name)

    def value(t: int, s: int) -> float:
        if t == T:
            return 0.0
        best = -np.inf
        for a in range(g.n_actions):
            v = sum(
                p * (g.payoff_me[a, b] + value(t + 1, partner.update(s, a, b)))
                for b, p in enumerate(partner.action_probs[s]) if p > 0
            )
            best = max(best, v)
        return best

    return value(0, s0)


def _open_loop(game_name: str, partner, T: int, s0: int) -> float:
    """Best fixed action sequence (optimal for partners deterministic given the state)."""
    g = get_game(game_name)
    best = -np.inf
    for seq in itertools.product(range(g.n_actions), repeat=T):
        s, tot = s0, 0.0
        for a in seq:
            b = partner.action_of(s)
            tot += g.payoff_me[a, b]
            s = partner.update(s, a, b)
        best = max(best, tot)
    return best


@pytest.mark.parametrize("game", sorted(GAMES))
@pytest.mark.parametrize("pname", sorted(PARTNERS))
def test_dp_matches_brute_force(game: str, pname: str) -> None:
    partner = make_partner(pname, game)
    for T in range(1, 5):
        vals = optimal_values(game, partner, T)
        for s0 in np.flatnonzero(partner.init_dist > 0):
            assert vals.V[0, s0] == pytest.approx(_brute_force(game, partner, T, s0))
            if partner.is_deterministic:
                assert vals.V[0, s0] == pytest.approx(_open_loop(game, partner, T, s0))


def test_dp_is_not_myopic() -> None:
    # Against IPD tit-for-tat, the optimum cooperates and defects only at the end: 99*8 + 10.
    vals = optimal_values("ipd", make_partner("tft", "ipd"), 100)
    assert vals.V[0, 0] == 802
    assert vals.optimal_action(0, 0) == 0 and vals.optimal_action(99, 1) == 1


def test_dp_stochastic_first_move() -> None:
    p = make_partner("tit_for_tat", "ibs", first_move="random")
    assert not p.is_deterministic
    for T in (1, 2, 3):
        assert optimal_values("ibs", p, T).V[0, 0] == pytest.approx(_brute_force("ibs", p, T, 0))


# ---------------------------------------------------------------- agents
def _play(game_name: str, partner, choose, episodes: int, T: int, seed: int):
    rng = np.random.default_rng(seed)
    mine = np.zeros((episodes, T), dtype=int)
    theirs = np.zeros_like(mine)
    s0s = np.zeros(episodes, dtype=int)
    for e in range(episodes):
        s = s0s[e] = partner.reset(rng)
        for t in range(T):
            a = choose(t, s, rng)
            b = partner.act(s, rng)
            mine[e, t], theirs[e, t] = a, b
            s = partner.update(s, a, b)
    return mine, theirs, s0s


@pytest.mark.parametrize("game", sorted(GAMES))
@pytest.mark.parametrize("pname", sorted(PARTNERS))
def test_oracle_has_zero_regret(game: str, pname: str) -> None:
    partner = make_partner(pname, game)
    T = 30
    vals = optimal_values(game, partner, T)
    mine, theirs, s0 = _play(game, partner, lambda t, s, rng: vals.optimal_action(t, s), 20, T, 1)
    reg = regret_per_step(game, partner, mine, theirs, initial_state=s0, values=vals)
    assert np.all(reg == 0)
    if partner.is_deterministic:
        assert np.allclose(realised_regret(game, partner, mine, theirs, s0), 0)


@pytest.mark.parametrize("game", sorted(GAMES))
@pytest.mark.parametrize("pname", ["single_action", "tit_for_tat", "grim_trigger", "mixed"])
def test_random_agent_matches_analytic(game: str, pname: str) -> None:
    partner = make_partner(pname, game)
    T, E = 20, 600
    g = get_game(game)
    mine, theirs, s0 = _play(game, partner, lambda t, s, rng: int(rng.integers(g.n_actions)), E, T, 2)
    expected = random_agent_expected_regret(game, partner, T)
    for sim in (episode_regret(game, partner, mine, theirs, s0), realised_regret(game, partner, mine, theirs, s0)):
        se = sim.std(ddof=1) / np.sqrt(E)
        assert abs(sim.mean() - expected) <= 4 * se + 1e-9, (sim.mean(), expected, se)


def test_regret_sums_to_realised_and_infers_state() -> None:
    partner = make_partner("single_action", "ibs")
    mine = [1, 0, 0, 1]
    theirs = [0, 0, 0, 0]
    r = regret_per_step("ibs", partner, mine, theirs)  # initial state inferred: always 0
    assert r.tolist() == [10, 0, 0, 10]
    assert episode_regret("ibs", partner, mine, theirs) == 5.0
    assert tom_accuracy([0, 1, 0, 0], theirs) == 0.75
