"""Run folders and their `run.json`: what ran, with which versions, code revision and times.

Folder names carry a timestamp like the original (`run_YYYYMMDD_HHMMSS`); two runs started in the
same second get `_2`, `_3`, ... — claimed with an atomic mkdir, so concurrent runs never share one.

Folders written in one go (a merge) are staged: written as a hidden sibling
``.tmp-<name>-<pid>`` (:func:`stage_folder`) and renamed to their name only when complete
(:func:`publish_folder`), so a merge killed midway never leaves a half folder that looks like a
run. A staging folder left by a killed process is skipped by every reader (its name starts with a
dot) and removed by the next merge into the same folder (:func:`remove_stale_staging`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import stratbench
from stratbench.errors import FolderBusyError, InputError
from stratbench.runner.lock import folder_lock

_PACKAGES = ("numpy", "scipy", "typer", "rich")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def timestamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d_%H%M%S")


def git_revision() -> dict[str, Any]:
    """The commit of the stratbench source tree, if it is a git checkout, and whether it is dirty."""
    src = Path(stratbench.__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if rev.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        )
        return {"commit": rev.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def package_versions(extra: tuple[str, ...] = ()) -> dict[str, str | None]:
    out: dict[str, str | None] = {"stratbench": stratbench.__version__, "python": sys.version.split()[0]}
    for name in _PACKAGES + extra:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    cpu = llama_cpu_features()
    if cpu is not None:  # a run that loaded a local model: the kernels its log-probabilities come from
        out["llama_cpp_cpu"] = " ".join(cpu)
    return out


def llama_cpu_features() -> list[str] | None:
    """The instruction sets the loaded llama.cpp build was compiled for ("AVX2", "FMA", ...), or None
    where no run loaded llama.cpp (it is not imported for that). They decide which kernels compute a
    local model's log-probabilities: `make install` pins them (see the Makefile), and run.json
    records them so that two runs' numbers can be told apart by build."""
    mod = sys.modules.get("llama_cpp")
    info = getattr(mod, "llama_print_system_info", None)
    if info is None:
        return None
    try:
        text = info().decode("utf-8", "replace")
    except Exception:  # an unexpected binding: the record stays without it
        return None
    feats = []
    for part in text.split("|"):
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if name and value.strip() == "1":
            feats.append(name)
    return feats


def run_metadata(suite: str, config: dict[str, Any], kind: str, suite_version: int = 1) -> dict[str, Any]:
    """A new run.json: `suite` names the benchmark, `kind` which of its run types wrote the folder
    (tmgbench atomic/complex, tom run/baseline, chbench run/fit), so readers never guess, and
    `suite_version` which definition of the suite (`runner.schema.SUITE_VERSION_DOC`)."""
    from stratbench.redact import redact_json
    from stratbench.runner.schema import FORMAT_VERSION

    return {  # credentials in a URL (--base-url http://user:PASSWORD@host) are never written
        "suite": suite,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "suite_version": suite_version,
        "config": redact_json(config),
        "versions": package_versions(),
        "git": git_revision(),
        "platform": platform.platform(),
        "command": redact_json(list(sys.argv)),
        "start_time": now_iso(),
        "end_time": None,
        "status": "running",
    }


def enclosing_result_folder(path: str | Path) -> Path | None:
    """The result folder (a run, suite or scorecard folder: one with a run.json or
    suite_metadata.json) that ``path`` is or lies inside, if any. Outputs of merge and compare
    are refused there: a result folder is written by its own run only, and a file dropped into
    it (or over one of its files) would be read as the run's."""
    p = Path(path).resolve()
    for folder in (p, *p.parents):
        if (folder / "run.json").is_file() or (folder / "suite_metadata.json").is_file():
            return folder
    return None


#: the collections that list their runs (or a trend its checkpoints' scorecards) with a folder and a
#: status: (metadata file, list key, folder key) and, by the file's "suite", what the collection is
#: called, the command that resumes it, and whether that resume tries finished runs' failed calls again
COLLECTION_LISTS = (("suite_metadata.json", "runs", "folder"), ("trend_metadata.json", "checkpoints", "scorecard"))
COLLECTION_RESUME = {
    "scorecard": ("scorecard", "stratbench scorecard --resume", True),
    "suite-file": ("suite", "stratbench suite run --resume", True),
    "tiered": ("tiered suite", "stratbench suite tiered --resume", False),
    "trend": ("trend", "stratbench trend --resume", True),
}


def check_not_a_listed_run(folder: Path, what: str = "run") -> None:
    """InputError when a finished run's (or a trend checkpoint's scorecard's) ``folder`` is one a
    collection above it (a scorecard, a suite file, a tiered suite, a trend) lists as finished:
    resumed on its own, its records would change under the collection's tables and entry, and the
    collection would then be refused as edited by hand. The collection's own resume finishes it
    again (it marks the run unfinished first); an unfinished run inside a collection may be
    finished on its own (the collection resumes it in place). The folder is found by where it is
    (a symlink to it, or to a folder above it, finds the same collection)."""
    import json

    target = folder.resolve()
    given = Path(os.path.abspath(folder))
    seen: set[Path] = set()
    for parent in [*list(given.parents)[:4], *list(target.parents)[:4]]:
        for name, list_key, folder_key in COLLECTION_LISTS:
            path = parent / name
            if (path in seen) or not path.is_file():
                continue
            seen.add(path)
            try:
                meta = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError, RecursionError):
                continue  # (the collection's own resume or report names that file)
            kind = COLLECTION_RESUME.get(str(meta.get("suite"))) if isinstance(meta, dict) else None
            if kind is None:
                continue
            entries = meta.get(list_key)
            for r in entries if isinstance(entries, list) else []:
                if isinstance(r, dict) and r.get("status") == "finished" and isinstance(r.get(folder_key), str) \
                        and r[folder_key] and (parent / r[folder_key]).resolve() == target:
                    rel = os.path.relpath(parent)
                    shown = str(parent) if Path(folder).is_absolute() or rel.startswith("..") else rel
                    called, command, retries = kind
                    does = f": it tries the {what}'s failed calls again and writes its tables anew" if retries else ""
                    raise InputError(f"--resume {folder}: a finished {what} of the {called} {shown}, which lists it "
                                     f"as finished; resume the {called} instead ({command} {shown}{does}); the "
                                     "folder is left as it is")


def read_summary(path: Path, want: dict[str, type]) -> dict[str, Any]:
    """A finished run's summary file with the keys a merge reads of it (name → type), or one line
    naming the file and the first one missing (an emptied or cut summary), never a KeyError."""
    from stratbench.files import read_json

    sm = read_json(path)
    bad = [k for k, t in want.items() if not isinstance(sm, dict) or not isinstance(sm.get(k), t)
           or isinstance(sm.get(k), bool)]
    if bad:
        raise InputError(f"{path}: no {bad[0]} (the summary was edited or cut); finish the run again with "
                         f"--resume {path.parent}")
    return sm  # type: ignore[no-any-return]


#: the files of a result folder its readers open: records, JSON files and tables
RESULT_SUFFIXES = frozenset({".jsonl", ".json", ".md", ".csv"})


def check_result_files(folder: str | Path, prefix: str = "", *, below: bool = False) -> None:
    """InputError naming the first records file, JSON file or table of ``folder`` (and, ``below``,
    of the folders under it: a collection's runs) that is not a regular file that can be read — a
    folder, a named pipe, a device, a dangling link or a symlink loop in its place. What every
    command that reads a result folder (resume, merge, compare) asks first: a pipe would block it
    for good, and a link to ``/dev/zero`` would be read until memory runs out. Staging files
    (``*.tmp``) and hidden folders are not result files."""
    from stratbench.files import file_problem

    stack, seen = [Path(folder)], set()
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
            entries = sorted(d.iterdir())
        except OSError:
            continue  # (a folder that cannot be listed: the reader that needs it names it)
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        for p in entries:
            if p.suffix in RESULT_SUFFIXES:
                problem = file_problem(p)
                if problem is not None:
                    raise InputError(f"{prefix}{p}: {problem} (a result file that cannot be read)")
            elif below and not p.name.startswith(".") and p.is_dir() and len(seen) < 5000:
                stack.append(p)


def read_run_json(folder: str | Path, prefix: str = "") -> dict[str, Any]:
    """A result folder's run.json, checked against its written schema (`runner.schema.RunMeta`),
    or one InputError line (`prefix` names the flag, e.g. "--resume ") — the one reader behind
    resume, merge and compare."""
    import json

    from stratbench.runner.schema import RunMeta
    from stratbench.runner.validation import check_schema

    f = Path(folder)
    check_result_files(f, prefix)
    try:
        raw = (f / "run.json").read_bytes()
    except OSError:
        if (f / "trend_metadata.json").is_file():  # a trend holds one scorecard folder per checkpoint
            raise InputError(f"{prefix}{f}: a trend folder, not one run (stratbench trend --resume finishes it; "
                             "its checkpoints' scorecards, ckpt_<step>/scorecard_<time>, compare and "
                             "report as scorecards)") from None
        raise InputError(f"{prefix}{f}: not a result folder (no readable run.json)") from None
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        raise InputError(f"{prefix}{f}/run.json: not valid JSON (a corrupt or truncated file)") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("suite"), str) or not isinstance(meta.get("config"), dict):
        raise InputError(f"{prefix}{f}/run.json: not a stratbench run.json (it needs a \"suite\" name and a "
                         "\"config\" table)")
    check_schema([meta], RunMeta, f"{prefix}{f}/run.json", numbered=False)
    return migrate_run_json(meta, f"{prefix}{f}/run.json")


def suite_version_of(meta: Mapping[str, Any], where: str) -> int:
    """run.json's ``suite_version`` (1 where absent: folders written before it existed), or one line."""
    v = meta.get("suite_version", 1)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"{where}: suite_version must be a positive integer (got {v!r})")
    return v


def check_suite_version(meta: Mapping[str, Any], version: int, where: str, *, older_ok: bool = False) -> int:
    """The folder's suite version, or one line when this code cannot carry its run on: a newer one is
    a definition this release does not know; an older one (unless ``older_ok``: a report shows what
    it holds) was measured by a definition this release no longer computes, so resuming or merging it
    here would mix two benchmarks in one run."""
    v = suite_version_of(meta, where)
    suite = meta.get("suite")
    if v > version:
        raise InputError(f"{where}: written by version {v} of the {suite} suite; this stratbench has version "
                         f"{version} (upgrade stratbench)")
    if v < version and not older_ok:
        raise InputError(f"{where}: a run of version {v} of the {suite} suite; this stratbench runs version {version}, "
                         "which computes its runs differently: finish it with the stratbench that started it, or "
                         "start a new run")
    return v


def migrate_run_json(meta: dict[str, Any], where: str) -> dict[str, Any]:
    """`meta` read as this release's format: version 1 (no ``format_version``) has the keys of
    version 2, so it only gains the stamp (in memory; a resume writes it); a newer version is
    refused in one line — its keys may mean what this release does not know."""
    from stratbench.runner.schema import FORMAT_VERSION

    version = meta.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"{where}: format_version must be a positive integer (got {version!r})")
    if version > FORMAT_VERSION:
        raise InputError(f"{where}: written in result format {version} by a newer stratbench; this one reads "
                         f"formats up to {FORMAT_VERSION} (upgrade stratbench)")
    return {**meta, "format_version": FORMAT_VERSION} if version < FORMAT_VERSION else meta


@dataclass(frozen=True)
class RunFolder:
    path: Path
    resumed: bool = False


def output_dir_ready(output_dir: str | Path, flag: str = "--output-dir") -> Path:
    """`output_dir`, created if needed; one InputError line when it cannot hold result folders
    (a file, under a file, read-only, a name too long, not UTF-8, empty ...)."""
    if not str(output_dir).strip():
        raise InputError(f"{flag}: empty; give a folder (\".\" for this one)")
    if "\0" in str(output_dir):
        raise InputError(f"{flag} {ascii(str(output_dir))[1:-1]}: a folder name cannot hold a NUL character")
    try:
        str(output_dir).encode("utf-8")
    except UnicodeEncodeError:  # result files record paths as UTF-8 text: refused before a folder exists
        raise InputError(f"{flag} {ascii(str(output_dir))[1:-1]}: the name is not valid UTF-8; use another "
                         "name") from None
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{flag} {out}: exists and is not a folder") from None
    except OSError as e:
        raise InputError(f"{flag} {out}: {e.strerror or e}") from None
    if not out.is_dir():
        raise InputError(f"{flag} {out}: not a folder")
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {out}: not writable")
    return out


def missing_dirs(path: str | Path) -> list[Path]:
    """The folders of ``path`` (itself and its parents) that do not exist yet, deepest first: what
    creating it makes, and what a refused command removes again (`remove_empty_dirs`)."""
    out = []
    p = Path(path)
    while not p.exists() and not p.is_symlink() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def remove_empty_dirs(dirs: list[Path]) -> None:
    """Remove each of ``dirs`` (deepest first) that is an empty folder; stop at the first that is
    not (someone put something there)."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return


def create_run_folder(output_dir: str | Path, prefix: str, overwrite_name: None = None,
                      tag: str | None = None, flag: str = "--output-dir") -> RunFolder:
    """A new, empty folder `<output_dir>/<prefix>_<timestamp>[_<tag>][_k]`, claimed with an atomic
    mkdir (concurrent runs never share one). (--overwrite runs are written beside the old folder and
    swapped in when they finish: see `runner.lifecycle`.)"""
    out = output_dir_ready(output_dir, flag)
    base = f"{prefix}_{timestamp()}" + (f"_{tag}" if tag else "")
    for k in range(1, 10_000):
        p = out / (base if k == 1 else f"{base}_{k}")
        try:
            p.mkdir()
            return RunFolder(p)
        except FileExistsError:
            continue
        except OSError as e:
            raise InputError(f"{flag} {out}: cannot create {p.name}: {e.strerror or e}") from None
    raise RuntimeError(f"cannot create a unique folder under {out}")  # pragma: no cover


# -- staged folders ------------------------------------------------------------------------------

STAGING_PREFIX = ".tmp-"
_STAGING = re.compile(r"^\.tmp-(?P<name>.+)-(?P<pid>\d+)$")
_STAGED_LOCKS: dict[Path, contextlib.ExitStack] = {}


def is_staging(name: str) -> bool:
    """Whether a folder name is a staging folder (an unfinished merge or report), never a run."""
    return _STAGING.match(name) is not None


def remove_stale_staging(folder: str | Path) -> list[Path]:
    """Remove the staging folders in ``folder`` that no live process is writing (their writer was
    killed: its lock died with it); the folders removed."""
    removed = []
    try:
        entries = sorted(Path(folder).iterdir())
    except OSError:
        return []
    for p in entries:
        if not is_staging(p.name) or p.is_symlink() or not p.is_dir():
            continue
        try:
            with folder_lock(p):
                shutil.rmtree(p)
            removed.append(p)
        except (FolderBusyError, OSError):
            continue
    return removed


def stage_folder(output_dir: str | Path, prefix: str, tag: str | None = None,
                 flag: str = "--output-dir") -> Path:
    """A new, empty, locked staging folder ``<output_dir>/.tmp-<prefix>_<time>[_<tag>]-<pid>``
    for a folder written in one go; :func:`publish_folder` gives it its name when it is complete,
    :func:`discard_folder` removes it. Stale staging folders of killed processes in
    ``output_dir`` are removed first."""
    out = output_dir_ready(output_dir, flag)
    remove_stale_staging(out)
    base = f"{prefix}_{timestamp()}" + (f"_{tag}" if tag else "")
    for k in range(1, 10_000):
        p = out / f"{STAGING_PREFIX}{base if k == 1 else f'{base}_{k}'}-{os.getpid()}"
        try:
            p.mkdir()
        except FileExistsError:
            continue
        except OSError as e:
            raise InputError(f"{flag} {out}: cannot create {p.name}: {e.strerror or e}") from None
        stack = contextlib.ExitStack()
        stack.enter_context(folder_lock(p))
        _STAGED_LOCKS[p] = stack
        return p
    raise RuntimeError(f"cannot create a unique folder under {out}")  # pragma: no cover


def unstaged(path: str | Path) -> Path:
    """``path`` as it reads once the staging folders on it are published (what run.json records
    of a folder written inside a staging folder, e.g. a tiered suite's merged runs)."""
    parts = [m.group("name") if (m := _STAGING.match(part)) else part for part in Path(path).parts]
    return Path(*parts) if parts else Path(path)


def _release(staged: Path) -> None:
    stack = _STAGED_LOCKS.pop(staged, None)
    if stack is not None:
        stack.close()


def publish_folder(staged: Path) -> Path:
    """A complete staging folder renamed to its name (``_2``, ``_3``, … when a folder of that
    name exists: the name is claimed with an atomic mkdir and the staging folder renamed over the
    empty claim); the published folder."""
    m = _STAGING.match(staged.name)
    if m is None:  # not staged: already where it belongs
        return staged
    base = m.group("name")
    for k in range(1, 10_000):
        final = staged.with_name(base if k == 1 else f"{base}_{k}")
        try:
            final.mkdir()
        except FileExistsError:
            continue
        try:
            os.rename(staged, final)
        except OSError:
            with contextlib.suppress(OSError):
                final.rmdir()
            raise
        _release(staged)
        return final
    raise RuntimeError(f"cannot publish {staged}")  # pragma: no cover


def discard_folder(staged: Path) -> None:
    """Remove a staging folder (a merge that failed midway)."""
    shutil.rmtree(staged, ignore_errors=True)
    _release(staged)
