"""Compare two runs of the same suite: the difference of each headline metric (B − A) with a 95%
bootstrap CI. When both runs played the same games, the bootstrap is *paired* over games — the
right test for one model across training checkpoints, since game difficulty cancels out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.suites import suite_for_run

N_BOOT = 2000


def _diff(a: dict[Any, dict[str, float]], b: dict[Any, dict[str, float]], metric: str,
          rng: np.random.Generator) -> dict[str, Any]:
    common = sorted(set(a) & set(b), key=str)
    if len(common) == len(a) == len(b) and common:
        d = np.array([b[k][metric] - a[k][metric] for k in common])
        boots = d[rng.integers(0, len(d), (N_BOOT, len(d)))].mean(axis=1)
        paired = True
        n = len(d)
        mean = float(d.mean())
    else:
        xa = np.array([v[metric] for v in a.values()])
        xb = np.array([v[metric] for v in b.values()])
        boots = (xb[rng.integers(0, len(xb), (N_BOOT, len(xb)))].mean(axis=1)
                 - xa[rng.integers(0, len(xa), (N_BOOT, len(xa)))].mean(axis=1))
        paired = False
        n = min(len(xa), len(xb))
        mean = float(xb.mean() - xa.mean())
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"metric": metric, "a": float(np.mean([v[metric] for v in a.values()])),
            "b": float(np.mean([v[metric] for v in b.values()])), "diff": mean,
            "diff_ci95": [float(lo), float(hi)], "paired": paired, "n_units": n,
            "significant": bool(lo > 0 or hi < 0)}


def compare_runs(run_a: str | Path, run_b: str | Path, seed: int = 0) -> dict[str, Any]:
    """B − A for each metric the runs' suite compares, per part (mode, setting), with a 95%
    bootstrap CI paired over shared units when both runs hold the same units."""
    fa, fb = Path(run_a), Path(run_b)
    ma, mb = read_run_json(fa), read_run_json(fb)
    if ma.get("suite") != mb.get("suite"):
        raise InputError(f"cannot compare a {ma.get('suite')} run with a {mb.get('suite')} run")
    suite = suite_for_run(ma, str(fa))
    ua, ub = suite.compare_units(fa), suite_for_run(mb, str(fb)).compare_units(fb)
    rng = np.random.default_rng(seed)
    rows = []
    for part in sorted(set(ua) & set(ub)):
        for m in suite.compare_metrics:
            if ua[part] and ub[part] and all(m in v for v in ua[part].values()) and all(
                    m in v for v in ub[part].values()):
                rows.append({"part": part, **_diff(ua[part], ub[part], m, rng)})
    if not rows:
        raise InputError("the two runs have no mode/setting in common")
    return {"suite": ma.get("suite"), "run_a": str(fa), "run_b": str(fb), "rows": rows}
