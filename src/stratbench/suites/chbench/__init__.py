"""CHBench: cognitive-hierarchy (Level-K, Poisson CH) evaluation of strategic reasoning depth.

catalogue — the 15 games (transpose reading of the printed matrices, uncertain ones flagged);
hierarchy — level strategies of both players; fit — MLE fits, observations I/O, scripted agents.
"""

from stratbench.suites.chbench.catalogue import (
    CHGame,
    build_catalogue,
    intro_example,
    load_corrections,
    recoverable,
)
from stratbench.suites.chbench.fit import (
    CHAgent,
    LevelKFit,
    PlayerObservations,
    PoissonFit,
    fit_level_k,
    fit_poisson_ch,
    likelihood_improvement_ratios,
    observations_from_csv,
    simulate_counts,
    simulate_rounds,
)
from stratbench.suites.chbench.hierarchy import (
    level_k_strategies,
    poisson_ch_strategies,
    predicted_strategy,
)

__all__ = [
    "CHAgent",
    "CHGame",
    "LevelKFit",
    "PlayerObservations",
    "PoissonFit",
    "build_catalogue",
    "fit_level_k",
    "fit_poisson_ch",
    "intro_example",
    "level_k_strategies",
    "likelihood_improvement_ratios",
    "load_corrections",
    "observations_from_csv",
    "poisson_ch_strategies",
    "predicted_strategy",
    "recoverable",
    "simulate_counts",
    "simulate_rounds",
]
