"""Suite files: several benchmarks × several models × several seeds, described in one TOML or YAML
file and run with one command (`stratbench suite run FILE`).

A file::

    name = "checkpoint-sweep"
    seeds = [42, 43]
    models = ["embedded", "hf:/ckpt/step-2000",
              {spec = "openai-compatible:my-base", base_url = "http://gpu1:8000/v1", label = "served"}]

    [nashgap]            # any NashgapConfig field: num_games, combined, order_rotations, bucket, ...
    num_games = 50
    combined = true

    [tmgbench]           # TmgbenchConfig fields: prompting, setting, form, repeats, games, ...
    prompting = "DA"

    [chbench]            # ChbenchConfig fields; all models play each other in one run per seed
    opponents = ["level-k:1", "poisson:1.5"]
    mechanisms = ["baseline", "memory"]

    [tom]                # TomRunConfig fields; `games` / `partners` lists expand into one run each
    games = ["rps", "ipd"]
    partners = ["single_action", "tit_for_tat"]
    episodes = 5

Every section and key is checked before anything runs (an unknown key or a bad value is one
error line naming the section). Runs land in ``<output_dir>/suite_<timestamp>/<suite>/<model>/``;
``suite_metadata.json`` lists every run (suite, model, seed, folder, status) and is rewritten after
each one, so ``--resume SUITE_DIR`` skips finished runs and finishes interrupted ones; ``runs.csv``
holds each run's headline numbers. Each run is an ordinary result folder, so `stratbench report`,
`compare` and `merge` work on them.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from stratbench.errors import InputError
from stratbench.redact import redact_json
from stratbench.render.csv_cells import csv_row
from stratbench.runner.folders import (
    create_run_folder,
    migrate_run_json,
    missing_dirs,
    now_iso,
    remove_empty_dirs,
    run_metadata,
)
from stratbench.runner.jsonl import write_csv_atomic, write_json_atomic
from stratbench.runner.lifecycle import announce_folder
from stratbench.runner.lock import folder_lock
from stratbench.suites.base import Job
from stratbench.workflows.jobs import check_listed_runs, finished_runs, run_jobs
from stratbench.workflows.suite_plan import (
    ABSENT_INPUT,
    check_job_models,
    check_no_redacted_urls,
    file_folder,
    input_digests,
    input_settings,
    may_be_absent,
    pending_jobs,
    plan_suite_data,
    plan_suite_file,
    read_suite_file,
    with_file_paths,
)


@dataclass
class SuiteRunResult:
    folder: Path
    runs: list[dict[str, Any]]
    n_errors: int


def _without_urls(value: Any) -> Any:
    """A suite file's data with every ``base_url`` value left out (what a resume may change)."""
    if isinstance(value, dict):
        return {k: None if k == "base_url" else _without_urls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_urls(v) for v in value]
    return value


def run_suite_file(path: str | Path | None = None, output_dir: str | None = None, resume_dir: str | None = None,
                   on_run: Callable[[dict[str, Any]], None] | None = None,
                   shard: str | None = None, price_table: str | None = None) -> SuiteRunResult:
    """Run every job of a suite file (or finish the suite in `resume_dir`).

    ``shard="i/n"`` runs every n-th *run* (round-robin over the file's runs in order), so each
    machine runs whole runs; `stratbench merge` puts the shards' folders back together.
    ``price_table``: on a resume, stands in for a section's saved price table that is gone (the
    folder copied to another machine, the table moved) — as a single run's resume takes it; a
    table prices a run's cost, never a record. Not saved: each such resume gives it again.
    """
    from stratbench.runner.shard import parse_shard, shard_from_json

    made: list[Path] = []
    if resume_dir:
        # a resumed suite finishes the plan saved in its folder: the file may have been edited since
        out = Path(resume_dir)
        meta = _read_suite_metadata(out, f"--resume {out}")
        meta = migrate_run_json(meta, f"--resume {out}/suite_metadata.json")  # (a newer format refused)
        if meta.get("kind", "suite") != "suite" or meta.get("suite_version", 1) != 1:
            raise InputError(f"--resume {out}/suite_metadata.json: kind {meta.get('kind')!r}, suite_version "
                             f"{meta.get('suite_version')!r} are not a suite file's (edited by hand); the folder is "
                             "left as it is")
        data = meta["config"]
        if path is not None:
            # the file given again: the saved plan is the file's with credentials in URLs redacted,
            # so the file is how a URL with credentials is given again — or where a server that
            # moved is now: base URLs are runtime settings (no run's key or record holds them)
            given = read_suite_file(path)
            if _without_urls(redact_json(given)) != _without_urls(data):
                # (a plan whose URLs were saved without their credentials cannot be finished without a
                # file that gives them: "drop the file argument" would send the user to the refusal
                # that asks for the file again — fuzz 28 A F1)
                way = ("put back the file the suite was started with (its base URLs carry credentials the folder "
                       "does not keep) and give it again" if "***" in json.dumps(data)
                       else "drop the file argument to finish the saved plan")
                raise InputError(f"{path}: differs from the plan saved in {out}/suite_metadata.json (not only in "
                                 f"base URLs); {way}, or run the new file as a new suite")
            data = given
        # relative file settings from the file's folder: the file given again, or its path saved when
        # the suite started (absolute; a folder made before that saved it as given, seen from here)
        base = file_folder(str(path if path is not None else meta.get("file") or out / "x"))
        planned = with_file_paths(data, base)
        if meta.get("status") == "finished":  # (nothing left to price: a table moved away since is not needed)
            planned = _without_gone_price_tables(planned)
        else:
            planned = _with_price_table_for_gone(planned, price_table, out)
            _refuse_gone_templates(planned, out)
            _refuse_changed_inputs(planned, meta, out)
        try:
            jobs = plan_suite_data(planned, Path(meta.get("file") or out))
        except InputError as e:  # (the saved plan, not the file, when no file is given again: fuzz 29 B F6)
            if path is not None:
                raise
            raise InputError(f"--resume {out}/suite_metadata.json: its saved plan is not a suite file's ({e}); "
                             "edited by hand? the folder is left as it is") from None
        if [j.key for j in jobs] != meta.get("plan"):
            raise InputError(f"--resume {out}: the saved plan no longer gives the same runs with this version "
                             "of stratbench; run the suite again")
        sh = shard_from_json(meta.get("shard"))
        stray = _run_outside(meta, sh.select(jobs))
        if stray is not None:  # (a whole suite relabelled a shard)
            raise InputError(f"--resume {out}: suite_metadata.json lists the run {stray!r}, which its shard "
                             f"{meta.get('shard')!r} does not play (edited by hand); the folder is left as it is")
        # what is left to run checked as a new suite's models are, before the folder changes
        pending = pending_jobs(sh.select(jobs), meta)
        check_no_redacted_urls(pending, out, f"stratbench suite run {shlex.quote(str(meta.get('file') or 'FILE'))} "
                                             f"--resume {shlex.quote(str(out))} (the suite file again)")
        check_job_models(pending)
    else:
        if path is None:
            raise InputError("give a suite file")
        data, jobs = plan_suite_file(path)
        sh = parse_shard(shard)
        if sh.count > len(jobs):
            raise InputError(f"--shard {sh}: the suite has only {len(jobs)} runs")
        # every model opened before the folder exists: a refusal leaves nothing behind, and names
        # the file whose models it is
        try:
            check_job_models(sh.select(jobs))
        except InputError as e:
            raise InputError(f"{path}: models: {e}") from None
        inputs = input_digests(with_file_paths(data, file_folder(path)), str(path))  # (read before the folder exists)
        base = output_dir or data.get("output_dir") or "results"
        made = missing_dirs(base)
        out = create_run_folder(base, "suite", flag="--output-dir" if output_dir else f"{path}: output_dir").path
        meta = run_metadata("suite-file", data, kind="suite")
        meta.update(file=os.path.abspath(path), name=data.get("name"), runs=[], plan=[j.key for j in jobs], shard=sh.to_json(),
                    inputs=inputs)
    jobs = sh.select(jobs)
    finished = finished_runs(out, meta, jobs) if resume_dir else set()
    with refused_leaves_nothing(out, meta, new=not resume_dir, made=made), folder_lock(out):
        write_json_atomic(out / "suite_metadata.json", meta)  # resumable from its first moment
        announce_folder(out)
        runs, n_errors = run_jobs(out, meta, jobs, on_run, finished=finished)
        meta.update(runs=runs, end_time=now_iso(), status="finished", totals=suite_totals(out, runs))
        write_json_atomic(out / "suite_metadata.json", meta)
        write_runs_csv(out, runs)
    return SuiteRunResult(out, runs, n_errors)


def _run_outside(meta: dict[str, Any], jobs: list[Job]) -> Any:
    """The key of the first run suite_metadata.json lists that is none of ``jobs`` (its shard's), or
    None: a whole suite relabelled a shard lists runs its shard does not play."""
    keys = {j.key for j in jobs}
    return next((r.get("key") for r in meta.get("runs") or [] if isinstance(r, dict) and r.get("key") not in keys),
                None)


def _without_gone_price_tables(data: dict[str, Any]) -> dict[str, Any]:
    """A suite's data without the sections' price tables that are gone (moved away with the suite
    file, or the folder copied elsewhere): a price table prices a run's cost, never a record, so the
    runs a finished suite holds are read and checked without it."""
    import os

    out = dict(data)
    for section, params in data.items():
        if isinstance(params, dict) and isinstance(params.get("price_table"), str) \
                and not os.path.exists(params["price_table"]):
            out[section] = {k: v for k, v in params.items() if k != "price_table"}
    return out


def _with_price_table_for_gone(data: dict[str, Any], price_table: str | None, out: Path) -> dict[str, Any]:
    """An unfinished suite's data with `price_table` in place of every section's saved table that is
    gone; without it, one line saying which table is gone and how to go on."""
    from stratbench.models.prices import load_price_table

    gone = [s for s, params in data.items() if isinstance(params, dict) and isinstance(params.get("price_table"), str)
            and not os.path.exists(params["price_table"])]
    if not gone:
        return data
    if not price_table:
        raise InputError(f"--resume {out}: the price table saved with the suite's [{gone[0]}] section "
                         f"({data[gone[0]]['price_table']}) is gone; give it (or another) with --price-table FILE")
    load_price_table(price_table)  # (a bad replacement named as the flag, before anything runs)
    return {s: ({**params, "price_table": os.path.abspath(price_table)} if s in gone else params)
            for s, params in data.items()}


def _refuse_gone_templates(data: dict[str, Any], out: Path) -> None:
    """One line naming a section's saved chat template that is gone: its runs' digests hold only
    that template, and `suite run` takes no replacement (a run's resume does: `--chat-template`)."""
    for section, params in data.items():
        t = params.get("chat_template") if isinstance(params, dict) else None
        if isinstance(t, str) and t.strip() and not os.path.exists(t):
            raise InputError(f"--resume {out}: the chat template of the suite's [{section}] section ({t}) is gone; "
                             "put the same file back at that path to finish the suite (its runs name its digest)")


def _check_inputs_list(planned: dict[str, Any], saved: Any, where: str, left: str = "") -> None:
    """One line unless a suite's saved "inputs" are what a suite run writes: a digest for each input
    setting of the plan, `ABSENT_INPUT` only where a setting may name nothing (`may_be_absent`:
    an "absent" games file was set by hand, and hid a changed one, fuzz 19 B D1)."""
    if not isinstance(saved, dict) or not all(isinstance(v, str) for v in saved.values()) \
            or set(saved) != set(input_settings(planned)) \
            or any(v == ABSENT_INPUT and not may_be_absent(planned, k) for k, v in saved.items()):
        raise InputError(f"{where}: inputs {json.dumps(saved)[:80]} is not the digests of the files its plan reads "
                         f"(edited by hand){left}")


def _refuse_changed_inputs(planned: dict[str, Any], meta: dict[str, Any], out: Path) -> None:
    """One line when a file or folder an unfinished suite's runs read (a games file, stories, a
    template: `INPUT_KEYS`) is not what it was when the suite started: the runs not yet started
    would play the new content beside runs that played the old (fuzz 16 B D1). The saved digests
    must be one per input setting of the plan (an edited list is refused); a suite saved before
    digests were kept ("inputs" absent) is not checked — nor, so, one whose key was deleted by
    hand; a file that is gone is named by the checks that read it."""
    if "inputs" not in meta:
        return
    saved = meta["inputs"]
    _check_inputs_list(planned, saved, f"--resume {out}: suite_metadata.json", "; the folder is left as it is")
    now = input_digests(planned, f"--resume {out}")
    for key, digest in saved.items():
        if digest != ABSENT_INPUT and now[key] not in (digest, ABSENT_INPUT):
            section, name = key.rsplit(".", 1)
            raise InputError(f"--resume {out}: the suite's [{section}] {name} ({planned[section][name]}) has changed "
                             "since the suite started; put the original back to finish the suite, or run the file "
                             "as a new suite")


def check_suite_file_folder(folder: Path, meta: dict[str, Any]) -> None:
    from stratbench.runner.shard import shard_from_json

    p = folder / "suite_metadata.json"
    if meta.get("kind", "suite") != "suite" or meta.get("suite_version", 1) != 1:
        raise InputError(f"{p}: kind {meta.get('kind')!r}, suite_version {meta.get('suite_version')!r} are not a "
                         "suite file's (edited by hand)")
    file = meta.get("file")
    if not isinstance(meta.get("config"), dict) or not isinstance(file, (str, type(None))):
        raise InputError(f"{p}: not a suite file's metadata (its config or file is not what a suite run writes)")
    data = _without_gone_price_tables(with_file_paths(meta["config"], file_folder(file or folder / "x")))
    try:
        jobs = plan_suite_data(data, Path(file or folder))
    except InputError as e:  # (named as the metadata's: the suite file is not what was read)
        raise InputError(f"{p}: its config is not a suite file's ({e}); edited by hand?") from None
    if [j.key for j in jobs] != meta.get("plan"):
        raise InputError(f"{p}: its plan is not the runs its config gives (edited by hand, or written by another "
                         "version of stratbench)")
    try:
        sh = shard_from_json(meta.get("shard"))
    except (InputError, KeyError, TypeError, ValueError):
        raise InputError(f"{p}: shard {meta.get('shard')!r} is not a shard (edited by hand)") from None
    selected = sh.select(jobs)
    stray = _run_outside(meta, selected)
    if stray is not None:  # (a whole suite relabelled a shard: its table would say so)
        raise InputError(f"{p}: runs lists {stray!r}, which its shard {meta.get('shard')!r} does not play "
                         "(edited by hand)")
    check_listed_runs(folder, meta, selected)
    totals = meta.get("totals")
    if totals is not None and not isinstance(totals, dict):
        raise InputError(f"{p}: totals {totals!r:.60} is not what a suite run writes (edited by hand)")
    if isinstance(totals, dict):  # (the sums of its runs' own totals; whatever its status says)
        missing = [k for k in ("runs", "records") if k not in totals]
        if missing:
            raise InputError(f"{p}: totals has no {' or '.join(missing)} (edited by hand)")
        again = suite_totals(folder, [r for r in meta.get("runs", []) if isinstance(r, dict)])
        added = sorted(set(totals) - set(again))
        if added:  # (a total no run counts, shown by the report: fuzz 29 B F7)
            raise InputError(f"{p}: totals.{added[0]} is {totals[added[0]]!r:.40}, which none of its runs counts "
                             "(edited by hand)")
        for k, v in again.items():
            saved = totals.get(k)
            if k in totals and not (isinstance(saved, (int, float)) and not isinstance(saved, bool)
                                    and abs(saved - v) <= 1e-9 * max(1.0, abs(v))):
                raise InputError(f"{p}: totals.{k} is {saved!r}, but its runs' run.json files add up to {v!r} "
                                 "(edited by hand)")


def suite_totals(out: Path, runs: list[dict[str, Any]]) -> dict[str, int | float]:
    """The suite's totals: its number of runs and, summed over its runs, every count in their
    run.json ``totals`` (records, errors, model calls, cache hits, tokens, ...) — what `merge` and
    a reader of suite_metadata.json report without opening every run."""
    from stratbench.runner.folders import read_run_json

    totals: dict[str, int | float] = {"runs": len(runs)}
    for r in runs:
        if not r.get("folder"):
            continue
        for k, v in (read_run_json(out / r["folder"]).get("totals") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                totals[k] = totals.get(k, 0) + v
    return totals


@contextlib.contextmanager
def refused_leaves_nothing(out: Path, meta: dict[str, Any], new: bool,
                           made: list[Path] | None = None) -> Iterator[None]:
    """A collection folder (suite file, scorecard) made by this command is removed again when the
    command is refused (one error line) before any of its runs has a folder of its own: a refusal
    leaves nothing behind — nor the output folders (``made``, deepest first) the command created to
    hold it. Once a run has started, the folder holds work and stays, resumable; an interrupted
    collection (Ctrl-C) always stays."""
    try:
        yield
    except (InputError, OSError):
        if new and not any(r.get("folder") or r.get("status") == "finished" for r in meta.get("runs", [])):
            shutil.rmtree(out, ignore_errors=True)
            remove_empty_dirs(made or [])
        raise


def write_runs_csv(out: Path, runs: list[dict[str, Any]]) -> None:
    """runs.csv: one row per headline number of every run."""
    def write(fh: Any) -> None:
        w = csv.writer(fh)
        w.writerow(["suite", "model", "seed", "setting", "part", "metric", "value", "ci95_low", "ci95_high", "folder"])
        for r in runs:
            for h in r.get("headline", []):
                ci = h.get("ci95") or [None, None]
                w.writerow(csv_row([r["suite"], r["model"], r["seed"], r["setting"], h["part"], h["metric"],
                                    h["value"], ci[0], ci[1], r["folder"]]))
    write_csv_atomic(out / "runs.csv", write)


def _check_runs_read_one_input(runs: list[tuple[Path, dict[str, Any]]]) -> None:
    """One line unless the runs that read one input saved the same thing from it: the shards'
    saved input digests agree by construction or by a hand edit, what each run saved does not lie
    (a shard that ran after an input changed, its digests copied from another). The games of
    every run of a suite section with a games_file (one setting per section; its path may differ
    by machine), and the chat template (its content digest in run.json) of every run of one model
    in one section."""
    import hashlib

    from stratbench.runner.lifecycle import template_contents

    played: dict[str, tuple[str, Path]] = {}
    templates: dict[tuple[str, str], tuple[frozenset[str], Path]] = {}
    for folder, entry in runs:
        try:
            meta = json.loads((folder / "run.json").read_text())
        except (OSError, ValueError):
            continue  # (checked as each shard was read)
        if not isinstance(meta, dict):
            continue
        suite, config = str(meta.get("suite")), meta.get("config")
        used = frozenset(template_contents(meta))
        if used:
            first_t = templates.setdefault((suite, str(entry.get("model"))), (used, folder))
            if first_t[0] != used:
                raise InputError(f"{folder}/run.json: its run used another chat template than {first_t[1]} "
                                 f"(the same model in the same section): the shards did not play one suite (a "
                                 "template changed between them, and a shard's suite_metadata.json inputs were "
                                 "edited to hide it)")
        source = config.get("games_file") if isinstance(config, dict) else None
        if not isinstance(source, str):
            continue
        try:
            games = (folder / "games.json").read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(games).hexdigest()
        first = played.setdefault(suite, (digest, folder))
        if first[0] != digest:
            raise InputError(f"{folder}/games.json: its run played other games than {first[1]}, though both "
                             f"read the suite's games_file ({source}): the shards did not play one suite (a games "
                             "file changed between them, and a shard's suite_metadata.json inputs were edited to "
                             "hide it)")


def _read_suite_metadata(folder: Path, where: str) -> dict[str, Any]:
    """A suite-file folder's suite_metadata.json (a suite and a config), or InputError saying which
    of missing, unreadable, not JSON or another kind of folder it is."""
    path = folder / "suite_metadata.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{where}: not a suite-file folder (no suite_metadata.json)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: suite_metadata.json cannot be read ({type(e).__name__})") from None
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(f"{where}: suite_metadata.json is not valid JSON (a corrupt or truncated file)") from None
    if not isinstance(meta, dict) or meta.get("suite") != "suite-file" or not isinstance(meta.get("config"), dict):
        raise InputError(f"{where}: not a suite-file folder (its suite_metadata.json is not a suite file's)")
    for key, types, what in _METADATA_FIELDS:
        if key in meta and not isinstance(meta[key], types):
            raise InputError(f"{where}: suite_metadata.json: {key} is {_short(meta[key])}, not {what} (edited by hand)")
    if not all(isinstance(r, dict) for r in meta.get("runs", [])):
        raise InputError(f"{where}: suite_metadata.json: runs holds an entry that is no object (edited by hand)")
    return meta


#: suite_metadata.json keys a suite run writes, with their types (a key a reader needs that is
#: missing is named where it is read)
_METADATA_FIELDS: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("runs", list, "a list of run entries"), ("plan", list, "a list of runs"),
    ("start_time", str, "a time"), ("end_time", (str, type(None)), "a time"), ("status", str, "a status"),
    ("versions", dict, "the versions a run records"),
)


def _first_setting_difference(a: Any, b: Any, path: str = "") -> str:
    """The first setting (``[section] key``) on which two saved suite-file configs differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if _canonical(a.get(k)) != _canonical(b.get(k)):
                return _first_setting_difference(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    shown = f"[{path.rsplit('.', 1)[0]}] {path.rsplit('.', 1)[1]}" if "." in path else (path or "the file")
    return f"{shown}: {_short(a)} vs {_short(b)}"


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def merge_suite_file_shards(folders: list[Path], output_dir: str | Path) -> Path:
    """Merge the finished shards 1..n of one suite-file run: every run folder is copied into a new
    suite folder at the same relative path, and the metadata and runs.csv list all runs in the
    file's order — what an unsharded `suite run` writes. The shards are only read; a merge that
    fails midway removes its folder."""
    import shutil

    from stratbench.runner.folders import discard_folder, publish_folder, stage_folder
    from stratbench.runner.merge import check_same_versions, finished_shards

    metas = [_read_suite_metadata(f, str(f)) for f in folders]
    for f, m in zip(folders[1:], metas[1:]):
        if _canonical(m["config"]) != _canonical(metas[0]["config"]):
            raise InputError(f"{f} and {folders[0]} come from different suite files "
                             f"({_first_setting_difference(m['config'], metas[0]['config'])})")
    # (a games file changed between shards; a setting one shard found absent is read by none of them)
    if "inputs" in metas[0] or any("inputs" in m for m in metas):
        planned = with_file_paths(metas[0]["config"], file_folder(metas[0].get("file") or folders[0] / "x"))
        for f, m in zip(folders, metas):
            _check_inputs_list(planned, m.get("inputs"), f"{f}/suite_metadata.json")
        for key in input_settings(planned):
            read = {m["inputs"][key] for m in metas} - {ABSENT_INPUT}
            if len(read) > 1:
                raise InputError(f"the shards read different input files (the [{key.rsplit('.', 1)[0]}] "
                                 f"{key.rsplit('.', 1)[1]} changed between them: suite_metadata.json's inputs differ)")
    check_same_versions(folders, metas)  # as for the shards of one run: numbers two versions may compute differently
    # a suite file's shard sits beside its config (the config is the file's own data)
    finished_shards(folders, [{"config": {"shard": m.get("shard")}, "status": m.get("status")} for m in metas],
                    "suite_metadata.json", "suite", "suite shard", "stratbench suite run --resume")
    for f, m in zip(folders, metas):  # each shard as the report reads it: its entries and its runs' records
        check_suite_file_folder(f, migrate_run_json(m, str(f / "suite_metadata.json")))
    plan = metas[0]["plan"]
    runs = sorted(((f, r) for f, m in zip(folders, metas) for r in m["runs"]), key=lambda fr: plan.index(fr[1]["key"]))
    if [r["key"] for _, r in runs] != plan:
        raise InputError("the shards do not hold every run of the suite exactly once")
    _check_runs_read_one_input([(f / r["folder"], r) for f, r in runs])
    out = stage_folder(output_dir, "suite_merged")  # renamed when complete
    try:
        merged_runs = []
        for f, r in runs:
            dest = out / r["folder"]
            k = 2
            while dest.exists():  # two shards may have started a run in the same second
                dest = out / f"{r['folder']}_{k}"
                k += 1
            shutil.copytree(f / r["folder"], dest)
            merged_runs.append({**r, "folder": str(dest.relative_to(out))})
        meta = dict(metas[0])
        meta.update(shard=None, runs=merged_runs, merged_from=[str(f) for f in folders],
                    start_time=min(m.get("start_time") or "" for m in metas) or None,
                    end_time=max(m.get("end_time") or "" for m in metas),
                    merged_at=now_iso(), totals=suite_totals(out, merged_runs))
        write_json_atomic(out / "suite_metadata.json", meta)
        write_runs_csv(out, meta["runs"])
    except BaseException:
        discard_folder(out)
        raise
    return publish_folder(out)
