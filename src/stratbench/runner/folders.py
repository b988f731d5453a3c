"""Run folders and their `run.json`: what ran, with which versions, code revision and times.

Folder names carry a timestamp like the original (`run_YYYYMMDD_HHMMSS`); two runs started in the
same second get `_2`, `_3`, ... — claimed with an atomic mkdir, so concurrent runs never share one.
"""

from __future__ import annotations

import datetime as _dt
import platform
import shutil
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
    """A result folder's run.json, or one InputError line (`prefix` names the flag, e.g.
    "--resume ") — the one reader behind resume, merge and compare."""
    import json

    f = Path(folder)
    try:
        return json.loads((f / "run.json").read_text())
    except (OSError, ValueError):
        raise InputError(f"{prefix}{f}: not a result folder (no readable run.json)") from None


@dataclass(frozen=True)
class RunFolder:
    path: Path
    resumed: bool = False


def create_run_folder(
    output_dir: str | Path, prefix: str, overwrite_name: str | None = None, tag: str | None = None
) -> RunFolder:
    """A new, empty folder `<output_dir>/<prefix>_<timestamp>[_k]`, or `<output_dir>/<overwrite_name>`
    emptied first when `overwrite_name` is given."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if overwrite_name:
        p = out / overwrite_name
        if p.exists():
            shutil.rmtree(p)
        p.mkdir()
        return RunFolder(p)
    base = f"{prefix}_{timestamp()}" + (f"_{tag}" if tag else "")
    for k in range(1, 10_000):
        p = out / (base if k == 1 else f"{base}_{k}")
        try:
            p.mkdir()
            return RunFolder(p)
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a unique folder under {out}")  # pragma: no cover
