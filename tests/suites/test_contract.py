"""The suite contract, checked over every registered suite (a suite added through the registry or
an entry point is held to it without a test of its own): what the workflows, the report and the
CLI assume of a suite without knowing it.

* Its names: a registry name, a result-folder family and kinds, unique as a pair.
* Its CLI module exists and mounts itself (``register(app)``); its scorecard part, where it names
  one, imports.
* It owns its own run.json (suite + kind) and no other suite's; its marker files identify a folder
  without run.json as its own.
* It declares its config class (``SuiteBase[C]``), and what it promises, it implements: a suite
  whose runs take ``--shard`` merges the shards, one that appears in suite files plans jobs, one that names compare metrics
  gives compare its units.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import typing
from typing import Any

import pytest

from stratbench.suites import all_suites, suite_for_run, suite_of_files
from stratbench.suites.base import SuiteBase

SUITES = all_suites()
IDS = [s.name for s in SUITES]


def _overrides(suite: SuiteBase[Any], method: str) -> bool:
    return getattr(type(suite), method) is not getattr(SuiteBase, method)


def _config_class(suite: SuiteBase[Any]) -> type:
    """C of the suite's SuiteBase[C] (through generic intermediate bases)."""
    for cls in type(suite).__mro__:
        for base in getattr(cls, "__orig_bases__", ()):
            for arg in typing.get_args(base):
                if isinstance(arg, typing.ForwardRef):  # "NashgapConfig": a class of the suite's package
                    arg = _in_package(cls.__module__.rsplit(".", 1)[0], arg.__forward_arg__)
                if isinstance(arg, type) and dataclasses.is_dataclass(arg):
                    return arg
    raise AssertionError(f"{suite.name} declares no config class")


def _in_package(package: str, name: str) -> Any:
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        found = getattr(importlib.import_module(f"{package}.{info.name}"), name, None)
        if found is not None:
            return found
    return None


def test_names_are_set_and_each_run_kind_has_one_suite():
    assert len(set(IDS)) == len(IDS) and all(IDS)
    owners = [(s.family, k) for s in SUITES for k in s.kinds]
    assert all(f and k for f, k in owners) and len(set(owners)) == len(owners)


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_a_suite_mounts_its_cli_and_scorecard_part(suite):
    if suite.cli is not None:
        assert callable(importlib.import_module(suite.cli).register)
    if suite.scorecard is not None:
        assert suite.scorecard_part() is not None


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_a_suite_owns_its_own_runs_and_no_others(suite):
    for kind in suite.kinds:
        meta = {"suite": suite.family, "kind": kind, "config": {}}
        assert suite.owns(meta) and suite_for_run(meta) is suite
    for other in SUITES:
        if other.family != suite.family:
            assert not suite.owns({"suite": other.family, "kind": other.kinds[0], "config": {}})
    if suite.marker_files:
        assert suite.detect(set(suite.marker_files))
        found = suite_of_files(set(suite.marker_files))
        assert found is not None and found.family == suite.family


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_a_suite_implements_what_it_promises(suite):
    shardable = "shard" in {f.name for f in dataclasses.fields(_config_class(suite))}
    if _overrides(suite, "run") and shardable:  # (a run's shards, or a collection's: the tiered suite)
        assert _overrides(suite, "merge") or _overrides(suite, "merge_collection"), \
            f"{suite.name} runs in shards but cannot merge them"
    if suite.in_suite_files:
        assert _overrides(suite, "jobs"), f"{suite.name} takes a suite-file section but plans no jobs"
    if suite.compare_metrics:
        assert _overrides(suite, "compare_units"), f"{suite.name} names compare metrics but gives no units"


def _plans(package: str) -> list[type]:
    from stratbench.runner.lifecycle import RunPlan

    pkg = importlib.import_module(package)
    out = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{package}.{info.name}")
        out += [c for c in vars(mod).values() if isinstance(c, type) and issubclass(c, RunPlan) and c is not RunPlan]
    return out


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_a_suite_writes_its_own_version(suite):
    """run.json's suite_version is the suite entry's version: every RunPlan of the suite's package that
    writes one of its kinds says the same number (a suite that bumps one and not the other is caught)."""
    assert isinstance(suite.version, int) and suite.version >= 1
    plans = [p for p in _plans(type(suite).__module__.rsplit(".", 1)[0])
             if getattr(p, "suite", None) == suite.family and getattr(p, "kind", None) in suite.kinds]
    for p in plans:
        assert p.version == suite.version, f"{p.__name__} writes suite_version {p.version}, {suite.name} is {suite.version}"


# -- scripted players: one roster per suite, the suite's own players ---------------------------------

MODEL_SPECS = ("embedded", "embedded-instruct", "openai:gpt-4o", "gguf:ckpt.gguf", "openai-compatible:m")


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_no_scripted_roster_takes_a_model_spec(suite):
    assert not any(suite.scripted.matches(s) for s in MODEL_SPECS)


def test_each_roster_is_its_suites_own_players():
    """The rosters the workflows ask are the players each suite plays (declared where the suite
    module stays light; held equal here)."""
    from stratbench.suites import get_suite
    from stratbench.suites.chbench.players import scripted_agent
    from stratbench.suites.nashgap.players import SCRIPTED_AGENTS
    from stratbench.suites.tmgbench.complex_run import COMPLEX_SCRIPTED
    from stratbench.suites.tmgbench.config import SCRIPTED

    assert set(get_suite("nashgap").scripted.names) == set(SCRIPTED_AGENTS) == set(get_suite("tiered").scripted.names)
    assert set(get_suite("tmgbench").scripted.names) == set(SCRIPTED)
    assert set(get_suite("tmgbench-complex").scripted.names) == set(COMPLEX_SCRIPTED)
    ch = get_suite("chbench").scripted
    for spec in ("random", "level-0", "first-action", "level-k:0", "Level-K:3", "poisson:1.5", "poisson:.5"):
        assert ch.matches(spec) and scripted_agent(spec) is not None, spec
    for spec in ("level-k", "poisson:", "poisson:x", "nash", "uniform"):
        assert not ch.matches(spec), spec
    assert not get_suite("tom").scripted.names and not get_suite("tom").scripted.patterns


@pytest.mark.parametrize("section,spec,owner", [
    ("tom", "random", "nashgap and chbench"),
    ("tom", "Nash", "nashgap"),
    ("chbench", "nash", "nashgap"),
    ("tmgbench", "level-k:1", "chbench"),
    ("nashgap", "oracle", "tmgbench"),
])
def test_a_suite_file_naming_another_suites_scripted_player_is_told_so(section, spec, owner):
    from stratbench.errors import InputError
    from stratbench.suites import get_suite
    from stratbench.suites.base import SuiteModel

    suite = get_suite(section)
    with pytest.raises(InputError) as e:
        suite.jobs("f.toml", {}, [SuiteModel(spec, spec)], [0])
    assert str(e.value).startswith(f"f.toml: [{section}] model {spec!r} is a scripted player of {owner}; "
                                   f"{section}'s scripted players: {suite.scripted.listing()}"), str(e.value)
