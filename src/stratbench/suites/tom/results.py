"""Records → summary, for `tom run`, `tom baseline` and the merge of their shards.

A summary is always recomputed from the records on disk by the functions here - the run commands
call them on their own records, :mod:`shards` calls them on the shards' records put back in the
unsharded order - so a merged folder's summary is, number for number, the unsharded one.

Metrics per episode (from the actions, the partner's initial state and the predictions, through
the exact DP of :mod:`regret`):

* ``regret_per_step`` (Δ_F/T): mean advantage gap against the optimal T-step response;
* ``tom_accuracy``: fraction of *parsed* predictions that named the partner's actual action
  (a prediction that could not be parsed is counted in ``tom_parse_failure_rate``, not here);
* ``tom_regret_per_step`` (Δ_ToM/T): mean over predicted steps of the *myopic* regret of
  best-responding to the prediction, ``max_a u(a, b_t) - u(BR(pred_t), b_t)`` (the definition
  and its reasons are in :mod:`tabular`).

Means carry 95% percentile-bootstrap CIs over complete episodes (``n_episodes``); episodes that
stopped early (a parse failure or a model error) are counted, never averaged in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stratbench.suites.tom.games import RepeatedGame, get_game
from stratbench.suites.tom.partners import FiniteStatePartner, make_partner
from stratbench.suites.tom.regret import mean_ci, regret_per_step

VOLATILE_KEYS = frozenset({"latency_s", "seconds", "cached"})
"""Record keys that say how fast a call ran or whether it came from the cache: the only keys in
which a re-run (or a merge of shards) may differ from the original."""

ROUNDS_FILE = "rounds.jsonl"
EPISODES_FILE = "episodes.jsonl"


def trajectory_metrics(game: RepeatedGame | str, partner: FiniteStatePartner, mine: np.ndarray,
                       theirs: np.ndarray, preds: np.ndarray, initial_state: np.ndarray) -> dict[str, np.ndarray]:
    """Per-episode metrics of (E, T) action arrays; ``preds`` uses -1 for "no prediction".

    Returns ``regret_steps`` (E, T), ``regret_per_step``, ``tom_accuracy``,
    ``tom_regret_per_step`` (E,; NaN where an episode has no prediction) and ``n_predictions``.
    """
    g = get_game(game)
    mine = np.atleast_2d(np.asarray(mine, dtype=np.int64))
    theirs = np.atleast_2d(np.asarray(theirs, dtype=np.int64))
    preds = np.atleast_2d(np.asarray(preds, dtype=np.int64))
    steps = np.asarray(regret_per_step(g, partner, mine, theirs, initial_state=np.asarray(initial_state)),
                       dtype=float).reshape(mine.shape)
    has = preds >= 0
    n_pred = has.sum(axis=1)
    u = g.payoff_me
    br = np.argmax(u[:, np.where(has, preds, 0)], axis=0)  # myopic best response to each prediction
    gap = u[:, theirs].max(axis=0) - u[br, theirs]
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(n_pred > 0, ((preds == theirs) & has).sum(axis=1) / np.maximum(n_pred, 1), np.nan)
        tom_reg = np.where(n_pred > 0, np.where(has, gap, 0.0).sum(axis=1) / np.maximum(n_pred, 1), np.nan)
    return {"regret_steps": steps, "regret_per_step": steps.mean(axis=1), "tom_accuracy": acc,
            "tom_regret_per_step": tom_reg, "n_predictions": n_pred}


def _ci_keys(name: str, values: np.ndarray, seed: int) -> dict[str, Any]:
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    c = mean_ci(x, seed=seed)
    return {name: c["mean"], f"{name}_ci95": c["ci95"]}


# ------------------------------------------------------------------------------- tom run
def episode_groups(records: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Round records grouped by episode, each group in round order."""
    by: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(int(r["episode"]), []).append(r)
    return {e: sorted(rs, key=lambda r: r["t"]) for e, rs in sorted(by.items())}


def episode_status(rs: list[dict[str, Any]], rounds: int) -> str:
    """"complete", "parse_failed", "error" or "partial" (an interrupted write)."""
    if rs and rs[-1].get("status") in ("parse_failed", "error"):
        return rs[-1]["status"]
    if len(rs) == rounds and all("my_action" in r and "partner_action" in r for r in rs):
        return "complete"
    return "partial"


def canonical_rounds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round records in the unsharded run's order: by episode, then round."""
    return sorted(records, key=lambda r: (int(r["episode"]), int(r["t"])))


def summarize_rounds(records: list[dict[str, Any]], config: dict[str, Any]) -> tuple[dict[str, Any], list[float] | None]:
    """`tom run`'s summary (flat keys) and mean per-step regret curve from its round records.

    ``config`` is run.json's config (game, partner, prompting, model, rounds, seed, ...).
    """
    g = get_game(config["game"])
    p = make_partner(config["partner"], g)
    rounds = int(config["rounds"])
    seed = int(config["seed"])
    groups = episode_groups(records)
    status = {e: episode_status(rs, rounds) for e, rs in groups.items()}
    done = [e for e in groups if status[e] == "complete"]
    out: dict[str, Any] = {
        "game": g.name, "partner": p.name, "prompting": config.get("prompting", "LM"),
        "model": config.get("model"), "label_set": config.get("label_set", "neutral"),
        "tom_variant": config.get("tom_variant", "agent_first"), "history": config.get("history", True),
        "payoffs": config.get("payoffs", True), "T": rounds, "seed": seed,
    }
    curve = None
    if done:
        mine = np.array([[r["my_action"] for r in groups[e]] for e in done])
        theirs = np.array([[r["partner_action"] for r in groups[e]] for e in done])
        preds = np.array([[-1 if r.get("prediction") is None else r["prediction"] for r in groups[e]] for e in done])
        s0 = np.array([groups[e][0]["initial_state"] for e in done])
        m = trajectory_metrics(g, p, mine, theirs, preds, s0)
        out.update(_ci_keys("regret_per_step", m["regret_per_step"], seed))
        out.update(_ci_keys("tom_accuracy", m["tom_accuracy"], seed))
        out.update(_ci_keys("tom_regret_per_step", m["tom_regret_per_step"], seed))
        out["n_tom_episodes"] = int(np.sum(~np.isnan(m["tom_accuracy"])))
        curve = [float(x) for x in m["regret_steps"].mean(axis=0)]
    else:
        for k in ("regret_per_step", "tom_accuracy", "tom_regret_per_step"):
            out[k], out[f"{k}_ci95"] = None, None
        out["n_tom_episodes"] = 0
    out["n_episodes"] = len(done)
    out["n_episodes_run"] = len(groups)
    out["n_parse_failed_episodes"] = sum(1 for s in status.values() if s == "parse_failed")
    out["n_error_episodes"] = sum(1 for s in status.values() if s == "error")
    out["n_partial_episodes"] = sum(1 for s in status.values() if s == "partial")
    # Generated answers: every attempt is one call; a round's action may take several.
    calls = [c for r in records for c in r.get("calls", [])]
    act = [c for c in calls if c["kind"] == "action" and c.get("status") in ("parsed", "parse_failed")]
    tom = [c for c in calls if c["kind"] == "tom" and c.get("status") in ("parsed", "parse_failed")]
    out["parse_failure_rate"] = (sum(c["status"] == "parse_failed" for c in act) / len(act)) if act else 0.0
    out["action_attempts"] = len(act)
    tom_rounds = [r for r in records if r.get("tom_status") in ("parsed", "parse_failed")]
    out["tom_parse_failure_rate"] = (sum(r["tom_status"] == "parse_failed" for r in tom_rounds) / len(tom_rounds)
                                     if tom_rounds else (0.0 if tom else None))
    n_run = max(1, len(groups))
    tok_in = int(sum(int(r.get("tokens_in", 0) or 0) for r in records))
    tok_out = int(sum(int(r.get("tokens_out", 0) or 0) for r in records))
    out["tokens_evaluated"] = tok_in
    out["tokens_evaluated_per_episode"] = tok_in / n_run
    out["tokens_generated"] = tok_out
    out["tokens_generated_per_episode"] = tok_out / n_run
    return out, curve


# ------------------------------------------------------------------------------- tom baseline
def canonical_episodes(records: list[dict[str, Any]], games: list[str], partners: list[str]) -> list[dict[str, Any]]:
    """Baseline episode records in the unsharded order: settings as listed, then episode."""
    gi = {g: i for i, g in enumerate(games)}
    pi = {p: i for i, p in enumerate(partners)}
    return sorted(records, key=lambda r: (gi[r["game"]], pi[r["partner"]], int(r["episode"])))


def baseline_episode_records(game: str, partner: str, episode_ids: list[int], sim: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One record per simulated episode: the whole trajectory (so metrics can be recomputed) and
    its metrics."""
    g = get_game(game)
    p = make_partner(partner, g)
    m = trajectory_metrics(g, p, sim["mine"], sim["theirs"], sim["pred"], sim["s0"])
    out = []
    for i, e in enumerate(episode_ids):
        out.append({
            "game": game, "partner": partner, "episode": int(e), "status": "ok",
            "initial_state": int(sim["s0"][i]),
            "regret_per_step": float(m["regret_per_step"][i]),
            "tom_accuracy": float(m["tom_accuracy"][i]),
            "tom_regret_per_step": float(m["tom_regret_per_step"][i]),
            "my_actions": sim["mine"][i].tolist(), "partner_actions": sim["theirs"][i].tolist(),
            "predictions": sim["pred"][i].tolist(),
        })
    return out


def summarize_baseline(records: list[dict[str, Any]], config: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """`tom baseline`'s summary rows (one per game × partner) and regret curves from its records."""
    seed, T = int(config["seed"]), int(config["rounds"])
    rows, curves = [], {}
    for game in config["games"]:
        for partner in config["partners"]:
            rs = sorted((r for r in records if r["game"] == game and r["partner"] == partner),
                        key=lambda r: int(r["episode"]))
            g = get_game(game)
            p = make_partner(partner, g)
            row: dict[str, Any] = {"game": g.name, "partner": p.name, "T": T, "seed": seed,
                                   "m": config.get("m", 1)}
            if rs:
                m = trajectory_metrics(g, p, np.array([r["my_actions"] for r in rs]),
                                       np.array([r["partner_actions"] for r in rs]),
                                       np.array([r["predictions"] for r in rs]),
                                       np.array([r["initial_state"] for r in rs]))
                for k in ("regret_per_step", "tom_accuracy", "tom_regret_per_step"):
                    row.update(_ci_keys(k, m[k], seed))
                curves[f"{game}/{partner}"] = [float(x) for x in m["regret_steps"].mean(axis=0)]
            else:
                for k in ("regret_per_step", "tom_accuracy", "tom_regret_per_step"):
                    row[k], row[f"{k}_ci95"] = None, None
            row["n_episodes"] = len(rs)
            rows.append(row)
    return rows, curves


# ------------------------------------------------------------------------------- plots
def plot_curves(curves: dict[str, list[float]], path: Path, title: str) -> None:
    """Per-step regret (mean over episodes) of each setting, one line each."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, ys in curves.items():
        ax.plot(range(1, len(ys) + 1), ys, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("regret (vs optimal T-step response)")
    ax.set_title(title)
    if curves:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
