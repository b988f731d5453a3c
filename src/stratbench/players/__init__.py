"""The player layer, below the suites: how a model becomes a player of a decision.

One definition of the policies (`logprob`, `choice`, `sample`) and their check, and one place that
turns a scored label set into a policy (`exact_policy`: renormalisation, label mass and the checks
that a backend's numbers are probabilities). Every suite uses these; a new suite does not copy them.
"""

from stratbench.players.policy import (
    EXACT_POLICIES,
    POLICIES,
    ExactPolicy,
    Policy,
    check_policy,
    draw,
    exact_policy,
    scored_policy,
)
from stratbench.players.replies import no_answer

__all__ = ["EXACT_POLICIES", "POLICIES", "ExactPolicy", "Policy", "check_policy", "draw", "exact_policy", "no_answer", "scored_policy"]
