"""`stratbench compare RUN_A RUN_B`: a thin wrapper over :func:`stratbench.workflows.compare.compare_runs`."""

from __future__ import annotations

from typing import Optional

import typer

from stratbench.cli.display import console


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


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
