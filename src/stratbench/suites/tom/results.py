"""Records → summary, for `tom run`, `tom baseline` and the merge of their shards.

A summary is always recomputed from the records on disk by the functions here - the runs' plans
(:mod:`model_run`, :mod:`baseline_run`) call them on their own records when a run ends and on the
shards' records put back in the unsharded order when `stratbench merge` rebuilds a run - so a
merged folder's summary is, number for number, the unsharded one. Record and summary keys are
documented in :mod:`records`.

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

Strict and flexible answers (generation strategies; :mod:`strategies`): every parsed call says
``parse: strict|flexible``. The summary reports, over the action attempts (the denominator of
``parse_failure_rate``, so the three add up to 1), ``strict_parse_rate`` and
``flexible_parse_rate``; over the rounds with a generated ToM answer, ``tom_strict_parse_rate`` and
``tom_flexible_parse_rate`` (with ``tom_parse_failure_rate``, 1). And the metrics as lm-eval's
strict-match would have them, flexible parses counted as failures: ``strict_regret_per_step``
(+ ``_ci95``) over the *strict episodes* (``n_strict_episodes``: complete episodes none of whose
answers that shaped the play - actions, reflections, S2A rewrites of the action, Social's
prediction - was read flexibly), ``strict_tom_accuracy`` and ``strict_tom_regret_per_step``
(+ ``_ci95``) over the same episodes with only strictly read predictions counted
(``n_strict_tom_episodes``). Scored answers (LM prompting and its chat twin, Social LM's
prediction) are exact, hence strict; a run with no generated answer has its strict metrics equal to
the others and ``None`` parse rates. ``policy`` names how actions were read (``logprob``,
``choice``, ``generate``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from stratbench.runner.schema import Record
from stratbench.suites.tom.games import RepeatedGame, get_game
from stratbench.suites.tom.partners import FiniteStatePartner, make_partner
from stratbench.suites.tom.records import BaselineEpisodeRecord, BaselineRow, EpisodeStatus, RunSummary
from stratbench.suites.tom.regret import mean_ci, regret_per_step

VOLATILE_KEYS = frozenset({"latency_s", "seconds", "cached"})
"""Record keys that say how fast a call ran or whether it came from the cache: the only keys in
which a re-run (or a merge of shards) may differ from the original."""


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
def episode_groups(records: Sequence[Record]) -> dict[int, list[Record]]:
    """Round records grouped by episode, each group in round order."""
    by: dict[int, list[Record]] = {}
    for r in records:
        by.setdefault(int(r["episode"]), []).append(r)
    return {e: sorted(rs, key=lambda r: r["t"]) for e, rs in sorted(by.items())}


def episode_status(rs: Sequence[Record], rounds: int) -> EpisodeStatus:
    """"complete", "parse_failed", "error" or "partial" (an interrupted write) for one episode's
    round records in round order."""
    last = rs[-1].get("status") if rs else None
    if last == "parse_failed" or last == "error":
        return last
    if len(rs) == rounds and all("my_action" in r and "partner_action" in r for r in rs):
        return "complete"
    return "partial"


def episode_kept(rs: Sequence[Record], rounds: int) -> bool:
    """Whether a resumed run keeps an episode's records: complete, or stopped by a parse failure
    (an answer that never parsed would not parse again); an error or a partial write is played
    again."""
    return episode_status(sorted(rs, key=lambda r: int(r["t"])), rounds) in ("complete", "parse_failed")


def round_order(r: Record) -> tuple[int, int]:
    """Sort key of round records in the unsharded run's order: by episode, then round."""
    return int(r["episode"]), int(r["t"])


TRAJECTORY_KINDS = frozenset({"action", "reflection", "s2a_context"})
"""Calls whose answers shape the play (Social's prediction too: its action prompt needs it)."""


def _flexible(call: Record) -> bool:
    return call.get("status") == "parsed" and call.get("parse") == "flexible"


def strict_episode(rs: Sequence[Record], social: bool) -> bool:
    """Whether no answer that shaped this episode's play was read flexibly."""
    kinds = TRAJECTORY_KINDS | {"tom"} if social else TRAJECTORY_KINDS
    return not any(_flexible(c) for r in rs for c in r.get("calls", []) if c["kind"] in kinds)


def strict_prediction(r: Record) -> int:
    """A round's prediction when it was read strictly (or scored), else -1."""
    if r.get("prediction") is None:
        return -1
    if any(_flexible(c) for c in r.get("calls", []) if c["kind"] in ("tom", "s2a_tom_context")):
        return -1
    return int(r["prediction"])


def _policy_name(config: dict[str, Any]) -> str:
    if config.get("prompting", "LM") == "LM":
        return "choice" if config.get("chat") else "logprob"
    return "generate"


def summarize_rounds(records: Sequence[Record], config: dict[str, Any]) -> tuple[RunSummary, list[float] | None]:
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
        "payoffs": config.get("payoffs", True), "T": rounds, "seed": seed, "policy": _policy_name(config),
    }
    social = out["prompting"] in ("Social", "SocialLM")
    strict = [e for e in done if strict_episode(groups[e], social)]
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
    if strict:
        m = trajectory_metrics(
            g, p, np.array([[r["my_action"] for r in groups[e]] for e in strict]),
            np.array([[r["partner_action"] for r in groups[e]] for e in strict]),
            np.array([[strict_prediction(r) for r in groups[e]] for e in strict]),
            np.array([groups[e][0]["initial_state"] for e in strict]))
        for k in ("regret_per_step", "tom_accuracy", "tom_regret_per_step"):
            c = _ci_keys(k, m[k], seed)
            out[f"strict_{k}"], out[f"strict_{k}_ci95"] = c[k], c[f"{k}_ci95"]
        out["n_strict_tom_episodes"] = int(np.sum(~np.isnan(m["tom_accuracy"])))
    else:
        for k in ("regret_per_step", "tom_accuracy", "tom_regret_per_step"):
            out[f"strict_{k}"], out[f"strict_{k}_ci95"] = None, None
        out["n_strict_tom_episodes"] = 0
    out["n_strict_episodes"] = len(strict)
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
    for mode in ("strict", "flexible"):
        out[f"{mode}_parse_rate"] = (sum(c.get("parse") == mode for c in act) / len(act)) if act else None
    out["action_attempts"] = len(act)
    tom_rounds = [r for r in records if r.get("tom_status") in ("parsed", "parse_failed")]
    out["tom_parse_failure_rate"] = (sum(r["tom_status"] == "parse_failed" for r in tom_rounds) / len(tom_rounds)
                                     if tom_rounds else (0.0 if tom else None))
    # rounds with a generated ToM answer: how its accepted attempt was read
    read = [[c.get("parse") for c in r.get("calls", []) if c["kind"] == "tom" and c.get("status") == "parsed"]
            for r in tom_rounds if not any("logprobs" in c for c in r.get("calls", []))]
    for mode in ("strict", "flexible"):
        out[f"tom_{mode}_parse_rate"] = (sum(mode in x for x in read) / len(read)) if read else None
    n_run = max(1, len(groups))
    tok_in = int(sum(int(r.get("tokens_in", 0) or 0) for r in records))
    tok_out = int(sum(int(r.get("tokens_out", 0) or 0) for r in records))
    out["tokens_evaluated"] = tok_in
    out["tokens_evaluated_per_episode"] = tok_in / n_run
    out["tokens_generated"] = tok_out
    out["tokens_generated_per_episode"] = tok_out / n_run
    return cast(RunSummary, out), curve


# ------------------------------------------------------------------------------- tom baseline
def baseline_order(games: Sequence[str], partners: Sequence[str]) -> Callable[[Record], tuple[int, int, int]]:
    """Sort key of baseline episode records in the unsharded order: settings as listed (games,
    then partners), then episode."""
    gi = {g: i for i, g in enumerate(games)}
    pi = {p: i for i, p in enumerate(partners)}
    return lambda r: (gi[r["game"]], pi[r["partner"]], int(r["episode"]))


def baseline_episode_records(game: str, partner: str, episode_ids: Sequence[int],
                             sim: dict[str, np.ndarray]) -> list[BaselineEpisodeRecord]:
    """One record per simulated episode: the whole trajectory (so metrics can be recomputed) and
    its metrics."""
    g = get_game(game)
    p = make_partner(partner, g)
    m = trajectory_metrics(g, p, sim["mine"], sim["theirs"], sim["pred"], sim["s0"])
    out: list[BaselineEpisodeRecord] = []
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


def summarize_baseline(records: Sequence[Record], config: dict[str, Any]) -> tuple[list[BaselineRow], dict[str, list[float]]]:
    """`tom baseline`'s summary rows (one per game × partner) and regret curves from its records."""
    seed, T = int(config["seed"]), int(config["rounds"])
    rows: list[BaselineRow] = []
    curves: dict[str, list[float]] = {}
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
            rows.append(cast(BaselineRow, row))
    return rows, curves
