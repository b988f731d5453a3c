"""Functional theory of mind suite ("Theory of Mind Benchmarks are Broken for LLMs").

An agent plays a repeated 2-player matrix game (RPS, Iterated Battle of the Sexes, Iterated
Prisoner's Dilemma) for T steps against a simple partner policy. Functional ToM is measured as the
per-step regret against the *optimal* T-step response to the known partner (Δ_Functional/T), literal
ToM as the per-step accuracy of predicting the partner's next action (ToM %).

Modules: ``games`` (payoffs, action labels), ``partners`` (finite-state partner policies),
``regret`` (exact DP optimum, regret, ToM accuracy, CIs), ``tabular`` (the paper's R-max +
count-predictor baseline), ``prompts`` / ``episodes`` (LM prompting: log-probs with prefix reuse),
``gen_prompts`` / ``strategies`` / ``gen_episodes`` (QA, CoT, Social, Plans+Insights, Reflexion,
Oracle, Oracle+Max, CoT 3-shot, S2A: generated answers, template parsing, bounded re-queries),
``records`` (the records' and summaries' keys), ``results`` (records → summary, shared by runs
and merges), ``plots`` (the regret-curve figure), ``model_run`` / ``baseline_run`` (the commands'
configs, run plans for the shared lifecycle, and shard merges) and ``suite`` (the registered
entries ``tom`` and ``tom-baseline``).

Imports the core (games, models, runner, parsing, render, stats, seeding) and its own modules,
never another suite, the workflows, the report or the CLI. Importing the package imports nothing.
"""
