"""Scripted reference players: baselines for the score table and doubles for tests.

They answer from the game itself and never look at the prompt, so they measure the game, not the
wording. `random` is the original benchmark's dummy (uniform action, Dirichlet(1) strategy).
"""

from __future__ import annotations

import numpy as np

from stratbench.agents.base import Agent, Decision, DecisionRequest
from stratbench.solvers.zerosum import solve_zero_sum


def _one_hot(i: int, n: int) -> list[float]:
    v = [0.0] * n
    v[i] = 1.0
    return v


class RandomAgent(Agent):
    """Uniform random action, or a Dirichlet(1) mixed strategy; behaves like a sampled black box
    (it does not report its exact policy), as the original's dummy did."""

    name = "random"

    async def decide(self, request: DecisionRequest) -> Decision:
        rng = np.random.default_rng(request.seed)
        m = request.game.shape[0]
        if request.mode == "pure":
            return Decision("ok", action=int(rng.integers(m)))
        return Decision("ok", strategy=rng.dirichlet(np.ones(m)).tolist())


class NashAgent(Agent):
    """Plays the row equilibrium strategy: samples an action from it in pure mode, states it in
    mixed mode, and reports it as its exact policy in both."""

    name = "nash"

    def __init__(self) -> None:
        self._cache: dict[bytes, np.ndarray] = {}  # trials of one game share one solve

    def _strategy(self, payoff: np.ndarray) -> np.ndarray:
        key = payoff.shape[0].to_bytes(4, "little") + payoff.tobytes()
        if key not in self._cache:
            self._cache[key] = solve_zero_sum(payoff).row_strategy
        return self._cache[key]

    async def decide(self, request: DecisionRequest) -> Decision:
        p = self._strategy(request.game.payoff_row)
        if request.mode == "pure":
            rng = np.random.default_rng(request.seed)
            return Decision("ok", action=int(rng.choice(len(p), p=p)), policy=p.tolist())
        return Decision("ok", strategy=p.tolist(), policy=p.tolist())


class MaximinPureAgent(Agent):
    """The pure action with the best worst case (lowest index on ties): optimal in saddle-point
    games, exploitable in mixed ones."""

    name = "maximin-pure"

    async def decide(self, request: DecisionRequest) -> Decision:
        a = request.game.payoff_row
        i = int(np.argmax(a.min(axis=1)))
        if request.mode == "pure":
            return Decision("ok", action=i, policy=_one_hot(i, a.shape[0]))
        return Decision("ok", strategy=_one_hot(i, a.shape[0]), policy=_one_hot(i, a.shape[0]))


class FirstActionAgent(Agent):
    """Always the first listed action: the floor a position-biased model falls to."""

    name = "first-action"

    async def decide(self, request: DecisionRequest) -> Decision:
        m = request.game.shape[0]
        if request.mode == "pure":
            return Decision("ok", action=0, policy=_one_hot(0, m))
        return Decision("ok", strategy=_one_hot(0, m), policy=_one_hot(0, m))
