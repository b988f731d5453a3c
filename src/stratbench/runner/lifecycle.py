"""One run lifecycle for every suite: validate → create or resume the folder → run.json → stream
the records → sort → summarise → finish with totals.

A suite describes one run as a :class:`RunPlan` (what to check, which folder, which records files
and the work that fills them, how to summarise); :func:`execute` does the rest, identically for
every suite:

* everything that can fail on bad input (validation, reading games files, opening the player)
  happens in ``prepare``/``resume_from``/``open`` *before* a folder exists, so bad input never
  leaves a partial folder;
* records are appended to their JSONL file the moment each unit of work completes (a unit may
  write one record — a trial — or several — a match's rounds, an episode's steps), so a killed run
  loses only work in flight;
* a resumed run cuts a torn last line, keeps the records of finished units, drops those of
  unfinished or errored units (they are played again) and runs only the rest; it first checks
  that the folder can be written, removes the ``*.tmp`` files a killed write left, and a resume
  of a finished run that fails without changing a record puts its run.json back as it was (the
  status never flips to "running" for nothing);
* the files end in canonical order (records arrive in completion order), so concurrency and
  sharding never change them, and summaries are computed from the records alone — which is also
  what lets :func:`merge_streams` rebuild an unsharded run from its shards.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from stratbench import interrupts
from stratbench.errors import BaseUrlNotApplicable, InputError, OutputWriteError
from stratbench.files import first_not_utf8
from stratbench.runner.folders import (
    check_not_a_listed_run,
    check_suite_version,
    create_run_folder,
    now_iso,
    output_dir_ready,
    read_run_json,
    run_metadata,
)
from stratbench.runner.jsonl import (
    JsonlWriter,
    read_jsonl,
    remove_stale_tmp,
    scan_jsonl,
    write_atomic,
    write_error,
    write_json_atomic,
    write_jsonl_atomic,
)
from stratbench.runner.lock import folder_lock
from stratbench.runner.pool import run_pool
from stratbench.runner.schema import Record, RunMeta, RunTotals
from stratbench.runner.validation import check_schema, dedupe

U = TypeVar("U")
C = TypeVar("C")


class Progress(Protocol):
    """What the lifecycle needs of a progress display (rich's `Progress` fits)."""

    def add_task(self, description: str, *, total: float | None = ..., completed: int = ...) -> Any: ...

    def advance(self, task_id: Any, advance: float = ...) -> None: ...


def no_errors(records: list[Record]) -> bool:
    """The default test of a finished unit: none of its records is an error."""
    return all(r.get("status") != "error" for r in records)


@dataclass
class Stream(Generic[U]):
    """One records file of a run and the work that fills it.

    ``units`` are this run's (or shard's) units of work in canonical order; ``work(unit)`` returns
    the unit's record or records and never raises for model failures (they are records with status
    "error"). ``record_unit(record)`` names the unit a record belongs to, as ``unit_key(unit)``
    does; ``unit_done(records)`` says whether a unit's saved records let a resumed run keep it.
    """

    file: str
    units: Sequence[U]
    work: Callable[[U], Awaitable[Record | list[Record]]]
    unit_key: Callable[[U], Hashable]
    record_unit: Callable[[Record], Hashable]
    sort_key: Callable[[Record], Any]
    concurrency: int = 1
    unit_done: Callable[[list[Record]], bool] = no_errors
    label: str = ""  # the progress bar's label (default: the file name)
    unit_name: str = "units"  # what a unit is called in messages ("trials", "matches", "episodes")
    # the id of one record (unique in the file; default: none checked) and the written schema of a
    # record (a TypedDict): records read back on resume or merge are checked against both
    record_key: Callable[[Record], Hashable] | None = None
    record_schema: type | None = None
    # what the schema's types cannot say (a scored trial holds its numbers): why a record read back
    # cannot be one the suite wrote, or None
    record_problem: Callable[[Record], str | None] | None = None
    # whether a unit's records were cut short (a write interrupted, or lines removed): a finished
    # run never holds such a unit, so a merge refuses it (default: none is; ToM: an episode's
    # rounds that stop before its end without a failure)
    unit_partial: Callable[[list[Record]], bool] | None = None


@dataclass
class FolderSpec:
    """Where a new run's folder goes: ``<output_dir>/<prefix>_<time>[_<tag>]``, or
    ``<output_dir>/<overwrite_name>`` (replaced) with ``--overwrite``."""

    output_dir: str | Path
    prefix: str
    tag: str | None = None
    overwrite_name: str | None = None


@dataclass
class Outcome:
    """What a run's summaries say: the summaries written (by part: a Nash-gap mode, or "" for a
    run with one summary), the number of errored records or units, and suite-specific totals."""

    summaries: dict[str, dict[str, Any]]
    n_errors: int
    totals: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    """A finished run: its folder, summaries, error count (exit code 1 when > 0) and totals."""

    folder: Path
    summaries: dict[str, dict[str, Any]]
    n_errors: int = 0
    totals: RunTotals = field(default_factory=lambda: RunTotals())

    @property
    def summary(self) -> dict[str, Any]:
        """The run's summary (for a run with several parts, the first)."""
        return next(iter(self.summaries.values()), {})


class RunPlan(abc.ABC):
    """One run of one suite, as the lifecycle sees it. Subclasses hold the config and whatever
    they build from it (games, units, players)."""

    suite: str  # run.json "suite"
    kind: str  # run.json "kind"
    version: ClassVar[int] = 1  # run.json "suite_version": the suite entry's `version` (schema.SUITE_VERSION_DOC)

    # -- before any folder exists -----------------------------------------------------------------
    @abc.abstractmethod
    def prepare(self) -> None:
        """A new run: validate the config, resolve seeds, build the work. Raise InputError on bad
        input; write nothing."""

    def check_folder(self, folder: Path) -> None:
        """A resumed run, before its run.json is read: refuse a folder that cannot be this kind of
        run with a message naming what is missing (default: reading run.json says it)."""

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        """A resumed run: rebuild the config from the folder's run.json (and inputs it saved), as
        the interrupted run had it. Raise InputError when the folder is not this kind of run."""
        raise InputError(f"--resume {folder}: {self.suite} {self.kind} runs cannot be resumed")

    def open(self) -> None:
        """Open the players (load models, check their policies). Runs after prepare/resume_from
        and before anything is written."""

    @abc.abstractmethod
    def folder_spec(self) -> FolderSpec: ...

    @abc.abstractmethod
    def config_json(self) -> dict[str, Any]:
        """The config as run.json records it."""

    # -- writing ----------------------------------------------------------------------------------
    def write_inputs(self, folder: Path) -> None:
        """Files a new run writes before its records (e.g. games.json)."""

    def update_meta(self, meta: RunMeta, new: bool) -> None:
        """Add suite-specific keys to run.json (e.g. "agent") before the records are streamed."""

    def finish_meta(self, meta: RunMeta) -> None:
        """Add what is known only at the end (e.g. the policy each player used) to run.json."""

    @abc.abstractmethod
    def streams(self) -> list[Stream[Any]]: ...

    @abc.abstractmethod
    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        """Write the summaries (and tables, plots) computed from the records; shared by a run and
        by merging its shards."""

    def totals(self, records: dict[str, list[Record]], outcome: Outcome) -> dict[str, Any]:
        """run.json totals of a finished run (default: records, errors, suite extras, usage)."""
        return {"records": sum(len(r) for r in records.values()), "errors": outcome.n_errors,
                **outcome.totals, **{f"model_{k}": v for k, v in self.usage().items()}}

    def usage(self) -> dict[str, Any]:
        """The players' model usage (calls, cache hits, errors, tokens[, cost_usd])."""
        return {"calls": 0}

    async def aclose(self) -> None:
        """Release the players (connections, models)."""


# Settings a resumed run takes from the command that resumes it, when given there: they say how
# the run is carried out (how fast, through which server), never what a record holds.
RUNTIME_KEYS = ("max_concurrency", "parallel", "num_workers", "base_url", "no_cache", "timeout", "retries",
                "wait_for_server")


# Settings that name a file the run reads again when resumed: a new run saves them as absolute
# paths (`absolute_paths`), so a resume from another folder finds the same file.
PATH_KEYS = ("price_table", "chat_template")


def absolute_paths(config: Any) -> None:
    """A new run's `PATH_KEYS` settings that name an existing file by a relative path, made
    absolute (from the folder the command runs in, as it read them); a missing file is left as
    given, for its own one-line refusal."""
    for k in PATH_KEYS:
        v = getattr(config, k, None)
        if isinstance(v, str) and v.strip() and not os.path.isabs(v) and os.path.exists(v):
            full = os.path.abspath(v)
            if first_not_utf8(full) is not None:  # (run.json, UTF-8, could not hold it)
                raise InputError(f"--{k.replace('_', '-')} {v}: its full path holds bytes that are not UTF-8 text "
                                 "(the folder the command runs in); run the command from a folder whose path is "
                                 "UTF-8, or give the file's path from one")
            setattr(config, k, full)


def same_path(now: str, saved: str) -> bool:
    """Whether a path setting `now` names the `saved` one: equal, or `saved` relative (a folder
    made before paths were saved absolute) and `now` ending with it."""
    if now == saved:
        return True
    tail = Path(saved).parts
    return not os.path.isabs(saved) and bool(tail) and Path(now).parts[-len(tail):] == tail


def rebuild_config(cls: type[C], saved: dict[str, Any], *, given: Any = None, **overrides: Any) -> C:
    """A config dataclass from run.json's saved config: keys the class no longer has are ignored
    (folders outlive code); with `given` (the config of the command that resumes the run), the
    runtime settings it sets to other than their defaults win; ``overrides`` win over all. The one
    place a saved config is turned back into a config."""
    names = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in saved.items() if k in names}
    for k in ("seed", "llm_seed"):
        # a started run saves the seeds it drew; a null one (a hand edit) would draw afresh on
        # resume: other samples, other bootstrap intervals, beside records made with the old ones
        if k in names and k in saved and saved[k] is None:
            raise InputError(f"run.json's saved config is not valid: {k} is null (a run saves the seed it drew); "
                             "the folder is left as it is")
    for k, v in values.items():
        # a list field (models, opponents, mechanisms) read back as something else (a string the
        # CLI would split at commas, a number) would be taken apart character by character
        spec = names[k]
        default = spec.default_factory() if spec.default_factory is not MISSING else spec.default  # type: ignore[misc]
        if isinstance(default, list) and v is not None and not isinstance(v, list):
            raise InputError(f"run.json's saved config is not valid: {k} must be a list (got {v!r:.60}); "
                             "the folder is left as it is")
    if given is not None:
        for k in RUNTIME_KEYS:
            f = names.get(k)
            if f is not None and hasattr(given, k) and getattr(given, k) != f.default:
                values[k] = getattr(given, k)
    config = cls(**{**values, **overrides})
    saved_url = "base_url" in values and values["base_url"] is not None and values["base_url"] == saved.get("base_url")
    shown = getattr(config, "player", None)
    if "player" in saved and "player" not in names and isinstance(shown, str) and saved["player"] != shown:
        # (run.json's "player" is written from the config, for people: one that is not is an edit)
        raise InputError(f"run.json's saved config is not valid: player is {saved['player']!r:.80} but its config "
                         f"plays {shown!r:.80} (run.json was edited); the folder is left as it is")
    from stratbench.checks import check_config

    try:  # a hand-edited run.json ("seed": "x", "num_rows": 0) is refused here, before the folder is touched
        check_config(config)
        validate = getattr(config, "validate", None)
        if callable(validate):  # the checks a new run's config gets (ranges, names, combinations)
            try:
                validate()
            except BaseUrlNotApplicable:
                if not saved_url:
                    raise
                # a folder made when --base-url was ignored for a run with no HTTP model: it
                # never reached a server; the run is read (and resumed) as it was made, here
                config.base_url = None  # type: ignore[attr-defined]
                validate()
    except InputError as e:
        raise InputError(f"run.json's saved config is not valid: {e}; the folder is left as it is") from None
    return config


def check_meta(meta: RunMeta, folder: Path, suite: str, kinds: Iterable[str], flag: str = "--resume") -> None:
    """InputError unless run.json belongs to ``suite`` and (when it says) one of ``kinds``."""
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise InputError(f"{flag} {folder}: run.json has no config")
    kinds = tuple(kinds)
    if meta.get("suite") != suite or meta.get("kind", kinds[0]) not in kinds:
        what = f"{meta.get('suite')!r}" + (f" ({meta.get('kind')})" if meta.get("kind") else "")
        raise InputError(f"{flag} {folder}: folder is a {what} run, not {suite} {'/'.join(kinds)}")


# -- streaming ----------------------------------------------------------------------------------


def _groups(records: Iterable[Record], unit_of: Callable[[Record], Hashable]) -> dict[Hashable, list[Record]]:
    out: dict[Hashable, list[Record]] = {}
    for r in records:
        out.setdefault(unit_of(r), []).append(r)
    return out


def _unit_of(stream: Stream[Any], rec: Record, path: Path, line: int) -> Hashable:
    try:
        return stream.record_unit(rec)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: line {line}: record has no usable id ({type(e).__name__}: {e})") from None


def read_stream(path: Path, stream: Stream[Any], repair: bool = False) -> list[Record]:
    """A stream's records as saved: torn tail cut (with `repair`), every record checked against
    the stream's schema and naming a unit of the stream, exact duplicates dropped, conflicting
    duplicates refused."""
    records = read_jsonl(path, repair=repair)
    check_schema(records, stream.record_schema, path)
    known = {stream.unit_key(u) for u in stream.units}
    for line, rec in enumerate(records, 1):
        unit = _unit_of(stream, rec, path, line)
        if unit not in known:
            raise InputError(f"{path}: line {line}: a record for {unit!r}, which this run does not have "
                             "(a record of another run, or edited by hand)")
        why = stream.record_problem(rec) if stream.record_problem is not None else None
        if why is not None:
            raise InputError(f"{path}: line {line}: {why} (edited by hand)")
    return dedupe(records, stream.record_key, path)


def check_records(plan: RunPlan, folder: Path) -> dict[str, list[Record]]:
    """Every record of the run in ``folder`` read back as a resume reads it (each stream's schema,
    units and record checks), nothing changed: what compare and the report ask of a run they do not
    recompute whole (an unfinished run, one shard). ``plan`` is the folder's own run (its shard),
    its players not opened."""
    return {s.file: read_stream(folder / s.file, s) for s in plan.streams()}


def check_finished_units(plan: RunPlan, folder: Path, records: dict[str, list[Record]]) -> None:
    """InputError naming the records file of a finished run (or shard) ``folder`` that lacks a unit
    of its plan, or holds one cut short (``records``: :func:`check_records`'s). A finished run
    wrote every unit whole: one missing was cut or moved out of the file since."""
    for stream in plan.streams():
        groups = _groups(records[stream.file], stream.record_unit)
        want = {stream.unit_key(u) for u in stream.units}
        if want - set(groups):
            raise InputError(f"{folder / stream.file}: the finished run holds only {len(want & set(groups))} of the "
                             f"run's {len(want)} {stream.unit_name} (none for {stream.unit_name[:-1]} "
                             f"{_first(want - set(groups))!r}): records were cut or moved since it finished, or its "
                             f"config was edited to more; finish it again with --resume {folder}")
        for unit, group in groups.items():
            if stream.unit_partial is not None and stream.unit_partial(group):
                raise InputError(f"{folder / stream.file}: the run's records of {stream.unit_name[:-1]} {unit} stop "
                                 f"short ({len(group)} records) though the run finished: it was cut or edited; "
                                 f"finish the run again with --resume {folder}")


def resume_file(path: Path, stream: Stream[Any], before_change: Callable[[], None] | None = None) -> set[Hashable]:
    """Cut a torn tail, keep the records of finished units (dropping the rest, and duplicates, from
    the file), and return the finished units' keys. ``before_change`` is called before the file
    is changed, when it is."""
    previous, good_end, size = scan_jsonl(path)
    kept_all = read_stream(path, stream)
    groups = _groups(kept_all, stream.record_unit)
    done = {k for k, rs in groups.items() if stream.unit_done(rs)}
    kept = [r for r in kept_all if stream.record_unit(r) in done]
    if before_change is not None and (good_end < size or len(kept) != len(previous)):
        before_change()
    if good_end < size:
        read_jsonl(path, repair=True)
    if len(kept) != len(previous):
        write_jsonl_atomic(path, kept)
    return done


async def _fill(folder: Path, stream: Stream[Any], progress: Progress | None,
                checkpoint: Callable[[], None] | None = None,
                before_change: Callable[[], None] | None = None) -> list[Record]:
    path = folder / stream.file
    done = resume_file(path, stream, before_change)
    todo = [u for u in stream.units if stream.unit_key(u) not in done]
    if before_change is not None and todo:
        before_change()  # records are about to be added
    task = (progress.add_task(stream.label or stream.file, total=len(stream.units),
                              completed=len(stream.units) - len(todo)) if progress else None)
    with JsonlWriter(path) as writer:
        def on_result(_: Any, out: Record | list[Record]) -> None:
            writer.write_many(out if isinstance(out, list) else [out])
            if progress is not None:
                progress.advance(task)
            if checkpoint is not None:
                checkpoint()

        await run_pool(todo, stream.work, stream.concurrency, on_result)
    records = sorted(read_jsonl(path), key=stream.sort_key)
    write_jsonl_atomic(path, records)
    return records


# -- the lifecycle ------------------------------------------------------------------------------


_FOLDER_LISTENERS: list[Callable[[Path], None]] = []


@contextlib.contextmanager
def on_run_folder(callback: Callable[[Path], None]) -> Iterator[None]:
    """Call `callback(folder)` whenever a run in this process has its folder (created, or opened to
    resume), before any record is written: the CLI names it when a run is interrupted, suite files
    record it so that a resumed suite finishes the interrupted run in place."""
    _FOLDER_LISTENERS.append(callback)
    try:
        yield
    finally:
        _FOLDER_LISTENERS.remove(callback)


def announce_folder(folder: Path) -> None:
    """Tell the listeners a folder is being written (runs, and workflows for their suite folders)."""
    for cb in list(_FOLDER_LISTENERS):
        cb(folder)


PARTIAL = ".partial"
CHECKPOINT_S = 5.0  # how often a running run's model usage is saved to run.json


def _new_folder(spec: FolderSpec) -> Path:
    """The folder a new run writes. With ``--overwrite`` the run is written beside the old one, in
    ``<name>.partial``, and replaces ``<name>`` only when it finishes: a bad flag, a crash or a
    Ctrl-C never destroys the previous run."""
    if not spec.overwrite_name:
        return create_run_folder(spec.output_dir, spec.prefix, tag=spec.tag).path
    work = output_dir_ready(spec.output_dir) / (spec.overwrite_name + PARTIAL)
    if work.exists():  # an earlier --overwrite run that never finished: replaced (unless running)
        with folder_lock(work):
            shutil.rmtree(work)
    work.mkdir(parents=True)
    return work


def _finish_folder(folder: Path) -> Path:
    """``<name>.partial`` (an --overwrite run, finished now) takes the place of ``<name>``."""
    if not folder.name.endswith(PARTIAL):
        return folder
    final = folder.with_name(folder.name[: -len(PARTIAL)])
    if final.exists():
        old = final.with_name(f"{final.name}.old-{os.getpid()}")
        with folder_lock(final):
            final.rename(old)
        folder.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        folder.rename(final)
    return final


def _with_earlier_usage(totals: dict[str, Any], earlier: Any) -> dict[str, Any]:
    """A resumed run's model usage (calls, cache hits, tokens, HTTP requests, retries, cost) is the
    interrupted sessions' plus this one's: run.json counts what the whole run cost. Records and
    errors are counted from the records themselves."""
    if not isinstance(earlier, dict):
        return totals
    out = dict(totals)
    for k, v in earlier.items():
        if k.startswith("model_") and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = out.get(k, 0) + v
    return out


def check_writable(folder: Path) -> None:
    """OutputWriteError naming the folder when a file cannot be created in it (read-only file
    system, permission, no space): a resume refuses before it changes anything."""
    probe = folder / f".write-check-{os.getpid()}.tmp"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"\n")
        finally:
            os.close(fd)
    except OSError as e:
        raise write_error(folder, e) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def _template_on_resume(plan: RunPlan, meta: RunMeta, folder: Path, given: Any) -> None:
    """The resume's ``--chat-template``: taken only in place of the run's saved template when that
    file is gone (the folder copied to another machine), saved from then on; the template's digest
    in run.json is checked against it later (`check_same_player`), so only the same template
    finishes the run. Beside a saved template that is still there, or a run without one, the flag
    would be ignored: refused in one line."""
    config = getattr(plan, "config", None)
    saved = getattr(config, "chat_template", None)
    if not isinstance(given, str) or not given.strip():
        if isinstance(saved, str) and saved.strip() and not os.path.exists(saved):
            raise InputError(f"--resume {folder}: the chat template saved with the run ({saved}) is gone; give the "
                             "same template with --chat-template FILE (run.json's digest of it is checked)")
        return
    if not isinstance(saved, str) or not saved.strip():
        raise InputError(f"--chat-template {given}: the run in {folder} was started without one, and a resume "
                         "finishes it with the settings saved there; drop --chat-template")
    if os.path.exists(saved):
        try:
            same = os.path.samefile(given, saved)
        except OSError:
            same = False
        if same:
            return
        raise InputError(f"--chat-template {given}: the run in {folder} reads its saved template {saved}, which is "
                         "still there; drop --chat-template")
    if not os.path.isfile(given):
        raise InputError(f"--chat-template {given}: no such file")
    full = os.path.abspath(given)
    config.chat_template = full  # type: ignore[union-attr]
    if isinstance(meta.get("config"), dict):
        meta["config"]["chat_template"] = full  # (the next resume reads it from here)


def execute(plan: RunPlan, progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
    """Run (or, with ``resume_dir``, finish) one run described by ``plan``; returns its result.

    Everything that can fail on bad input happens before the folder is created or changed; the
    folder is locked while the run writes it (a second writer is refused with one line)."""
    meta: RunMeta
    finished_meta: str | None = None  # a finished run's run.json, put back if its resume fails
    records_changed = [False]
    with contextlib.ExitStack() as stack:
        if resume_dir is not None:
            folder = Path(resume_dir)
            plan.check_folder(folder)
            if not folder.is_dir():
                raise InputError(f"--resume {folder}: not a result folder")
            stack.enter_context(folder_lock(folder))
            meta = read_run_json(folder, "--resume ")  # type: ignore[assignment]
            if meta.get("status") == "finished":
                check_not_a_listed_run(folder)
            given_template = getattr(getattr(plan, "config", None), "chat_template", None)
            try:
                plan.resume_from(meta, folder)
            except InputError as e:
                if str(e).startswith("run.json's saved config"):  # (rebuild_config knows no folder)
                    raise InputError(f"--resume {folder}/{e}") from None
                raise
            _template_on_resume(plan, meta, folder, given_template)
            check_suite_version(meta, plan.version, f"--resume {folder}")
            try:
                plan.open()
            except InputError as e:  # the model its saved config names (or this command's flags for it)
                raise InputError(str(e) if str(folder) in str(e) else f"--resume {folder}: {e}") from None
            check_writable(folder)
            if meta.get("status") == "finished":
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    finished_meta = (folder / "run.json").read_bytes().decode("utf-8")
            meta["status"] = "running"
            meta.setdefault("resumed_at", []).append(now_iso())
        else:
            plan.prepare()
            absolute_paths(getattr(plan, "config", None))  # (run.json is read again from other folders)
            plan.open()
            interrupts.checkpoint()  # a Ctrl-C a library swallowed while loading: no folder made
            spec = plan.folder_spec()
            folder = _new_folder(spec)
            stack.enter_context(folder_lock(folder))
            meta = run_metadata(plan.suite, plan.config_json(), plan.kind,  # type: ignore[assignment]
                                suite_version=plan.version)
            try:
                plan.write_inputs(folder)
            except BaseException:  # no run.json yet: nothing to resume, no folder left behind
                shutil.rmtree(folder, ignore_errors=True)
                raise
        streams = plan.streams()
        if resume_dir is not None:  # every saved record is checked before anything is changed
            check_same_player(plan, meta, folder)  # (an edited run.json first: it would fail every record)
            saved = {stream.file: read_stream(folder / stream.file, stream) for stream in streams}
            if finished_meta is not None:
                _check_no_units_added(meta, folder, streams, saved)
                _check_counts(plan, meta, folder, streams, saved)
            remove_stale_tmp(folder)  # left by a write that was killed or refused (disk full)
        if resume_dir is not None:
            interrupts.checkpoint()  # (before the resumed run's run.json changes)
        plan.update_meta(meta, new=resume_dir is None)
        if finished_meta is None:  # (a finished run says "running" again only once a record changes)
            try:
                write_json_atomic(folder / "run.json", meta)
            except BaseException:
                if resume_dir is None:  # a new folder without run.json: nothing to resume
                    shutil.rmtree(folder, ignore_errors=True)
                raise
        announce_folder(folder)

        earlier = meta.get("totals") if resume_dir is not None else None
        last = [time.monotonic()]

        def save_usage(force: bool = False) -> None:
            # the model usage so far, in run.json every few seconds (and when the run stops): an
            # interrupted run's calls are still counted when it is resumed
            if finished_meta is not None and not records_changed[0]:
                return  # a finished run this resume has not changed: its run.json stays as it is
            if force or time.monotonic() - last[0] > CHECKPOINT_S:
                last[0] = time.monotonic()
                meta["totals"] = _with_earlier_usage(  # type: ignore[typeddict-item]
                    {f"model_{k}": v for k, v in plan.usage().items()}, earlier)
                write_json_atomic(folder / "run.json", meta)

        def mark_changed() -> None:
            if not records_changed[0]:
                records_changed[0] = True
                if finished_meta is not None:  # the finished run's records change: it is running again
                    write_json_atomic(folder / "run.json", meta)

        async def fill_all() -> dict[str, list[Record]]:
            out: dict[str, list[Record]] = {}
            try:
                for stream in streams:
                    out[stream.file] = await _fill(folder, stream, progress, save_usage, mark_changed)
            except BaseException:
                with contextlib.suppress(OutputWriteError):  # the first refused write is the one to name
                    save_usage(force=True)
                raise
            finally:
                await plan.aclose()
            return out

        try:
            records = asyncio.run(fill_all())
            interrupts.checkpoint()  # a cancellation a library swallowed: stopped, not finished
            outcome = plan.summarise(folder, records)
            plan.finish_meta(meta)
            meta["end_time"] = now_iso()
            meta["status"] = "finished"
            meta["totals"] = _with_earlier_usage(plan.totals(records, outcome), earlier)  # type: ignore[typeddict-item]
            write_json_atomic(folder / "run.json", meta)
        except BaseException:
            if finished_meta is not None and not records_changed[0]:
                # a finished run whose records this resume did not touch is still finished: its
                # run.json goes back as it was, whatever stopped the resume (a summary that
                # cannot be written, a full disk, Ctrl-C)
                with contextlib.suppress(OutputWriteError):
                    write_atomic(folder / "run.json", finished_meta)
            else:  # stopped after the records, while summarising: this session's calls still count
                meta["status"] = "running"  # (a stop in the last write: the summary is not all there)
                meta.pop("end_time", None)
                with contextlib.suppress(OutputWriteError):
                    save_usage(force=True)
            raise
    folder = _finish_folder(folder)
    return RunResult(folder, outcome.summaries, outcome.n_errors, meta["totals"])


def _check_no_units_added(meta: RunMeta, folder: Path, streams: Sequence[Stream[Any]],
                          saved: dict[str, list[Record]]) -> None:
    """A finished run holds every unit of its plan, whole or stopped by an error (played again on
    resume). When none of its records is lost (run.json's totals.records still counts them all),
    a unit it lacks, or holds cut short without an error, is one its config did not ask for when
    it finished: run.json's config was edited to more trials, episodes or rounds. The resume is
    refused, as compare refuses the folder, instead of playing the new units into a finished run.
    (Records cut from a finished run are played again, as before.)"""
    totals = meta.get("totals")
    want = totals.get("records") if isinstance(totals, dict) else None
    if not isinstance(want, int) or sum(len(rs) for rs in saved.values()) < want:
        return
    for stream in streams:
        groups = _groups(saved[stream.file], stream.record_unit)
        keys = [stream.unit_key(u) for u in stream.units]
        whole = [k for k in keys if k in groups and (stream.unit_done(groups[k]) or not no_errors(groups[k]))]
        if len(whole) < len(keys):
            raise InputError(f"--resume {folder}/run.json: the finished run holds only {len(whole)} of the run's "
                             f"{len(keys)} {stream.unit_name} whole (and none of its records is lost): its config was "
                             "edited to more than the run played; the folder is left as it is")


def _check_counts(plan: RunPlan, meta: RunMeta, folder: Path, streams: Sequence[Stream[Any]],
                  saved: dict[str, list[Record]]) -> None:
    """A finished run that this resume will not change (every unit done): its run.json's
    totals.records and totals.errors are what its records count, and the config keys its summaries
    repeat are run.json's, summarised into a scratch folder (nothing in the run's folder is written
    first); an edited count or config key is refused. A run with units to play again (records cut,
    errors) is counted afresh when it finishes."""
    import tempfile

    totals = meta.get("totals")
    totals = totals if isinstance(totals, dict) else {}
    for stream in streams:
        done = {k for k, rs in _groups(saved[stream.file], stream.record_unit).items() if stream.unit_done(rs)}
        if any(stream.unit_key(u) not in done for u in stream.units):
            return
    records = {f: sorted(rs, key=s.sort_key) for (f, rs), s in zip(saved.items(), streams)}
    with tempfile.TemporaryDirectory(prefix="stratbench-count-") as tmp:
        try:
            outcome = plan.summarise(Path(tmp), records)
        except OutputWriteError:
            return  # (the scratch copy cannot be written, a full disk: the run's own write names it)
        _check_summary_config(meta, folder, Path(tmp))
    again = plan.totals(records, outcome)
    for key in ("records", "errors"):
        if key in totals and key in again and totals[key] != again[key]:
            raise InputError(f"--resume {folder}/run.json: totals.{key} is {totals[key]!r}, but the run's records "
                             f"count {again[key]!r}: run.json was edited; the folder is left as it is")


def _check_summary_config(meta: RunMeta, folder: Path, again: Path) -> None:
    """A finished run's summaries repeat config keys (a ToM run's history, payoffs, label set): one
    that run.json now says otherwise was edited there (or in the summary), and a resume would write
    the summary anew under the edited config, its records unchanged."""
    import json

    config = meta.get("config")
    for f in sorted(again.glob("summary*.json")):
        try:
            saved = json.loads((folder / f.name).read_text(encoding="utf-8"))
            now = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue  # (a summary that cannot be read is written anew)
        if not isinstance(saved, dict) or not isinstance(now, dict) or not isinstance(config, dict):
            continue
        for k, v in now.items():
            if k in config and k in saved and config[k] == v and saved[k] != v and not isinstance(v, (dict, list)):
                raise InputError(f"--resume {folder}/run.json: config.{k} is {v!r}, but {f.name} says {saved[k]!r}: "
                                 "run.json or the summary was edited; the folder is left as it is")


def check_same_player(plan: RunPlan, meta: RunMeta, folder: Path, flag: str = "--resume ") -> None:
    """A resumed run's player is the one its records were made by: run.json's config edited to
    another model would otherwise finish the run with a second player's records mixed in (and
    compare and the report would show the records under another player's name)."""
    probe: dict[str, Any] = {}
    plan.update_meta(probe, new=True)  # type: ignore[arg-type]  # what a new run with this config says
    saved, now = meta.get("agent"), probe.get("agent")
    if isinstance(saved, dict) and isinstance(now, dict) and saved.get("name") != now.get("name"):
        raise InputError(f"{flag}{folder}: run.json's config plays {now.get('name')!r} but the run's records "
                         f"were made by {saved.get('name')!r} (its \"agent\"): run.json was edited; the folder is "
                         "left as it is")
    files_then, files_now = _model_files(meta), _model_files(probe)
    for spec, was in files_then.items():
        if files_now.get(spec, was) != was:
            raise InputError(f"{flag}{folder}: the model {spec} is not the one the run started with (its files "
                             f"{was} in run.json, {files_now[spec]} now: a file saved anew, replaced, added or "
                             "removed since; names, sizes and modification times are compared); finish the run "
                             "with those files, or start a new one; the folder is left as it is")
    then, used = _template_digests(meta), _template_digests(probe)
    if then and used and {_content(t) for t in then} != {_content(t) for t in used}:  # (a copy by another name: the same)
        named = meta.get("config", {}).get("chat_template") if isinstance(meta.get("config"), dict) else None
        raise InputError(f"{flag}{folder}: the chat template{f' {named}' if named else ''} is not the one the run "
                         f"started with ({', '.join(sorted(then))} in run.json, {', '.join(sorted(used))} now: the "
                         "file, or the tokenizer_config.json beside a .jinja whose BOS/EOS texts it takes, was "
                         "changed); put it back to finish the run, or start a new one; the folder is left as it is")


_TEMPLATE_DIGEST = re.compile(r".+:sha256:[0-9a-f]{16}")


def _content(digest: str) -> str:
    """A template identity's content digest, without the file name (``t.jinja:sha256:…`` → ``sha256:…``)."""
    return "sha256:" + digest.rsplit(":sha256:", 1)[-1]


def template_contents(meta: Any) -> set[str]:
    """The content digests (``sha256:…``) of the chat templates a run.json's players used."""
    return {_content(t) for t in _template_digests(meta)}


def _player_dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Every dict inside a run.json but its config, where a suite keeps its players' ``describe()``."""
    stack = [v for k, v in value.items() if k != "config"] if isinstance(value, dict) else []
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            yield v
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _model_files(value: Any) -> dict[str, str]:
    """``{spec: identity}`` of the local models a run.json's players name (a model's ``describe()``:
    llama.cpp's ``file``, hf's ``weights``), wherever a suite keeps them."""
    found: dict[str, str] = {}
    for v in _player_dicts(value):
        key = {"llama.cpp": "file", "hf": "weights"}.get(str(v.get("backend")))
        if key and isinstance(v.get("spec"), str) and isinstance(v.get(key), str):
            found[v["spec"]] = v[key]
    return found


def _template_digests(value: Any) -> set[str]:
    """The chat-template identities (``file:sha256:…``, a model's ``describe()``) a run.json's
    players name, wherever a suite keeps them (its config holds the path only)."""
    return {t for v in _player_dicts(value)
            if isinstance(t := v.get("chat_template"), str) and _TEMPLATE_DIGEST.fullmatch(t)}


def _first(keys: set[Hashable]) -> Hashable:
    """The first of a set of unit keys in a stable order (what a message names as an example)."""
    try:
        return min(keys)  # type: ignore[type-var]  # (tuples of ints: the first in play order)
    except TypeError:
        return min(keys, key=repr)


def merge_streams(plan: RunPlan, folders: Sequence[Path], out: Path) -> Outcome:
    """Merge finished shards: each records file is the union of the shards' records in canonical
    order, checked to hold every unit of the unsharded plan exactly once, then summarised exactly
    as an unsharded run is. ``plan`` is the unsharded run (shard cleared, inputs read)."""
    records: dict[str, list[Record]] = {}
    for stream in plan.streams():
        recs: list[Record] = []
        seen: dict[Hashable, int] = {}
        duplicated = 0
        for k, f in enumerate(folders):
            shard_recs = read_stream(Path(f) / stream.file, stream)
            for unit in _groups(shard_recs, stream.record_unit):
                if unit in seen and seen[unit] != k:
                    duplicated += 1
                seen[unit] = k
            recs.extend(shard_recs)
        want = {stream.unit_key(u) for u in stream.units}
        got = set(seen)
        if got != want or duplicated:
            raise InputError(f"{stream.file}: the shards hold {len(got & want)} of the run's {len(want)} {stream.unit_name}"
                             + (f" and {duplicated} twice" if duplicated else "")
                             + (f" and {len(got - want)} not in the run" if got - want else "")
                             + (f" (none holds {stream.unit_name[:-1]} {_first(want - got)!r})" if want - got else "")
                             + "; merge every shard of one run once, each after it has finished")
        if stream.unit_partial is not None:
            for unit, group in _groups(recs, stream.record_unit).items():
                if stream.unit_partial(group):
                    whose = ("the shards' records", "their runs", "a records file was", "that shard") if len(folders) > 1 \
                        else ("the run's records", "the run", "it was", "the run")
                    raise InputError(f"{stream.file}: {whose[0]} of {stream.unit_name[:-1]} {unit} stop short "
                                     f"({len(group)} records) though {whose[1]} finished: {whose[2]} cut or "
                                     f"edited; finish {whose[3]} again with --resume")
        recs = dedupe(recs, stream.record_key, out / stream.file)  # one record per id across shards
        recs.sort(key=stream.sort_key)
        write_jsonl_atomic(out / stream.file, recs)
        records[stream.file] = recs
    return plan.summarise(out, records)
