"""`stratbench trend`: a thin wrapper over :func:`stratbench.api.trend`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, List, Optional

import typer
from rich.table import Table

from stratbench.cli.display import console, err_console
from stratbench.cli.options import BaseUrl, NoCache, OutputDir, Quiet, ReasoningEffort, Resume, ThinkTags


def trend_table(trend: Mapping[str, Any]) -> Table:
    """Compact: a row per step, per suite the score [95% CI] and the paired change from the previous
    step (▼ a regression); then a row per suite's emergence."""
    suites = list(trend["suites"])
    t = Table(title=f"stratbench trend — budget {trend['budget']}, seed {trend['seed']} "
                    "(score: 0 = chance, 100 = optimal; [95% CI]; Δ from the previous step)", title_justify="left")
    t.add_column("step", justify="right", no_wrap=True)
    for s in suites:
        t.add_column(s["title"], justify="right")
    for i, c in enumerate(trend["checkpoints"]):
        row = [f"{c['step']:,}"]
        for s in suites:
            p = s["points"][i]
            if p["score"] is None:
                row.append("[red]failed[/red]")
                continue
            ci = p["ci95"]
            text = f"{p['score']:.0f}" + (f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "")
            d = next((x for x in s["differences"] if x["step_b"] == c["step"]), None)
            if d is not None and d["diff"] is not None:
                mark = " [red]▼[/red]" if d["regression"] == "yes" else ""
                text += f"\n[dim]Δ {d['diff']:+.0f}[/dim]{mark}"
            row.append(text)
        t.add_row(*row)
    em_row = ["emerges"]
    for s in suites:
        em = s["emergence"]
        em_row.append(f"{em['step']:,}" + ("" if em["stays_above"] == "yes" else f" (stays: {em['stays_above']})")
                      if em["decision"] == "emerged" else em["decision"])
    t.add_row(*em_row, end_section=True)
    t.add_row("regressions", *[", ".join(f"→{x:,}" for x in s["regressions"]) or "none" for s in suites])
    return t


def trend(
    ctx: typer.Context,
    model: Optional[List[str]] = typer.Option(None, help="A checkpoint's model spec (repeatable), e.g. "
                                              "gguf:ckpt-1000.gguf."),
    step: Optional[List[int]] = typer.Option(None, help="The training step of each --model, in order (repeatable)."),
    step_from: Optional[str] = typer.Option(None, help="A regular expression that reads each model's step from "
                                            "its spec (its first group), e.g. 'ckpt-(\\d+)'."),
    tokens: Optional[List[int]] = typer.Option(None, help="Tokens seen by each --model, in order (optional)."),
    budget: Optional[str] = typer.Option(None, help="smoke, quick (default), standard or paper: as the scorecard's."),
    seed: Optional[int] = typer.Option(None, help="Seed of every checkpoint's scorecard (default 0)."),
    chat: Optional[bool] = typer.Option(None, "--chat/--raw", help="Read every checkpoint as a chat model or as a "
                                        "raw model (default: per model, as the scorecard decides)."),
    base_url: BaseUrl = None,
    output_dir: OutputDir = "results",
    resume: Resume = None,
    add: Optional[str] = typer.Option(None, help="Add the --model checkpoints to this trend folder: only they run, "
                                      "at its budget and seed."),
    no_cache: NoCache = False,
    no_report: bool = typer.Option(False, "--no-report", help="Do not write the HTML reports."),
    timeout: Optional[float] = typer.Option(None, help="Seconds one HTTP request may take before it is retried."),
    retries: Optional[int] = typer.Option(None, help="Retries of a failed HTTP request."),
    wait_for_server: Optional[float] = typer.Option(None, help="Seconds to wait for an unreachable server."),
    reasoning_effort: ReasoningEffort = None,
    think_tags: ThinkTags = None,
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=(
        "Output budget of every checkpoint's generated answers in every suite (default: each suite's own), "
        "as the scorecard's --max-tokens. Saved with the trend.")),
    quiet: Quiet = False,
) -> None:
    """A suite's score along a training run: the scorecard of every checkpoint at one budget and seed,
    where each suite rises above chance and where it regresses (trend.json / .csv, one report)."""
    from stratbench.api import trend as run_trend

    def said(entry: dict[str, Any]) -> None:
        if not quiet:
            err_console.print(f"[dim]{entry['suite']:>8}  {entry['player']:<24} {entry.get('setting') or '':<22} "
                              f"{entry['seconds']:7.1f} s  {entry['folder']}[/dim]", highlight=False)

    if resume or add:
        from stratbench.cli.resume_flags import refuse_output_dir_and_check_url

        refuse_output_dir_and_check_url(ctx, "--resume" if resume else "--add", str(resume or add), base_url)
        from pathlib import Path

        from stratbench.runner.folders import check_result_files

        if Path(str(resume or add)).is_dir():  # (a pipe among its files would block the trend)
            check_result_files(str(resume or add), below=True)
    res = run_trend(model or [], steps=step or [], step_from=step_from, tokens=tokens or [], budget=budget,
                    seed=seed, output_dir=output_dir, resume_dir=resume, add_to=add, chat=chat, base_url=base_url,
                    no_cache=no_cache, report=not no_report, on_run=said, timeout=timeout, retries=retries,
                    wait_for_server=wait_for_server, reasoning_effort=reasoning_effort, think_tags=think_tags,
                    max_tokens=max_tokens)
    if quiet:
        console.print(str(res.folder))
    else:
        console.print(trend_table(res.trend))
        console.print(f"trend: {res.folder}" + (f"\nreport: {res.report}" if res.report else ""))
    if res.n_errors:
        import shlex

        err_console.print(f"{res.n_errors} records are errors (counted, never scored; see the checkpoints' "
                          f"scorecard.csv); stratbench trend --resume {shlex.quote(str(res.folder))} tries them again",
                          highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("trend")(trend)
