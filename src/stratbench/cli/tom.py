"""`stratbench tom run|baseline`: functional theory of mind — a model against scripted partners,
and the tabular R-max baseline."""

from __future__ import annotations

from typing import Any, Optional

import typer

from stratbench.cli.display import console, err_console, fmt, usage_unknown_note
from stratbench.cli.options import (
    BaseUrl,
    ChatTemplate,
    FixedSeed,
    OutputDir,
    Quiet,
    ReasoningEffort,
    Resume,
    Retries,
    Shard,
    ThinkTags,
    Timeout,
    WaitForServer,
    group,
)
from stratbench.cli.plan import plannable
from stratbench.suites import get_suite

tom_app = group("Functional theory of mind: repeated games against scripted partners.")


@tom_app.command("baseline")
def tom_baseline(
    game: str = typer.Option("rps", help="rps, ibs, ipd, or a comma-separated list."),
    partner: str = typer.Option("single_action", help="Partner policy (e.g. single_action, tit_for_tat), or a list."),
    episodes: int = typer.Option(300, help="Episodes per setting."),
    rounds: int = typer.Option(100, help="Rounds per episode (T)."),
    seed: FixedSeed = 0,
    output_dir: OutputDir = "results",
    shard: Shard = None,
    resume: Resume = None,
    quiet: Quiet = False,
) -> int:
    """The tabular R-max baseline: regret per step vs the optimal T-step response, ToM accuracy."""
    from stratbench.suites.tom.baseline_run import BaselineConfig

    cfg = BaselineConfig([g.strip() for g in game.split(",")], [p.strip() for p in partner.split(",")], episodes,
                         rounds, seed, output_dir, shard)
    result = get_suite("tom-baseline").run(cfg, resume_dir=resume)
    if quiet:
        print(result.folder)
        return 0
    console.print(f"Tabular baseline — {result.folder}")
    for r in result.summary["settings"]:
        console.print(f"  {r['game']:>4} / {r['partner']:<14} regret/step {fmt(r['regret_per_step'], r['regret_per_step_ci95'])}"
                      f"  ToM {100 * r['tom_accuracy']:.1f}%  ToM regret/step {fmt(r['tom_regret_per_step'])}"
                      f"  ({r['n_episodes']} episodes)")
    return 0


@tom_app.command("run")
@plannable
def tom_run(
    model: Optional[str] = typer.Option(None, help="Model spec (default: embedded)."),
    game: str = typer.Option("rps", help="rps, ibs or ipd."),
    partner: str = typer.Option("single_action", help="Partner policy."),
    prompting: str = typer.Option("LM", help="LM (log-probs after 'A: Option'), QA, CoT, CoT3 (CoT 3-shot), "
                                  "Social, SocialLM, PlansInsights, Reflexion, Oracle, OracleMax, S2A (System 2 "
                                  "Attention rewrite, then QA) or S2ACoT (rewrite, then CoT)."),
    rounds: int = typer.Option(100, help="Rounds per episode (T)."),
    episodes: int = typer.Option(1, help="Episodes."),
    seed: FixedSeed = 0,
    labels: str = typer.Option("neutral", help="Action label set: neutral (J/F/B), canonical, rps_letters, "
                               "neutral_long, unrelated, index."),
    no_tom: bool = typer.Option(False, help="Skip the literal-ToM prediction prompts."),
    tom_variant: str = typer.Option("agent_first", help="ToM prompt asked after the agent acts (agent_first) "
                                    "or before (partner_first)."),
    no_history: bool = typer.Option(False, help="Ablation: leave the interaction history out of the prompts."),
    no_payoffs: bool = typer.Option(False, help="Ablation: leave the payoff rules out of the prompts."),
    chat: Optional[bool] = typer.Option(None, "--chat/--no-chat", help="Send prompts as chat messages through "
                                        "the model's chat template (default: only for openai: models); raw models get "
                                        "completion-style prompts. With --prompting LM: the choice policy (the options "
                                        "scored after the template and 'A: Option'; local models, or HTTP models with --chat-template)."),
    temperature: float = typer.Option(0.7, help="Sampling temperature of generated answers."),
    max_tokens: int = typer.Option(384, help="Token budget of reasoning answers (CoT, CoT3, Plans+Insights, "
                                   "Reflexion, S2ACoT) and of S2A rewrites."),
    qa_max_tokens: Optional[int] = typer.Option(None, help="Token budget of direct answers (QA; default 32, "
                                                "room for 'Action: 1'): a reasoning model needs room to think first."),
    max_tries: int = typer.Option(3, help="Samples per answer before it is recorded parse_failed."),
    memory: int = typer.Option(1, help="Reflexion: plans kept in memory (the paper used 1-3)."),
    keep_prompts: bool = typer.Option(False, help="Store every prompt in the records."),
    base_url: BaseUrl = None,
    max_concurrency: int = typer.Option(8, help="Concurrent episodes (generation strategies)."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache (generation strategies)."),
    timeout: Timeout = 60.0,
    retries: Retries = 4,
    wait_for_server: WaitForServer = 0.0,
    chat_template: ChatTemplate = None,
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    shard: Shard = None,
    output_dir: OutputDir = "results",
    resume: Resume = None,
    quiet: Quiet = False,
) -> int:
    """A model plays repeated games against a scripted partner; regret vs the optimal response."""
    from stratbench.suites.tom.model_run import TomRunConfig

    cfg = TomRunConfig(model="embedded" if model is None else model, game=game, partner=partner, prompting=prompting,
                       rounds=rounds, episodes=episodes, seed=seed, label_set=labels, predict=not no_tom,
                       tom_variant=tom_variant, history=not no_history, payoffs=not no_payoffs, chat=chat,
                       temperature=temperature, max_tokens=max_tokens, qa_max_tokens=qa_max_tokens, max_tries=max_tries, memory=memory,
                       keep_prompts=keep_prompts, shard=shard, base_url=base_url,
                       max_concurrency=max_concurrency, no_cache=no_cache, output_dir=output_dir, timeout=timeout,
                       retries=retries, wait_for_server=wait_for_server, chat_template=chat_template,
                       reasoning_effort=reasoning_effort, think_tags=think_tags)
    result = get_suite("tom").run(cfg, resume_dir=resume)
    if quiet:
        print(result.folder)
    else:
        _print_run(result)
    if note := usage_unknown_note(result.totals):
        err_console.print(f"{result.folder}: {note}")
    if result.n_errors:  # (a script's log says why the command failed, --quiet or not)
        import shlex

        err_console.print(f"{result.n_errors} episodes hold errors (failed calls, counted, never scored); stratbench "
                          f"tom run --resume {shlex.quote(str(result.folder))} tries them again", soft_wrap=True,
                          highlight=False, markup=False)
        return 1
    return 0


def _print_run(result: Any) -> None:
    s = result.summary
    strict = "" if s["strict_parse_rate"] is None else (
        f" (strict {s['strict_parse_rate']:.3f}, flexible {s['flexible_parse_rate']:.3f}; strict regret/step "
        f"{fmt(s['strict_regret_per_step'], s['strict_regret_per_step_ci95'])} over {s['n_strict_episodes']} episodes)")
    console.print(f"ToM — {result.folder} — {s['model']} / {s['prompting']} ({s['policy']}) / {s['game']} vs {s['partner']}: "
                  f"regret/step {fmt(s['regret_per_step'], s['regret_per_step_ci95'])}, ToM "
                  f"{fmt(s['tom_accuracy'], s['tom_accuracy_ci95'])}, {s['n_episodes']} of {s['n_episodes_run']} "
                  f"episodes complete ({s['n_parse_failed_episodes']} stopped by a parse failure, "
                  f"{s['n_error_episodes']} by errors), parse failure rate {s['parse_failure_rate']:.3f}{strict}, "
                  f"{s['tokens_evaluated_per_episode']:.0f} tokens evaluated per episode"
                  + (" (of the calls whose usage was reported)" if result.totals.get("model_usage_unknown") else ""))


def register(app: typer.Typer) -> None:
    app.add_typer(tom_app, name="tom")
