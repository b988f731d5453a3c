"""Named, lazily imported plug-ins: the one registry pattern behind suites and model backends.

An entry maps a name to ``"package.module:object"``; the module is imported the first time the
name is looked up, so listing what exists costs nothing and ``import stratbench`` never pulls in
torch, llama.cpp or a suite's dependencies. Objects may also be registered directly (tests, user
code), and installed packages can add entries through the entry-point group given to the registry
(``[project.entry-points."stratbench.suites"] mysuite = "mypkg.suite:SUITE"``). An unknown name is
one clear error line with the closest known names, as lm-evaluation-harness's registry does.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from stratbench.errors import InputError

T = TypeVar("T")


def import_object(target: str) -> object:
    """The object named by ``"package.module:attr"`` (attr may be dotted)."""
    module_name, _, attr = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Name → object, imported on first use. ``what`` names the kind in error messages."""

    def __init__(self, what: str, entries: dict[str, str] | None = None,
                 entry_point_group: str | None = None) -> None:
        self.what = what
        self._targets: dict[str, str | T] = dict(entries or {})
        self._loaded: dict[str, T] = {}
        self._group = entry_point_group
        self._plugins_read = entry_point_group is None

    def register(self, name: str, target: str | T, *, replace: bool = False) -> None:
        """Add ``name`` (a ``"module:object"`` string or the object itself)."""
        self._read_plugins()
        if name in self._targets and not replace:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._targets[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)
        self._loaded.pop(name, None)

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self._group or ""):
            self._targets.setdefault(ep.name, ep.value)

    def names(self) -> list[str]:
        self._read_plugins()
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        self._read_plugins()
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def suggest(self, name: str) -> str:
        """' (did you mean x?)' for a close known name, else the list of known names."""
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        if close:
            return f"; did you mean {' or '.join(close)}?"
        return f"; known: {', '.join(self.names())}"

    def get(self, name: str) -> T:
        """The object registered as ``name``; InputError (with suggestions) when unknown."""
        self._read_plugins()
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            raise InputError(f"unknown {self.what} {name!r}{self.suggest(name)}")
        target = self._targets[name]
        obj = import_object(target) if isinstance(target, str) else target
        self._loaded[name] = obj  # type: ignore[assignment]
        return obj  # type: ignore[return-value]
