"""Compare two runs of the same suite: the difference of each headline metric (B − A) with a 95%
bootstrap CI. When both runs played the same games, the bootstrap is *paired* over games — the
right test for one model across training checkpoints, since game difficulty cancels out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.jsonl import read_jsonl

N_BOOT = 2000
NASHGAP_METRICS = ("exploitability", "exploitability_normalized", "nash_gap", "llm_value")


def _meta(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        raise InputError(f"{folder}: not a result folder (no readable run.json)") from None


def _nashgap_units(folder: Path) -> dict[str, dict[Any, dict[str, float]]]:
    """mode → game key → per-game mean of each metric (scored trials only)."""
    games = {g["game_id"]: json.dumps(g["payoff_matrix"]) for g in json.loads((folder / "games.json").read_text())}
    out: dict[str, dict[Any, dict[str, float]]] = {}
    for f in sorted(folder.glob("trials*.jsonl")):
        recs = [r for r in read_jsonl(f) if r["status"] in ("ok", "parsed")]
        if not recs:
            continue
        mode = recs[0]["mode"]
        by: dict[Any, list[dict[str, Any]]] = {}
        for r in recs:
            by.setdefault(games[r["game_id"]], []).append(r)
        out[mode] = {k: {m: float(np.mean([r[m] for r in rs])) for m in NASHGAP_METRICS}
                     for k, rs in by.items()}
    return out


def _tmgbench_units(folder: Path) -> dict[str, dict[Any, dict[str, float]]]:
    path = folder / "grids.json"
    if not path.exists():
        raise InputError(f"{folder}: no grids.json (complex-form runs are not compared yet)")
    grids = json.loads(path.read_text())
    return {"atomic": {g["id"]: {"par": 100.0 * g["par"], "id_term": 100.0 * g["id_term"]} for g in grids}}


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
    fa, fb = Path(run_a), Path(run_b)
    ma, mb = _meta(fa), _meta(fb)
    if ma.get("suite") != mb.get("suite"):
        raise InputError(f"cannot compare a {ma.get('suite')} run with a {mb.get('suite')} run")
    suite = ma.get("suite")
    units = {"nashgap": _nashgap_units, "tmgbench": _tmgbench_units}.get(suite)
    if units is None:
        raise InputError(f"compare does not support {suite!r} runs yet")
    ua, ub = units(fa), units(fb)
    metrics = NASHGAP_METRICS if suite == "nashgap" else ("par", "id_term")
    rng = np.random.default_rng(seed)
    rows = []
    for part in sorted(set(ua) & set(ub)):
        for m in metrics:
            rows.append({"part": part, **_diff(ua[part], ub[part], m, rng)})
    if not rows:
        raise InputError("the two runs have no mode/setting in common")
    return {"suite": suite, "run_a": str(fa), "run_b": str(fb), "rows": rows}
