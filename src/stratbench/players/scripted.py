"""The scripted (reference) players a suite plays without any model: one declaration per suite.

Each suite entry names its scripted players here (`SuiteBase.scripted`), so the workflows and every
suite's planning can tell a scripted player from a model spec by asking, instead of by a list copied
into each module (or by a model spec failing to parse): a suite file that names another suite's
scripted player for a suite is told so in one line, and the model checks before a collection's
folder skip exactly the suite's own reference players.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ScriptedRoster:
    """A suite's scripted players: ``names`` (matched case-insensitively) and ``patterns`` (full-match
    regular expressions of parametrised players, e.g. ``level-k:\\d+``); ``help`` is how the suite's
    messages list them."""

    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    help: str = ""

    def matches(self, spec: str) -> bool:
        s = spec.strip().lower()
        return s in self.names or any(re.fullmatch(p, s) for p in self.patterns)

    def listing(self) -> str:
        """The players as a message lists them."""
        return self.help or ", ".join(self.names) or "none"


NO_SCRIPTED = ScriptedRoster()
"""A suite whose every player is a model (ToM's model runs: its reference is `tom baseline`)."""
