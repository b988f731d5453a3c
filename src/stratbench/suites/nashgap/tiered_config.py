"""Suite files: a tiered suite described in TOML or YAML and run with one command
(`stratbench suite tiered --config FILE`).

Keys are the CLI flags with underscores (``num_games_per_bucket``, ``seeds``, ``bucket_ids``,
``providers``, ``together_model_tiers``, ...), plus ``models``: a list of model specs or tables
``{spec, tier, label, policy, base_url, chat, temperature, max_tokens}``, so local checkpoints
(``hf:``, ``gguf:``, ``embedded``), self-hosted servers and scripted players can sit next to API
tiers. Unknown keys are errors (a typo would otherwise silently change nothing).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.suites.nashgap.tiered import ModelEntry, TieredConfig, model_entry

# key -> accepted Python types
_SCALARS: dict[str, tuple[type, ...]] = {
    "num_games_per_bucket": (int,), "num_trials": (int,), "use_dummy": (bool,),
    "policy": (str,), "temperature": (int, float), "max_tokens": (int,), "chat": (bool,),
    "base_url": (str,), "max_concurrency": (int,), "num_workers": (int,), "no_cache": (bool,),
    "order_rotations": (int,), "price_table": (str,), "output_dir": (str,), "shard": (str,),
}
_LISTS = {"seeds": int, "providers": str, "bucket_ids": str, "modes": str}
_TIERS = ("together_model_tiers", "openai_model_tiers")
_MODEL_KEYS = {"spec": (str,), "tier": (str,), "label": (str,), "policy": (str,),
               "base_url": (str,), "chat": (bool,), "temperature": (int, float),
               "max_tokens": (int,)}


def _typed(where: str, value: Any, types: tuple[type, ...]) -> Any:
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        names = " or ".join(t.__name__ for t in types)
        raise InputError(f"{where}: expected {names}, got {value!r}")
    return value


def read_suite_data(path: Path, label: str = "--config ") -> dict[str, Any]:
    """The mapping in a TOML or YAML file; every problem is one InputError line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{label}{path}: cannot read ({e})") from None
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputError(f"{label}{path}: invalid TOML ({e})") from None
    elif suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - pyyaml is a dependency
            raise InputError(f"{label}{path}: YAML suite files need PyYAML (pip install pyyaml)") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            msg = " ".join(str(e).split())
            raise InputError(f"{label}{path}: invalid YAML ({msg})") from None
    else:
        raise InputError(f"{label}{path}: use a .toml, .yaml or .yml file")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{label}{path}: the file must hold a table/mapping of settings")
    return data


def _model(path: Path, k: int, item: Any) -> ModelEntry:
    where = f"--config {path}: models[{k}]"
    if isinstance(item, str):
        try:
            return model_entry(item)
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a model spec or a table with a 'spec'")
    unknown = sorted(set(item) - set(_MODEL_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_MODEL_KEYS)}")
    if "spec" not in item:
        raise InputError(f"{where}: missing 'spec'")
    kw = {key: _typed(f"{where}.{key}", v, _MODEL_KEYS[key]) for key, v in item.items()}
    if "temperature" in kw:
        kw["temperature"] = float(kw["temperature"])
    try:
        return model_entry(**kw)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def load_suite_file(path: str | Path) -> TieredConfig:
    """A TieredConfig from a TOML or YAML suite file; every problem is one InputError line."""
    p = Path(path)
    data = read_suite_data(p)
    known = set(_SCALARS) | set(_LISTS) | set(_TIERS) | {"models"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"--config {p}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    kw: dict[str, Any] = {}
    for key, types in _SCALARS.items():
        if key in data:
            kw[key] = _typed(f"--config {p}: {key}", data[key], types)
    if "num_workers" in kw:  # the original's name for the concurrency
        if "max_concurrency" in kw:
            raise InputError(f"--config {p}: give num_workers or max_concurrency, not both")
        kw["max_concurrency"] = kw.pop("num_workers")
    if "temperature" in kw:
        kw["temperature"] = float(kw["temperature"])
    for key, item_type in _LISTS.items():
        if key in data:
            v = data[key]
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                v = [v]
            if not isinstance(v, list):
                raise InputError(f"--config {p}: {key} must be a list")
            kw[key] = [_typed(f"--config {p}: {key}", x, (item_type,)) for x in v]
    for key in _TIERS:
        if key in data:
            v = data[key]
            if not isinstance(v, (dict, str)):
                raise InputError(f"--config {p}: {key} must be a table like {{A = [...], B = [...], C = [...]}}")
            kw[key] = v
    if "models" in data:
        items = data["models"]
        if not isinstance(items, list):
            raise InputError(f"--config {p}: models must be a list")
        kw["models"] = [_model(p, k, item) for k, item in enumerate(items)]
    cfg = TieredConfig(**kw)
    cfg.config_file = str(p)
    # Tier maps are checked here so a malformed file fails with its own name in the message.
    try:
        cfg.tiers()
    except InputError as e:
        raise InputError(f"--config {p}: {e}") from None
    return cfg
