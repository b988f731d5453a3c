"""Deterministic work splitting for scale-out: `--shard i/n` on every run command.

A run's units of work (trials, games, episodes, pairs) are first listed in their full,
seed-determined order, exactly as an unsharded run lists them; shard ``i`` of ``n`` then keeps the
units whose position ``p`` in that list has ``p % n == i - 1`` (round-robin, so shards are balanced
even when later units are more expensive). Shards are numbered from 1, as Playwright and pytest-split
do, so ``1/3, 2/3, 3/3`` are the three shards. Each unit keeps the seed it has in the unsharded run,
which is what makes ``stratbench merge`` of all shards identical to an unsharded run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, TypeVar

from stratbench.errors import InputError

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``. ``Shard(1, 1)`` is the whole run."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise InputError(f"--shard {self.index}/{self.count}: need 1 <= i <= n")

    @property
    def whole(self) -> bool:
        return self.count == 1

    def owns(self, position: int) -> bool:
        """Whether the unit at ``position`` (0-based, in the unsharded order) is this shard's."""
        return position % self.count == self.index - 1

    def select(self, units: Sequence[T]) -> list[T]:
        """This shard's units, in their unsharded order."""
        return [u for p, u in enumerate(units) if self.owns(p)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict[str, int] | None:
        """How run.json records the shard (None for an unsharded run)."""
        return None if self.whole else {"index": self.index, "count": self.count}


WHOLE = Shard()

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(spec: str | Shard | None) -> Shard:
    """``"2/3"`` → ``Shard(2, 3)``; None → the whole run. Bad specs raise InputError."""
    if spec is None:
        return WHOLE
    if isinstance(spec, Shard):
        return spec
    m = _SPEC.match(str(spec))
    if not m:
        raise InputError(f"--shard {str(spec)[:40]!r}: expected i/n, e.g. 1/3")
    if any(len(g.lstrip("0")) > 9 for g in m.groups()):  # (more shards than any run has units; no int() of 5,000 digits)
        raise InputError(f"--shard {str(spec)[:40]!r}{'…' if len(str(spec)) > 40 else ''}: a number of shards "
                         "over 999,999,999")
    return Shard(int(m.group(1)), int(m.group(2)))


def shard_from_json(value: Any) -> Shard:
    """Inverse of :meth:`Shard.to_json` (run.json's ``config.shard``)."""
    if not value:
        return WHOLE
    if isinstance(value, str):
        return parse_shard(value)
    return Shard(int(value["index"]), int(value["count"]))


def check_shard_count(shard: Shard, n_units: int, what: str) -> None:
    """InputError when ``shard`` splits ``n_units`` units of work into more shards than there are
    units (some shard would be empty): the one check every run command makes."""
    if shard.count > n_units:
        raise InputError(f"--shard {shard}: more shards than {what} ({n_units})")


def check_complete(shards: Iterable[Shard]) -> int:
    """The shard count if ``shards`` are exactly 1..n of one n, else InputError saying what is off."""
    got = list(shards)
    counts = {s.count for s in got}
    if len(counts) != 1:
        raise InputError(f"shards come from different splits: {sorted(str(s) for s in got)}")
    n = counts.pop()
    idx = sorted(s.index for s in got)
    if idx != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(idx))
        dup = sorted({i for i in idx if idx.count(i) > 1})
        parts = []
        if missing:
            parts.append("missing " + ", ".join(f"{i}/{n}" for i in missing))
        if dup:
            parts.append("duplicated " + ", ".join(f"{i}/{n}" for i in dup))
        raise InputError("cannot merge: " + "; ".join(parts))
    return n


def as_shard(value: Any) -> Shard:
    """A shard from whatever a config holds: None, a Shard, the CLI's ``"i/n"`` text, or run.json's
    ``{"index", "count"}`` (so a resumed run keeps its shard)."""
    if isinstance(value, Shard):
        return value
    if isinstance(value, dict):
        return shard_from_json(value)
    return parse_shard(value)


def shard_tag(shard: Shard) -> str | None:
    """The folder-name suffix of a shard (``shard2of3``), None for a whole run: shards copied
    together from several machines then never collide."""
    return None if shard.whole else f"shard{shard.index}of{shard.count}"
