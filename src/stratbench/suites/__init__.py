"""The benchmarks, each a self-contained package behind one interface (:mod:`.base`), and the
registry that names them.

Packages: ``nashgap`` (zero-sum matrix games; the tiered research suite), ``tmgbench`` (the 144
Robinson–Goforth games), ``chbench`` (cognitive-hierarchy levels from repeated play), ``tom``
(functional theory of mind). A suite package may import the core (games, solvers, models, runner,
parsing, render, stats) and its own modules, never another suite, the workflows, the report or the
CLI; the workflows, the report and the CLI reach a suite only through :data:`SUITES`.

Adding a suite (e.g. your own games or repeated-game protocol):

1. Write a package ``stratbench/suites/<name>/`` with a config dataclass, a
   :class:`~stratbench.runner.lifecycle.RunPlan` (its units of work, records and summary) and a
   ``suite.py`` holding an instance of a :class:`~stratbench.suites.base.SuiteBase` subclass whose
   ``run`` calls :func:`~stratbench.runner.lifecycle.execute` (override the optional hooks it
   supports: ``merge``, ``jobs`` for suite files, ``headline``, ``compare_units``, ``report_view``).
2. Add one line to :data:`SUITES` below (or, from another package, an entry point in the group
   ``stratbench.suites``).
3. Give it a CLI module (``stratbench/cli/<name>.py`` with ``register(app)``), named by the suite's
   ``cli`` attribute, and tests under ``tests/suites/<name>/``.

Nothing in the workflows, the report or the runner changes: `stratbench suite run`, `merge`,
`compare` and `report` find the new suite here (``tests/suites/test_toy_suite.py`` does exactly
this with a ten-line matching-pennies suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratbench.errors import InputError
from stratbench.registry import Registry
from stratbench.suites.base import Suite, SuiteBase

#: registry name → "module:object"; imported on first use
SUITES: Registry[SuiteBase[Any]] = Registry("suite", {
    "nashgap": "stratbench.suites.nashgap.suite:NASHGAP",
    "tiered": "stratbench.suites.nashgap.suite:TIERED",
    "tmgbench": "stratbench.suites.tmgbench.suite:ATOMIC",
    "tmgbench-complex": "stratbench.suites.tmgbench.suite:COMPLEX",
    "tmgbench-stories": "stratbench.suites.tmgbench.suite:STORIES",
    "chbench": "stratbench.suites.chbench.suite:PLAY",
    "chbench-fit": "stratbench.suites.chbench.suite:FIT",
    "tom": "stratbench.suites.tom.suite:MODEL_RUN",
    "tom-baseline": "stratbench.suites.tom.suite:BASELINE",
}, entry_point_group="stratbench.suites")


def get_suite(name: str) -> SuiteBase[Any]:
    """The registered suite ``name`` (InputError with close names when unknown)."""
    return SUITES.get(name)


def all_suites() -> list[SuiteBase[Any]]:
    return [SUITES.get(n) for n in SUITES.names()]


SuiteBase.siblings = staticmethod(all_suites)  # type: ignore[assignment]


def suite_for_run(meta: Mapping[str, Any], where: str = "") -> SuiteBase[Any]:
    """The suite that wrote a run.json (by its "suite" and "kind")."""
    from stratbench.runner.folders import check_suite_version

    for s in all_suites():
        if s.owns(meta):
            check_suite_version(meta, s.version, where or f"{meta.get('suite')} run", older_ok=True)
            return s
    what = f"{meta.get('suite')!r}" + (f" ({meta.get('kind')})" if meta.get("kind") else "")
    raise InputError(f"{where + ': ' if where else ''}no registered suite reads {what} runs")


def suite_of_files(names: set[str]) -> SuiteBase[Any] | None:
    """The suite a folder without run.json most likely belongs to (by its file names)."""
    for s in all_suites():
        if s.detect(names):
            return s
    return None


__all__ = ["SUITES", "Suite", "SuiteBase", "all_suites", "get_suite", "suite_for_run", "suite_of_files"]
