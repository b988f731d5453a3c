"""The `stratbench` command: a thin root that mounts one module per command group. Every bad input
ends as one line on stderr and exit code 2 — never a traceback.

Suite command groups come from the suite registry (each suite names its CLI module, which has
`register(app)`); the workflow commands (`suite`, `merge`, `compare`, `report`) are listed here.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import typer
from typer.exceptions import TyperException

from stratbench import __version__
from stratbench.cli.display import console
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

WORKFLOW_COMMANDS = ("stratbench.cli.scorecard", "stratbench.cli.suite", "stratbench.cli.merge", "stratbench.cli.compare",
                     "stratbench.cli.report")

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


def _resume_hint(args: list[str], folders: list[Path]) -> str:
    """How to finish an interrupted command: its command words, then --resume FOLDER (a suite
    command resumes its suite folder, the first one announced; a run its own, the last one)."""
    if not folders:
        return "interrupted before any result folder was written; nothing to resume"
    words = []
    for a in args:
        if a.startswith("-"):
            break
        words.append(a)
    words = words[:2] if words and words[0] in ("tmgbench", "chbench", "tom", "suite") else words[:1]
    folder = folders[0] if words[:1] == ["suite"] else folders[-1]
    return (f"interrupted: finished records are saved in {folder}; continue with: "
            f"stratbench {' '.join(words)} --resume {folder}")


def _crash_report(exc: BaseException) -> Path | None:
    """Write the traceback of an unexpected error to a file; its path (None if it cannot be written)."""
    import tempfile
    import time
    import traceback

    try:
        folder = Path(tempfile.gettempdir()) / "stratbench-crashes"
        folder.mkdir(exist_ok=True)
        path = folder / f"crash-{time.strftime('%Y%m%d_%H%M%S')}-{os.getpid()}.txt"
        path.write_text("".join(traceback.format_exception(exc)) + f"\nargv: {sys.argv}\n")
        return path
    except OSError:
        return None


def main(argv: list[str] | None = None) -> None:
    """The error boundary: every bad input is one line `error: <file or flag>: <problem>` and exit
    code 2; Ctrl-C says how to resume (exit 130); anything else is a bug — one line naming the file
    holding its traceback, or the traceback itself with --debug or STRATBENCH_DEBUG=1."""
    from stratbench.cli.suite import expand_multi_value_flags
    from stratbench.runner.lifecycle import on_run_folder

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("STRATBENCH_DEBUG", "") not in ("", "0")
    args = [a for a in args if a != "--debug"]
    if len(args) >= 2 and args[0] == "nashgap" and args[1] == "run":
        del args[1]  # `stratbench nashgap run ...` and `stratbench nashgap ...` are the same
    args = expand_multi_value_flags(args)  # `suite tiered --seeds 42 43` (the original's nargs)
    command = typer.main.get_command(app)
    folders: list[Path] = []
    try:
        with on_run_folder(folders.append):
            rv = command.main(args=args, prog_name="stratbench", standalone_mode=False)
    except _EXITS as e:
        code = getattr(e, "exit_code", 0)
        if isinstance(e.__cause__, KeyboardInterrupt):  # typer turns Ctrl-C into Exit(130)
            print(_resume_hint(args, folders), file=sys.stderr)
            code = 130
        sys.exit(code)
    except (KeyboardInterrupt, typer.Abort):
        print(_resume_hint(args, folders), file=sys.stderr)
        sys.exit(130)
    except _USAGE_ERRORS as e:
        print(f"error: {e.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except InputError as e:
        print(f"error: {_one_line(str(e))}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:  # the machine refused a file or folder the user named
        where = e.filename if e.filename is not None else "input"
        print(f"error: {where}: {e.strerror or e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # a bug: one line and where the traceback is
        if debug:
            raise
        report = _crash_report(e)
        where = f"the traceback is in {report}" if report else "run with --debug to see the traceback"
        print(f"error: internal error ({type(e).__name__}: {_one_line(str(e))[:300]}) — a bug in stratbench; "
              f"{where}", file=sys.stderr)
        sys.exit(1)
    if rv == 130:  # typer (standalone_mode=False) returns a Ctrl-C as exit code 130
        print(_resume_hint(args, folders), file=sys.stderr)
    sys.exit(rv if isinstance(rv, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    main()
