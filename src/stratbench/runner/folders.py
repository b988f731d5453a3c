"""Run folders and their `run.json`: what ran, with which versions, code revision and times.

Folder names carry a timestamp like the original (`run_YYYYMMDD_HHMMSS`); two runs started in the
same second get `_2`, `_3`, ... — claimed with an atomic mkdir, so concurrent runs never share one.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import stratbench
from stratbench.errors import InputError

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
    return out


def run_metadata(suite: str, config: dict[str, Any], kind: str) -> dict[str, Any]:
    """A new run.json: `suite` names the benchmark, `kind` which of its run types wrote the folder
    (tmgbench atomic/complex, tom run/baseline, chbench run/fit), so readers never guess."""
    return {
        "suite": suite,
        "kind": kind,
        "config": config,
        "versions": package_versions(),
        "git": git_revision(),
        "platform": platform.platform(),
        "command": sys.argv,
        "start_time": now_iso(),
        "end_time": None,
        "status": "running",
    }


def read_run_json(folder: str | Path, prefix: str = "") -> dict[str, Any]:
    """A result folder's run.json, checked against its written schema (`runner.schema.RunMeta`),
    or one InputError line (`prefix` names the flag, e.g. "--resume ") — the one reader behind
    resume, merge and compare."""
    import json

    from stratbench.runner.schema import RunMeta
    from stratbench.runner.validation import check_schema

    f = Path(folder)
    try:
        raw = (f / "run.json").read_bytes()
    except OSError:
        raise InputError(f"{prefix}{f}: not a result folder (no readable run.json)") from None
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        raise InputError(f"{prefix}{f}/run.json: not valid JSON (a corrupt or truncated file)") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("suite"), str) or not isinstance(meta.get("config"), dict):
        raise InputError(f"{prefix}{f}/run.json: not a stratbench run.json (it needs a \"suite\" name and a "
                         "\"config\" table)")
    check_schema([meta], RunMeta, f"{prefix}{f}/run.json", numbered=False)
    return meta


@dataclass(frozen=True)
class RunFolder:
    path: Path
    resumed: bool = False


def output_dir_ready(output_dir: str | Path, flag: str = "--output-dir") -> Path:
    """`output_dir`, created if needed; one InputError line when it cannot hold result folders
    (a file, under a file, read-only, a name too long, ...)."""
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


def create_run_folder(output_dir: str | Path, prefix: str, overwrite_name: None = None,
                      tag: str | None = None) -> RunFolder:
    """A new, empty folder `<output_dir>/<prefix>_<timestamp>[_<tag>][_k]`, claimed with an atomic
    mkdir (concurrent runs never share one). (--overwrite runs are written beside the old folder and
    swapped in when they finish: see `runner.lifecycle`.)"""
    out = output_dir_ready(output_dir)
    base = f"{prefix}_{timestamp()}" + (f"_{tag}" if tag else "")
    for k in range(1, 10_000):
        p = out / (base if k == 1 else f"{base}_{k}")
        try:
            p.mkdir()
            return RunFolder(p)
        except FileExistsError:
            continue
        except OSError as e:
            raise InputError(f"--output-dir {out}: cannot create {p.name}: {e.strerror or e}") from None
    raise RuntimeError(f"cannot create a unique folder under {out}")  # pragma: no cover
