"""One writer per result folder: an exclusive advisory lock (flock) on the folder itself, held for
as long as a run writes it. A second `--resume` of the same folder, or a merge writing into it, is
refused with one line instead of interleaving records. The lock needs no file in the folder and
dies with its process, so a killed run never leaves a stale lock behind."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from stratbench.errors import FolderBusyError

try:  # POSIX; elsewhere folders are not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def folder_lock(folder: str | Path) -> Iterator[None]:
    """Hold the folder's lock; FolderBusyError when another process holds it."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(str(folder), os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(f"{folder}: another stratbench process is writing this folder; "
                                  "wait for it to finish (or stop it), then try again") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
