"""Warnings a backend gives while a command runs (a cache it cannot use, a fast path it turned
off): one line on stderr each, never a second line that could pass for another message."""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    """One warning line on stderr: a control character in `message` (a path holding a line break)
    is shown escaped."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    print(f"warning: {shown}", file=sys.stderr)
