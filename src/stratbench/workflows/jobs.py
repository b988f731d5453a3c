"""Running a list of planned runs (jobs) into one collection folder — what suite files and scorecards
share. ``suite_metadata.json`` lists every run (suite, model, seed, setting, folder, status) and is
rewritten after each one and the moment a run's folder exists, so an interrupted collection resumes
by skipping finished runs and finishing the interrupted one in place."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.lifecycle import on_run_folder
from stratbench.suites import SUITES
from stratbench.suites.base import Job

__all__ = ["family", "run_jobs", "slug"]


def slug(text: str) -> str:
    """A label as a folder name: one path component, never "." or ".." (a label ".." would put
    the run beside its suite's folders instead of under them)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60]
    return name if name.strip(".") else "model"


def family(name: str) -> str:
    """A job's suite as run.json names it (a complex-form TMGBench job is a tmgbench run)."""
    return SUITES.get(name).family


def run_jobs(out: Path, meta: dict[str, Any], jobs: list[Job],
             on_run: Callable[[dict[str, Any]], None] | None = None,
             extra: Callable[[Job], dict[str, Any]] | None = None, timed: bool = False) -> tuple[list[dict[str, Any]], int]:
    """Run (or finish) every job into ``out`` (the caller holds its lock); returns the run entries in
    job order and the number of errored records of the runs done now. ``meta`` is the collection's
    suite_metadata.json (its "runs" say what is done); ``extra`` adds keys to a job's entry;
    ``timed`` keeps each run's wall time (``seconds``, summed over sessions)."""
    done = {r["key"]: r for r in meta.get("runs", [])}
    runs: list[dict[str, Any]] = []
    n_errors = 0
    for job in jobs:
        prev = done.get(job.key)
        if prev and prev.get("status") == "finished":
            runs.append(prev)
            continue
        entry: dict[str, Any] = {"key": job.key, "suite": family(job.suite), "model": job.label or "(all models)",
                                 "seed": job.seed, "setting": job.setting,
                                 "folder": prev.get("folder") if prev else None, "status": "running"}
        if extra is not None:
            entry.update(extra(job))
        if timed:
            entry["seconds"] = float(prev.get("seconds", 0.0)) if prev else 0.0
        meta["runs"] = runs + [entry]
        write_json_atomic(out / "suite_metadata.json", meta)

        def started(folder: Path, entry: dict[str, Any] = entry) -> None:
            # the run's folder is recorded the moment it exists: a resumed collection finishes an
            # interrupted run in place instead of starting it again beside the partial one
            if entry["folder"] is None and out in folder.parents:
                entry["folder"] = str(folder.relative_to(out))
                write_json_atomic(out / "suite_metadata.json", meta)

        t0 = time.perf_counter()
        try:
            with on_run_folder(started):
                folder, n_err = _run_job(job, out, str(out / entry["folder"]) if entry["folder"] else None)
        finally:
            if timed:  # an interrupted session's time counts too
                entry["seconds"] = round(entry["seconds"] + time.perf_counter() - t0, 3)
                write_json_atomic(out / "suite_metadata.json", meta)
        entry.update(folder=str(folder.relative_to(out)), status="finished", errors=n_err,
                     headline=SUITES.get(job.suite).headline(folder))
        n_errors += n_err
        runs.append(entry)
        meta["runs"] = runs
        write_json_atomic(out / "suite_metadata.json", meta)
        if on_run:
            on_run(entry)
    return runs, n_errors


def _run_job(job: Job, out: Path, resume_folder: str | None) -> tuple[Path, int]:
    """Run (or finish) one job; returns its folder and number of errored records/rounds."""
    sub = out / family(job.suite) / (slug(job.label) if job.label else "all-models")
    res = SUITES.get(job.suite).run(replace(job.config, output_dir=str(sub)), resume_dir=resume_folder)
    return Path(res.folder), int(res.n_errors)
