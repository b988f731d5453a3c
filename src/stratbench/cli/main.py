"""The `stratbench` command: a thin root that mounts one module per command group. Every bad input
ends as one line on stderr and exit code 2 — never a traceback.

Suite command groups come from the suite registry (each suite names its CLI module, which has
`register(app)`); the workflow commands (`suite`, `merge`, `compare`, `report`) are listed here.
"""

from __future__ import annotations

import importlib
import sys

import typer
from typer.exceptions import TyperException

from stratbench import __version__
from stratbench.cli.display import console, err_console
from stratbench.errors import InputError

# Typer ≥ 0.29 vendors click (its usage errors derive from TyperException); older ones use click.
_USAGE_ERRORS: tuple[type[Exception], ...] = (TyperException,)
_EXITS: tuple[type[BaseException], ...] = (typer.Exit,)
try:  # pragma: no cover - depends on the installed typer
    import click

    _USAGE_ERRORS += (click.ClickException,)
    _EXITS += (click.exceptions.Exit,)
except ImportError:  # pragma: no cover
    pass

WORKFLOW_COMMANDS = ("stratbench.cli.suite", "stratbench.cli.merge", "stratbench.cli.compare", "stratbench.cli.report")

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


def _mount(root: typer.Typer) -> None:
    from stratbench.suites import all_suites

    modules = [s.cli for s in all_suites() if s.cli] + list(WORKFLOW_COMMANDS)
    for name in dict.fromkeys(modules):
        importlib.import_module(name).register(root)


_mount(app)


def main(argv: list[str] | None = None) -> None:
    from stratbench.cli.suite import expand_multi_value_flags

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 2 and args[0] == "nashgap" and args[1] == "run":
        del args[1]  # `stratbench nashgap run ...` and `stratbench nashgap ...` are the same
    args = expand_multi_value_flags(args)  # `suite tiered --seeds 42 43` (the original's nargs)
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
