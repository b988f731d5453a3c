"""Metrics of a row policy π in a zero-sum game A against the column player's Nash strategy σ_c.

`nash_gap` = max_i (Aσ_c)_i − πᵀAσ_c is the original benchmark's metric. It is blind inside the
support of σ_r: every action there earns the value v*, so in a fully mixed 2×2 game every answer has
gap 0. `exploitability` = v* − min_j (πᵀA)_j is what a best-responding opponent can take from π;
it is 0 only for equilibrium strategies. Both are also given divided by the payoff range
(max − min), so games of different scales average meaningfully.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class ZeroSumMetrics:
    llm_value: float
    best_response_value: float
    nash_gap: float
    exploitability: float
    nash_gap_normalized: float
    exploitability_normalized: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def zero_sum_metrics(
    payoff: np.ndarray, policy: np.ndarray, col_strategy: np.ndarray, value: float
) -> ZeroSumMetrics:
    a = np.asarray(payoff, dtype=float)
    pi = np.asarray(policy, dtype=float)
    sigma = np.asarray(col_strategy, dtype=float)
    against_nash = a @ sigma
    llm_value = float(pi @ against_nash)
    br = float(against_nash.max())
    # Clamp rounding noise (|x| < 1e-12 × scale) so an optimal policy reports exactly 0.
    scale = max(1.0, float(np.abs(a).max()))
    gap = br - llm_value
    expl = float(value - (pi @ a).min())
    gap = 0.0 if abs(gap) < 1e-12 * scale else gap
    expl = 0.0 if abs(expl) < 1e-12 * scale else expl
    rng = float(a.max() - a.min())
    return ZeroSumMetrics(
        llm_value=llm_value,
        best_response_value=br,
        nash_gap=gap,
        exploitability=expl,
        nash_gap_normalized=gap / rng if rng > 0 else 0.0,
        exploitability_normalized=expl / rng if rng > 0 else 0.0,
    )
