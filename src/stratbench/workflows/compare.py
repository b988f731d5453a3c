"""Compare two runs of the same suite: the difference of each headline metric (B − A) with a 95%
bootstrap CI. When both runs played the same games, the bootstrap is *paired* over games — the
right test for one model across training checkpoints, since game difficulty cancels out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.runner.jsonl import read_jsonl

N_BOOT = 2000
NASHGAP_METRICS = ("exploitability", "exploitability_normalized", "nash_gap", "llm_value")


def _meta(folder: Path) -> dict[str, Any]:
    return read_run_json(folder)


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


TOM_METRICS = ("regret_per_step", "tom_accuracy", "tom_regret_per_step")
CHBENCH_METRICS = ("utility",)


def _tom_units(folder: Path) -> dict[str, dict[Any, dict[str, float]]]:
    """setting → episode → its metrics: `tom run` (complete episodes) and `tom baseline`. Episode
    e has the same seed in every run with the same --seed, so episodes pair across checkpoints."""
    import math

    from stratbench.suites.tom.games import get_game
    from stratbench.suites.tom.partners import make_partner
    from stratbench.suites.tom.results import episode_groups, episode_status, trajectory_metrics

    config = _meta(folder)["config"]
    out: dict[str, dict[Any, dict[str, float]]] = {}
    if (folder / "episodes.jsonl").exists():  # tom baseline: one record per episode
        for r in read_jsonl(folder / "episodes.jsonl"):
            out.setdefault(f"{r['game']}/{r['partner']}/tabular", {})[int(r["episode"])] = {
                m: float(r[m]) for m in TOM_METRICS}
    else:
        groups = episode_groups(read_jsonl(folder / "rounds.jsonl"))
        done = [e for e, rs in groups.items() if episode_status(rs, int(config["rounds"])) == "complete"]
        if done:
            g = get_game(config["game"])
            p = make_partner(config["partner"], g)
            m = trajectory_metrics(
                g, p, np.array([[r["my_action"] for r in groups[e]] for e in done]),
                np.array([[r["partner_action"] for r in groups[e]] for e in done]),
                np.array([[-1 if r.get("prediction") is None else r["prediction"] for r in groups[e]] for e in done]),
                np.array([groups[e][0]["initial_state"] for e in done]))
            part = f"{config['game']}/{config['partner']}/{config.get('prompting', 'LM')}"
            out[part] = {e: {k: float(m[k][i]) for k in TOM_METRICS} for i, e in enumerate(done)}
    for units in out.values():  # a metric missing (NaN) in any episode is left out of the comparison
        for k in TOM_METRICS:
            if any(math.isnan(v[k]) for v in units.values()):
                for v in units.values():
                    v.pop(k, None)
    return out


def _chbench_units(folder: Path) -> dict[str, dict[Any, dict[str, float]]]:
    """mechanism/player → game → the player's mean utility per round in that game. The run's
    `--models` are keyed by position ("model 1", ...) so two checkpoints' runs pair up; scripted
    opponents by name. CH levels are fitted over all games at once, so they are compared through
    each run's own CIs, not here."""
    models = list(_meta(folder)["config"].get("models", []))

    def role(player: str) -> str:  # checkpoints differ in name: pair --models by position
        return f"model {models.index(player) + 1}" if player in models else player

    acc: dict[str, dict[Any, list[float]]] = {}
    for r in read_jsonl(folder / "rounds.jsonl"):
        if r["status"] != "complete":
            continue
        for me in ("row", "col"):
            acc.setdefault(f"{r['mechanism']}/{role(r[f'{me}_player'])}", {}).setdefault(
                r["game_id"], []).append(float(r[f"{me}_payoff"]))
    return {part: {g: {"utility": float(np.mean(v))} for g, v in by.items()} for part, by in acc.items()}


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
    units = {"nashgap": _nashgap_units, "tmgbench": _tmgbench_units, "tom": _tom_units,
             "chbench": _chbench_units}.get(suite)
    if units is None:
        raise InputError(f"compare does not support {suite!r} runs yet")
    ua, ub = units(fa), units(fb)
    metrics = {"nashgap": NASHGAP_METRICS, "tmgbench": ("par", "id_term"), "tom": TOM_METRICS,
               "chbench": CHBENCH_METRICS}[suite]
    rng = np.random.default_rng(seed)
    rows = []
    for part in sorted(set(ua) & set(ub)):
        for m in metrics:
            if ua[part] and ub[part] and all(m in v for v in ua[part].values()) and all(
                    m in v for v in ub[part].values()):
                rows.append({"part": part, **_diff(ua[part], ub[part], m, rng)})
    if not rows:
        raise InputError("the two runs have no mode/setting in common")
    return {"suite": suite, "run_a": str(fa), "run_b": str(fb), "rows": rows}
