"""Terminal output: progress bars on a terminal (quiet in CI or with --quiet), summary tables."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, Mapping

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

console = Console()
if not console.is_terminal:
    console.width = 170  # logs and CI: don't squeeze tables into 80 columns
err_console = Console(stderr=True)
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
