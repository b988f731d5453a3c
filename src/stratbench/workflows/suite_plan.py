"""Reading a suite file (TOML or YAML): its top-level keys (name, seeds, models, output_dir) and one
section per registered suite, every section turned into that suite's validated jobs — all before
anything runs or is written. `stratbench.workflows.suite_file` runs the plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.suites import SUITES
from stratbench.suites.base import Job, SuiteModel

TOP_KEYS = {"name", "seeds", "models", "output_dir"}
MODEL_KEYS = {"spec", "label", "policy", "base_url", "chat"}


def _sections() -> list[str]:
    """Suite names a file may have a section for: every registered suite that plans jobs."""
    return [n for n in SUITES.names() if SUITES.get(n).in_suite_files]


def _models(path: Path, items: Any) -> list[SuiteModel]:
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: models must be a non-empty list")
    out = []
    for k, item in enumerate(items):
        where = f"{path}: models[{k}]"
        if isinstance(item, str):
            item = {"spec": item}
        if not isinstance(item, dict) or not isinstance(item.get("spec"), str):
            raise InputError(f"{where}: expected a model spec or a table with a 'spec'")
        unknown = sorted(set(item) - MODEL_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(MODEL_KEYS))}")
        out.append(SuiteModel(item["spec"].strip(), str(item.get("label") or item["spec"]).strip(),
                              item.get("policy"), item.get("base_url"), item.get("chat")))
    labels = [m.label for m in out]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputError(f"{path}: models {dup} appear twice (give them distinct labels)")
    return out


def plan_suite_file(path: str | Path) -> tuple[dict[str, Any], list[Job]]:
    """The parsed file and every run it describes, all configs checked; nothing is written."""
    from stratbench.suites.nashgap.tiered_config import read_suite_data

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: suite file not found")
    data = read_suite_data(p, label="")
    suites = _sections()
    unknown = sorted(set(data) - TOP_KEYS - set(suites))
    if unknown:
        raise InputError(f"{p}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(TOP_KEYS | set(suites)))}")
    sections = [s for s in suites if s in data]
    if not sections:
        raise InputError(f"{p}: no suite section; add at least one of [{'], ['.join(suites)}]")
    seeds = data.get("seeds", [0])
    seeds = [seeds] if isinstance(seeds, int) else seeds
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise InputError(f"{p}: seeds must be a list of integers")
    models = _models(p, data.get("models"))
    jobs: list[Job] = []
    for suite in sections:
        params = data[suite] if data[suite] is not None else {}
        if not isinstance(params, dict):
            raise InputError(f"{p}: [{suite}] must be a table of settings")
        try:
            jobs += SUITES.get(suite).jobs(str(p), dict(params), models, seeds)
        except TypeError as e:
            raise InputError(f"{p}: [{suite}] {e}") from None
    for j in jobs:
        j.key = f"{SUITES.get(j.suite).family}|{j.label}|{j.seed}|{j.setting}"
    return data, jobs
