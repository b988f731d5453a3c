"""The config rules declared once (stratbench.checks): every suite's seed, temperature, counts and
lists are refused the same way, with one line naming the flag."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratbench.checks import (
    MAX_UNITS,
    RULES,
    SEED_MAX,
    Floats,
    Ints,
    Items,
    check_config,
    check_units,
    check_value,
    flag_name,
)
from stratbench.errors import InputError


@dataclass
class Cfg:
    """A config with fields the table names, and one it does not."""

    seed: Any = None
    temperature: Any = 1.0
    max_tokens: Any = 16
    num_games: Any = 10
    model: Any = None
    models: Any = field(default_factory=lambda: ["a"])
    opponents: Any = field(default_factory=list)
    games: Any = None
    chat: Any = False
    prompting: Any = "whatever"  # not in the table: left to the suite


def refused(cfg: Cfg, **kw: Any) -> str:
    with pytest.raises(InputError) as e:
        check_config(cfg, **kw)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_defaults_pass_and_unknown_fields_are_left_alone():
    check_config(Cfg())
    check_config(Cfg(prompting=None, games="111,444", seed=0, model="m"))


@pytest.mark.parametrize("kw, message", [
    ({"seed": -1}, "--seed must be at least 0 (got -1)"),
    ({"seed": SEED_MAX + 1}, f"--seed must be at most {SEED_MAX} (got {SEED_MAX + 1})"),
    ({"seed": 1.0}, "--seed must be an integer (got 1.0)"),
    ({"seed": True}, "--seed must be an integer (got True)"),
    ({"seed": "3"}, "--seed must be an integer (got '3')"),
    ({"temperature": math.nan}, "--temperature must be a finite number (got nan)"),
    ({"temperature": math.inf}, "--temperature must be a finite number (got inf)"),
    ({"temperature": -1}, "--temperature must be at least 0 (got -1)"),
    ({"temperature": 11.0}, "--temperature must be at most 10 (got 11.0)"),
    ({"temperature": False}, "--temperature must be a number (got False)"),
    ({"max_tokens": 0}, "--max-tokens must be at least 1 (got 0)"),
    ({"num_games": 0}, "--num-games must be at least 1 (got 0)"),  # pinned by the golden errors
    ({"num_games": 10**12}, "--num-games must be at most 100000 (got 1000000000000)"),
    ({"num_games": 2.5}, "--num-games must be an integer (got 2.5)"),
    ({"model": ""}, "--model must not be empty"),
    ({"model": "  "}, "--model must not be empty"),
    ({"model": 3}, "--model must be a string (got 3)"),
    ({"models": []}, "--models: give at least one value"),
    ({"models": [""]}, "--models: give at least one value"),
    ({"models": ["a", ""]}, "--models: empty item"),
    ({"models": ["a", "b", "a"]}, "--models: 'a' is listed twice"),
    ({"models": "a"}, None),  # a comma list is a list
    ({"opponents": ["r", "r"]}, "--opponents: 'r' is listed twice"),
    ({"games": ""}, "--games: give at least one value"),
    ({"games": "111, 111"}, "--games: '111' is listed twice"),
    ({"games": "111,,444"}, "--games: empty item in '111,,444'"),
    ({"games": 111}, "--games must be a list (got 111)"),
    ({"chat": "yes"}, "--chat must be true or false (got 'yes')"),
    ({"chat": 1}, "--chat must be true or false (got 1)"),
])
def test_each_rule_refuses_with_one_line_naming_the_flag(kw, message):
    cfg = Cfg(**kw)
    if message is None:
        check_config(cfg)
    else:
        assert refused(cfg) == message


def test_empty_optional_lists_and_none_pass():
    check_config(Cfg(opponents=[], seed=None, model=None, games=None, chat=None))


def test_flag_names_can_be_renamed_or_left_to_the_config():
    assert refused(Cfg(games="1,1"), flags={"games": "--game"}) == "--game: '1' is listed twice"
    check_config(Cfg(games="1,1"), flags={"games": None})
    check_config(Cfg(seed=-1), only=("temperature",))
    assert refused(Cfg(seed=-1), only=("seed",)).startswith("--seed")


def test_fields_are_checked_in_their_declared_order():
    assert refused(Cfg(seed=-1, num_games=0)).startswith("--seed")


def test_needs_a_config_instance():
    with pytest.raises(TypeError):
        check_config(Cfg)
    with pytest.raises(TypeError):
        check_config({"seed": 1})


def test_the_table_covers_the_shared_fields():
    for name in ("seed", "llm_seed", "seeds", "temperature", "max_tokens", "max_concurrency", "num_games",
                 "num_trials", "rounds", "episodes", "repeats", "num_tasks", "restarts", "bootstrap",
                 "variants", "max_attempts", "max_tries", "order_rotations",
                 "num_games_per_bucket", "model", "models", "games", "mechanisms", "opponents", "partners"):
        assert name in RULES, name
    for name, rule in RULES.items():
        if isinstance(rule, Ints) and name not in ("num_rows", "num_cols"):
            assert 0 <= rule.lo < rule.hi <= SEED_MAX, name  # every count has a maximum


def test_flag_name():
    assert flag_name("num_games_per_bucket") == "--num-games-per-bucket"


def test_check_units():
    check_units(MAX_UNITS, "--x")
    with pytest.raises(InputError, match=r"--num-games × --num-trials must be at most 10000000 units of work"):
        check_units(MAX_UNITS + 1, "--num-games × --num-trials")


@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                 st.text(max_size=5)))
def test_ints_accept_exactly_the_integers_in_range(value):
    rule = Ints(1, 100)
    ok = value is None or (type(value) is int and 1 <= value <= 100)
    try:
        check_value("--n", value, rule)
    except InputError as e:
        assert not ok and str(e).startswith("--n ")
    else:
        assert ok


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans()))
def test_floats_accept_exactly_the_finite_numbers_in_range(value):
    ok = not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 10
    try:
        check_value("--t", value, Floats(0.0, 10.0))
    except InputError:
        assert not ok
    else:
        assert ok


@given(st.lists(st.sampled_from(["a", "b", "c", " a", ""]), max_size=5))
def test_items_refuse_duplicates_and_empty_items(items):
    stripped = [x.strip() for x in items]
    ok = bool(stripped) and all(stripped) and len(set(stripped)) == len(stripped)
    try:
        check_value("--models", items, Items(RULES["model"]))  # type: ignore[arg-type]
    except InputError:
        assert not ok
    else:
        assert ok


def test_a_suites_own_field_rule_applies_to_its_config_alone():
    """`k` (TMGBench's games per task, at most 144) and `memory` (ToM's Reflexion plans) are the
    suites' own: a new config with a field of the same name is not held to them."""
    from dataclasses import dataclass as dc

    from stratbench.checks import Rule
    from stratbench.suites.chbench.fit_run import FitConfig
    from stratbench.suites.tmgbench.complex_run import ComplexConfig
    from stratbench.suites.tom.model_run import TomRunConfig

    for shared_only in ("k", "memory", "k_hat"):
        assert shared_only not in RULES

    @dc
    class Other:
        k: int = 200
        memory: int = 50

    check_config(Other())  # no rule of another suite's
    with pytest.raises(InputError, match=r"^--k must be at most 144 \(got 200\)$"):
        check_config(ComplexConfig(k=200))
    with pytest.raises(InputError, match=r"^--memory must be at most 9 \(got 10\)$"):
        check_config(TomRunConfig(memory=10))
    with pytest.raises(InputError, match=r"^--k-hat must be at most 6 \(got 7\)$"):
        check_config(FitConfig(data="x.csv", k_hat=7))

    @dc
    class Own:
        k: int = 5
        FIELD_RULES: ClassVar[dict[str, Rule]] = {"k": Ints(1, 3)}

    with pytest.raises(InputError, match=r"^--k must be at most 3 \(got 5\)$"):
        check_config(Own())
