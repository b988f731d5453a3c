"""Terminal output: progress bars on a terminal (quiet in CI or with --quiet), summary tables."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, Mapping

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table


class _Console(Console):
    """A console whose text lines are never wrapped (a summary line names a folder, users and
    scripts grep it: a wrapped line splits the path), while tables still fit the width."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None and objects and all(isinstance(o, str) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


console = _Console()
if not console.is_terminal:
    console.width = 170  # logs and CI: don't squeeze tables into 80 columns
err_console = _Console(stderr=True)
if not err_console.is_terminal:
    err_console.width = 140


def interactive(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


@contextlib.contextmanager
def progress_bar(quiet: bool) -> Iterator[Progress | None]:
    if not interactive(quiet):
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=err_console, transient=True,
    ) as p:
        yield p


def usage_unknown_note(totals: Mapping[str, Any]) -> str:
    """What a run's line adds when a provider reported no usable token counts for some calls
    (run.json's ``model_usage_unknown``): the token counts (and cost) shown are then only the
    reported part. Empty when every call's usage was reported."""
    n = totals.get("model_usage_unknown")
    if not n:
        return ""
    return (f"{n} calls whose provider reported no usable usage (their unreported tokens are not in the tokens"
            + (" or the cost)" if "model_cost_usd" in totals else ")"))


def fmt(x: Any, ci: Any = None, digits: int = 3) -> str:
    if x is None:
        return "—"
    s = f"{x:.{digits}f}"
    if ci:
        s += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return s


def nashgap_table(rows: Mapping[str, Mapping[str, Any]], title: str) -> Table:
    """One row per (player, mode) summary; full detail is in each summary.json."""
    t = Table(title=title, title_justify="left")
    for col in ("player", "policy", "mode", "games", "nash gap", "exploitability",
                "debiased expl.", "position bias", "label mass", "fail / err"):
        t.add_column(col, justify="left" if col in ("player", "policy", "mode") else "right",
                     no_wrap=True)
    for _, s in rows.items():
        t.add_row(
            str(s.get("agent", "")),
            str(s.get("policy", "")),
            str(s.get("mode", "")),
            f"{s['n_games']}/{s['num_games']}",
            fmt(s["mean_nash_gap"], s.get("mean_nash_gap_ci95"), 2),
            fmt(s["mean_exploitability"], s.get("mean_exploitability_ci95"), 2),
            fmt(s.get("mean_mixture_exploitability"), s.get("mean_mixture_exploitability_ci95"), 2),
            fmt(s.get("position_bias"), None, 3),
            fmt(s.get("mean_label_mass"), None, 3),
            f"{s['parse_failure_rate']:.0%} / {s['error_rate']:.0%}",
        )
    return t


def scorecard_table(card: Mapping[str, Any], costs: Any = ()) -> Table:
    """The scorecard: one row per player, per suite its normalised score [95% CI] (0 = chance,
    100 = optimal) over its raw metric; references marked. Failed cells say so with their errors."""
    suites = list(card["suites"])
    t = Table(title=f"stratbench scorecard — budget {card['budget']}, seed {card['seed']} "
                    "(score: 0 = chance, 100 = optimal; [95% CI])", title_justify="left")
    t.add_column("player", no_wrap=True)
    for s in suites:  # suite columns may wrap: the table must fit an 80-column terminal too
        t.add_column(f"{s['title']}\n{s['metric_label']}", justify="right")
    t.add_column("calls / tokens / time", justify="right")
    cells = {(c["player"], c["suite"]): c for c in card["cells"]}
    cost: dict[str, list[float]] = {}
    for c in costs or ():
        acc = cost.setdefault(c["player"], [0, 0, 0.0])
        acc[0] += c["model_calls"]
        acc[1] += c["tokens_in"] + c["tokens_out"]
        acc[2] += c["seconds"]
    for p in card["players"]:
        name = p["player"] if p["role"] == "model" else f"[dim]{p['player']} (reference)[/dim]"
        row = [name]
        for s in suites:
            c = cells.get((p["player"], s["suite"]))
            if c is None:
                row.append("")
                continue
            ref = f"{c['reference']}: " if c.get("reference") else ""
            if c["status"] == "failed":
                row.append(f"[red]failed[/red] ({c['counts'].get('error', 0)} errors, "
                           f"{c['counts'].get('parse_failed', 0)} unparsed)")
                continue
            score = fmt(c["normalized"], c["normalized_ci95"], 0) if not c.get("exact") else fmt(c["normalized"], None, 0)
            raw = fmt(c["value"], None, 3)
            warn = f" [yellow]{c['counts'].get('error', 0) + c['counts'].get('parse_failed', 0)} failed[/yellow]" \
                if c["status"] == "errors" else ""
            row.append(f"{ref}{score}\n[dim]{raw}[/dim]{warn}")
        k = cost.get(p["player"])
        row.append(f"{int(k[0]):,} / {int(k[1]):,} / {k[2]:.0f} s" if k and p["role"] == "model" else "")
        t.add_row(*row)
    return t
