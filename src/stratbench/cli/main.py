"""Entry point. Every bad input ends as one line on stderr and exit code 2 — never a traceback."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from typing import List, Optional

import typer
from typer.exceptions import TyperException

from stratbench import __version__
from stratbench.cli.display import console, err_console, nashgap_table, progress_bar
from stratbench.errors import InputError
from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

# Typer ≥ 0.29 vendors click (its usage errors derive from TyperException); older ones use click.
_USAGE_ERRORS: tuple[type[Exception], ...] = (TyperException,)
_EXITS: tuple[type[BaseException], ...] = (typer.Exit,)
try:  # pragma: no cover - depends on the installed typer
    import click

    _USAGE_ERRORS += (click.ClickException,)
    _EXITS += (click.exceptions.Exit,)
except ImportError:  # pragma: no cover
    pass

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
    help="Measure how well language models play simple strategic games.",
)


@app.callback()
def _root() -> None:
    """stratbench: strategic-game benchmarks for raw and chat language models."""


@app.command()
def version() -> None:
    """Print the stratbench version."""
    console.print(__version__)


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")[:60]


@app.command("nashgap")
def nashgap(
    num_games: int = typer.Option(100, help="Number of games to generate."),
    num_trials: int = typer.Option(100, help="Trials per game for sampled policies (log-prob policies need one)."),
    num_rows: int = typer.Option(3, help="Row player's actions."),
    num_cols: int = typer.Option(3, help="Column player's actions."),
    seed: Optional[int] = typer.Option(None, help="Seed for game generation (random if omitted; recorded)."),
    model: Optional[List[str]] = typer.Option(
        None, help="Player: embedded (default), gguf:PATH, hf:PATH, openai:M, together:M, "
        "openai-compatible:M, or a scripted player (random, nash, maximin-pure, first-action). Repeatable."),
    llm_type: Optional[str] = typer.Option(None, help="Original alias: dummy, together, openai, or any player name."),
    llm_model: Optional[str] = typer.Option(None, help="Original alias: model name for --llm-type."),
    llm_seed: Optional[int] = typer.Option(None, help="Seed for the player's randomness (default: --seed)."),
    policy: Optional[str] = typer.Option(None, help="logprob (exact, default where available) or sample."),
    order_rotations: int = typer.Option(1, help="Evaluate each game under K cyclic row rotations (debiasing)."),
    base_url: Optional[str] = typer.Option(None, help="Base URL of an OpenAI-compatible server."),
    max_concurrency: int = typer.Option(8, help="Concurrent model calls."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache."),
    temperature: float = typer.Option(1.0, help="Sampling temperature for --policy sample."),
    max_tokens: int = typer.Option(512, help="Generation budget for --policy sample."),
    chat: bool = typer.Option(False, help="Send prompts as chat messages (chat endpoints)."),
    price_table: Optional[str] = typer.Option(None, help="JSON prices per million tokens by model spec, for a cost estimate."),
    output_dir: str = typer.Option("results", help="Where result folders are created."),
    parallel: bool = typer.Option(False, help="Use --num-workers concurrent decisions."),
    num_workers: int = typer.Option(4, help="Concurrent decisions with --parallel."),
    combined: bool = typer.Option(False, help="Pure actions and mixed strategies on the same games."),
    mixed_strategy: bool = typer.Option(False, help="Ask for mixed strategies instead of actions."),
    overwrite: bool = typer.Option(False, help="Write to <prefix>_latest/, replacing it."),
    bucket: Optional[str] = typer.Option(None, help="Generate games of one difficulty bucket, e.g. 3x3_midVar_mixed."),
    games_file: Optional[str] = typer.Option(None, help="Play the zero-sum games in this JSON file."),
    payoff_min: float = typer.Option(-10.0, help="Lowest payoff of generated games."),
    payoff_max: float = typer.Option(10.0, help="Highest payoff of generated games."),
    decimals: int = typer.Option(2, help="Payoff precision (games are generated at the shown precision)."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted run in this folder."),
    shard: Optional[str] = typer.Option(None, help="Run shard i/n of the games (needs --seed); combine with `stratbench merge`."),
    quiet: bool = typer.Option(False, help="No progress bar or table; print result folders."),
) -> int:
    """Nash-gap suite: the player is the row player of random zero-sum games against a Nash opponent."""
    base = NashgapConfig(
        num_games=num_games, num_trials=num_trials, num_rows=num_rows, num_cols=num_cols,
        seed=seed, llm_type=llm_type, llm_model=llm_model, llm_seed=llm_seed, policy=policy,
        order_rotations=order_rotations, base_url=base_url, max_concurrency=max_concurrency,
        no_cache=no_cache, temperature=temperature, max_tokens=max_tokens, chat=chat,
        price_table=price_table,
        output_dir=output_dir, parallel=parallel, num_workers=num_workers, combined=combined,
        mixed_strategy=mixed_strategy, overwrite=overwrite, bucket=bucket, games_file=games_file,
        payoff_min=payoff_min, payoff_max=payoff_max, decimals=decimals, shard=shard,
    )
    models = list(model or [])
    if resume and len(models) > 1:
        raise InputError("--resume takes one run folder; give no --model")
    if len(models) > 1:
        base.validate()
        if base.seed is None and base.games_file is None:
            from stratbench.seeding import fresh_seed

            base.seed = fresh_seed()  # every player must see the same games
    configs = [replace(base, model=m, folder_tag=_slug(m) if len(models) > 1 else None)
               for m in models] or [base]
    rows = {}
    n_errors = 0
    for cfg in configs:
        with progress_bar(quiet) as progress:
            result = run_nashgap(cfg, progress=progress, resume_dir=resume)
        n_errors += result.n_errors
        for mode, s in result.summaries.items():
            rows[f"{s['agent']} / {s.get('policy', '')} / {mode}"] = s
        if quiet:
            print(result.folder)
        else:
            t = result.totals
            err_console.print(
                f"{result.folder}: {t['records']} records, {t.get('model_calls', 0)} model calls, "
                f"{t.get('model_cache_hits', 0)} cache hits, {t['errors']} errors"
                + (f", est. cost ${t['model_cost_usd']:.4f}" if "model_cost_usd" in t else "")
            )
    if not quiet:
        console.print(nashgap_table(rows, "Nash-gap results (means over games, 95% bootstrap CIs)"))
    if n_errors:
        err_console.print(f"{n_errors} records are errors (see each summary's status_counts)")
        return 1
    return 0


tmg_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                      help="TMGBench: the 144 Robinson–Goforth 2×2 games.")
app.add_typer(tmg_app, name="tmgbench")


@tmg_app.command("games")
def tmgbench_games(
    format: str = typer.Option("table", "--format", help="json or table."),
) -> None:
    """List the 144 games (id, grid position, payoffs, pure Nash equilibria)."""
    import json

    from stratbench.games.robinson_goforth import all_games, to_json

    if format == "json":
        print(json.dumps([to_json(g) for g in all_games()], indent=1))
        return
    if format != "table":
        raise InputError(f"unknown --format {format!r}; use json or table")
    from rich.table import Table

    t = Table(title="TMGBench games")
    for col in ("id", "row", "col", "A", "B", "pure NE", "name"):
        t.add_column(col)
    for g in all_games():
        d = to_json(g)
        t.add_row(d["id"], str(d["row"]), str(d["col"]), str(d["payoff_A"]), str(d["payoff_B"]),
                  " ".join("".join(c) for c in d["pure_ne"]) or "—", d.get("name") or "")
    console.print(t)


@tmg_app.command("run")
def tmgbench_run(
    model: Optional[str] = typer.Option(None, help="Player: embedded (default), any model spec, or oracle/empty/uniform."),
    policy: Optional[str] = typer.Option(None, help="logprob (exact answer distribution; DA only) or sample."),
    prompting: str = typer.Option("DA", help="DA, CoT, FoToM, SoToM, reFoToM or reSoToM."),
    setting: str = typer.Option("classic", help="classic or story (with --stories-dir)."),
    stories_dir: Optional[str] = typer.Option(None, help="Story files {id}_{k}.txt for --setting story."),
    form: str = typer.Option("atomic", help="atomic, sequential, parallel or nested."),
    k: Optional[int] = typer.Option(None, "--k", help="Games per complex task (3, 5, 10; nested: 2)."),
    num_tasks: int = typer.Option(50, help="Complex-form tasks to sample."),
    repeats: int = typer.Option(4, help="Answers per game for sampled policies (the paper's T)."),
    games: Optional[str] = typer.Option(None, help="Comma-separated game ids (default: all 144)."),
    seed: Optional[int] = typer.Option(None, help="Seed for sampling (random if omitted; recorded)."),
    base_url: Optional[str] = typer.Option(None, help="Base URL of an OpenAI-compatible server."),
    max_concurrency: int = typer.Option(8, help="Concurrent model calls."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache."),
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    max_tokens: int = typer.Option(1024, help="Generation budget for sampled answers."),
    chat: bool = typer.Option(False, help="Send the paper's system + user messages to a chat endpoint."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted run in this folder."),
    shard: Optional[str] = typer.Option(None, help="Run shard i/n of the games or tasks (needs --seed); combine with `stratbench merge`."),
    quiet: bool = typer.Option(False, help="No progress bar; print the result folder."),
) -> int:
    """Run TMGBench (classic setting, atomic games) and write answers, metrics and heat maps."""
    from stratbench.suites.tmgbench.run import TmgbenchConfig, run_tmgbench

    cfg = TmgbenchConfig(model=model, policy=policy, prompting=prompting, setting=setting, form=form,
                         repeats=repeats, games=games, seed=seed, base_url=base_url, stories_dir=stories_dir,
                         max_concurrency=max_concurrency, no_cache=no_cache, temperature=temperature,
                         max_tokens=max_tokens, chat=chat, output_dir=output_dir, shard=shard)
    if form != "atomic" or (resume and _is_complex_run(resume)):
        from stratbench.suites.tmgbench.complex_run import run_complex

        if not resume:
            cfg.validate()
        with progress_bar(quiet) as progress:
            result = run_complex(cfg, k, num_tasks, progress=progress, resume_dir=resume)
        s = result.summary
        if quiet:
            print(result.folder)
        else:
            from stratbench.cli.display import fmt

            console.print(f"TMGBench {s['form']} (k={s['k']}) — {result.folder} — {s['player']}: "
                          f"accuracy {fmt(s.get('accuracy_pct'), s.get('accuracy_pct_ci95'), 1)}% over "
                          f"{s.get('n_tasks')} tasks, parse failures {s.get('parse_failure_rate', 0):.1%}")
        return 1 if result.n_errors else 0
    with progress_bar(quiet) as progress:
        result = run_tmgbench(cfg, progress=progress, resume_dir=resume)
    s = result.summary
    if quiet:
        print(result.folder)
    else:
        from stratbench.cli.display import fmt

        console.print(f"TMGBench — {result.folder} — {s.get('player')} / {s.get('policy')} / {s.get('prompting')}")
        console.print(
            f"PAR {fmt(s.get('par_pct'), s.get('par_pct_ci95'), 1)}  ID {fmt(s.get('id_pct'), s.get('id_pct_ci95'), 1)}  "
            f"BD {fmt(s.get('bd_pct'), s.get('bd_pct_ci95'), 1)}  (percent; grids: {s.get('n_grids')}, "
            f"parse failures {s.get('parse_failure_rate', 0):.1%}, errors {s.get('error_rate', 0):.1%})")
        for n in (0, 1, 2):
            console.print(f"  {n}-NE games: PAR {fmt(s.get(f'par_{n}_pct'), None, 1)}  "
                          f"ID {fmt(s.get(f'id_{n}_pct'), None, 1)}  BD {fmt(s.get(f'bd_{n}_pct'), None, 1)}")
    return 1 if result.n_errors else 0


def _is_complex_run(folder: str) -> bool:
    import json
    from pathlib import Path

    try:
        return json.loads((Path(folder) / "run.json").read_text())["config"].get("form", "atomic") != "atomic"
    except (OSError, ValueError, KeyError):
        return False


stories_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                          help="TMGBench story-based setting: generate and verify story files.")
tmg_app.add_typer(stories_app, name="stories")


@stories_app.command("generate")
def tmgbench_stories_generate(
    model: Optional[str] = typer.Option(None, help="Model that writes the stories."),
    games: Optional[str] = typer.Option(None, help="Comma-separated game ids (default: all 144)."),
    variants: int = typer.Option(5, help="Stories per game (the paper: 5)."),
    topics: Optional[str] = typer.Option(None, help="Comma-separated topics (default: the paper's)."),
    max_attempts: int = typer.Option(3, help="Generations per story before giving up."),
    seed: Optional[int] = typer.Option(None, help="Sampling seed (recorded)."),
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    max_tokens: int = typer.Option(2048, help="Generation budget."),
    chat: bool = typer.Option(False, help="Use a chat endpoint."),
    base_url: Optional[str] = typer.Option(None, help="Base URL of an OpenAI-compatible server."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache."),
    max_concurrency: int = typer.Option(8, help="Concurrent model calls."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> int:
    """Generate story files with a model; keep only stories whose matrix equals the classic game's."""
    from stratbench.suites.tmgbench.stories_gen import StoryGenConfig, generate_stories

    cfg = StoryGenConfig(model=model, games=games, variants=variants, topics=topics,
                         max_attempts=max_attempts, seed=seed, temperature=temperature,
                         max_tokens=max_tokens, chat=chat, base_url=base_url, no_cache=no_cache,
                         max_concurrency=max_concurrency, output_dir=output_dir)
    with progress_bar(quiet) as progress:
        res = generate_stories(cfg, progress)
    s = res.summary
    console.print(f"{res.folder}: {s['n_accepted']}/{s['n_requested']} stories accepted "
                  f"({s['attempts']} attempts: {s['attempt_status_counts']}); files in {s['stories_dir']}")
    return 0


@stories_app.command("verify")
def tmgbench_stories_verify(directory: str = typer.Argument(..., help="Folder of {id}_{k}.txt files.")) -> int:
    """Check that every story's payoff matrix equals its classic game's."""
    from stratbench.suites.tmgbench.stories_gen import verify_story_dir

    checked = verify_story_dir(directory)
    bad = 0
    for path, problems in checked:
        if problems:
            bad += 1
            console.print(f"MISMATCH {path}: {problems[0]}")
    console.print(f"{bad} of {len(checked)} stories do not match their game")
    return 1 if bad else 0


tom_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                      help="Functional theory of mind: repeated games against scripted partners.")
app.add_typer(tom_app, name="tom")


@tom_app.command("baseline")
def tom_baseline(
    game: str = typer.Option("rps", help="rps, ibs, ipd, or a comma-separated list."),
    partner: str = typer.Option("single_action", help="Partner policy (e.g. single_action, tit_for_tat), or a list."),
    episodes: int = typer.Option(300, help="Episodes per setting."),
    rounds: int = typer.Option(100, help="Rounds per episode (T)."),
    seed: int = typer.Option(0, help="Seed (episode e plays with derive_seed(seed, e))."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
    shard: Optional[str] = typer.Option(None, help="Play only shard i/n of the episodes (merge with stratbench merge)."),
) -> int:
    """The tabular R-max baseline: regret per step vs the optimal T-step response, ToM accuracy."""
    from stratbench.cli.display import fmt
    from stratbench.suites.tom.baseline_run import run_tom_baseline

    folder, rows = run_tom_baseline([g.strip() for g in game.split(",")],
                                    [p.strip() for p in partner.split(",")], episodes, rounds, seed,
                                    output_dir, shard)
    console.print(f"Tabular baseline — {folder}")
    for r in rows:
        console.print(f"  {r['game']:>4} / {r['partner']:<14} regret/step {fmt(r['regret_per_step'], r['regret_per_step_ci95'])}"
                      f"  ToM {100 * r['tom_accuracy']:.1f}%  ToM regret/step {fmt(r['tom_regret_per_step'])}"
                      f"  ({r['n_episodes']} episodes)")
    return 0


@tom_app.command("run")
def tom_run(
    model: Optional[str] = typer.Option(None, help="Model spec (default: embedded)."),
    game: str = typer.Option("rps", help="rps, ibs or ipd."),
    partner: str = typer.Option("single_action", help="Partner policy."),
    prompting: str = typer.Option("LM", help="LM (log-probs after 'A: Option'), QA, CoT, CoT3 (CoT 3-shot), "
                                  "Social, SocialLM, PlansInsights, Reflexion, Oracle, OracleMax, S2A (System 2 "
                                  "Attention rewrite, then QA) or S2ACoT (rewrite, then CoT)."),
    rounds: int = typer.Option(100, help="Rounds per episode (T)."),
    episodes: int = typer.Option(1, help="Episodes."),
    seed: int = typer.Option(0, help="Seed (episode e plays with derive_seed(seed, e))."),
    labels: str = typer.Option("neutral", help="Action label set: neutral (J/F/B), canonical, rps_letters, "
                               "neutral_long, unrelated, index."),
    no_tom: bool = typer.Option(False, help="Skip the literal-ToM prediction prompts."),
    tom_variant: str = typer.Option("agent_first", help="ToM prompt asked after the agent acts (agent_first) "
                                    "or before (partner_first)."),
    no_history: bool = typer.Option(False, help="Ablation: leave the interaction history out of the prompts."),
    no_payoffs: bool = typer.Option(False, help="Ablation: leave the payoff rules out of the prompts."),
    chat: Optional[bool] = typer.Option(None, "--chat/--no-chat", help="Send prompts as chat messages "
                                        "(default: only for openai: models); raw models get completion-style prompts."),
    temperature: float = typer.Option(0.7, help="Sampling temperature of generated answers."),
    max_tokens: int = typer.Option(384, help="Token budget of reasoning answers (CoT, CoT3, Plans+Insights, "
                                   "Reflexion, S2ACoT) and of S2A rewrites."),
    max_tries: int = typer.Option(3, help="Samples per answer before it is recorded parse_failed."),
    memory: int = typer.Option(1, help="Reflexion: plans kept in memory (the paper used 1-3)."),
    keep_prompts: bool = typer.Option(False, help="Store every prompt in the records."),
    base_url: Optional[str] = typer.Option(None, help="Base URL of an OpenAI-compatible server."),
    max_concurrency: int = typer.Option(8, help="Concurrent episodes (generation strategies)."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache (generation strategies)."),
    shard: Optional[str] = typer.Option(None, help="Play only shard i/n of the episodes (merge with stratbench merge)."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted run in this folder."),
) -> int:
    """A model plays repeated games against a scripted partner; regret vs the optimal response."""
    from stratbench.cli.display import fmt
    from stratbench.suites.tom.model_run import TomRunConfig, run_tom_model

    cfg = TomRunConfig(model=model or "embedded", game=game, partner=partner, prompting=prompting,
                       rounds=rounds, episodes=episodes, seed=seed, label_set=labels, predict=not no_tom,
                       tom_variant=tom_variant, history=not no_history, payoffs=not no_payoffs, chat=chat,
                       temperature=temperature, max_tokens=max_tokens, max_tries=max_tries, memory=memory,
                       keep_prompts=keep_prompts, shard=shard, base_url=base_url,
                       max_concurrency=max_concurrency, no_cache=no_cache, output_dir=output_dir)
    folder, s = run_tom_model(cfg, resume)
    console.print(f"ToM — {folder} — {s['model']} / {s['prompting']} / {s['game']} vs {s['partner']}: "
                  f"regret/step {fmt(s['regret_per_step'], s['regret_per_step_ci95'])}, ToM "
                  f"{fmt(s['tom_accuracy'], s['tom_accuracy_ci95'])}, {s['n_episodes']} of {s['n_episodes_run']} "
                  f"episodes complete ({s['n_parse_failed_episodes']} stopped by a parse failure, "
                  f"{s['n_error_episodes']} by errors), parse failure rate {s['parse_failure_rate']:.3f}, "
                  f"{s['tokens_evaluated_per_episode']:.0f} tokens evaluated per episode")
    return 1 if s["n_error_episodes"] else 0


ch_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                     help="CHBench: cognitive-hierarchy levels of players.")
app.add_typer(ch_app, name="chbench")


def _csv_list(values: Optional[List[str]]) -> list[str]:
    return [v.strip() for item in (values or []) for v in item.split(",") if v.strip()]


@ch_app.command("run")
def chbench_run(
    models: Optional[List[str]] = typer.Option(None, help="Players, comma-separated or repeated: model specs "
                                               "or scripted (random, first-action, level-k:K, poisson:LAMBDA). All pairs play."),
    opponents: Optional[List[str]] = typer.Option(None, help="Extra players that play every --models player "
                                                  "but not each other (e.g. scripted references)."),
    mechanism: str = typer.Option("baseline", help="baseline, memory, memory10, chat, chat_memory (comma list allowed)."),
    rounds: int = typer.Option(30, help="Rounds per match (T)."),
    games: str = typer.Option("all", help="all, recoverable, or game ids like 1,2,11."),
    seed: int = typer.Option(0, help="Seed (match seeds derive from it and the match)."),
    policy: Optional[str] = typer.Option(None, help="logprob (exact, default where available) or sample."),
    temperature: float = typer.Option(1.0, help="Temperature for generated answers and advisor messages."),
    chat: bool = typer.Option(False, help="Send prompts as chat messages."),
    base_url: Optional[str] = typer.Option(None, help="Base URL of an OpenAI-compatible server."),
    max_concurrency: int = typer.Option(4, help="Matches played concurrently."),
    no_cache: bool = typer.Option(False, help="Bypass the response cache."),
    prefix_reuse: bool = typer.Option(False, help="Local models: reuse the KV cache across a match's growing "
                                      "prompts (one model instance per seat, matches in sequence, no response cache)."),
    self_play: bool = typer.Option(True, help="Include each model against itself."),
    k_hat: int = typer.Option(4, help="Number of CH levels (k̂)."),
    restarts: int = typer.Option(10, help="SLSQP random restarts per fit (best kept)."),
    bootstrap: int = typer.Option(100, help="Bootstrap replicates over games for level CIs (0: none)."),
    corrections: Optional[str] = typer.Option(None, help="JSON with corrected matrices for uncertain games."),
    keep_prompts: bool = typer.Option(True, help="Store every prompt in the round records (--no-keep-prompts: drop them)."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted run in this folder."),
    shard: Optional[str] = typer.Option(None, help="Play only shard i/n of the matches (merge with stratbench merge)."),
    quiet: bool = typer.Option(False, help="Print only the result folder."),
) -> int:
    """CHBench: repeated play between all pairs, then Level-K / Poisson CH levels by maximum likelihood."""
    from stratbench.cli.display import fmt
    from stratbench.suites.chbench.run import ChbenchConfig, run_chbench

    cfg = ChbenchConfig(
        models=_csv_list(models) or ["embedded"], opponents=_csv_list(opponents),
        mechanisms=_csv_list([mechanism]), rounds=rounds, games=games, seed=seed, policy=policy,
        temperature=temperature, chat=chat, base_url=base_url, max_concurrency=max_concurrency,
        no_cache=no_cache, prefix_reuse=prefix_reuse, self_play=self_play, k_hat=k_hat, restarts=restarts,
        bootstrap=bootstrap, corrections=corrections, keep_prompts=keep_prompts, output_dir=output_dir)
    with progress_bar(quiet) as progress:
        task = progress.add_task("matches", total=None) if progress else None

        def tick(done: int, total: int) -> None:
            if progress is not None:
                progress.update(task, completed=done, total=total)

        folder, summary, n_err = run_chbench(cfg, resume_dir=resume, shard=shard, progress=tick)
    if quiet:
        print(folder)
    else:
        console.print(f"CHBench — {folder}: {summary['n_matches']} matches, {summary['n_rounds']} rounds, "
                      f"parse failures {fmt(summary['parse_failure_rate'])}, errors {fmt(summary['error_rate'])}")
        for mech, players in summary["mechanisms"].items():
            for p, s in players.items():
                console.print(f"  {mech:<11} {p:<24} Level-K mean level {fmt(s.get('level_k_mean_level'), s.get('level_k_mean_level_ci95'))}"
                              f"  Poisson {fmt(s.get('poisson_mean_level'), s.get('poisson_mean_level_ci95'))}"
                              f"  utility {fmt(s.get('mean_utility'), s.get('mean_utility_ci95'))}")
        console.print(f"  tables: {folder}/levels.md, utilities_*.md; plot: level_distribution.png")
    if n_err:
        err_console.print(f"{n_err} rounds have errors (see rounds.jsonl); --resume {folder} retries them")
        return 1
    return 0


@ch_app.command("fit")
def chbench_fit(
    data: str = typer.Option(..., help="CSV: game_id, round, row_player, col_player, row_action, col_action."),
    k_hat: int = typer.Option(4, help="Number of levels (k̂)."),
    restarts: int = typer.Option(10, help="SLSQP random restarts (best kept)."),
    seed: int = typer.Option(0, help="Seed for the restarts."),
    corrections: Optional[str] = typer.Option(None, help="JSON with corrected matrices for uncertain games."),
    output_dir: str = typer.Option("results", help="Where the result folder is created."),
) -> int:
    """Fit Level-K and Poisson cognitive-hierarchy models to observed play."""
    from stratbench.suites.chbench.fit_run import run_fit

    folder, fits = run_fit(data, k_hat, restarts, seed, output_dir, corrections)
    console.print(f"CHBench fit — {folder}")
    for player, f in fits.items():
        console.print(f"  {player}: Poisson λ = {f['poisson'].get('lambda'):.3f} (mean level "
                      f"{f['poisson']['mean_level']:.2f}); Level-K mean level {f['level_k']['mean_level']:.2f}")
    return 0


@app.command("compare")
def compare(
    run_a: str = typer.Argument(..., help="Baseline result folder (A)."),
    run_b: str = typer.Argument(..., help="Result folder to compare (B)."),
    output: Optional[str] = typer.Option(None, help="Also write the comparison as JSON here."),
) -> int:
    """Differences B − A of headline metrics with 95% bootstrap CIs (paired over shared games)."""
    import json

    from rich.table import Table

    from stratbench.workflows.compare import compare_runs

    res = compare_runs(run_a, run_b)
    t = Table(title=f"{res['suite']}: B − A  (A = {run_a}, B = {run_b})", title_justify="left")
    for col in ("part", "metric", "A", "B", "B − A [95% CI]", "paired", "units"):
        t.add_column(col, no_wrap=True)
    for r in res["rows"]:
        lo, hi = r["diff_ci95"]
        mark = " *" if r["significant"] else ""
        t.add_row(r["part"], r["metric"], f"{r['a']:.4f}", f"{r['b']:.4f}",
                  f"{r['diff']:+.4f} [{lo:+.4f}, {hi:+.4f}]{mark}", "yes" if r["paired"] else "no",
                  str(r["n_units"]))
    console.print(t)
    if output:
        from pathlib import Path

        Path(output).write_text(json.dumps(res, indent=2) + "\n")
    return 0


from stratbench.cli.merge_cmd import merge as _merge  # noqa: E402

app.command("merge")(_merge)


from stratbench.cli.report_cmd import report as _report  # noqa: E402

app.command("report")(_report)


from stratbench.cli.suite_cmd import expand_multi_value_flags, suite_app  # noqa: E402

app.add_typer(suite_app, name="suite")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "nashgap" and args[1] == "run":
        del args[1]  # `stratbench nashgap run ...` and `stratbench nashgap ...` are the same
    args = expand_multi_value_flags(args)  # `suite tiered --seeds 42 43` (the original's nargs)
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=args, prog_name="stratbench", standalone_mode=False)
    except _EXITS as e:
        sys.exit(getattr(e, "exit_code", 0))
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except _USAGE_ERRORS as e:
        print(f"error: {e.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted: finished records are saved; continue with --resume FOLDER", file=sys.stderr)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
