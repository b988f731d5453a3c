"""`stratbench compare RUN_A RUN_B`: a thin wrapper over :func:`stratbench.workflows.compare.compare_runs`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from stratbench.cli.display import console


def compare(
    run_a: str = typer.Argument(..., help="Baseline result folder (A)."),
    run_b: str = typer.Argument(..., help="Result folder to compare (B)."),
    output: Optional[str] = typer.Option(None, help="Also write the comparison as JSON here."),
    allow_partial: bool = typer.Option(False, help="Compare unfinished runs as they are (refused by default; "
                                                   "runs of one suite only, not scorecards)."),
) -> int:
    """Differences B − A of headline metrics with 95% bootstrap CIs (paired over shared games)."""
    import json

    from rich.table import Table

    from stratbench.workflows.compare import compare_runs
    from stratbench.workflows.scorecard import is_scorecard_folder

    if output is not None and not output.strip():
        from stratbench.errors import InputError

        raise InputError("--output: give a file name (got an empty path)")
    out = check_output_file(output, (run_a, run_b)) if output else None
    from pathlib import Path

    from stratbench.runner.folders import check_result_files

    for folder in (run_a, run_b):  # (before any file is opened: a pipe there would block the compare)
        if Path(folder).is_dir():
            check_result_files(folder, below=True)
    cards = is_scorecard_folder(run_a), is_scorecard_folder(run_b)
    if any(cards):
        from stratbench.errors import InputError

        if not all(cards):
            raise InputError(f"{run_a if not cards[0] else run_b}: not a scorecard folder; compare two scorecards "
                             "or two runs of one suite")
        if allow_partial:  # its units would be a biased subset, and it has no scorecard.json to check
            raise InputError("--allow-partial: compares unfinished runs of one suite, not scorecards; finish a "
                             "scorecard with stratbench scorecard --resume FOLDER, then compare")
        _compare_scorecards(run_a, run_b, out)
        return 0
    res = compare_runs(run_a, run_b, allow_partial=allow_partial)
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
    if out is not None:
        out.write_text(json.dumps(res, indent=2) + "\n")
    return 0


def _compare_scorecards(run_a: str, run_b: str, out: Path | None) -> None:
    import json

    from rich.table import Table

    from stratbench.workflows.scorecard import compare_scorecards

    res = compare_scorecards(run_a, run_b)
    t = Table(title=f"scorecard: B − A of the normalised score  (A = {run_a}, B = {run_b})", title_justify="left")
    for col in ("model (A → B)", "suite", "A", "B", "B − A [95% CI]", "paired", "units"):
        t.add_column(col, no_wrap=True)

    def num(x: float | None, status: str) -> str:
        return "failed" if status == "failed" else "—" if x is None else f"{x:.1f}"

    for r in res["rows"]:
        ci = r["diff_ci95"]
        diff = "—" if r["diff"] is None else f"{r['diff']:+.1f}" + (
            f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else " (one fit each: no CI)") + (" *" if r["significant"] else "")
        who = r["model_a"] if r["model_a"] == r["model_b"] else f"{r['model_a']} → {r['model_b']}"
        t.add_row(who, r["title"], num(r["a"], r["a_status"]), num(r["b"], r["b_status"]), diff,
                  "yes" if r["paired"] else "no", str(r["n_units"]))
    console.print(t)
    if res["note"]:
        console.print(res["note"])
    if out is not None:
        out.write_text(json.dumps(res, indent=2) + "\n")


def check_output_file(output: str, inputs: tuple[str, ...]) -> Path:
    """Where --output may write: not into a folder it reads (a run's own summary.json must never be
    overwritten), not onto a folder, and into a folder that exists."""
    from stratbench.errors import InputError

    out = Path(output)
    if out.suffix.lower() in (".csv", ".tsv", ".html", ".htm", ".txt", ".md"):  # (JSON under another name)
        raise InputError(f"--output {output}: the comparison is written as JSON; give a .json file name")
    target = out.resolve()
    for folder in inputs:
        f = Path(folder).resolve()
        if target == f or f in target.parents:
            raise InputError(f"--output {output}: inside the result folder {folder}; write the comparison elsewhere")
    from stratbench.runner.folders import enclosing_result_folder

    inside = enclosing_result_folder(out.resolve().parent)  # (a symlink is followed to where it writes)
    if inside is not None:
        raise InputError(f"--output {output}: inside the result folder {inside}; write the comparison elsewhere")
    if out.is_dir():
        raise InputError(f"--output {output}: is a folder; give a file name")
    if not out.parent.is_dir():
        raise InputError(f"--output {output}: folder {out.parent} does not exist")
    return out


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
