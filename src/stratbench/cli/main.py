"""The `stratbench` command: a thin root that mounts one module per command group. Every bad input
ends as one line on stderr and exit code 2 — never a traceback.

Suite command groups come from the suite registry (each suite names its CLI module, which has
`register(app)`); the workflow commands (`scorecard`, `trend`, `suite`, `merge`, `compare`, `report`) are listed here.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.exceptions import TyperException

from stratbench import __version__
from stratbench.cli.display import console
from stratbench.cli.plan import CostStop
from stratbench.errors import InputError
from stratbench.models.costs import EXIT_MAX_COST, cost_session, halted  # (imported while signals are blocked)

# Typer ≥ 0.29 vendors click (its usage errors derive from TyperException); older ones use click.
_USAGE_ERRORS: tuple[type[Exception], ...] = (TyperException,)
_EXITS: tuple[type[BaseException], ...] = (typer.Exit,)
try:  # pragma: no cover - depends on the installed typer
    import click

    _USAGE_ERRORS += (click.ClickException,)
    _EXITS += (click.exceptions.Exit,)
except ImportError:  # pragma: no cover
    pass

WORKFLOW_COMMANDS = ("stratbench.cli.scorecard", "stratbench.cli.trend", "stratbench.cli.suite", "stratbench.cli.merge", "stratbench.cli.compare",
                     "stratbench.cli.report", "stratbench.cli.models")

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


def _command_words(command: Any, args: list[str]) -> tuple[list[str], Any]:
    """The command words at the start of `args` (`tmgbench stories generate`) and the command they
    name, found in the command tree (not guessed from the words' number)."""
    words: list[str] = []
    cmd = command
    for a in args:
        subs = getattr(cmd, "commands", None)
        if not isinstance(subs, dict) or a not in subs:
            break
        words.append(a)
        cmd = subs[a]
    return words, cmd


def _resume_hint(command: Any, args: list[str], folders: list[Path]) -> str:
    """How to finish an interrupted command: the same command with --resume FOLDER — a command that
    runs a collection (scorecard, suite file, tiered suite: its folder, announced first, holds
    suite_metadata.json; a trend: trend_metadata.json) resumes the collection; a run command the run folder announced last (the
    one interrupted). A command that cannot resume says so instead of naming a command that fails."""
    words, cmd = _command_words(command, args)
    if not folders:
        resumed = _resumed_folder(args)
        if resumed is None:
            return "interrupted before any result folder was written; nothing to resume"
        given, url, _ = _given_again(cmd, words, args[len(words):])  # (a resume stopped before it began)
        again = f" --base-url {shlex.quote(url)}" if url else ""
        return (f"interrupted before {resumed} was changed; continue with: "
                f"stratbench {' '.join(words + given)} --resume {shlex.quote(resumed)}{again}")
    collection = any((folders[0] / name).is_file() for name in ("suite_metadata.json", "trend_metadata.json"))
    folder = folders[0] if collection else folders[-1]
    options = {o for p in getattr(cmd, "params", []) for o in getattr(p, "opts", [])}
    if "--resume" not in options and _finished(folder):  # (a merge interrupted once its folder was in place)
        return f"interrupted after {folder} was written whole (status finished); nothing is lost"
    if "--resume" not in options:
        return (f"interrupted: the unfinished folder {folder} cannot be resumed (stratbench {' '.join(words)} "
                "has no --resume); run the command again")
    given, url, secret = _given_again(cmd, words, args[len(words):])
    again = f" --base-url {shlex.quote(url)}" if url else ""
    note = "credentials are never saved: put the password where *** is; " if secret else ""
    return (f"interrupted: finished records are saved in {folder}; {note}continue with: "
            f"stratbench {' '.join(words + given)} --resume {shlex.quote(str(folder))}{again}")


def _finished(folder: Path) -> bool:
    """Whether the folder's run.json says finished (unreadable: not)."""
    import json

    try:
        meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(meta, dict) and meta.get("status") == "finished"


def _resumed_folder(args: list[str]) -> str | None:
    """The folder a ``--resume FOLDER`` on the command line names, if any."""
    for i, a in enumerate(args):
        if a == "--resume" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--resume="):
            return a.partition("=")[2]
    return None


def _given_again(cmd: Any, words: list[str], rest: list[str]) -> tuple[list[str], str | None, bool]:
    """What a resume needs again from the interrupted command line: its positional arguments (a
    suite file: a URL with credentials in it is saved redacted) and a --base-url that the folder
    does not hold — one with credentials (shown redacted; the user puts the password back, the
    third value says so), or one given to a resume (a server that moved: a runtime setting, never
    saved)."""
    from stratbench.redact import redact_url

    try:
        ctx = cmd.make_context(" ".join(words), list(rest), resilient_parsing=True)
    except Exception:  # noqa: BLE001 - a hint never fails the exit it explains
        return [], None, False
    positional = []
    for p in getattr(cmd, "params", []):
        if getattr(p, "param_type_name", "") == "argument":
            value = ctx.params.get(p.name)
            for v in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(v, str):
                    positional.append(shlex.quote(v))
    url = ctx.params.get("base_url")
    if not isinstance(url, str):
        return positional, None, False
    secret = redact_url(url) != url
    if not secret and not ctx.params.get("resume"):  # (a new run's folder holds its URL)
        return positional, None, False
    return positional, redact_url(url), secret


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM ends a command as Ctrl-C does. Inside an event loop the handler asyncio installed for
    SIGINT is called (it cancels the running work, which then saves what it has and raises
    KeyboardInterrupt); elsewhere KeyboardInterrupt is raised here."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not _on_sigterm:
        handler(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM (a `kill`, a scheduler's stop) is a Ctrl-C: the same line,
    the same exit code (130), the same folders left resumable. A SIGTERM ignored by the caller
    stays ignored; off the main thread signals are left alone."""
    from stratbench.cli.signals import sigterm_as_interrupt

    previous = None
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, sigterm_as_interrupt):  # (the script's, while loading)
        try:
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread
            previous = None
    if previous is None:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _crash_report(exc: BaseException) -> Path | None:
    """Write the traceback of an unexpected error to a file; its path (None if it cannot be written)."""
    import tempfile
    import time
    import traceback

    try:
        folder = Path(tempfile.gettempdir()) / "stratbench-crashes"
        folder.mkdir(exist_ok=True)
        path = folder / f"crash-{time.strftime('%Y%m%d_%H%M%S')}-{os.getpid()}.txt"
        from stratbench.redact import redact_text  # no credentials of a URL in a crash file

        path.write_text(redact_text("".join(traceback.format_exception(exc)) + f"\nargv: {sys.argv}\n"))
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
    # a run stopped from inside one of its tasks (a refused key, --max-cost) ends in the
    # KeyboardInterrupt this boundary turns into its one line; asyncio would also log the stopped
    # task's "exception was never retrieved" with a traceback, depending on when it is collected
    import logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    debug = "--debug" in args or os.environ.get("STRATBENCH_DEBUG", "") not in ("", "0")
    args = [a for a in args if a != "--debug"]
    if len(args) >= 2 and args[0] == "nashgap" and args[1] == "run":
        del args[1]  # `stratbench nashgap run ...` and `stratbench nashgap ...` are the same
    args = expand_multi_value_flags(args)  # `suite tiered --seeds 42 43` (the original's nargs)
    command = typer.main.get_command(app)
    try:
        _check_utf8(args)
    except InputError as e:
        print(f"error: {_one_line(str(e))}", file=sys.stderr)
        sys.exit(2)
    from stratbench.cli.resume_flags import guard_run_commands

    guard_run_commands(command)  # flags a resumed run would ignore: one line, not silence
    folders: list[Path] = []
    try:
        with on_run_folder(folders.append), _sigterm_as_interrupt(), cost_session({}):
            rv = command.main(args=args, prog_name="stratbench", standalone_mode=False)
    except _EXITS as e:
        code = getattr(e, "exit_code", 0)
        if isinstance(e.__cause__, KeyboardInterrupt):  # typer turns Ctrl-C into Exit(130)
            _interrupted(command, args, folders)
        sys.exit(code)
    except (KeyboardInterrupt, typer.Abort):
        _interrupted(command, args, folders)
    except CostStop as e:  # --max-cost: stopped as Ctrl-C stops, resumable
        hint = _resume_hint(command, args, folders).removeprefix("interrupted: ")
        print(f"{e}; {hint}", file=sys.stderr)
        sys.exit(EXIT_MAX_COST)
    except _USAGE_ERRORS as e:
        print(f"error: {e.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except InputError as e:
        print(f"error: {_one_line(str(e))}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:  # the machine refused a file or folder the user named
        from stratbench.files import os_problem  # (result files are named where they are written)

        where = e.filename if e.filename is not None else "a file stratbench was writing or reading"
        print(f"error: {where}: {os_problem(e)}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # a bug: one line and where the traceback is
        from stratbench import interrupts

        if interrupts.arrived():  # a Ctrl-C a library turned into its own error (an extension's
            _interrupted(command, args, folders)  # "ImportError: initialization failed")
        if debug:
            raise
        report = _crash_report(e)
        where = f"the traceback is in {report}" if report else "run with --debug to see the traceback"
        print(f"error: internal error ({type(e).__name__}: {_one_line(str(e))[:300]}) — a bug in stratbench; "
              f"{where}", file=sys.stderr)
        sys.exit(1)
    if rv == 130:  # typer (standalone_mode=False) returns a Ctrl-C as exit code 130
        _interrupted(command, args, folders)
    sys.exit(rv if isinstance(rv, int) else 0)


def _check_utf8(args: list[str]) -> None:
    """One line for a command-line value holding bytes that are not UTF-8 (Python keeps them as
    lone surrogates): every name, spec and path a command takes is written into JSON result files,
    which hold UTF-8 text only — a model name read from a Latin-1 file would otherwise fail only
    when the folder's metadata is written, half made."""
    from stratbench import files

    for i, a in enumerate(args):
        bad = files.first_not_utf8(a)
        if bad is None:
            continue
        if a.startswith("--") and "=" in a:
            flag = a.partition("=")[0]
        elif i > 0 and args[i - 1].startswith("-"):
            flag = args[i - 1]
        else:
            flag = f"argument {a.encode('utf-8', 'surrogateescape')[:60]!r}"
        raise InputError(f"{flag}: the value holds bytes that are not UTF-8 text (0x{ord(bad) - 0xdc00:02x}); "
                         "give it as UTF-8")


def _interrupted(command: Any, args: list[str], folders: list[Path]) -> None:
    """A Ctrl-C (exit 130), or a provider that refused the API key (exit 2): one line, and how to
    finish the run."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # stopping already: a second signal does not cut the line short
        with contextlib.suppress(ValueError):  # (off the main thread)
            signal.signal(sig, signal.SIG_IGN)
    why = halted()
    hint = _resume_hint(command, args, folders)
    if why is None:
        print(hint, file=sys.stderr)
        sys.exit(130)
    hint = hint.removeprefix("interrupted: ").replace("finished records are saved in", "the run stays resumable in")
    print(f"error: {_one_line(why)}; {hint}", file=sys.stderr)
    sys.exit(2)


def _one_line(text: str) -> str:
    from stratbench.redact import redact_text  # no credentials of a URL in an error line

    return redact_text(" ".join(text.split()))


if __name__ == "__main__":  # pragma: no cover
    main()
