"""Exceptions shared by every subpackage.

`InputError` is the one type the CLI turns into a single clear line and exit code 2: anything the
user can fix (a malformed game file, a bad flag value, an unknown agent) raises it, so no bad input
ever surfaces as a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: the message is shown to the user as one line."""


class GameFormatError(InputError):
    """A game (or games file) that is not a valid finite normal-form game."""
