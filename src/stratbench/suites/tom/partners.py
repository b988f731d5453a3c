"""Partner policies as explicit finite-state machines.

Every partner is a :class:`FiniteStatePartner`: a finite set of internal states, an initial-state
distribution, a per-state distribution over the partner's actions, and a deterministic transition
``next_state[state, my_action, partner_action]``. Keeping the state explicit and finite is what
makes the *optimal* T-step response computable exactly by dynamic programming over
(time, partner state) in :mod:`stratbench.suites.tom.regret`, instead of approximating it with a
myopic best response.

Randomness that is resolved once per episode (the single-action partner's action) lives in the
initial-state distribution: the partner is "known" once its initial state is known, which is how the
paper scores regret (against the optimal response to the partner actually faced).

First move of reactive partners: the paper does not specify it. The tit-for-tat default is
``first_move="respond_to_0"``: the partner opens as if the agent's previous action had been action
0, i.e. with its response rule applied to action 0 - cooperate (a0) in IPD and a0 in IBS (the
classic tit-for-tat opening), and a1 (the best response to a0) in RPS. Reasons: it keeps the
partner deterministic (the paper's Tabular tit-for-tat ToM intervals are ±0.0, which a random
opening would not give), and it reproduces the paper's Tabular ToM % exactly (93.0 / 98.1 / 98.0;
opening RPS with a0 instead gives 94.0, because the count predictor's default of a0 is then right
on the first step). Pass an action index, or ``"random"`` for a uniformly random first move.
Win-stay-lose-shift defaults to opening with action 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from stratbench.errors import InputError
from stratbench.suites.tom.games import RepeatedGame, get_game


@dataclass(frozen=True)
class FiniteStatePartner:
    """A partner policy with explicit finite state.

    Arrays: ``init_dist`` (S,), ``action_probs`` (S, n_partner_actions), ``next_state``
    (S, n_my_actions, n_partner_actions) of ints. ``state_labels`` name the states for debugging.
    """

    name: str
    init_dist: np.ndarray
    action_probs: np.ndarray
    next_state: np.ndarray
    state_labels: tuple[str, ...] = ()
    params: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        init = np.asarray(self.init_dist, dtype=float)
        probs = np.asarray(self.action_probs, dtype=float)
        nxt = np.asarray(self.next_state, dtype=np.int64)
        s = init.shape[0]
        if probs.shape[0] != s or nxt.shape[0] != s or nxt.ndim != 3:
            raise InputError(f"{self.name}: inconsistent state dimensions")
        if not np.isclose(init.sum(), 1) or not np.allclose(probs.sum(axis=1), 1):
            raise InputError(f"{self.name}: distributions must sum to 1")
        if nxt.min() < 0 or nxt.max() >= s:
            raise InputError(f"{self.name}: transition to a non-existent state")
        for arr in (init, probs, nxt):
            arr.setflags(write=False)
        object.__setattr__(self, "init_dist", init)
        object.__setattr__(self, "action_probs", probs)
        object.__setattr__(self, "next_state", nxt)

    @property
    def n_states(self) -> int:
        return int(self.init_dist.shape[0])

    @property
    def is_deterministic(self) -> bool:
        """True when the action is a function of the state (the initial state may still be random)."""
        return bool(np.all((self.action_probs == 0) | (self.action_probs == 1)))

    # -- the step-by-step interface used by agents/harnesses ---------------------------------
    def reset(self, rng: np.random.Generator) -> int:
        """Draw the episode's initial state (e.g. the single-action partner's action)."""
        return int(rng.choice(self.n_states, p=self.init_dist))

    def act(self, state: int, rng: np.random.Generator) -> int:
        """The partner's action in ``state`` (sampled for stochastic partners)."""
        p = self.action_probs[state]
        if self.is_deterministic:
            return int(np.argmax(p))
        return int(rng.choice(p.shape[0], p=p))

    def update(self, state: int, my_action: int, partner_action: int) -> int:
        """State after a round in which the agent played ``my_action``."""
        return int(self.next_state[state, my_action, partner_action])

    # -- the DP interface (deterministic-given-state partners) --------------------------------
    def action_of(self, state: int) -> int:
        """The partner's action in ``state``; only for deterministic-given-state partners."""
        p = self.action_probs[state]
        if not np.any(p == 1):
            raise InputError(f"{self.name}: state {state} has a stochastic action")
        return int(np.argmax(p))

    def transition(self, state: int, my_action: int) -> int:
        """Next state given my action, for deterministic-given-state partners."""
        return self.update(state, my_action, self.action_of(state))

    # -- vectorised helpers -------------------------------------------------------------------
    def reset_many(self, rng: np.random.Generator | None, n: int, u: np.ndarray | None = None) -> np.ndarray:
        """Initial states of n episodes; from the uniforms ``u`` (shape (n,)) when given, so each
        episode's draw can come from its own seeded stream (inverse CDF of ``init_dist``)."""
        if u is None:
            if rng is None:
                raise ValueError("reset_many needs a generator or uniforms")
            return rng.choice(self.n_states, size=n, p=self.init_dist).astype(np.int64)
        cum = np.cumsum(self.init_dist)
        return np.minimum((np.asarray(u)[:, None] >= cum[None, :]).sum(axis=1), self.n_states - 1).astype(np.int64)

    def act_many(self, states: np.ndarray, rng: np.random.Generator | None, u: np.ndarray | None = None) -> np.ndarray:
        """Actions in ``states``; stochastic partners sample by inverse CDF from ``u`` (shape
        (len(states),)) when given, else from ``rng``."""
        if self.is_deterministic:
            return np.argmax(self.action_probs[states], axis=1).astype(np.int64)
        cum = np.cumsum(self.action_probs[states], axis=1)
        if u is None:
            if rng is None:
                raise ValueError("act_many needs a generator or uniforms")
            u = np.asarray(rng.random(states.shape[0]))
        uu = np.asarray(u)[:, None]
        return np.minimum((uu >= cum).sum(axis=1), cum.shape[1] - 1).astype(np.int64)

    def update_many(self, states: np.ndarray, mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        return self.next_state[states, mine, theirs]


def _first_move_probs(n: int, first_move: int | str) -> np.ndarray:
    """Action distribution of the START state for a configurable first move."""
    if first_move == "random":
        return np.full(n, 1.0 / n)
    if not isinstance(first_move, (int, np.integer)) or not 0 <= int(first_move) < n:
        raise InputError(f"first_move must be an action index or 'random', got {first_move!r}")
    return np.eye(n)[int(first_move)]


def single_action(game: RepeatedGame, action: int | None = None) -> FiniteStatePartner:
    """Plays one fixed action all episode; the action is drawn uniformly per episode unless given.

    States = actions, so the DP optimum is conditional on the action actually drawn.
    """
    n = game.n_actions
    init = np.full(n, 1.0 / n) if action is None else np.eye(n)[action]
    nxt = np.broadcast_to(np.arange(n)[:, None, None], (n, n, n)).copy()
    return FiniteStatePartner(
        name="single_action", init_dist=init, action_probs=np.eye(n), next_state=nxt,
        state_labels=tuple(f"always_{a}" for a in game.actions), params={"action": action},
    )


def _reactive(
    game: RepeatedGame, name: str, respond: Callable[[int], int], first_move: int | str
) -> FiniteStatePartner:
    """State 0 = START, state 1+a = 'the agent last played a'; action = respond(a)."""
    n = game.n_actions
    if first_move == "respond_to_0":
        start_probs = np.eye(n)[respond(0)]
    else:
        start_probs = _first_move_probs(n, first_move)
    probs = np.vstack([start_probs] + [np.eye(n)[respond(a)] for a in range(n)])
    nxt = np.empty((n + 1, n, n), dtype=np.int64)
    nxt[:] = (1 + np.arange(n))[None, :, None]
    init = np.eye(n + 1)[0]
    return FiniteStatePartner(
        name=name, init_dist=init, action_probs=probs, next_state=nxt,
        state_labels=("START",) + tuple(f"you_played_{a}" for a in game.actions),
        params={"first_move": first_move},
    )


def tit_for_tat(
    game: RepeatedGame, mode: str | None = None, first_move: int | str = "respond_to_0"
) -> FiniteStatePartner:
    """The paper's "tit-for-tat style" partner.

    ``mode="copy"`` repeats the agent's last action (IPD, IBS); ``mode="best_response"`` plays the
    best response to the agent's last action (RPS). Default: best_response for RPS, copy otherwise.
    ``first_move``: "respond_to_0" (default, see module doc), an action index, or "random".
    """
    if mode is None:
        mode = "best_response" if game.name == "rps" else "copy"
    if mode == "copy":
        respond = lambda a: a
    elif mode == "best_response":
        # The partner's best response to my action a: argmax over its own payoff.
        respond = lambda a: int(np.argmax(game.payoff_partner[a, :]))
    else:
        raise InputError(f"tit_for_tat mode must be 'copy' or 'best_response', got {mode!r}")
    return _reactive(game, f"tit_for_tat_{mode}", respond, first_move)


def win_stay_lose_shift(game: RepeatedGame, first_move: int | str = 0) -> FiniteStatePartner:
    """Pavlov: repeat the last action if it paid well, otherwise shift to the next action.

    "Paid well" = the partner's payoff strictly exceeds the mean of its distinct payoffs (IPD: stay
    on 8/10, shift on 0/5 - the classic Pavlov; IBS: stay on 7/10; RPS: stay only on a win). Shift
    = next action cyclically. State = last joint action (or START).
    """
    n = game.n_actions
    vals = np.unique(game.payoff_partner)
    thresh = vals.mean()
    start_probs = _first_move_probs(n, first_move)
    probs = [start_probs]
    for a in range(n):
        for b in range(n):
            stay = game.payoff_partner[a, b] > thresh
            probs.append(np.eye(n)[b if stay else (b + 1) % n])
    nxt = np.empty((1 + n * n, n, n), dtype=np.int64)
    nxt[:] = 1 + np.arange(n)[:, None] * n + np.arange(n)[None, :]
    labels = ("START",) + tuple(f"({a},{b})" for a in range(n) for b in range(n))
    return FiniteStatePartner(
        name="win_stay_lose_shift", init_dist=np.eye(1 + n * n)[0], action_probs=np.vstack(probs),
        next_state=nxt, state_labels=labels, params={"first_move": first_move, "threshold": thresh},
    )


def grim_trigger(game: RepeatedGame, nice: int = 0, trigger: int = 1, punish: int = 1) -> FiniteStatePartner:
    """Plays ``nice`` until the agent ever plays ``trigger``, then ``punish`` forever."""
    n = game.n_actions
    nxt = np.zeros((2, n, n), dtype=np.int64)
    nxt[0, trigger, :] = 1
    nxt[1] = 1
    return FiniteStatePartner(
        name="grim_trigger", init_dist=np.array([1.0, 0.0]),
        action_probs=np.vstack([np.eye(n)[nice], np.eye(n)[punish]]), next_state=nxt,
        state_labels=("nice", "triggered"), params={"nice": nice, "trigger": trigger, "punish": punish},
    )


def fixed_cycle(game: RepeatedGame, cycle: Sequence[int] | None = None, random_phase: bool = False) -> FiniteStatePartner:
    """Plays ``cycle`` (default 0,1,...,n-1) over and over, ignoring the agent."""
    n = game.n_actions
    cyc = list(range(n)) if cycle is None else [int(c) for c in cycle]
    k = len(cyc)
    if k == 0 or min(cyc) < 0 or max(cyc) >= n:
        raise InputError("cycle must be a non-empty sequence of action indices")
    nxt = np.empty((k, n, n), dtype=np.int64)
    nxt[:] = ((np.arange(k) + 1) % k)[:, None, None]
    init = np.full(k, 1.0 / k) if random_phase else np.eye(k)[0]
    return FiniteStatePartner(
        name="fixed_cycle", init_dist=init, action_probs=np.eye(n)[cyc], next_state=nxt,
        state_labels=tuple(f"pos{i}" for i in range(k)), params={"cycle": tuple(cyc)},
    )


def mixed(game: RepeatedGame, probs: Sequence[float] | None = None) -> FiniteStatePartner:
    """Stationary mixed strategy (default uniform): one state, i.i.d. actions."""
    n = game.n_actions
    p = np.full(n, 1.0 / n) if probs is None else np.asarray(probs, dtype=float)
    return FiniteStatePartner(
        name="mixed", init_dist=np.array([1.0]), action_probs=p[None, :],
        next_state=np.zeros((1, n, n), dtype=np.int64), state_labels=("mixed",),
        params={"probs": tuple(float(x) for x in p)},
    )


PARTNERS: dict[str, Callable[..., FiniteStatePartner]] = {
    "single_action": single_action,
    "tit_for_tat": tit_for_tat,
    "win_stay_lose_shift": win_stay_lose_shift,
    "grim_trigger": grim_trigger,
    "fixed_cycle": fixed_cycle,
    "mixed": mixed,
}


def make_partner(name: str | FiniteStatePartner, game: str | RepeatedGame, **kwargs: object) -> FiniteStatePartner:
    """Build a registered partner for a game; aliases: "tft", "tit-for-tat", "single"."""
    if isinstance(name, FiniteStatePartner):
        return name
    key = name.lower().replace("-", "_")
    key = {"tft": "tit_for_tat", "single": "single_action", "wsls": "win_stay_lose_shift"}.get(key, key)
    try:
        factory = PARTNERS[key]
    except KeyError:
        raise InputError(f"unknown partner {name!r}; known: {sorted(PARTNERS)}") from None
    return factory(get_game(game), **kwargs)  # type: ignore[arg-type]
