"""SIGTERM as Ctrl-C while the command line loads: the handler the console script installs and
`cli.main` recognises (its own module, so neither of the two imports the other for it)."""

from __future__ import annotations

from types import FrameType


def sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM while the command line loads: a Ctrl-C."""
    raise KeyboardInterrupt
