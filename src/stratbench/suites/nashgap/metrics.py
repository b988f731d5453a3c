"""Metrics of a row policy π in a zero-sum game A against the column player's Nash strategy σ_c.

Per decision: `nash_gap` = max_i (Aσ_c)_i − πᵀAσ_c is the original benchmark's metric. It is blind inside the
support of σ_r: every action there earns the value v*, so in a fully mixed 2×2 game every answer has
gap 0. `exploitability` = v* − min_j (πᵀA)_j is what a best-responding opponent can take from π;
it is 0 only for equilibrium strategies. Both are also given divided by the payoff range
(max − min), so games of different scales average meaningfully.

Per run (`summarise`): per-game aggregation first (trials nest in games), then means over games
with bootstrap 95% CIs; the original benchmark's summary keys are kept. Runs of generated answers
add lm-eval's two readings: `strict_parse_rate` and `flexible_parse_rate`, and the strict metrics
(:data:`STRICT_KEYS`), computed over the decisions whose answer followed the requested format
exactly — a flexible parse counts as a failure there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stratbench.runner.schema import SCORED_STATUSES
from stratbench.seeding import derive_seed
from stratbench.stats import bootstrap_ci, describe

if TYPE_CHECKING:
    from stratbench.suites.nashgap.games import GameEntry


@dataclass(frozen=True)
class ZeroSumMetrics:
    llm_value: float
    best_response_value: float
    nash_gap: float
    exploitability: float
    nash_gap_normalized: float
    exploitability_normalized: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def zero_sum_metrics(
    payoff: np.ndarray, policy: np.ndarray, col_strategy: np.ndarray, value: float
) -> ZeroSumMetrics:
    a = np.asarray(payoff, dtype=float)
    pi = np.asarray(policy, dtype=float)
    sigma = np.asarray(col_strategy, dtype=float)
    against_nash = a @ sigma
    llm_value = float(pi @ against_nash)
    br = float(against_nash.max())
    # Clamp rounding noise (|x| < 1e-12 × scale) so an optimal policy reports exactly 0.
    scale = max(1.0, float(np.abs(a).max()))
    gap = br - llm_value
    expl = float(value - (pi @ a).min())
    gap = 0.0 if abs(gap) < 1e-12 * scale else gap
    expl = 0.0 if abs(expl) < 1e-12 * scale else expl
    rng = float(a.max() - a.min())
    return ZeroSumMetrics(
        llm_value=llm_value,
        best_response_value=br,
        nash_gap=gap,
        exploitability=expl,
        nash_gap_normalized=gap / rng if rng > 0 else 0.0,
        exploitability_normalized=expl / rng if rng > 0 else 0.0,
    )


_PER_TRIAL = ("nash_gap", "nash_gap_normalized", "llm_value", "best_response_value",
              "exploitability", "exploitability_normalized")


#: per-trial metrics the strict reading reports (as ``strict_mean_<metric>`` with ``_ci95``)
STRICT_METRICS = ("nash_gap", "nash_gap_normalized", "exploitability", "exploitability_normalized",
                  "llm_value")
#: the keys a summary of generated answers adds
STRICT_KEYS = (
    "strict_parse_rate", "flexible_parse_rate",
    *(f"strict_mean_{k}" for k in STRICT_METRICS), *(f"strict_mean_{k}_ci95" for k in STRICT_METRICS),
    "strict_n_trials_scored", "strict_n_games",
)


def _strict_summary(records: Sequence[dict[str, Any]], seed: int) -> dict[str, Any]:
    """The strict reading: rates of strict and flexible parses over all records, and the metrics
    over strict decisions only (per game first, then over the games that have one)."""
    total = len(records)
    strict = [r for r in records if r["status"] in SCORED_STATUSES and r.get("parse") == "strict"]
    n_flex = sum(1 for r in records if r["status"] in SCORED_STATUSES and r.get("parse") == "flexible")
    by_game: dict[int, list[dict[str, Any]]] = {}
    for r in strict:
        by_game.setdefault(r["game_id"], []).append(r)
    s: dict[str, Any] = {"strict_parse_rate": len(strict) / total if total else 0.0,
                         "flexible_parse_rate": n_flex / total if total else 0.0}
    boot = derive_seed(seed, 9001)
    for k in STRICT_METRICS:
        vals = [float(np.mean([r[k] for r in by_game[g]])) for g in sorted(by_game)]
        s[f"strict_mean_{k}"] = describe(vals)["mean"]
        s[f"strict_mean_{k}_ci95"] = bootstrap_ci(vals, seed=boot)
    s["strict_n_trials_scored"] = len(strict)
    s["strict_n_games"] = len(by_game)
    return s


def summarise(
    records: Sequence[dict[str, Any]], entries: Sequence[GameEntry], num_trials: int, seed: int,
    generated: bool = False,
) -> dict[str, Any]:
    """Per-game aggregation first (trials nest in games), then means over games with bootstrap
    95% CIs. Keys of the original benchmark are kept; failures are counted, not scored. With
    `generated` (answers parsed from generated text), the strict reading is added
    (:data:`STRICT_KEYS`)."""
    by_game: dict[int, list[dict[str, Any]]] = {}
    counts = {"ok": 0, "parsed": 0, "parse_failed": 0, "error": 0}
    renorm = 0
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        renorm += bool(r.get("renormalized"))
        if r["status"] in SCORED_STATUSES:
            by_game.setdefault(r["game_id"], []).append(r)
    per_game: dict[str, list[float]] = {
        k: [] for k in _PER_TRIAL + ("mixture_exploitability", "mixture_exploitability_normalized",
                                     "position_bias", "label_mass")
    }
    entry_by_id = {e.game_id: e for e in entries}
    for gid in sorted(by_game):
        rs = by_game[gid]
        e = entry_by_id[gid]
        for k in _PER_TRIAL:
            per_game[k].append(float(np.mean([r[k] for r in rs])))
        # The player as a randomising strategy: the average of its trial policies (with order
        # rotations, this is the rotation-debiased policy).
        mixture = np.mean([r["policy"] for r in rs], axis=0)
        mm = zero_sum_metrics(e.game.payoff_row, mixture, e.solution.col_strategy, e.solution.value)
        per_game["mixture_exploitability"].append(mm.exploitability)
        per_game["mixture_exploitability_normalized"].append(mm.exploitability_normalized)
        m = e.game.shape[0]
        per_game["position_bias"].append(float(np.mean([r["first_listed_prob"] for r in rs])) - 1 / m)
        masses = [r["label_mass"] for r in rs if r.get("label_mass") is not None]
        if masses:
            per_game["label_mass"].append(float(np.mean(masses)))

    total = len(records)
    gap = describe(per_game["nash_gap"])
    s: dict[str, Any] = {
        "num_games": len(entries),
        "num_trials_per_game": num_trials,
        "total_trials": total,
        "mean_nash_gap": gap["mean"],
        "median_nash_gap": gap["median"],
        "std_nash_gap": gap["std"],
        "min_nash_gap": gap["min"],
        "max_nash_gap": gap["max"],
        "mean_llm_value": describe(per_game["llm_value"])["mean"],
        "mean_br_value": describe(per_game["best_response_value"])["mean"],
    }
    boot = derive_seed(seed, 9001)
    for key in ("nash_gap", "nash_gap_normalized", "llm_value", "best_response_value",
                "exploitability", "exploitability_normalized", "mixture_exploitability",
                "mixture_exploitability_normalized", "label_mass"):
        vals = per_game[key]
        name = "mean_br_value" if key == "best_response_value" else f"mean_{key}"
        if name not in s:
            s[name] = describe(vals)["mean"]
        s[f"{name}_ci95"] = bootstrap_ci(vals, seed=boot)
    s["position_bias"] = describe(per_game["position_bias"])["mean"]
    s["position_bias_ci95"] = bootstrap_ci(per_game["position_bias"], seed=boot)
    s["n_games"] = len(by_game)
    s["n_games_unscored"] = len(entries) - len(by_game)
    s["n_trials_scored"] = counts["ok"] + counts["parsed"]
    s["parse_failure_rate"] = counts["parse_failed"] / total if total else 0.0
    s["error_rate"] = counts["error"] / total if total else 0.0
    s["renormalized_rate"] = renorm / total if total else 0.0
    s["status_counts"] = counts
    if generated:
        s.update(_strict_summary(records, seed))
    return s
