"""Exact functional-ToM regret: the optimal T-step response to a known finite-state partner.

The paper's Δ_Functional/T compares the agent with the *optimal T-step policy* against the partner
it actually faced, not with a myopic best response: against tit-for-tat in IPD, the myopic best
response (defect) is far from optimal. Because partners are finite-state machines
(:mod:`partners`), the optimum is a backward induction over (time, partner state):

    Q[t, s, a] = Σ_b p(b | s) (payoff_me[a, b] + V[t+1, next(s, a, b)]),   V[t, s] = max_a Q[t, s, a]

with V[T, s] = 0; stochastic partners enter through the expectation over b.

Per-step regret is the *advantage gap* ``V[t, s_t] - Q[t, s_t, a_t]`` along the realised
trajectory: it is ≥ 0 at every step, and for deterministic partners it sums exactly to
``V[0, s_0] - Σ_t r_t`` (the episode's regret), so its mean is Δ_F/T; for stochastic partners its
sum has the same expectation. It also localises *when* the agent lost value (per-step curves).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stratbench.errors import InputError
from stratbench.stats import bootstrap_ci
from stratbench.suites.tom.games import T_DEFAULT, RepeatedGame, get_game
from stratbench.suites.tom.partners import FiniteStatePartner


@dataclass(frozen=True)
class OptimalValues:
    """DP tables: ``V`` (T+1, S) and ``Q`` (T, S, A) for horizon T."""

    V: np.ndarray
    Q: np.ndarray

    @property
    def T(self) -> int:
        return int(self.Q.shape[0])

    def optimal_action(self, t: int, state: int) -> int:
        """An optimal action at step t (lowest index on ties)."""
        return int(np.argmax(self.Q[t, state]))


def optimal_values(game: RepeatedGame | str, partner: FiniteStatePartner, T: int = T_DEFAULT) -> OptimalValues:
    """Backward induction over (time, partner state); O(T·S·A·B)."""
    g = get_game(game)
    S, B = partner.action_probs.shape
    A = g.n_actions
    if partner.next_state.shape != (S, A, B):
        raise InputError("partner and game have different action counts")
    V = np.zeros((T + 1, S))
    Q = np.zeros((T, S, A))
    p = partner.action_probs  # (S, B)
    R = g.payoff_me  # (A, B)
    nxt = partner.next_state  # (S, A, B)
    exp_r = np.einsum("sb,ab->sa", p, R)
    for t in range(T - 1, -1, -1):
        Q[t] = exp_r + np.einsum("sb,sab->sa", p, V[t + 1][nxt])
        V[t] = Q[t].max(axis=1)
    return OptimalValues(V=V, Q=Q)


def partner_states(partner: FiniteStatePartner, my_actions: np.ndarray, partner_actions: np.ndarray,
                   initial_state: int | np.ndarray) -> np.ndarray:
    """Partner states s_0..s_{T-1} along a trajectory; arrays may be (T,) or (E, T)."""
    mine = np.atleast_2d(np.asarray(my_actions, dtype=np.int64))
    theirs = np.atleast_2d(np.asarray(partner_actions, dtype=np.int64))
    s = np.broadcast_to(np.asarray(initial_state, dtype=np.int64), (mine.shape[0],)).copy()
    out = np.empty_like(mine)
    for t in range(mine.shape[1]):
        out[:, t] = s
        s = partner.next_state[s, mine[:, t], theirs[:, t]]
    return out


def infer_initial_state(partner: FiniteStatePartner, my_actions: Sequence[int], partner_actions: Sequence[int]) -> int:
    """The initial state consistent with an observed trajectory (needed for single-action partners).

    Raises when several initial states with different optimal values remain possible - then the
    caller must pass ``initial_state`` explicitly.
    """
    cands = [s for s in range(partner.n_states) if partner.init_dist[s] > 0]
    ok = []
    for s0 in cands:
        s, good = s0, True
        for a, b in zip(my_actions, partner_actions):
            if partner.action_probs[s, b] <= 0:
                good = False
                break
            s = partner.next_state[s, a, b]
        if good:
            ok.append(s0)
    if len(ok) == 1:
        return ok[0]
    raise InputError(f"{partner.name}: initial state ambiguous ({len(ok)} candidates); pass initial_state")


def regret_per_step(
    game: RepeatedGame | str,
    partner: FiniteStatePartner,
    my_actions: Sequence[int] | np.ndarray,
    partner_actions: Sequence[int] | np.ndarray,
    initial_state: int | np.ndarray | None = None,
    values: OptimalValues | None = None,
) -> np.ndarray:
    """Advantage gap V[t, s_t] - Q[t, s_t, a_t] per step; shape (T,) or (E, T) like the inputs.

    The horizon is the trajectory length (the optimum is for that many steps).
    """
    mine = np.asarray(my_actions, dtype=np.int64)
    theirs = np.asarray(partner_actions, dtype=np.int64)
    squeeze = mine.ndim == 1
    mine2, theirs2 = np.atleast_2d(mine), np.atleast_2d(theirs)
    T = mine2.shape[1]
    vals = values if values is not None and values.T == T else optimal_values(game, partner, T)
    if initial_state is None:
        initial_state = np.array([infer_initial_state(partner, m, p) for m, p in zip(mine2, theirs2)])
    states = partner_states(partner, mine2, theirs2, initial_state)
    t_idx = np.arange(T)[None, :]
    gap = vals.V[t_idx, states] - vals.Q[t_idx, states, mine2]
    gap = np.maximum(gap, 0.0)  # clip float noise
    return gap[0] if squeeze else gap


def episode_regret(game: RepeatedGame | str, partner: FiniteStatePartner, my_actions: Sequence[int] | np.ndarray,
                   partner_actions: Sequence[int] | np.ndarray, initial_state: int | np.ndarray | None = None) -> np.ndarray | float:
    """Δ_F/T of each episode (mean per-step regret)."""
    r = regret_per_step(game, partner, my_actions, partner_actions, initial_state)
    out = r.mean(axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def realised_regret(game: RepeatedGame | str, partner: FiniteStatePartner, my_actions: np.ndarray,
                    partner_actions: np.ndarray, initial_state: int | np.ndarray) -> np.ndarray:
    """(V[0, s_0] - Σ r_t) / T per episode: equal to :func:`episode_regret` for deterministic partners."""
    g = get_game(game)
    mine = np.atleast_2d(my_actions)
    theirs = np.atleast_2d(partner_actions)
    T = mine.shape[1]
    vals = optimal_values(g, partner, T)
    s0 = np.broadcast_to(np.asarray(initial_state), (mine.shape[0],))
    return (vals.V[0, s0] - g.payoff_me[mine, theirs].sum(axis=1)) / T


def tom_accuracy(predicted: Sequence[int] | np.ndarray, actual: Sequence[int] | np.ndarray) -> np.ndarray | float:
    """Fraction of steps where the predicted partner action was right (per episode for 2-D input)."""
    acc = (np.asarray(predicted) == np.asarray(actual)).mean(axis=-1)
    return float(acc) if np.ndim(acc) == 0 else acc


def mean_ci(values: Sequence[float] | np.ndarray, seed: int = 0) -> dict[str, object]:
    """Mean, 95% percentile-bootstrap CI over episodes, and n."""
    x = np.asarray(values, dtype=float)
    return {"mean": float(x.mean()) if x.size else None, "ci95": bootstrap_ci(x, seed=seed), "n": int(x.size)}


def random_agent_expected_regret(game: RepeatedGame | str, partner: FiniteStatePartner, T: int = T_DEFAULT) -> float:
    """Exact expected Δ_F/T of the uniformly random agent.

    E[V[0, s_0]] minus the expected return, the latter by propagating the partner-state
    distribution forward under uniform play.
    """
    g = get_game(game)
    vals = optimal_values(g, partner, T)
    A = g.n_actions
    dist = partner.init_dist.copy()
    p = partner.action_probs
    exp_r_state = p @ g.payoff_me.T.mean(axis=1)  # (S,) expected reward under uniform a
    total = 0.0
    S = partner.n_states
    # transition matrix under uniform a: M[s, s'] = Σ_a Σ_b (1/A) p(b|s) [next(s,a,b) = s']
    M = np.zeros((S, S))
    for a in range(A):
        for b in range(p.shape[1]):
            np.add.at(M, (np.arange(S), partner.next_state[:, a, b]), p[:, b] / A)
    for _ in range(T):
        total += float(dist @ exp_r_state)
        dist = dist @ M
    return float((partner.init_dist @ vals.V[0] - total) / T)
