"""`stratbench nashgap` (also `nashgap run`): the Nash-gap suite, with the original benchmark's
flags, defaults and aliases (`--llm-type`, `--llm-model`, `--parallel --num-workers`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Optional

import typer

from stratbench.cli.display import console, err_console, nashgap_table, progress_bar, usage_unknown_note
from stratbench.cli.options import (
    BaseUrl,
    ChatTemplate,
    MaxConcurrency,
    MaxTokens,
    NoCache,
    OutputDir,
    Quiet,
    ReasoningEffort,
    Resume,
    Retries,
    Seed,
    Shard,
    Temperature,
    ThinkTags,
    Timeout,
    WaitForServer,
    slug,
)
from stratbench.cli.plan import plannable
from stratbench.errors import InputError
from stratbench.suites import get_suite


def nashgap(
    num_games: Optional[int] = typer.Option(None, help="Number of games to generate (default 100; a --games-file "
                                                "run plays the file's games)."),
    num_trials: int = typer.Option(100, help="Trials per game for sampled policies (log-prob policies need one)."),
    num_rows: int = typer.Option(3, help="Row player's actions."),
    num_cols: int = typer.Option(3, help="Column player's actions."),
    seed: Seed = None,
    model: Optional[List[str]] = typer.Option(
        None, help="Player: embedded (default), gguf:PATH, hf:PATH, openai:M, together:M, "
        "openai-compatible:M, or a scripted player (random, nash, maximin-pure, first-action). Repeatable."),
    llm_type: Optional[str] = typer.Option(None, help="Original alias: dummy, together, openai, or any player name."),
    llm_model: Optional[str] = typer.Option(None, help="Original alias: model name for --llm-type."),
    llm_seed: Optional[int] = typer.Option(None, help="Seed for the player's randomness (default: --seed)."),
    policy: Optional[str] = typer.Option(
        None, help="logprob (raw models: exact, the default where available), choice (chat models: exact, "
        "the labels scored after 'Action: ' in the assistant's turn; the default with --chat for local "
        "models; HTTP models need --chat-template) or sample (generated answers, parsed)."),
    order_rotations: int = typer.Option(1, help="Evaluate each game under K cyclic row rotations (debiasing)."),
    base_url: BaseUrl = None,
    timeout: Timeout = 60.0,
    retries: Retries = 4,
    wait_for_server: WaitForServer = 0.0,
    chat_template: ChatTemplate = None,
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    max_concurrency: MaxConcurrency = 8,
    no_cache: NoCache = False,
    temperature: Temperature = 1.0,
    max_tokens: MaxTokens = 512,
    chat: bool = typer.Option(
        False, help="Send the prompt as a chat message: rendered with a local model's chat template "
        "(embedded-instruct, gguf/hf with a template), or to a chat endpoint."),
    price_table: Optional[str] = typer.Option(None, help="JSON prices per million tokens by model spec, for a cost estimate."),
    output_dir: OutputDir = "results",
    parallel: bool = typer.Option(False, help="Use --num-workers concurrent decisions."),
    num_workers: int = typer.Option(4, help="Concurrent decisions with --parallel."),
    combined: bool = typer.Option(False, help="Pure actions and mixed strategies on the same games."),
    mixed_strategy: bool = typer.Option(False, help="Ask for mixed strategies instead of actions."),
    overwrite: bool = typer.Option(False, help="Write to <prefix>_latest/, replacing it."),
    bucket: Optional[str] = typer.Option(None, help="Generate games of one difficulty bucket, e.g. 3x3_midVar_mixed."),
    games_file: Optional[str] = typer.Option(None, help="Play the zero-sum games in this JSON file (all of them, "
                                             "at their own precision unless --decimals is given)."),
    payoff_min: float = typer.Option(-100.0, help="Lowest payoff of generated games (the original's range: -100 to 100)."),
    payoff_max: float = typer.Option(100.0, help="Highest payoff of generated games (the original's range: -100 to 100)."),
    decimals: Optional[int] = typer.Option(
        None, help="Payoff precision, 0..10 (default: 2 for generated games, which are drawn at the shown "
        "precision; a games file's own precision). With --games-file, rounds the file's games to N decimals: "
        "the game shown is the game scored."),
    resume: Resume = None,
    shard: Shard = None,
    quiet: Quiet = False,
) -> int:
    """Nash-gap suite: the player is the row player of random zero-sum games against a Nash opponent."""
    from stratbench.models import is_http_spec, takes_chat_template
    from stratbench.suites.nashgap.config import NashgapConfig

    if games_file is not None and num_games is not None:  # (dropped silently, the file's count played)
        raise InputError(f"--num-games {num_games}: a --games-file run plays every game of the file; drop --num-games")
    base = NashgapConfig(
        num_games=100 if num_games is None else num_games, num_trials=num_trials, num_rows=num_rows, num_cols=num_cols,
        seed=seed, llm_type=llm_type, llm_model=llm_model, llm_seed=llm_seed, policy=policy,
        order_rotations=order_rotations, base_url=base_url, timeout=timeout, retries=retries,
        wait_for_server=wait_for_server, chat_template=chat_template, max_concurrency=max_concurrency,
        reasoning_effort=reasoning_effort, think_tags=think_tags,
        no_cache=no_cache, temperature=temperature, max_tokens=max_tokens, chat=chat,
        price_table=price_table,
        output_dir=output_dir, parallel=parallel, num_workers=num_workers, combined=combined,
        mixed_strategy=mixed_strategy, overwrite=overwrite, bucket=bucket, games_file=games_file,
        payoff_min=payoff_min, payoff_max=payoff_max, decimals=decimals, shard=shard,
    )
    models = list(model or [])
    if resume and len(models) > 1:
        raise InputError("--resume takes one run folder; give no --model")
    twice = next((m for i, m in enumerate(models) if m in models[:i]), None)
    if twice is not None:  # (the same player twice: two identical runs, one row shown twice)
        raise InputError(f"--model {twice}: given twice; give each player once")
    # several players: --base-url, --chat-template and --reasoning-effort are the HTTP players' (a
    # local one runs here, brings its own template and reasons as it was trained to); with no
    # HTTP player every config keeps them and the first is refused in one line
    any_http = any(is_http_spec(m) for m in models)
    any_template = any(takes_chat_template(m) for m in models)
    if len(models) > 1:
        # checked once as an HTTP player's (with one) or as the first player's config
        first = next((m for m in models if takes_chat_template(m)), next((m for m in models if is_http_spec(m)), models[0]))
        replace(base, model=first).validate()
        if base.chat_template is not None and any_template:  # a bad template: one line before any player runs
            from stratbench.models.openai_api import ChatTemplate

            ChatTemplate.load(base.chat_template)
        if base.seed is None:
            from stratbench.seeding import fresh_seed

            base.seed = fresh_seed()  # every player must see the same games (and draw alike)
    configs = [replace(base, model=m, folder_tag=slug(m) if len(models) > 1 else None,
                       chat_template=base.chat_template if takes_chat_template(m) or not any_template else None,
                       reasoning_effort=base.reasoning_effort if is_http_spec(m) or not any_http else None,
                       base_url=base.base_url if is_http_spec(m) or not any_http else None)
               for m in models] or [base]
    suite = get_suite("nashgap")
    if len(configs) > 1:  # every player checked (and its model opened) before the first one runs
        _check_players(suite, configs)
    rows = {}
    n_errors = 0
    for cfg in configs:
        with progress_bar(quiet) as progress:
            result = suite.run(cfg, progress=progress, resume_dir=resume)
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
                + (f", {t['model_cache_failures']} answers the cache could not serve or store"
                   if t.get("model_cache_failures") else "")
                + (f", est. cost ${t['model_cost_usd']:.4f}" if "model_cost_usd" in t else "")
                + (f", {usage_unknown_note(t)}" if usage_unknown_note(t) else "")
            )
    if not quiet:
        console.print(nashgap_table(rows, "Nash-gap results (means over games, 95% bootstrap CIs)"))
    if n_errors:
        err_console.print(f"{n_errors} records are errors (see each summary's status_counts)")
        return 1
    return 0


def register(app: typer.Typer) -> None:
    app.command("nashgap")(plannable(nashgap))


def _check_players(suite: Any, configs: list[Any]) -> None:
    """Several --model: each player's config, model and policy checked, and its price where --max-cost
    needs one, before the first player runs — a refusal of the third model left the first two's
    runs made (and paid) behind it."""
    import asyncio
    from dataclasses import replace

    from stratbench.errors import InputError
    from stratbench.models import costs
    from stratbench.suites.base import Job
    from stratbench.suites.nashgap.run import player_from_config
    from stratbench.workflows.suite_plan import check_job_models

    for cfg in configs:
        replace(cfg).validate()
    check_job_models([Job("nashgap", cfg.model, cfg.seed or 0, cfg) for cfg in configs])
    for cfg in configs:  # each player as its run makes it: the policy its backend supports, its chat template
        asyncio.run(player_from_config(cfg).aclose())
    session = costs.current()
    if session is not None and session.max_cost is not None:
        for cfg in configs:
            spec = cfg.model
            if not suite.scripted.matches(spec) and not session.local(spec) and session.price(spec) is None:
                raise InputError(f"--max-cost: no price for {spec} in the price table (stratbench's own or "
                                 "--price-table); give one with --price-table FILE")
