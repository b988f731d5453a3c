"""The errors stratbench raises on purpose, shared by every subpackage.

`StratbenchError` is the family; `InputError` is the one the CLI turns into a single clear line
(`error: <file or flag>: <problem>`) and exit code 2: anything the user can fix — a malformed game
file, a bad flag value, an unknown model, a broken result folder, a folder another process is
writing — raises it, so no bad input ever surfaces as a traceback. Any other exception is a bug:
the CLI says so in one line and writes the traceback to a file (`--debug` shows it).
"""

from __future__ import annotations


class StratbenchError(Exception):
    """Base of every error the library raises on purpose."""


class InputError(StratbenchError, ValueError):
    """Bad user input: the message is shown to the user as one line."""


class BaseUrlNotApplicable(InputError):
    """--base-url given to a run with no HTTP model. Its own type because run folders made before
    it was refused (it was ignored) hold such a URL in their saved config, which a resume drops."""


class GameFormatError(InputError):
    """A game (or games file) that is not a valid finite normal-form game."""


class FolderBusyError(InputError):
    """A result folder another stratbench process is writing (a second writer is refused)."""


class OutputWriteError(InputError):
    """A result file the machine would not let stratbench write (disk full, quota, read-only file
    system, permission): one line naming the file. Nothing half-written is left behind, and a run
    stopped by it is finished with --resume once there is room."""
