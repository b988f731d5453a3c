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

from stratbench.cli.signals import sigterm_as_interrupt

INTERRUPTED_EARLY = "interrupted before anything was written; nothing to resume"
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def run() -> None:
    main_thread = threading.current_thread() is threading.main_thread()
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
    except KeyboardInterrupt:  # before main()'s own error boundary: nothing was written
        print(INTERRUPTED_EARLY, file=sys.stderr)
        sys.exit(130)
