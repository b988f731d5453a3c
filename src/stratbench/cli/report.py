"""`stratbench report DIR`: a thin wrapper over :func:`stratbench.report.build.build_report`."""

from __future__ import annotations

import typer


def report(
    directory: str = typer.Argument(..., metavar="RUN_OR_SUITE_DIR",
                                    help="A result folder, a suite folder, or a folder of runs (e.g. results)."),
    output: str | None = typer.Option(None, "--output", "-o",
                                      help="Folder for index.html and its PNGs (default: DIR/report)."),
    max_records: int = typer.Option(10, help="Records shown per JSONL file in the sample tables."),
    figures: str = typer.Option("auto", help="auto (per-run figures only for up to 12 runs), all, or none."),
    quiet: bool = typer.Option(False, help="Print only the path of the HTML file."),
) -> int:
    """Write a self-contained HTML report (index.html, figures embedded) for the runs under DIR."""
    from stratbench.api import report as build_report
    from stratbench.errors import InputError

    # (an empty path is the folder the command runs in: never what was meant)
    if not directory.strip():
        raise InputError("RUN_OR_SUITE_DIR: give a folder (got an empty path)")
    if output is not None and not output.strip():
        raise InputError("--output: give a folder (got an empty path)")
    res = build_report(directory, output, max_records, figures)
    if quiet:
        print(res.index)
    else:
        from stratbench.cli.display import err_console

        err_console.print(f"{res.n_runs} run folder(s), {res.n_suites} suite folder(s); "
                          f"{len(res.figures)} figure(s) drawn")
        print(res.index)
    return 0


def register(app: typer.Typer) -> None:
    app.command("report")(report)
