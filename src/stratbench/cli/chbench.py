"""`stratbench chbench run|fit`: repeated play with cognitive-hierarchy fits, and fits of play
collected anywhere."""

from __future__ import annotations

from typing import List, Optional

import typer

from stratbench.cli.display import console, err_console, fmt, progress_bar, usage_unknown_note
from stratbench.cli.options import (
    BaseUrl,
    Chat,
    ChatTemplate,
    FixedSeed,
    NoCache,
    OutputDir,
    Quiet,
    ReasoningEffort,
    Resume,
    Retries,
    Shard,
    ThinkTags,
    Timeout,
    WaitForServer,
    csv_list,
    group,
)
from stratbench.cli.plan import plannable
from stratbench.suites import get_suite

ch_app = group("CHBench: cognitive-hierarchy levels of players.")


@ch_app.command("run")
@plannable
def chbench_run(
    models: Optional[List[str]] = typer.Option(None, "--models", "--model", help="Players, comma-separated or repeated: model specs "
                                               "or scripted (random, first-action, level-k:K, poisson:LAMBDA). All pairs play."),
    opponents: Optional[List[str]] = typer.Option(None, help="Extra players that play every --models player "
                                                  "but not each other (e.g. scripted references)."),
    mechanism: str = typer.Option("baseline", help="baseline, memory, memory10, chat, chat_memory (comma list allowed)."),
    rounds: int = typer.Option(30, help="Rounds per match (T)."),
    games: str = typer.Option("all", help="all, recoverable, or game ids like 1,2,11."),
    seed: FixedSeed = 0,
    policy: Optional[str] = typer.Option(
        None, help="logprob (raw models: exact log-probabilities; the default where available), choice (chat "
                   "models, with --chat: the action numbers scored after the chat template; the default with --chat "
                   "where the model scores chat conversations: local chat models, HTTP models with --chat-template) "
                   "or sample (generated and parsed)."),
    temperature: float = typer.Option(1.0, help="Temperature for generated answers and advisor messages."),
    max_tokens: Optional[int] = typer.Option(
        None, help="Budget of every generated answer and advisor message (default: the paper's 16 tokens for an "
                   "answer, 96 for a message; a reasoning model needs thousands)."),
    chat: Chat = False,
    base_url: BaseUrl = None,
    max_concurrency: int = typer.Option(4, help="Matches played concurrently."),
    timeout: Timeout = 60.0,
    retries: Retries = 4,
    wait_for_server: WaitForServer = 0.0,
    chat_template: ChatTemplate = None,
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    no_cache: NoCache = False,
    prefix_reuse: bool = typer.Option(False, help="Local models: reuse the KV cache across a match's growing "
                                      "prompts (one model instance per seat, matches in sequence, no response cache)."),
    self_play: bool = typer.Option(True, help="Include each model against itself."),
    k_hat: int = typer.Option(4, help="Number of CH levels (k̂)."),
    restarts: int = typer.Option(10, help="No longer used: fits search every best-response piece exactly "
                                 "(kept so that earlier commands run)."),
    bootstrap: int = typer.Option(100, help="Bootstrap replicates over games for level CIs (0: none)."),
    corrections: Optional[str] = typer.Option(None, help="JSON with corrected matrices for uncertain games."),
    keep_prompts: bool = typer.Option(True, help="Store every prompt in the round records (--no-keep-prompts: drop them)."),
    output_dir: OutputDir = "results",
    resume: Resume = None,
    shard: Shard = None,
    quiet: Quiet = False,
) -> int:
    """CHBench: repeated play between all pairs, then Level-K / Poisson CH levels by maximum likelihood."""
    from stratbench.errors import InputError
    from stratbench.suites.chbench.run import ChbenchConfig

    # a flag given with nothing in it is one line, never taken as not given
    if opponents is not None and not csv_list(opponents):
        raise InputError("--opponents: give at least one player (or leave the flag out)")
    if corrections is not None and not corrections.strip():
        raise InputError("--corrections: empty; give a JSON file (or leave the flag out)")
    cfg = ChbenchConfig(
        models=["embedded"] if models is None else csv_list(models), opponents=csv_list(opponents),
        mechanisms=csv_list([mechanism]), rounds=rounds, games=games, seed=seed, policy=policy,
        temperature=temperature, chat=chat, base_url=base_url, max_concurrency=max_concurrency,
        timeout=timeout, retries=retries, wait_for_server=wait_for_server, chat_template=chat_template,
        no_cache=no_cache, reasoning_effort=reasoning_effort, think_tags=think_tags, max_tokens=max_tokens,
        prefix_reuse=prefix_reuse, self_play=self_play, k_hat=k_hat, restarts=restarts, bootstrap=bootstrap,
        corrections=corrections, keep_prompts=keep_prompts, output_dir=output_dir, shard=shard)
    with progress_bar(quiet) as progress:
        result = get_suite("chbench").run(cfg, progress=progress, resume_dir=resume)
    folder, summary, n_err = result.folder, result.summary, result.n_errors
    if quiet:
        print(folder)
    else:
        console.print(f"CHBench — {folder}: {summary['n_matches']} matches, {summary['n_rounds']} rounds, "
                      f"parse failures {fmt(summary['parse_failure_rate'])}, errors {fmt(summary['error_rate'])}")
        for mech, players in summary["mechanisms"].items():
            for p, s in players.items():
                console.print(f"  {mech:<11} {p:<24} Level-K mean level {_level(s, 'level_k')}"
                              f"  Poisson {_level(s, 'poisson')}"
                              f"  utility {fmt(s.get('mean_utility'), s.get('mean_utility_ci95'))}"
                              + (f"  strict parses {fmt(s['strict_parse_rate'])}, flexible {fmt(s['flexible_parse_rate'])}"
                                 if "strict_parse_rate" in s else ""))
        console.print(f"  tables: {folder}/levels.md, utilities_*.md; plot: level_distribution.png")
        if note := usage_unknown_note(result.totals):
            err_console.print(f"{folder}: {note}")
    if n_err:
        err_console.print(f"{n_err} rounds have errors (see rounds.jsonl); --resume {folder} retries them")
        return 1
    return 0


@ch_app.command("fit")
def chbench_fit(
    data: str = typer.Option(..., help="UTF-8 CSV: game_id, round, row_player, col_player, row_action, col_action; "
                             "actions as the games' labels (A, B, C), or numbers with --action-base."),
    action_base: Optional[int] = typer.Option(None, help="Actions in --data are numbers counted from 0 or from 1 "
                                              "(0: the first action is 0; 1: it is 1). Without it numbers are refused."),
    k_hat: int = typer.Option(4, help="Number of levels (k̂)."),
    restarts: int = typer.Option(10, help="No longer used: fits search every best-response piece exactly "
                                 "(kept so that earlier commands run)."),
    seed: int = typer.Option(0, help="Seed for the bootstrap (the fits themselves use none)."),
    bootstrap: int = typer.Option(100, help="Bootstrap replicates over games for mean-level CIs (0: none)."),
    corrections: Optional[str] = typer.Option(None, help="JSON with corrected matrices for uncertain games."),
    allow_uncertain: bool = typer.Option(False, help="Fit rows of uncertain games (#8-#10, #12, #14, #15) with the "
                                         "catalogue's placeholder payoffs (e.g. play recorded by `chbench run` on them)."),
    output_dir: OutputDir = "results",
) -> int:
    """Fit Level-K and Poisson cognitive-hierarchy models to observed play."""
    from stratbench.suites.chbench.fit_run import FitConfig

    cfg = FitConfig(data, k_hat, restarts, seed, output_dir, corrections, action_base=action_base,
                    bootstrap=bootstrap, allow_uncertain=allow_uncertain)
    result = get_suite("chbench-fit").run(cfg)
    console.print(f"CHBench fit — {result.folder}")
    for player, f in result.summaries["fits"].items():
        p, lk = f["poisson"], f["level_k"]
        lam = f"{p['lambda']:.3f}" + (" (at its limit)" if p.get("lambda_at_limit") else "")
        console.print(f"  {player}: Poisson λ = {lam}, mean level {_level(p)}; Level-K mean level {_level(lk)}")
    return 0


def _level(s: dict, cm: str = "") -> str:
    """A mean level with its CI, and the range of maximisers where the data do not identify it."""
    pre = f"{cm}_" if cm else ""
    text = fmt(s.get(f"{pre}mean_level"), s.get(f"{pre}mean_level_ci95"))
    if s.get(f"{pre}identified") is False:
        lo, hi = s.get(f"{pre}mean_level_range") or (None, None)
        text += f" (not identified: {lo:.2f}-{hi:.2f} fit equally well)" if lo is not None else " (not identified)"
    return text


def register(app: typer.Typer) -> None:
    app.add_typer(ch_app, name="chbench")
