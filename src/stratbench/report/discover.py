"""Find result folders under a directory and read their files without trusting them.

A report is often made of a folder that is incomplete (a run still going, a shard, a folder copied
by hand), so every reader here returns what it could read plus a note of what it could not, and
never writes to the result folder.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratbench.errors import InputError

__all__ = ["RunDir", "SuiteDir", "discover", "infer_suite", "read_json", "read_jsonl_all", "read_jsonl_head"]

MAX_DEPTH = 6
MAX_DIRS = 5000


def read_json(path: Path) -> tuple[Any, str | None]:
    """(data, problem): problem is one line when the file is missing or not valid JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return None, f"{path.name}: missing"
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"{path.name}: unreadable ({type(e).__name__}: {str(e)[:120]})"


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def read_jsonl_head(path: Path, n: int) -> tuple[list[dict[str, Any]], int, int]:
    """(first n records, total lines, malformed lines): counts the whole file, parses only the
    first n good lines — trial files can be large and a sample needs only the head."""
    records: list[dict[str, Any]] = []
    total = bad = 0
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                total += 1
                if len(records) < n:
                    rec = _parse_line(line)
                    if rec is None:
                        bad += 1
                    else:
                        records.append(rec)
    except OSError:
        pass
    return records, total, bad


def read_jsonl_all(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(records, malformed lines). Malformed lines (a torn tail, a hand edit) are counted, not
    fatal: the report says how many it skipped."""
    records, _, bad = read_jsonl_head(path, sys.maxsize)
    return records, bad


@dataclass
class RunDir:
    """One result folder. ``run`` is run.json (None when absent or unreadable)."""

    path: Path
    rel: str
    run: dict[str, Any] | None
    suite: str
    problems: list[str] = field(default_factory=list)

    @property
    def config(self) -> dict[str, Any]:
        c = (self.run or {}).get("config")
        return c if isinstance(c, dict) else {}

    def player(self, summary: dict[str, Any] | None = None) -> str:
        """The model or player this run evaluated, as recorded (may be model-chosen text)."""
        c = self.config
        for key in ("player", "model", "agent"):
            v = c.get(key)
            if isinstance(v, str) and v:
                return v
        models = c.get("models")  # suites where several players meet (CHBench)
        if isinstance(models, list) and models and all(isinstance(m, str) for m in models):
            return ", ".join(models)
        agent = (self.run or {}).get("agent")
        if isinstance(agent, dict) and isinstance(agent.get("name"), str):
            return agent["name"]
        for key in ("agent", "player", "model"):
            v = (summary or {}).get(key)
            if isinstance(v, str) and v:
                return v
        return "?"


@dataclass
class SuiteDir:
    """A multi-run suite folder (e.g. the tiered suite): metadata and big tables."""

    path: Path
    rel: str
    metadata: Any
    tables: list[Path]
    problems: list[str] = field(default_factory=list)


def infer_suite(path: Path, run: dict[str, Any] | None) -> str:
    """The suite named in run.json, else a guess from the files (for folders without run.json)."""
    if isinstance(run, dict) and isinstance(run.get("suite"), str) and run["suite"]:
        return run["suite"]
    names = {p.name for p in path.iterdir()} if path.is_dir() else set()
    if "games.json" in names and any(n.startswith("trials") for n in names):
        return "nashgap"
    if "grids.json" in names or any(n.endswith("_heatmap.png") for n in names):
        return "tmgbench"
    if "fit.json" in names or "levels.md" in names:
        return "chbench"
    if "regret_curve.png" in names or "curves.json" in names:
        return "tom"
    return "unknown"


def _is_suite_dir(names: set[str]) -> bool:
    return "suite_metadata.json" in names or any(
        n.startswith("big_table") and n.endswith(".csv") for n in names)


def _is_run_dir(names: set[str]) -> bool:
    return "run.json" in names or any(
        (n.startswith("summary") and n.endswith(".json")) or n.endswith(".jsonl") for n in names)


def _rel(path: Path, root: Path) -> str:
    """Path shown for a folder: relative to root, or root's own name for root itself."""
    r = path.relative_to(root).as_posix()
    return root.name if r in ("", ".") else r


def discover(root: str | Path, exclude: Path | None = None) -> tuple[list[RunDir], list[SuiteDir]]:
    """All run folders and suite folders under root (root included), sorted by path.

    A folder with nothing recognisable still yields one "unknown" run for root, so the report
    shows what is there. Raises InputError when root does not exist or is not a folder.
    """
    root = Path(root)
    if not root.exists():
        raise InputError(f"{root}: no such folder")
    if not root.is_dir():
        raise InputError(f"{root}: not a folder (give a result folder or a folder of runs)")
    root = root.resolve()
    excl = exclude.resolve() if exclude is not None else None
    runs: list[RunDir] = []
    suites: list[SuiteDir] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    seen = 0
    while stack:
        d, depth = stack.pop()
        seen += 1
        if seen > MAX_DIRS:
            break
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        names = {p.name for p in entries}
        if _is_suite_dir(names):
            meta, prob = read_json(d / "suite_metadata.json") if "suite_metadata.json" in names else (None, None)
            tables = [p for p in entries if p.name.startswith("big_table") and p.suffix in (".csv", ".md")]
            suites.append(SuiteDir(d, _rel(d, root), meta, tables, [prob] if prob else []))
        elif _is_run_dir(names):
            run, prob = read_json(d / "run.json")
            problems = [prob] if prob and "run.json" in names else []
            if "run.json" in names and prob is None and not isinstance(run, dict):
                problems.append("run.json: not a JSON object")
                run = None
            if "run.json" not in names:
                problems.append("run.json: missing (suite guessed from the files)")
            runs.append(RunDir(d, _rel(d, root), run, infer_suite(d, run), problems))
        if depth >= MAX_DEPTH:
            continue
        for p in reversed(entries):
            if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__" and (
                excl is None or p.resolve() != excl
            ):
                stack.append((p, depth + 1))
    if not runs and not suites:
        runs.append(RunDir(root, root.name, None, "unknown", ["no run.json, summary or records found"]))
    runs.sort(key=lambda r: r.rel)
    suites.sort(key=lambda s: s.rel)
    return runs, suites
