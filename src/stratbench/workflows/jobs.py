"""Running a list of planned runs (jobs) into one collection folder — what suite files and scorecards
share. ``suite_metadata.json`` lists every run (suite, model, seed, setting, folder, status) and is
rewritten after each one and the moment a run's folder exists, so an interrupted collection resumes
by skipping finished runs and finishing the interrupted one in place."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from stratbench.errors import InputError
from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.lifecycle import on_run_folder
from stratbench.suites import SUITES
from stratbench.suites.base import Job
from stratbench.workflows.suite_plan import has_errors

__all__ = ["check_listed_runs", "family", "finished_runs", "run_jobs", "slug"]


def slug(text: str) -> str:
    """A label as a folder name: one path component, never "." or ".." (a label ".." would put
    the run beside its suite's folders instead of under them), never hidden (a label ".v2" made a
    folder the report, like `ls`, passes over)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60].lstrip(".-")
    return name if name.strip(".-") else "model"


def family(name: str) -> str:
    """A job's suite as run.json names it (a complex-form TMGBench job is a tmgbench run)."""
    return SUITES.get(name).family


def run_jobs(out: Path, meta: dict[str, Any], jobs: list[Job],
             on_run: Callable[[dict[str, Any]], None] | None = None,
             extra: Callable[[Job], dict[str, Any]] | None = None, timed: bool = False,
             finished: set[str] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Run (or finish) every job into ``out`` (the caller holds its lock); returns the run entries in
    job order and the number of errored records of the runs done now. ``meta`` is the collection's
    suite_metadata.json (its "runs" say what is done); ``extra`` adds keys to a job's entry;
    ``timed`` keeps each run's wall time (``seconds``, summed over sessions); ``finished``: the
    keys of the runs that need nothing more (`finished_runs`, checked before the folder changes)."""
    done = {r["key"]: r for r in meta.get("runs", [])}
    if finished is None:
        finished = finished_runs(out, meta, jobs)
    if meta.get("status") == "finished" and any(j.key not in finished for j in jobs):
        # a finished collection with runs to finish again (their failed calls): unfinished until
        # they are, its totals and tables (written again at the end) no longer what they say
        meta["status"] = "running"
        for key in ("end_time", "totals"):
            meta.pop(key, None)
        write_json_atomic(out / "suite_metadata.json", meta)  # (before its tables go: never finished without them)
        for name in STALE_WHEN_RUNNING:
            (out / name).unlink(missing_ok=True)
    runs: list[dict[str, Any]] = []
    n_errors = 0
    for i, job in enumerate(jobs):
        prev = done.get(job.key)
        # the entries of the runs after this one stay listed as they were, whatever stops this one
        rest = [done[j.key] for j in jobs[i + 1:] if j.key in done]
        if prev and job.key in finished:
            runs.append(prev)
            continue
        entry: dict[str, Any] = {"key": job.key, "suite": family(job.suite), "model": job.label or "(all models)",
                                 "seed": job.seed, "setting": job.setting,
                                 "folder": prev.get("folder") if prev else None, "status": "running"}
        if extra is not None:
            entry.update(extra(job))
        if timed:
            entry["seconds"] = float(prev.get("seconds", 0.0)) if prev else 0.0
        meta["runs"] = runs + [entry] + rest
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
        meta["runs"] = runs + rest
        write_json_atomic(out / "suite_metadata.json", meta)
        if on_run:
            on_run(entry)
    return runs, n_errors


#: a collection's files written from its runs when it finishes: removed when a finished collection
#: runs again (its runs' records change), written anew when it finishes
STALE_WHEN_RUNNING = ("scorecard.json", "cost.json", "scorecard.csv", "runs.csv")


def finished_runs(out: Path, meta: dict[str, Any], jobs: list[Job],
                  extra: Callable[[Job], dict[str, Any]] | None = None) -> set[str]:
    """The keys of the jobs a collection lists as finished that still are (`_still_finished`):
    what a resume skips. Called before anything in the folder changes, so an edited folder is
    refused as it is. ``extra``: the keys `run_jobs` adds to a job's entry (checked too)."""
    check_runs(out, meta, jobs)
    done = {r.get("key"): r for r in meta.get("runs", []) if isinstance(r, dict)}
    if meta.get("status") == "finished":  # (a finished collection lists every run: one left out would run again)
        lost = next((j.key for j in jobs if j.key not in done), None)
        if lost is not None:
            raise InputError(f"--resume {out}: suite_metadata.json: the finished collection does not list its run "
                             f"{lost!r} (edited by hand); the folder is left as it is")
    finished = {j.key for j in jobs if (prev := done.get(j.key)) and prev.get("status") == "finished"
                and _still_finished(out, prev, j, extra)}
    for j in jobs:  # an interrupted run resumes from its own run.json: it must be the planned run too
        prev = done.get(j.key)
        if prev and j.key not in finished and isinstance(prev.get("folder"), str) and prev["folder"] \
                and (out / prev["folder"] / "run.json").is_file():
            from stratbench.runner.folders import read_run_json

            saved = read_run_json(out / prev["folder"], "--resume ")
            if isinstance(saved.get("config"), dict):
                _check_planned_config(f"--resume {out}", "; the folder is left as it is", prev, saved["config"], j)
    return finished


def check_listed_runs(out: Path, meta: dict[str, Any], jobs: list[Job],
                      extra: Callable[[Job], dict[str, Any]] | None = None) -> None:
    """What the report checks before it shows a collection's suite_metadata.json: one InputError
    line unless its list of runs is what the collection wrote — every entry a run of the plan,
    listed once, in its own folder inside the collection; each finished run the planned run
    (config, suite, model, seed, setting) with the headline its records give; a finished
    collection listing every planned run as finished."""
    check_runs(out, meta, jobs, flag="")
    done = {r.get("key"): r for r in meta.get("runs", []) if isinstance(r, dict)}
    for j in jobs:
        prev = done.get(j.key)
        if prev and prev.get("status") == "finished":
            if not _still_finished(out, prev, j, extra, flag=""):
                raise InputError(f"{out}/suite_metadata.json: the run {prev.get('folder')} is listed as finished, "
                                 "but it is not (resume the collection to finish it)")
        elif meta.get("status") == "finished":
            raise InputError(f"{out}/suite_metadata.json: the finished collection does not list its run "
                             f"{j.key!r} as finished (edited by hand)")


def check_runs(out: Path, meta: dict[str, Any], jobs: list[Job], flag: str = "--resume ") -> None:
    """suite_metadata.json's list of runs as stratbench writes it — a list of entries, each for a
    run of the plan, listed once, its folder (when it has one) a folder inside the collection —
    or one line before anything changes: a hand-edited entry would otherwise send a finished
    run's work to be done again beside it, or a resume into a folder outside the collection.
    ``flag``: "--resume " for a resume (whose lines say the folder is left as it is), "" for a
    reader."""
    runs = meta.get("runs", [])
    where = f"{flag}{out}: suite_metadata.json" if flag else f"{out}/suite_metadata.json"
    left = "; the folder is left as it is" if flag else ""
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise InputError(f"{where}: \"runs\" is not a list of run entries (edited by hand){left}")
    planned = {j.key for j in jobs} | set(meta.get("plan") or [])
    seen: set[str] = set()
    folders: dict[str, int] = {}
    for k, r in enumerate(runs):
        key, folder = r.get("key"), r.get("folder")
        if not isinstance(key, str) or key not in planned or key in seen:
            raise InputError(f"{where}: runs[{k}] names {json.dumps(key)}, "
                             + ("listed twice" if key in seen else "no run of the saved plan")
                             + f" (edited by hand){left}")
        seen.add(key)
        if folder is not None and (not isinstance(folder, str) or not folder or Path(folder).is_absolute()
                                   or ".." in Path(folder).parts or "\0" in folder):
            raise InputError(f"{where}: runs[{k}]: folder {json.dumps(folder)} is no folder inside the collection "
                             f"(edited by hand){left}")
        if folder is not None and not (out / folder).is_dir():
            raise InputError(f"{where}: runs[{k}]: its folder {folder} is missing (moved or deleted); put it back, "
                             "or run the collection again")
        if folder is not None:
            same = folders.setdefault(str(Path(folder)), k)
            if same != k:  # (two runs cannot share one folder: one of them is not the run it says)
                raise InputError(f"{where}: runs[{k}]: its folder {folder} is also runs[{same}]'s "
                                 f"(edited by hand){left}")


#: settings whose None is a choice the run keeps as given, never one it resolves (no think tags,
#: no reasoning effort): a run saved with a value where the plan has None was planned otherwise
NONE_IS_A_SETTING = ("think_tags", "reasoning_effort")


def _config_json(config: Any) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(config), default=str))


def _as_saved(value: Any) -> str:
    """A value as suite_metadata.json holds it (NaN as null, tuples as lists), for comparing."""
    from stratbench.runner.jsonl import dumps

    return json.dumps(json.loads(dumps({"v": value}))["v"], sort_keys=True)


def _check_planned_config(who: str, left: str, entry: dict[str, Any], saved: dict[str, Any], job: Job) -> None:
    """One line unless a listed run's saved config (run.json) is the collection's plan for it: a run
    saved with settings the plan does not have (or the plan edited since) would finish, or be
    kept, as another run than the one planned."""
    from stratbench.redact import redact_json
    from stratbench.runner.lifecycle import PATH_KEYS, RUNTIME_KEYS, same_path
    from stratbench.workflows.suite_plan import INPUT_KEYS

    # settings the run works out itself (a games file's run saves the number of games it holds)
    derived = getattr(job.config, "derived_keys", lambda: ())()
    for k, v in _config_json(job.config).items():  # (None: left to the run to resolve, e.g. llm_seed)
        if k in NONE_IS_A_SETTING and k not in saved:
            saved = {**saved, k: None}  # (a run saves no key for a setting it was not given)
        if (k in saved and (v is not None or k in NONE_IS_A_SETTING) and k not in RUNTIME_KEYS and k not in ("output_dir", "shard")
                and k not in derived
                and redact_json(v) != saved[k]
                and not (k in PATH_KEYS and isinstance(v, str) and isinstance(saved[k], str) and same_path(v, saved[k]))
                # an input file's path is the machine's (a shard run elsewhere): what it held is
                # checked by the collection's input digests and the games its runs saved
                and not (k in INPUT_KEYS and isinstance(v, str) and isinstance(saved[k], str))
                # a price table that is gone, replaced on the collection's resume (it prices the
                # cost, never a record): the finished run stands
                and not (k == "price_table" and isinstance(saved[k], str) and not os.path.exists(saved[k]))):
            raise InputError(f"{who}: the run {entry['folder']} has {k} = {json.dumps(saved[k])} where the "
                             f"collection's plan has {json.dumps(redact_json(v))}: suite_metadata.json or the run's "
                             f"run.json was edited{left}")


def _still_finished(out: Path, entry: dict[str, Any], job: Job,
                    extra: Callable[[Job], dict[str, Any]] | None = None, flag: str = "--resume ") -> bool:
    """Whether a run the collection lists as finished still is the planned run, finished: its
    run.json says so, its config is the plan's (one line when either file was edited: a
    scorecard whose budget says "paper" over smoke-sized runs is refused), its records are all
    there (a records file cut after the run finished: the run is finished again in place, its
    missing units run again, with a note; a reader, ``flag`` "", is told it is not finished), and
    its entry says what the run is: its suite, model, seed and setting the plan's, its headline
    what its records give (an edited entry is refused: a resume would copy it into runs.csv)."""
    from stratbench.runner.folders import read_run_json

    folder = out / str(entry.get("folder") or "")
    if not entry.get("folder") or not (folder / "run.json").is_file():
        return False
    meta = read_run_json(folder, flag)
    if meta.get("status") != "finished":
        return False
    who = f"{flag}{out}" if flag else f"{out}/suite_metadata.json"
    left = "; the folder is left as it is" if flag else ""
    _check_planned_config(who, left, entry, meta["config"], job)
    want = (meta.get("totals") or {}).get("records")

    have = 0
    for f in sorted(folder.glob("*.jsonl")):
        with f.open("rb") as fh:
            have += sum(1 for line in fh if line.strip())
    if isinstance(want, int) and have < want:
        if not flag:
            return False
        print(f"note: {folder}: {have} of its {want} records are left (a records file was changed after the run "
              "finished); its missing units are run again", file=sys.stderr)
        return False
    from stratbench.workflows.verify import check_run

    check_run(folder)  # its records read as a resume reads them (an edited one: one line, nothing changed)
    expected: dict[str, Any] = {"suite": family(job.suite), "model": job.label or "(all models)", "seed": job.seed,
                                "setting": job.setting, **(extra(job) if extra is not None else {}),
                                "headline": SUITES.get(job.suite).headline(folder)}
    errors = (meta.get("totals") or {}).get("errors")
    if "errors" in entry and isinstance(errors, int):  # (the run's own count, checked against its records)
        expected["errors"] = errors
    for k, v in expected.items():
        if _as_saved(entry.get(k)) != _as_saved(v):
            said = ("a headline its records do not give" if k == "headline" else
                    f"{k} {_as_saved(entry.get(k))}, but the run's is {_as_saved(v)}")
            raise InputError(f"{who}: the run {entry['folder']} is listed with {said}: suite_metadata.json was "
                             f"edited{left}")
    if flag and has_errors(entry):  # a resume tries a run's failed calls again, as the run's own resume does
        print(f"note: {folder}: its {entry['errors']} errored records are tried again", file=sys.stderr)
        return False
    return True


def _run_job(job: Job, out: Path, resume_folder: str | None) -> tuple[Path, int]:
    """Run (or finish) one job; returns its folder and number of errored records/rounds."""
    sub = out / family(job.suite) / (slug(job.label) if job.label else "all-models")
    res = SUITES.get(job.suite).run(replace(job.config, output_dir=str(sub)), resume_dir=resume_folder)
    return Path(res.folder), int(res.n_errors)
