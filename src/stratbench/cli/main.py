"""Entry point. Every bad input ends as one line on stderr and exit code 2 — never a traceback."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from typer.exceptions import TyperException

from stratbench import __version__
from stratbench.cli.display import console, err_console, nashgap_table, progress_bar
from stratbench.errors import InputError
from stratbench.suites.nashgap import NashgapConfig, run_nashgap

# Typer ≥ 0.29 vendors click (its usage errors derive from TyperException); older ones use click.
_USAGE_ERRORS: tuple[type[Exception], ...] = (TyperException,)
_EXITS: tuple[type[BaseException], ...] = (typer.Exit,)
try:  # pragma: no cover - depends on the installed typer
    import click

    _USAGE_ERRORS += (click.ClickException,)
    _EXITS += (click.exceptions.Exit,)
except ImportError:  # pragma: no cover
    pass

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
    help="Measure how well language models play simple strategic games.",
)


@app.callback()
def _root() -> None:
    """stratbench: strategic-game benchmarks for raw and chat language models."""


@app.command()
def version() -> None:
    """Print the stratbench version."""
    console.print(__version__)


@app.command("nashgap")
def nashgap(
    num_games: int = typer.Option(100, help="Number of games to generate."),
    num_trials: int = typer.Option(100, help="Trials (decisions) per game."),
    num_rows: int = typer.Option(3, help="Row player's actions."),
    num_cols: int = typer.Option(3, help="Column player's actions."),
    seed: Optional[int] = typer.Option(None, help="Seed for game generation (random if omitted; recorded)."),
    llm_type: str = typer.Option("random", help="Player: random (alias dummy), nash, maximin-pure, first-action."),
    llm_model: Optional[str] = typer.Option(None, help="Model name for model backends."),
    llm_seed: Optional[int] = typer.Option(None, help="Seed for the player's randomness (default: --seed)."),
    output_dir: str = typer.Option("results", help="Where result folders are created."),
    parallel: bool = typer.Option(False, help="Run decisions concurrently."),
    num_workers: int = typer.Option(4, help="Concurrent workers with --parallel."),
    combined: bool = typer.Option(False, help="Pure actions and mixed strategies on the same games."),
    mixed_strategy: bool = typer.Option(False, help="Ask for mixed strategies instead of actions."),
    overwrite: bool = typer.Option(False, help="Write to <prefix>_latest/, replacing it."),
    bucket: Optional[str] = typer.Option(None, help="Generate games of one difficulty bucket, e.g. 3x3_midVar_mixed."),
    games_file: Optional[str] = typer.Option(None, help="Play the zero-sum games in this JSON file."),
    payoff_min: float = typer.Option(-10.0, help="Lowest payoff of generated games."),
    payoff_max: float = typer.Option(10.0, help="Highest payoff of generated games."),
    decimals: int = typer.Option(2, help="Payoff precision (games are generated at the shown precision)."),
    resume: Optional[str] = typer.Option(None, help="Finish an interrupted run in this folder."),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> int:
    """Nash-gap suite: the player is the row player of random zero-sum games against a Nash opponent."""
    config = NashgapConfig(
        num_games=num_games, num_trials=num_trials, num_rows=num_rows, num_cols=num_cols,
        seed=seed, llm_type=llm_type, llm_model=llm_model, llm_seed=llm_seed,
        output_dir=output_dir, parallel=parallel, num_workers=num_workers, combined=combined,
        mixed_strategy=mixed_strategy, overwrite=overwrite, bucket=bucket, games_file=games_file,
        payoff_min=payoff_min, payoff_max=payoff_max, decimals=decimals,
    )
    with progress_bar(quiet) as progress:
        result = run_nashgap(config, progress=progress, resume_dir=resume)
    rows = {f"{s['agent']} / {mode}": s for mode, s in result.summaries.items()}
    if not quiet:
        console.print(nashgap_table(rows, f"Nash-gap results — {result.folder}"))
    else:
        print(result.folder)
    if result.n_errors:
        err_console.print(f"{result.n_errors} records are errors (see summary status_counts)")
        return 1
    return 0


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "nashgap" and args[1] == "run":
        del args[1]  # `stratbench nashgap run ...` and `stratbench nashgap ...` are the same
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=args, prog_name="stratbench", standalone_mode=False)
    except _EXITS as e:
        sys.exit(getattr(e, "exit_code", 0))
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except _USAGE_ERRORS as e:
        print(f"error: {e.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted: finished records are saved; continue with --resume FOLDER", file=sys.stderr)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
