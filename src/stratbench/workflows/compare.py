"""Compare two runs of the same suite: the difference of each headline metric (B − A) with a 95%
bootstrap CI. When both runs played the same games, the bootstrap is *paired* over games — the
right test for one model across training checkpoints, since game difficulty cancels out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.stats import bootstrap_diff
from stratbench.suites import suite_for_run


def _diff(a: dict[Any, dict[str, float]], b: dict[Any, dict[str, float]], metric: str,
          rng: np.random.Generator) -> dict[str, Any]:
    """B − A of one metric: paired over units when both runs hold exactly the same units."""
    common = sorted(set(a) & set(b), key=str)
    paired = len(common) == len(a) == len(b) and bool(common)
    if paired:
        xa, xb = [a[k][metric] for k in common], [b[k][metric] for k in common]
    else:
        xa, xb = [v[metric] for v in a.values()], [v[metric] for v in b.values()]
    mean, (lo, hi) = bootstrap_diff(xa, xb, paired, rng)
    return {"metric": metric, "a": float(np.mean([v[metric] for v in a.values()])),
            "b": float(np.mean([v[metric] for v in b.values()])), "diff": mean,
            "diff_ci95": [lo, hi], "paired": paired, "n_units": len(common) if paired else min(len(xa), len(xb)),
            "significant": bool(lo > 0 or hi < 0)}


def _check_records(folder: Path) -> None:
    """Every record of the run's files is a JSON object of finite numbers: stratbench writes an
    undefined number as null, so a NaN or an infinity read back is a hand edit, and a difference
    over it would print nan (one line naming the file and line instead)."""
    from stratbench.runner.jsonl import read_jsonl
    from stratbench.runner.validation import check_schema

    for f in sorted(folder.glob("*.jsonl")):
        check_schema(read_jsonl(f), dict, f)  # (a plain dict: only the finite-number check applies)


def _units(suite: Any, folder: Path) -> Any:
    """The suite's compare units of one run. Its records were read through the suite's checks
    first (a record no run writes is named with its file and line there); what still fails here is
    a file the checks do not cover, named by its folder."""
    try:
        return suite.compare_units(folder)
    except InputError:  # (a suite's own refusal says what it is: not a hand edit)
        raise
    except (KeyError, TypeError, ValueError, IndexError) as e:  # records no run writes (edited by hand)
        raise InputError(f"{folder}: a record cannot be compared ({type(e).__name__}: {e}); were its files "
                         "edited by hand?") from None


def _shard_text(meta: dict[str, Any]) -> str:
    from stratbench.runner.shard import as_shard

    shard = meta["config"].get("shard")
    try:
        return str(as_shard(shard))
    except (InputError, KeyError, TypeError, ValueError):
        return repr(shard)


def _not_a_collection(folder: Path) -> None:
    """A suite file's folder (or another collection of runs, not a scorecard) is no run: one line
    that says its runs are compared one by one."""
    import json

    if (folder / "run.json").exists() or not (folder / "suite_metadata.json").is_file():
        return
    try:
        meta = json.loads((folder / "suite_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        meta = None
    what = "a suite file's folder" if isinstance(meta, dict) and meta.get("suite") == "suite-file" else \
        "a folder of several runs (suite_metadata.json)"
    raise InputError(f"{folder}: {what}, not one run; suite folders are compared run by run: stratbench compare "
                     f"{folder}/<suite>/<model>/<run> OTHER_RUN (a scorecard folder is compared whole)")


def compare_runs(run_a: str | Path, run_b: str | Path, seed: int = 0, allow_partial: bool = False) -> dict[str, Any]:
    """B − A for each metric the runs' suite compares, per part (mode, setting), with a 95%
    bootstrap CI paired over shared units when both runs hold the same units. Unfinished runs are
    refused (their units would be a biased subset) unless `allow_partial`."""
    fa, fb = Path(run_a), Path(run_b)
    for folder in (fa, fb):
        _not_a_collection(folder)
    ma, mb = read_run_json(fa), read_run_json(fb)
    from stratbench.workflows.verify import check_run, is_whole

    for folder, meta in ((fa, ma), (fb, mb)):
        if meta.get("status") != "finished" and not allow_partial:
            raise InputError(f"{folder}: run is not finished (status {meta.get('status')!r}); finish it with "
                             "--resume or compare what it holds with --allow-partial")
    if ma.get("suite") != mb.get("suite"):
        raise InputError(f"cannot compare a {ma.get('suite')} run with a {mb.get('suite')} run")
    suite = suite_for_run(ma, str(fa))
    suite_for_run(mb, str(fb))
    from stratbench.runner.folders import suite_version_of

    va, vb = suite_version_of(ma, str(fa)), suite_version_of(mb, str(fb))
    if va != vb:
        raise InputError(f"{fa} is a run of version {va} of the {ma.get('suite')} suite and {fb} of version {vb}: "
                         "their numbers come from different definitions of the benchmark and are not compared")
    for folder, meta in ((fa, ma), (fb, mb)):
        if not is_whole(meta) and not allow_partial:  # (its units are a subset of the run's, as an unfinished run's)
            raise InputError(f"{folder}: one shard of a run (shard {_shard_text(meta)}); merge its shards with "
                             "stratbench merge, or compare what it holds with --allow-partial")
    for folder in (fa, fb):
        _check_records(folder)
        check_run(folder)  # every record read as a resume reads it; a finished run's summaries agreeing
    ua, ub = _units(suite, fa), _units(suite_for_run(mb, str(fb)), fb)
    rng = np.random.default_rng(seed)
    rows = []
    for part in sorted(set(ua) & set(ub)):
        for m in suite.compare_metrics:
            if ua[part] and ub[part] and all(m in v for v in ua[part].values()) and all(
                    m in v for v in ub[part].values()):
                rows.append({"part": part, **_diff(ua[part], ub[part], m, rng)})
    if not rows:
        unscored = [str(f) for f, u in ((fa, ua), (fb, ub)) if not any(u.values())]
        if unscored:  # (the same parts, but nothing scored in them: every answer an error or unparsed)
            raise InputError(f"{' and '.join(dict.fromkeys(unscored))}: "
                             + ("holds" if len(set(unscored)) == 1 else "hold")
                             + " no scored record (every answer failed or was not parsed): there is nothing to compare")
        if set(ua) & set(ub):
            raise InputError("the two runs have no mode/setting in which both hold scored records")
        raise InputError("the two runs have no mode/setting in common")
    return {"suite": ma.get("suite"), "run_a": str(fa), "run_b": str(fb), "rows": rows}
