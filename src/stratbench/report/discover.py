"""Find result folders under a directory and read their files without trusting them.

A report is often made of a folder that is incomplete (a run still going, a shard, a folder copied
by hand), so every reader here returns what it could read plus a note of what it could not, and
never writes to the result folder. What the machine will not let it read is another matter: a
folder that cannot be listed, or a records file (``*.jsonl``) or JSON file of a collection that
cannot be opened (permission, a symlink loop, a dangling link, a pipe), is an InputError naming it —
never a silently smaller report. Such a file in one run's folder withholds that run instead (listed,
the file named, no numbers; the caller warns): one damaged run among fifty should not cost the
report of the other forty-nine, and its files are never read again (a pipe would block).

Each real folder is visited once: symbolic links to folders are followed, but a link back into the
tree (a loop) or a second link to the same folder does not count its runs again. Hidden folders
(``.name``) — among them the staging folders of unfinished merges and reports,
``.tmp-<name>-<pid>`` — are not searched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.files import file_problem, os_problem
from stratbench.render.views import RunDir, read_json
from stratbench.runner.folders import RESULT_SUFFIXES
from stratbench.suites import suite_for_run, suite_of_files

__all__ = ["SuiteDir", "discover", "infer_suite"]

MAX_DEPTH = 6
MAX_DIRS = 5000


@dataclass
class SuiteDir:
    """A multi-run suite folder (e.g. the tiered suite): metadata and big tables."""

    path: Path
    rel: str
    metadata: Any
    tables: list[Path]
    problems: list[str] = field(default_factory=list)
    withheld: bool = False  # its metadata disagrees with its runs: tables and metadata not shown


def infer_suite(path: Path, run: dict[str, Any] | None) -> tuple[str, str]:
    """(suite as run.json names it, registered suite): from run.json, else guessed from the files
    (for folders without run.json); ("unknown", "") when neither says."""
    if isinstance(run, dict) and isinstance(run.get("suite"), str) and run["suite"]:
        try:
            return run["suite"], suite_for_run(run).name
        except InputError:
            return run["suite"], ""
    names = {p.name for p in path.iterdir()} if path.is_dir() else set()
    found = suite_of_files(names)
    return (found.family, found.name) if found is not None else ("unknown", "")


def _is_suite_dir(names: set[str]) -> bool:
    # (a suite file's runs.csv or a scorecard's scorecard.json: a collection whose metadata is missing)
    return bool({"suite_metadata.json", "runs.csv", "scorecard.json"} & names) or any(
        n.startswith("big_table") and n.endswith(".csv") for n in names)


def _is_run_dir(names: set[str]) -> bool:
    return "run.json" in names or any(
        (n.startswith("summary") and n.endswith(".json")) or n.endswith(".jsonl") for n in names)


def _first_unreadable(entries: list[Path]) -> tuple[Path, str] | None:
    """(file, the problem, as the report says it) for the first records file, JSON file or table
    (``runner.folders.RESULT_SUFFIXES``: what the report reads of a folder) that cannot be read."""
    for p in entries:
        if p.suffix in RESULT_SUFFIXES and (problem := file_problem(p)) is not None:
            return p, f"{p}: {problem} (a result file the report cannot read)"
    return None


def _check_run_files(entries: list[Path]) -> None:
    """Every records file, JSON file and table of a collection folder (a tiered suite's big tables
    are read too) is a file that can be read: an InputError naming the first that is not."""
    bad = _first_unreadable(entries)
    if bad is not None:
        raise InputError(bad[1])


def _rel(path: Path, root: Path) -> str:
    """Path shown for a folder: relative to root, or root's own name for root itself."""
    r = path.relative_to(root).as_posix()
    return root.name if r in ("", ".") else r


def discover(root: str | Path, exclude: Path | None = None) -> tuple[list[RunDir], list[SuiteDir]]:
    """All run folders and suite folders under root (root included), sorted by path.

    A folder with nothing recognisable still yields one "unknown" run for root, so the report
    shows what is there. Raises InputError when root does not exist or is not a folder, and when
    a folder under it cannot be listed or a collection's records or JSON file cannot be read (a
    run's such file: that run comes back withheld, the file named in its problems). Each real
    folder is searched once (symlink loops and second links to a folder are skipped).
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
    visited: set[tuple[int, int]] = set()  # (device, inode) of every folder searched
    seen = 0
    while stack:
        d, depth = stack.pop()
        try:
            st = d.stat()
        except OSError as e:
            raise InputError(f"{d}: {os_problem(e)}") from None
        if (st.st_dev, st.st_ino) in visited:
            continue  # a symlink loop, or a second link to a folder already searched
        visited.add((st.st_dev, st.st_ino))
        seen += 1
        if seen > MAX_DIRS:
            break
        try:
            entries = sorted(d.iterdir())
        except OSError as e:
            raise InputError(f"{d}: {os_problem(e)} (a folder the report cannot list)") from None
        names = {p.name for p in entries}
        if _is_suite_dir(names):
            _check_run_files(entries)
            meta, prob = read_json(d / "suite_metadata.json") if "suite_metadata.json" in names else (None, None)
            tables = [p for p in entries if p.name.startswith("big_table") and p.suffix in (".csv", ".md")]
            suites.append(SuiteDir(d, _rel(d, root), meta, tables, [prob] if prob else []))
        elif _is_run_dir(names) and (bad := _first_unreadable(entries)) is not None:
            run = None
            if "run.json" in names and _first_unreadable([d / "run.json"]) is None:
                got, _ = read_json(d / "run.json")  # who ran it, for the listing
                run = got if isinstance(got, dict) else None
            family, entry = infer_suite(d, run)
            runs.append(RunDir(d, _rel(d, root), run, family, [bad[1]], entry, withheld=True))
        elif _is_run_dir(names):
            run, prob = read_json(d / "run.json")
            problems = [prob] if prob and "run.json" in names else []
            if "run.json" in names and prob is None and not isinstance(run, dict):
                problems.append("run.json: not a JSON object")
                run = None
            if "run.json" not in names:
                problems.append("run.json: missing (suite guessed from the files)")
            family, entry = infer_suite(d, run)
            runs.append(RunDir(d, _rel(d, root), run, family, problems, entry))
        if depth >= MAX_DEPTH:
            continue
        for p in reversed(entries):
            if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__" and (
                excl is None or p.resolve() != excl
            ):
                stack.append((p, depth + 1))
    if not runs and not suites:
        runs.append(RunDir(root, root.name, None, "unknown", ["no run.json, summary or records found"], ""))
    runs.sort(key=lambda r: r.rel)
    suites.sort(key=lambda s: s.rel)
    return runs, suites
