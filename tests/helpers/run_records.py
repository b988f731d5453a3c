"""Comparing result folders: records and JSON files without the keys that only say how fast
something ran or whether the cache answered (the only ways two equal runs may differ)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

VOLATILE = frozenset({"latency_s", "row_latency_s", "col_latency_s", "seconds", "cached", "usage"})


def strip(x: object, volatile: Iterable[str] = VOLATILE) -> object:
    keys = frozenset(volatile)
    if isinstance(x, dict):
        return {k: strip(v, keys) for k, v in x.items() if k not in keys}
    if isinstance(x, list):
        return [strip(v, keys) for v in x]
    return x


def records(folder: Path, volatile: Iterable[str] = VOLATILE) -> dict[str, list[object]]:
    """Every records file (*.jsonl) of a folder, by name, each record stripped."""
    return {p.name: [strip(json.loads(line), volatile) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted(folder.glob("*.jsonl"))}


def unfinish(folder: Path, records_file: str = "trials.jsonl", keep: int = 1) -> Path:
    """A finished run made interrupted, as a kill leaves one: run.json says running and the records
    file keeps its first ``keep`` lines. Returns the records file."""
    meta = json.loads((folder / "run.json").read_text())
    meta["status"] = "running"
    (folder / "run.json").write_text(json.dumps(meta))
    recs = folder / records_file
    recs.write_text("".join(recs.read_text().splitlines(keepends=True)[:keep]))
    return recs
