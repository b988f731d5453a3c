"""`stratbench scorecard`: a thin wrapper over :func:`stratbench.api.scorecard`."""

from __future__ import annotations

from typing import Any, List, Optional

import typer

from stratbench.cli.display import console, err_console
from stratbench.cli.options import BaseUrl, NoCache, OutputDir, Quiet, ReasoningEffort, Resume, ThinkTags
from stratbench.cli.plan import plannable


def scorecard(
    ctx: typer.Context,
    model: Optional[List[str]] = typer.Option(None, help="A model spec (repeatable); default: embedded."),
    budget: Optional[str] = typer.Option(None, help="smoke (a few units per suite: does everything run?), quick (default: minutes on a laptop), standard, "
                                       "or paper (the papers' sizes)."),
    seed: Optional[int] = typer.Option(None, help="Seed of every suite's games, episodes and draws (default 0)."),
    chat: Optional[bool] = typer.Option(None, "--chat/--raw", help=(
        "Read every model as a chat model (its chat template; exact choice scoring for local models, sampled "
        "answers over HTTP) or as a raw model (log-probabilities). Default: embedded-instruct and hosted chat "
        "APIs are chat models, every other model raw.")),
    base_url: BaseUrl = None,
    output_dir: OutputDir = "results",
    resume: Resume = None,
    no_cache: NoCache = False,
    no_report: bool = typer.Option(False, "--no-report", help="Do not write the HTML report."),
    timeout: Optional[float] = typer.Option(None, help="Seconds one HTTP request may take before it is retried "
                                                       "(default: the suites' 60)."),
    retries: Optional[int] = typer.Option(None, help="Retries of a failed HTTP request (default: the suites' 4)."),
    wait_for_server: Optional[float] = typer.Option(None, help=(
        "Seconds to wait for an unreachable server (e.g. restarting) before its calls fail (default 0).")),
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=(
        "Output budget of the models' generated answers in every suite (default: each suite's own, 384-1024); "
        "give a reasoning model room to think before it answers. Saved with the scorecard.")),
    price_table: Optional[str] = typer.Option(None, help=(
        "JSON prices per million tokens by model spec, over the shipped table (for --dry-run and --max-cost); "
        "saved with the scorecard, its Nash-gap runs price their cost with it.")),
    quiet: Quiet = False,
) -> None:
    """Every suite for every model at one budget, next to chance and optimal references: one folder,
    one table (scorecard.json / .csv), one report."""
    from stratbench.api import scorecard as run_scorecard

    def said(entry: dict[str, Any]) -> None:
        if not quiet:
            err_console.print(f"[dim]{entry['suite']:>8}  {entry['player']:<24} {entry.get('setting') or '':<22} "
                              f"{entry['seconds']:7.1f} s  {entry['folder']}[/dim]", highlight=False)

    if resume and (model or chat is not None or budget is not None or seed is not None or reasoning_effort
                   or think_tags is not None or max_tokens is not None):
        from stratbench.errors import InputError

        raise InputError("--resume finishes the scorecard saved in the folder; drop --model, --budget, --seed, "
                         "--chat, --reasoning-effort, --think-tags and --max-tokens (--base-url says where its "
                         "models are served now)")
    if resume:
        from stratbench.cli.resume_flags import refuse_output_dir_and_check_url

        refuse_output_dir_and_check_url(ctx, "--resume", resume, base_url)
    res = run_scorecard(model or ([] if resume else ["embedded"]), budget="quick" if budget is None else budget,
                        seed=0 if seed is None else seed,
                        output_dir=output_dir,
                        resume_dir=resume, chat=chat, base_url=base_url, no_cache=no_cache, report=not no_report,
                        on_run=said, timeout=timeout, retries=retries, wait_for_server=wait_for_server,
                        reasoning_effort=reasoning_effort, price_table=price_table, think_tags=think_tags,
                        max_tokens=max_tokens)
    if quiet:
        console.print(str(res.folder))
    else:
        from stratbench.cli.display import scorecard_table

        console.print(scorecard_table(res.scorecard, res.costs))
        console.print(f"scorecard: {res.folder}" + (f"\nreport: {res.report}" if res.report else ""))
    n_errors = sum(c["counts"].get("error", 0) for c in res.scorecard["cells"])
    failed = [f"{c['player']} on {c['suite']}" for c in res.scorecard["cells"] if c["status"] == "failed"]
    if n_errors:
        import shlex

        err_console.print(f"{n_errors} records are errors (counted, never scored; see scorecard.csv); "
                          f"stratbench scorecard --resume {shlex.quote(str(res.folder))} tries them again",
                          highlight=False, soft_wrap=True)
    if failed:  # parse failures alone are the model's answers, not a failed run: no exit code of their own
        err_console.print(f"{len(failed)} cells failed (nothing scored, no score): {', '.join(failed)}",
                          highlight=False, soft_wrap=True)
    if n_errors:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("scorecard")(plannable(scorecard))
