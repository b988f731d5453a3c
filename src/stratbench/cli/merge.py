"""`stratbench merge DIR... [--output-dir D]`: a thin wrapper over :func:`stratbench.workflows.merge.merge_runs`."""

from __future__ import annotations

import json

import typer

from stratbench.cli.display import console


def merge(
    folders: list[str] = typer.Argument(..., metavar="DIR", help="The shard folders of one run (from --shard i/n), in any order."),
    output_dir: str = typer.Option("results", help="Where the merged result folder is created."),
    quiet: bool = typer.Option(False, help="Print only the merged folder."),
    allow_partial: bool = typer.Option(False, help="Merge shards whose run.json does not say finished (their "
                                       "records must still cover the run)."),
) -> int:
    """Combine the shards of one run into one result folder, identical to an unsharded run's.
    Exits 1 when the merged run holds error records, like the run itself would."""
    from stratbench.workflows.merge import merge_runs

    out = merge_runs(folders, output_dir, allow_partial=allow_partial)
    suite_folder = (out / "suite_metadata.json").is_file()  # shards of a tiered suite
    meta = json.loads((out / ("suite_metadata.json" if suite_folder else "run.json")).read_text())
    t = meta.get("totals", {})
    code = 1 if t.get("errors") else 0
    if quiet:
        print(out)
        return code
    what = f"suite of {t.get('runs', len(meta.get('runs', [])))} runs" if suite_folder else \
        "baseline" if meta.get("kind") == "baseline" else "run"  # (tom baseline: not "tom run")
    console.print(f"{out}: {meta['suite']} {what} merged from {len(folders)} shards — "
                  f"{t.get('records', 0)} records, {t.get('errors', 0)} errors, "
                  f"{t.get('model_calls', 0)} model calls")
    return code


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
