"""Functional theory of mind suite ("Theory of Mind Benchmarks are Broken for LLMs").

An agent plays a repeated 2-player matrix game (RPS, Iterated Battle of the Sexes, Iterated
Prisoner's Dilemma) for T steps against a simple partner policy. Functional ToM is measured as the
per-step regret against the *optimal* T-step response to the known partner (Δ_Functional/T), literal
ToM as the per-step accuracy of predicting the partner's next action (ToM %).

Modules: ``games`` (payoffs, action labels), ``partners`` (finite-state partner policies),
``regret`` (exact DP optimum, regret, ToM accuracy, CIs), ``tabular`` (the paper's R-max +
count-predictor baseline), ``prompts`` / ``episodes`` (LM prompting: log-probs with prefix reuse),
``gen_prompts`` / ``strategies`` / ``gen_episodes`` (QA, CoT, Social, Plans+Insights, Reflexion,
Oracle, Oracle+Max, CoT 3-shot, S2A: generated answers, template parsing, bounded re-queries), ``results``
(records → summary, shared by runs and merges), ``model_run`` / ``baseline_run`` (the commands'
result folders) and ``shards`` (``stratbench merge`` of ``--shard i/n`` runs).
"""

from stratbench.suites.tom.games import GAMES, RepeatedGame, get_game
from stratbench.suites.tom.partners import PARTNERS, FiniteStatePartner, make_partner
from stratbench.suites.tom.regret import (
    episode_regret,
    optimal_values,
    random_agent_expected_regret,
    regret_per_step,
    tom_accuracy,
)
from stratbench.suites.tom.tabular import PAPER_TABULAR, run_baseline

__all__ = [
    "GAMES",
    "PAPER_TABULAR",
    "PARTNERS",
    "FiniteStatePartner",
    "RepeatedGame",
    "episode_regret",
    "get_game",
    "make_partner",
    "optimal_values",
    "random_agent_expected_regret",
    "regret_per_step",
    "run_baseline",
    "tom_accuracy",
]
