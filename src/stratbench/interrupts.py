"""Ctrl-C or SIGTERM that a library swallowed.

A KeyboardInterrupt raised while a C extension initialises (scipy's HiGHS wrapper, pydantic-core,
torch — imported lazily once a command knows what it needs) can be swallowed there, so the command
runs on to the end and exits 0, or be turned into ``ImportError: initialization failed``, which would
read as a bug. Python's own signal handler writes every signal it receives to a "wakeup" file
descriptor, whoever handles the exception after it: the console script points that descriptor at a
pipe (`watch`), and the runner asks, at the moments that matter (before it creates a folder, after
its event loop returns), whether a signal came that nobody acted on (`checkpoint`). Where `watch` was
not called (stratbench used as a library, in-process tests) both are no-ops.
"""

from __future__ import annotations

import contextlib
import os
import signal

_STOP = {int(signal.SIGINT), int(signal.SIGTERM)}
_read_end: list[int] = []


def watch() -> None:
    """Record from now on every SIGINT and SIGTERM this process receives (main thread only; a
    wakeup descriptor another part of the program set is left alone)."""
    if _read_end:
        return
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    try:
        previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        os.close(r)
        os.close(w)
        return
    if previous != -1:  # someone else listens already (an event loop): theirs it stays
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
        return
    _read_end.append(r)


def arrived() -> bool:
    """Whether SIGINT or SIGTERM reached the process since the last question (each signal is
    answered once)."""
    if not _read_end:
        return False
    got = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(_read_end[0], 512):
            got += chunk
    return any(b in _STOP for b in got)


def checkpoint() -> None:
    """Raise the KeyboardInterrupt a signal should have raised, where one came and the program is
    still going (its KeyboardInterrupt was swallowed, or its task's cancellation was)."""
    if arrived():
        raise KeyboardInterrupt
