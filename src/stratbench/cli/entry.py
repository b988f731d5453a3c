"""The console script `stratbench` (and `python -m stratbench`): Ctrl-C or SIGTERM while the
command line is still being imported — numpy, pydantic, typer take a moment — ends with one line
and exit 130, never a traceback, and never half an import.

Both signals are blocked while the modules load (a KeyboardInterrupt raised inside Python's import
machinery can be swallowed there, and the command would then run on) and unblocked once they are
loaded: a signal that came meanwhile is delivered right then, as a KeyboardInterrupt caught here.
SIGTERM is a Ctrl-C from this moment on; `cli.main.main` keeps it so for the command."""

from __future__ import annotations

import signal
import sys
import threading

from stratbench import interrupts
from stratbench.cli.signals import sigterm_as_interrupt

INTERRUPTED_EARLY = "interrupted before anything was written; nothing to resume"
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def run() -> None:
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        interrupts.watch()  # a Ctrl-C a library swallows later is still seen (stratbench.interrupts)
    block = main_thread and hasattr(signal, "pthread_sigmask")
    if block:
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        if main_thread and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, sigterm_as_interrupt)
        try:
            from stratbench.cli import main as cli_main
            from stratbench.cli import suite as _suite  # noqa: F401 - what main() imports first
            from stratbench.runner import lifecycle as _lifecycle  # noqa: F401
        finally:
            if block:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)  # a pending signal is delivered here
        cli_main.main()
    except SystemExit:
        _settled()  # the command's outcome is decided: a late signal must not turn it into a death by signal
        raise
    except KeyboardInterrupt:  # before main()'s own error boundary: nothing was written
        _settled()
        print(_early_line(sys.argv[1:]), file=sys.stderr)
        sys.exit(130)


def _settled() -> None:
    """Ignore Ctrl-C and SIGTERM from here to the exit: the command has finished or is stopping
    with its line printed, and a signal landing now (in the interpreter's shutdown, the joining
    of worker threads) would otherwise end the process by the signal, with no line, after a run
    that finished."""
    if threading.current_thread() is threading.main_thread():
        for sig in _SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def _early_line(args: list[str]) -> str:
    """The line for a signal before the command began: a resume names its folder (unchanged) and
    the command that finishes it (the same command again)."""
    import shlex

    for i, a in enumerate(args):
        folder = a.partition("=")[2] if a.startswith("--resume=") else (
            args[i + 1] if a == "--resume" and i + 1 < len(args) else None)
        if folder:
            again = " ".join(shlex.quote(x) for x in args)
            return f"interrupted before {folder} was changed; continue with: stratbench {again}"
    return INTERRUPTED_EARLY
