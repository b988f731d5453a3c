"""CHBench: cognitive-hierarchy (Level-K, Poisson CH) evaluation of strategic reasoning depth.

Modules: ``catalogue`` (the 15 games, transpose reading of the printed matrices, uncertain ones
flagged; game selection), ``hierarchy`` (level strategies of both players), ``fit`` (MLE fits,
observations I/O, scripted CH agents), ``repeated`` (the two-player repeated-game engine),
``prompts`` / ``players`` (the paper's prompts under each mechanism; model and scripted players),
``records`` (the round records' schema), ``run`` (`chbench run`: config, matches, run plan, merge),
``tables`` (records → fits, tables, summary), ``plots`` (the level-distribution figure),
``fit_run`` (`chbench fit` of play collected anywhere) and ``suite`` (the registered suites).

It may import the core (games, solvers, models, runner, parsing, render, stats, seeding, errors)
and its own modules, never another suite, the workflows, the report or the CLI. Importing the
package imports nothing: the names below load their module on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "catalogue": ("CHGame", "build_catalogue", "intro_example", "load_corrections", "recoverable", "select_games"),
    "fit": ("CHAgent", "LevelKFit", "PlayerObservations", "PoissonFit", "fit_level_k", "fit_poisson_ch",
            "likelihood_improvement_ratios", "observations_from_csv", "simulate_counts", "simulate_rounds"),
    "hierarchy": ("level_k_strategies", "poisson_ch_strategies", "predicted_strategy"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
