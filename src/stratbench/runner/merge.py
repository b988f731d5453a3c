"""Merging the shards of one run (`--shard i/n`, one per machine) into one result folder that is,
record for record, the folder an unsharded run would have written: the suite-independent part.

Every folder must be a finished run of the same suite with the same config (apart from keys that
only say where or how fast it ran), and the shards must be exactly ``1/n … n/n``. The suite then
merges its own files — it alone knows its record order and how its summary is computed — through
the merger it passes in (`Suite.merge`); `stratbench.workflows.merge` picks the suite.

The shards must also have been made by the same stratbench and numerical libraries
(:data:`VERSION_KEYS` of run.json's "versions"): a merge of numbers two versions may compute
differently is refused. The merged folder is written as a hidden staging folder and renamed when
complete (`runner.folders.stage_folder`), never into one of its inputs.
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import (
    discard_folder,
    now_iso,
    publish_folder,
    read_run_json,
    stage_folder,
    unstaged,
)
from stratbench.runner.jsonl import write_json_atomic
from stratbench.runner.lifecycle import announce_folder
from stratbench.runner.shard import Shard, as_shard, check_complete

# Config keys that may differ between the shards of one run: where a shard wrote its folder and
# how it ran (concurrency, the server it reached). None of them changes a single record, because
# every unit's randomness is keyed by its ids and the model is named by its spec.
IGNORED_CONFIG_KEYS = frozenset({
    "shard", "output_dir", "overwrite", "folder_tag", "max_concurrency", "parallel", "num_workers",
    "base_url",
})

# Packages whose version must be the same in every shard: stratbench itself and the numerical
# libraries the records and summaries are computed with (seeded draws, solvers, bootstrap CIs).
VERSION_KEYS = ("stratbench", "numpy", "scipy", "llama_cpp_cpu")
"""run.json "versions" keys two shards must agree on: the code and numerical libraries, and the
instruction sets of the llama.cpp build a local model ran on (other kernels, other log-probabilities)."""

MergeFn = Callable[[list[Path], Path], Any]


def _read_meta(folder: Path) -> dict[str, Any]:
    meta = read_run_json(folder)
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or "suite" not in meta:
        raise InputError(f"{folder}/run.json: no suite or config")
    return meta


def _fmt(v: Any) -> str:
    text = json.dumps(v, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def check_same_run(folders: Sequence[Path], metas: Sequence[dict[str, Any]]) -> None:
    """InputError naming the first suite or config key on which a folder differs from the first."""
    ref, ref_cfg = metas[0], metas[0]["config"]
    for folder, meta in zip(folders[1:], metas[1:]):
        if (meta["suite"], meta.get("kind")) != (ref["suite"], ref.get("kind")):
            def what(m: dict[str, Any]) -> str:  # ("a nashgap run", "a tmgbench atomic run")
                return m["suite"] + (f" {m['kind']}" if m.get("kind") and m.get("kind") != "run" else "")
            raise InputError(f"{folder} is a {what(meta)} run but {folders[0]} is a {what(ref)} run")
        cfg = meta["config"]
        for key in sorted((set(cfg) | set(ref_cfg)) - IGNORED_CONFIG_KEYS):
            if cfg.get(key) != ref_cfg.get(key):
                raise InputError(f"{folder} and {folders[0]} differ in config key {key!r}: "
                                 f"{_fmt(cfg.get(key))} vs {_fmt(ref_cfg.get(key))}")


def check_same_versions(folders: Sequence[Path], metas: Sequence[dict[str, Any]]) -> None:
    """InputError naming the first of :data:`VERSION_KEYS` two shards recorded different versions
    of (a folder that records none — written before versions were recorded — is not compared)."""
    ref = metas[0].get("versions")
    for folder, meta in zip(folders[1:], metas[1:]):
        versions = meta.get("versions")
        if not isinstance(ref, dict) or not isinstance(versions, dict):
            continue
        for key in VERSION_KEYS:
            a, b = versions.get(key), ref.get(key)
            if key in versions and key in ref and a != b:
                raise InputError(f"{folder} was made with {key} {a} but {folders[0]} with {key} {b}; "
                                 "shards merge only when made by the same versions (re-run one shard "
                                 "with the other's)")


def _check_same_templates(folders: Sequence[Path], metas: Sequence[dict[str, Any]]) -> None:
    """InputError unless the shards' players used chat templates of the same content (their
    run.json's template digests): a template file changed between shards made their records from
    two prompts, though their configs name the same file."""
    from stratbench.runner.lifecycle import template_contents

    ref = template_contents(metas[0])
    for folder, meta in zip(folders[1:], metas[1:]):
        used = template_contents(meta)
        if ref and used and used != ref:
            raise InputError(f"{folder} rendered its prompts with another chat template than {folders[0]} "
                             f"({', '.join(sorted(used))} vs {', '.join(sorted(ref))}): the template file changed "
                             "between the shards; run them again with one template")


def check_output_outside(folders: Sequence[Path], output_dir: str | Path, what: str = "shard folder") -> None:
    """InputError when ``output_dir`` is one of ``folders`` or inside one: a merge writes a new
    folder and never into its inputs."""
    out = Path(output_dir).resolve()
    for f in folders:
        src = Path(f).resolve()
        if out == src or src in out.parents:
            where = "is" if out == src else "is inside"
            raise InputError(f"--output-dir {output_dir}: {where} the {what} {f}; merge writes a new folder, "
                             "never into one of its inputs (give another --output-dir)")
    from stratbench.runner.folders import enclosing_result_folder

    inside = enclosing_result_folder(output_dir)
    if inside is not None:
        raise InputError(f"--output-dir {output_dir}: inside the result folder {inside}; a result folder is "
                         "written by its own run only (give another --output-dir)")


def _sum_totals(metas: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts (records, errors, calls, tokens, cost, …) summed over the shards."""
    out: dict[str, Any] = {}
    for meta in metas:
        for k, v in (meta.get("totals") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def suite_counts(merged: Any) -> dict[str, int]:
    """The counts a suite's summary of the records adds to run.json's totals (ToM's episodes,
    CHBench's matches, the baseline's settings), as the merged records give them: not the shards'
    sums (shards that each play every setting would count each setting once per shard)."""
    from stratbench.runner.lifecycle import Outcome

    extra = merged.totals if isinstance(merged, Outcome) else {}
    return {k: v for k, v in extra.items() if isinstance(v, int) and not isinstance(v, bool)}


def merged_counts(out: Path, merged: Any) -> dict[str, int]:
    """records and errors of the merged folder itself (not the shards' sums, which count a record
    twice when shards were re-run): records are the lines of its JSONL files; errors what the
    suite's merge reports (an `Outcome`), else the records with status "error"."""
    from stratbench.runner.jsonl import read_jsonl
    from stratbench.runner.lifecycle import Outcome

    records = [r for f in sorted(out.glob("*.jsonl")) for r in read_jsonl(f)]
    errors = merged.n_errors if isinstance(merged, Outcome) else sum(r.get("status") == "error" for r in records)
    return {"records": len(records), "errors": int(errors)}


def check_distinct(paths: Sequence[Path]) -> None:
    """InputError naming a folder given twice (as itself, or by another path to it)."""
    seen: dict[Path, Path] = {}
    for p in paths:
        first = seen.get(p.resolve())
        if first is not None:
            raise InputError(f"{p}: the same folder is given twice" + ("" if first == p else f" (as {first} too)"))
        seen[p.resolve()] = p


def finished_shards(paths: Sequence[Path], metas: Sequence[dict[str, Any]], meta_file: str = "run.json",
                    what: str = "run", label: str = "shard", resume: str = "--resume",
                    allow_partial: bool = False) -> list[Shard]:
    """Each folder's shard, after checking they are exactly shards 1..n and all finished — the
    checks every merge (runs, tiered suites, suite files) makes before writing anything."""
    shards: list[Shard] = []
    for p, meta in zip(paths, metas):
        try:
            shards.append(as_shard(meta["config"].get("shard")))
        except (InputError, KeyError, TypeError, ValueError):
            raise InputError(f"{p}/{meta_file}: unreadable shard {meta['config'].get('shard')!r}") from None
    if all(s.whole for s in shards):
        raise InputError(f"these are unsharded {what}s; merge combines the shards (--shard i/n) of one {what}")
    for p, meta, s in zip(paths, metas, shards):
        if s.whole:  # (its shard reads 1/1: "different splits" would call it one)
            kind = f"a merged {what}" if meta.get("merged_from") else f"a whole {what} (made without --shard)"
            raise InputError(f"{p} is {kind}, not a shard; merge combines the shards (--shard i/n) of one {what}")
    check_complete(shards)
    for p, meta in zip(paths, metas):
        if meta.get("status") != "finished" and not allow_partial:
            raise InputError(f"{p}: {label} is not finished (status {meta.get('status')!r}); "
                             f"finish it with {resume} {p} (or merge it as it is with --allow-partial)")
    return shards


def merge_run_folders(folders: Sequence[str | Path], output_dir: str | Path, merger: MergeFn,
                      allow_partial: bool = False,
                      check_shard: Callable[[Path, dict[str, Any]], object] | None = None) -> Path:
    """Merge the finished shards of one run into a new folder under `output_dir`; returns it.

    The folders must be finished runs of one suite and config (only the keys in
    :data:`IGNORED_CONFIG_KEYS` may differ) and exactly shards ``1/n … n/n``; ``merger(folders,
    out)`` — the suite's own merge, given the shards in shard order — writes the records and
    summaries, and this function writes the merged run.json (shard folders, machines and times,
    summed totals). ``check_shard(folder, meta)`` first reads each shard as its own run (the
    suite's record checks by that shard's plan): a record moved into another shard's file, an
    edited count or a torn line is named with its shard, not merged around. Everything is checked
    before the folder is created; the folder is written under a hidden staging name and renamed
    when complete, and a merge that fails midway removes it: the shards are only read, never
    changed.
    """
    paths = [Path(f) for f in folders]
    if not paths:
        raise InputError("merge needs the shard folders of one run")
    check_distinct(paths)
    check_output_outside(paths, output_dir)
    metas = [_read_meta(p) for p in paths]
    check_same_run(paths, metas)
    check_same_versions(paths, metas)
    _check_same_templates(paths, metas)
    shards = finished_shards(paths, metas, allow_partial=allow_partial)
    if check_shard is not None:
        for p, meta in zip(paths, metas):
            check_shard(p, meta)
    suite = metas[0]["suite"]
    order = sorted(range(len(paths)), key=lambda i: shards[i].index)
    paths = [paths[i] for i in order]
    metas = [metas[i] for i in order]

    made = [d for d in (Path(output_dir), *Path(output_dir).parents) if not d.exists()]
    out = stage_folder(output_dir, f"{suite}_merged", tag=metas[0]["config"].get("folder_tag"))
    try:
        merged = merger(paths, out)
        meta = copy.deepcopy(metas[0])
        meta["config"]["shard"] = None  # what an unsharded run records
        meta["config"]["output_dir"] = str(unstaged(output_dir))
        meta["merged_from"] = [str(p) for p in paths]
        meta["shard_runs"] = [
            {"folder": str(p), "shard": str(s), "start_time": m.get("start_time"),
             "end_time": m.get("end_time"), "git": m.get("git"), "platform": m.get("platform"),
             "versions": m.get("versions")}
            for p, s, m in zip(paths, sorted(shards, key=lambda s: s.index), metas)
        ]
        meta["start_time"] = min(m.get("start_time") or "" for m in metas) or None
        meta["end_time"] = max(m.get("end_time") or "" for m in metas) or None
        meta["merged_at"] = now_iso()
        meta["command"] = sys.argv
        meta["status"] = "finished"
        meta["totals"] = {**_sum_totals(metas), **suite_counts(merged), **merged_counts(out, merged)}
        meta.pop("resumed_at", None)
        write_json_atomic(out / "run.json", meta)
        with signals_held():  # (a Ctrl-C now lands once the folder is named: it is complete, nothing lost)
            final = publish_folder(out)
            announce_folder(final)
        return final
    except BaseException:
        discard_folder(out)  # (a no-op once published: the staging name is gone)
        for d in made:  # folders this merge created for its output, now empty again
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered when the block ends) while a finished output is
    renamed into place and named to the command line: an interrupt then never lands between the
    two, where the command would say nothing was written beside a complete folder.

    Held by Python-level handlers that only note the signal, not by a signal mask: a mask holds
    signals for one thread only, and a signal sent to the process may be delivered to any other
    thread (a thread pool's), whose Python handler then runs in the main thread all the same. A
    handler runs in the main thread whichever thread the kernel chose. Off the main thread (where
    no handler can be set) the thread's mask is the fallback."""
    import signal
    import threading

    held = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread():
        mask = getattr(signal, "pthread_sigmask", None)
        if mask is None:  # (not POSIX: no way to hold them back)
            yield
            return
        blocked = mask(signal.SIG_BLOCK, set(held))
        try:
            yield
        finally:
            mask(signal.SIG_SETMASK, blocked)
        return
    got: list[int] = []
    previous = {s: signal.getsignal(s) for s in held}
    for s in held:
        signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(got):
            signal.raise_signal(signum)
