"""Config values checked once for every suite: one table of rules by config field name.

Every suite's config dataclass has fields with shared names (``seed``, ``temperature``,
``max_tokens``, ``num_games``, ``models``, ...). :data:`RULES` says once what each may hold, and
:func:`check_config` applies the table to a config before anything else is checked, so a bad value
is the same one line whichever suite, command or suite file it comes from:

    --num-games must be at least 1 (got 0)
    --seed must be at least 0 (got -1)
    --temperature must be a finite number (got nan)
    --games: '111' is listed twice

Types are checked too (configs also come from suite files): an int field holds an int, not a float
or a bool; a bool field holds a bool; a list holds no empty item and no item twice. Counts have
maxima that keep memory and time sane (a run of 10^12 games would otherwise grow until killed).

Only the standard library and :mod:`stratbench.errors` are imported: any layer may use this module.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Union

from stratbench.errors import InputError

__all__ = [
    "MAX_UNITS", "RULES", "SEED_MAX", "Flag", "Floats", "Ints", "Items", "Rule", "Text",
    "check_config", "check_units", "check_value", "flag_name", "list_items",
]

SEED_MAX = 2**63 - 1  # seeds are unsigned 64-bit for numpy; 63 bits keep them JSON- and SQLite-safe
#: the most units of work (records) one run may ask for: 10^7 records are gigabytes of JSONL
MAX_UNITS = 10_000_000


@dataclass(frozen=True)
class Ints:
    """An integer (never a bool or a float) in ``lo..hi``."""

    lo: int
    hi: int


@dataclass(frozen=True)
class Floats:
    """A finite number (an int is accepted; never a bool) in ``lo..hi``."""

    lo: float
    hi: float


@dataclass(frozen=True)
class Flag:
    """A bool (``true``/``false`` in a suite file, not ``"yes"`` or 1)."""


@dataclass(frozen=True)
class Text:
    """A non-empty string (not only spaces)."""


@dataclass(frozen=True)
class Items:
    """A list (or a comma-separated string) with at least one item, no empty item and no item
    twice; each item obeys ``each`` when given."""

    each: Ints | Text | None = None


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of strings."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Str:
    """A string, possibly empty (a file's path: its own check says what an empty one means)."""


@dataclass(frozen=True)
class TagPair:
    """``"OPEN,CLOSE"``: two different non-empty tags (--think-tags)."""


def tag_pair(flag: str, value: str) -> tuple[str, str]:
    """The (opening, closing) tags of ``"OPEN,CLOSE"`` (spaces around a tag dropped); one line
    naming ``flag`` for a value that names no usable pair."""
    parts = value.split(",") if isinstance(value, str) else []
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise InputError(f"{flag}: give the opening and the closing tag, comma-separated "
                         f"(\"<think>,</think>\"; got {value!r})")
    open_tag, close_tag = (p.strip() for p in parts)
    if any(not c.isprintable() for c in open_tag + close_tag):  # (no reply holds such a tag as written)
        raise InputError(f"{flag}: a tag holds a control or unprintable character (got {value!r})")
    if max(len(open_tag), len(close_tag)) > 100:
        raise InputError(f"{flag}: a tag of more than 100 characters (got one of "
                         f"{max(len(open_tag), len(close_tag)):,} characters)")
    if open_tag == close_tag:
        raise InputError(f"{flag}: the opening and the closing tag must differ (got {value!r})")
    return open_tag, close_tag


Rule = Union[Ints, Floats, Flag, Text, Items, Choice, TagPair, Str]

#: --reasoning-effort: the values OpenAI's reasoning_effort takes (the other providers' thinking
#: budgets are mapped from them: stratbench.models.reasoning.THINKING_BUDGETS)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")

SEED = Ints(0, SEED_MAX)
ANY_INT = Ints(-SEED_MAX - 1, SEED_MAX)

#: field name → what it may hold, for the fields every suite shares (seeds, sampling, HTTP, counts,
#: players, switches). ``None`` always passes: a config fills its own default. A rule that only
#: one suite's field means (TMGBench's ``k`` games per task, ToM's ``memory``) is declared on that
#: config, in its ``FIELD_RULES`` class attribute, and applies to that config alone.
RULES: dict[str, Rule] = {
    # seeds
    "seed": SEED,
    "llm_seed": SEED,
    "seeds": Items(SEED),
    # sampling and model calls
    "temperature": Floats(0.0, 10.0),
    "max_tokens": Ints(1, 1_000_000),
    "reasoning_effort": Choice(REASONING_EFFORTS),
    "think_tags": TagPair(),
    "max_concurrency": Ints(1, 1024),
    "num_workers": Ints(1, 1024),
    # HTTP requests: a timeout above 0 (a millisecond at least), retries, waiting for a server
    "timeout": Floats(0.001, 3600.0),
    "retries": Ints(0, 20),
    "wait_for_server": Floats(0.0, 3600.0),
    # counts
    "num_games": Ints(1, 100_000),
    "num_trials": Ints(1, 100_000),
    "num_games_per_bucket": Ints(1, 100_000),
    "rounds": Ints(1, 10_000),
    "episodes": Ints(1, 100_000),
    "repeats": Ints(1, 10_000),
    "num_tasks": Ints(1, 100_000),
    "restarts": Ints(1, 10_000),
    "bootstrap": Ints(0, 100_000),
    "variants": Ints(1, 1_000),
    "max_attempts": Ints(1, 100),
    "max_tries": Ints(1, 100),
    "order_rotations": Ints(1, 1_000),
    "decimals": Ints(0, 10),
    "num_rows": ANY_INT,  # type only: each suite says its own game sizes
    "num_cols": ANY_INT,
    "payoff_min": Floats(-1e12, 1e12),
    "payoff_max": Floats(-1e12, 1e12),
    # players and lists
    "model": Text(),
    "llm_type": Text(),
    "llm_model": Text(),
    "base_url": Text(),
    # files a run reads (a saved run.json holding another type is refused, never opened)
    "chat_template": Str(),
    "corrections": Str(),
    "price_table": Str(),
    "games_file": Str(),
    "stories_dir": Str(),
    "models": Items(Text()),
    "opponents": Items(Text()),
    "partners": Items(Text()),
    "games": Items(Text()),
    "mechanisms": Items(Text()),
    # switches
    "no_cache": Flag(),
    "chat": Flag(),
    "combined": Flag(),
    "mixed_strategy": Flag(),
    "overwrite": Flag(),
    "parallel": Flag(),
    "self_play": Flag(),
    "prefix_reuse": Flag(),
    "keep_prompts": Flag(),
    "predict": Flag(),
    "history": Flag(),
    "payoffs": Flag(),
    "use_dummy": Flag(),
}

#: lists that may be empty (extra players are optional)
MAY_BE_EMPTY = frozenset({"opponents"})


def flag_name(field: str) -> str:
    """The flag of a config field: ``num_games`` → ``--num-games``."""
    return "--" + field.replace("_", "-")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def list_items(flag: str, value: Any) -> list[Any]:
    """A list field's items: a list or tuple as it is, a string split at commas (``"111,444"``)."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",")]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InputError(f"{flag} must be a list (got {value!r})")


def _check_range(flag: str, value: Any, lo: float, hi: float) -> None:
    if value < lo:
        raise InputError(f"{flag} must be at least {lo:g} (got {value})" if isinstance(lo, float)
                         else f"{flag} must be at least {lo} (got {value})")
    if value > hi:
        raise InputError(f"{flag} must be at most {hi:g} (got {value})" if isinstance(hi, float)
                         else f"{flag} must be at most {hi} (got {value})")


def check_value(flag: str, value: Any, rule: Rule, may_be_empty: bool = False) -> None:
    """InputError (one line naming ``flag``) unless ``value`` obeys ``rule``; None always passes."""
    if value is None:
        return
    if isinstance(rule, Ints):
        if not _is_int(value):
            raise InputError(f"{flag} must be an integer (got {value!r})")
        _check_range(flag, value, rule.lo, rule.hi)
    elif isinstance(rule, Floats):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{flag} must be a number (got {value!r})")
        if not math.isfinite(value):
            raise InputError(f"{flag} must be a finite number (got {value})")
        _check_range(flag, value, rule.lo, rule.hi)
    elif isinstance(rule, Flag):
        if not isinstance(value, bool):
            raise InputError(f"{flag} must be true or false (got {value!r})")
    elif isinstance(rule, Str):
        if not isinstance(value, str):
            raise InputError(f"{flag} must be a string (got {value!r})")
    elif isinstance(rule, TagPair):
        tag_pair(flag, value)
    elif isinstance(rule, Choice):
        if value not in rule.values:
            raise InputError(f"{flag} must be one of {', '.join(rule.values)} (got {value!r})")
    elif isinstance(rule, Text):
        if not isinstance(value, str):
            raise InputError(f"{flag} must be a string (got {value!r})")
        if not value.strip():
            raise InputError(f"{flag} must not be empty")
    else:
        items = list_items(flag, value)
        if all(isinstance(v, str) and not v.strip() for v in items):  # "", [] or [""]
            if may_be_empty:
                return
            raise InputError(f"{flag}: give at least one value")
        seen: set[Any] = set()
        for item in items:
            if isinstance(rule.each, Text) and isinstance(item, str) and not item.strip():
                raise InputError(f"{flag}: empty item in {value!r}" if isinstance(value, str)
                                 else f"{flag}: empty item")
            if rule.each is not None:
                check_value(flag, item, rule.each)
            key = item.strip() if isinstance(item, str) else item
            if key in seen:
                raise InputError(f"{flag}: {key!r} is listed twice")
            seen.add(key)


def check_config(config: Any, flags: Mapping[str, str | None] | None = None,
                 only: Iterable[str] | None = None) -> None:
    """Apply the config's own ``FIELD_RULES`` (a class attribute: name → rule) and, for the other
    fields, the shared :data:`RULES` to every field of a config dataclass that they name.

    ``flags`` renames a field's flag where the command calls it otherwise (``{"mechanisms":
    "--mechanism"}``) or, with None, leaves a field to the config's own checks. ``only`` limits the
    check to some fields."""
    if not is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"check_config needs a config dataclass instance, got {type(config).__name__}")
    wanted = None if only is None else set(only)
    flags = flags or {}
    own: Mapping[str, Rule] = getattr(type(config), "FIELD_RULES", {})
    for name in (f.name for f in fields(config)):
        if wanted is not None and name not in wanted:
            continue
        rule = own.get(name, RULES.get(name))
        if rule is None:
            continue
        flag = flags.get(name, flag_name(name))
        if flag is None:
            continue
        check_value(flag, getattr(config, name), rule, may_be_empty=name in MAY_BE_EMPTY)


def check_units(n: int, what: str, limit: int = MAX_UNITS) -> None:
    """A run's units of work (``--num-games`` × ``--num-trials``, ...) within ``limit``."""
    if n > limit:
        raise InputError(f"{what} must be at most {limit} units of work (got {n})")
