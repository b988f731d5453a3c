"""Suite files: a tiered suite described in TOML or YAML and run with one command
(`stratbench suite tiered --config FILE`).

Keys are the CLI flags with underscores (``num_games_per_bucket``, ``seeds``, ``bucket_ids``,
``providers``, ``together_model_tiers``, ...), plus ``models``: a list of model specs or tables
``{spec, tier, label, policy, base_url, chat, temperature, max_tokens}``, so local checkpoints
(``hf:``, ``gguf:``, ``embedded``), self-hosted servers and scripted players can sit next to API
tiers. Unknown keys are errors (a typo would otherwise silently change nothing).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from stratbench.errors import InputError
from stratbench.files import NonEmptyText, Text, display, read_mapping, validate
from stratbench.suites.nashgap.tiered import NO_TIER, ModelEntry, TieredConfig, model_entry

_LISTS = ("seeds", "providers", "bucket_ids", "modes")  # a single value is a list of one
_TIERS = ("together_model_tiers", "openai_model_tiers")


class _ModelTable(BaseModel):
    """One table of a suite file's ``models`` list."""

    model_config = ConfigDict(extra="forbid", strict=True)

    spec: NonEmptyText
    tier: NonEmptyText | None = None
    label: NonEmptyText | None = None
    policy: Text | None = None
    base_url: Text | None = None
    chat: bool | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class _SuiteFile(BaseModel):
    """A tiered suite file: the CLI flags with underscores, plus ``models``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    num_games_per_bucket: int | None = None
    num_trials: int | None = None
    use_dummy: bool | None = None
    policy: Text | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    chat: bool | None = None
    base_url: Text | None = None
    max_concurrency: int | None = None
    num_workers: int | None = None  # the original's name for the concurrency
    no_cache: bool | None = None
    order_rotations: int | None = None
    price_table: Text | None = None
    output_dir: Text | None = None
    shard: Text | None = None
    seeds: list[int] | None = None
    providers: list[NonEmptyText] | None = None
    bucket_ids: list[NonEmptyText] | None = None
    modes: list[NonEmptyText] | None = None
    together_model_tiers: Any = None  # a table {A = [...], ...} or the CLI's JSON text
    openai_model_tiers: Any = None
    models: list[Any] | None = None


_MODEL_KEYS = tuple(_ModelTable.model_fields)
_KNOWN = tuple(_SuiteFile.model_fields)


def read_suite_data(path: Path, label: str = "--config") -> dict[str, Any]:
    """The mapping in a TOML or YAML file, read with the limits of :mod:`stratbench.files` (size,
    UTF-8, nesting, no YAML aliases); every problem is one InputError line."""
    return read_mapping(path, label)


def duplicates(values: list[Any]) -> list[Any]:
    """Values listed more than once, in first-seen order."""
    seen: list[Any] = []
    dup: list[Any] = []
    for v in values:
        if v in seen and v not in dup:
            dup.append(v)
        seen.append(v)
    return dup


def _model(where: str, item: Any) -> ModelEntry:
    if isinstance(item, str):
        item = {"spec": item}
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a model spec or a table with a 'spec'")
    unknown = sorted(set(item) - set(_MODEL_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_MODEL_KEYS)}")
    table: _ModelTable = validate(_ModelTable, item, where)
    kw = table.model_dump(exclude_unset=True)
    if "temperature" in kw:
        kw["temperature"] = float(kw["temperature"])
    try:
        return model_entry(**kw)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def load_suite_file(path: str | Path) -> TieredConfig:
    """A TieredConfig from a TOML or YAML suite file; every problem is one InputError line."""
    p = Path(path)
    name = display(p, "--config")
    data = read_suite_data(p)
    unknown = sorted(set(data) - set(_KNOWN))
    if unknown:
        raise InputError(f"{name}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KNOWN))}")
    for key in _LISTS:
        if key in data and not isinstance(data[key], list):
            data[key] = [data[key]]
    spec: _SuiteFile = validate(_SuiteFile, data, name)
    kw = spec.model_dump(exclude_unset=True)
    if "num_workers" in kw:
        if "max_concurrency" in kw:
            raise InputError(f"{name}: give num_workers or max_concurrency, not both")
        kw["max_concurrency"] = kw.pop("num_workers")
    if "temperature" in kw:
        kw["temperature"] = float(kw["temperature"])
    for key in _LISTS:
        dup = duplicates(kw.get(key) or [])
        if dup:
            raise InputError(f"{name}: {key}: {dup[0]!r} is listed twice")
    for key in _TIERS:
        if key in kw and not isinstance(kw[key], (dict, str)):
            raise InputError(f"{name}: {key} must be a table like {{A = [...], B = [...], C = [...]}}")
    if "models" in kw:
        kw["models"] = [_model(f"{name}: models[{k}]", item) for k, item in enumerate(kw["models"])]
        shown = [(m.tier, m.display) for m in kw["models"]]
        dup = duplicates(shown)
        if dup:
            tier = f" in tier {dup[0][0]}" if dup[0][0] != NO_TIER else ""
            raise InputError(f"{name}: models: {dup[0][1]!r} appears twice{tier} (give the models distinct labels)")
    if isinstance(kw.get("price_table"), str) and kw["price_table"].strip() and not Path(kw["price_table"]).is_absolute():
        # (a file the suite file names lies beside it, as a suite file's do; saved absolute, a resume
        # from another folder reads the same table — read from the working folder, another table
        # there priced the rest of the suite: fuzz 29 A F3)
        kw["price_table"] = os.path.abspath(p.parent / kw["price_table"])
    cfg = TieredConfig(**kw)
    cfg.config_file = str(p)
    # Tier maps are checked here so a malformed file fails with its own name in the message.
    try:
        cfg.tiers()
    except InputError as e:
        raise InputError(f"{name}: {e}") from None
    return cfg
