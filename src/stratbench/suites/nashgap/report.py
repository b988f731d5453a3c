"""Nash-gap runs in the report: headline per mode, per-bucket distributions, position bias.

The per-bucket and position-bias numbers are recomputed from the trial records (not read from
summary.json) because the summary holds only overall means; the functions computing them are
pure, so tests can check them against the summary's own numbers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stratbench.render.html import Html, el, fmt_ci, fmt_num, join, table
from stratbench.render.views import (
    SCORED,
    Ctx,
    LeaderEntry,
    RunDir,
    SuiteView,
    is_num,
    read_json,
    read_jsonl_all,
    summary_view,
)
from stratbench.stats import bootstrap_ci
from stratbench.suites.base import Leaderboard
from stratbench.suites.nashgap import plots

__all__ = ["HEADLINE_KEYS", "LEADERBOARD", "PositionProfile", "bucket_label", "nashgap_view", "per_bucket_values",
           "position_profiles"]

#: summary keys the report shows first, in order
HEADLINE_KEYS = (
    "mean_nash_gap", "median_nash_gap", "mean_nash_gap_normalized", "mean_exploitability",
    "mean_exploitability_normalized", "mean_mixture_exploitability",
    "mean_mixture_exploitability_normalized", "mean_llm_value", "mean_br_value", "position_bias",
    "mean_label_mass", "parse_failure_rate", "strict_parse_rate", "flexible_parse_rate",
    "strict_mean_nash_gap", "strict_mean_exploitability", "error_rate", "renormalized_rate", "n_games",
    "n_games_unscored", "n_trials_scored", "total_trials",
)
# Ranked by the debiased exploitability (of the policy averaged over row orders): the Nash gap
# alone is blind to play inside a mixed equilibrium's support.
LEADERBOARD = Leaderboard((("mean_mixture_exploitability", "debiased expl."), ("mean_exploitability", "exploitability"),
                           ("mean_nash_gap", "Nash gap"), ("position_bias", "position bias"),
                           ("mean_label_mass", "label mass"), ("parse_failure_rate", "parse failures"),
                           ("error_rate", "errors"), ("n_games", "games"), ("policy", "policy"),
                           ("order_rotations", "rotations")), lower_is_better=True)

BUCKET_METRICS = ("nash_gap", "exploitability", "exploitability_normalized")


def bucket_label(game: Mapping[str, Any]) -> str:
    """The game's difficulty bucket, or for games generated without one, its shape and whether it
    has a saddle point (a pure equilibrium), the split the buckets themselves make."""
    if isinstance(game.get("bucket"), str) and game["bucket"]:
        return game["bucket"]
    shape = f"{game.get('num_rows', '?')}x{game.get('num_cols', '?')}"
    sp = game.get("saddle_point")
    return shape + ("" if sp is None else (" saddle point" if sp else " no saddle point"))


def _scored_by_game(records: Sequence[Mapping[str, Any]]) -> dict[Any, list[Mapping[str, Any]]]:
    """Scored records by game; records with a malformed id or policy are left out, not fatal."""
    by_game: dict[Any, list[Mapping[str, Any]]] = {}
    for r in records:
        pol, gid = r.get("policy"), r.get("game_id")
        if (r.get("status") in SCORED and isinstance(pol, list) and pol and all(is_num(x) for x in pol)
                and isinstance(gid, (int, str)) and not isinstance(gid, bool)):
            by_game.setdefault(gid, []).append(r)
    return by_game


def per_bucket_values(
    records: Sequence[Mapping[str, Any]], games: Mapping[Any, Mapping[str, Any]]
) -> dict[str, dict[str, list[float]]]:
    """{bucket: {metric: per-game means over scored trials}}; games are the units, as in the
    summary (trials nest in games)."""
    out: dict[str, dict[str, list[float]]] = {}
    for gid, rs in sorted(_scored_by_game(records).items(), key=lambda kv: str(kv[0])):
        b = out.setdefault(bucket_label(games.get(gid, {})), {})
        for key in BUCKET_METRICS:
            vals = [float(r[key]) for r in rs if is_num(r.get(key))]
            if vals:
                b.setdefault(key, []).append(float(np.mean(vals)))
    return out


@dataclass(frozen=True)
class PositionProfile:
    """Mean probability on the row shown at each position, over games (per-game means first)."""

    m: int  # rows
    n_games: int
    player: list[float]
    player_ci: list[list[float] | None]
    nash: list[float]  # the Nash equilibrium's probability on the same shown rows (nan if unknown)


def position_profiles(
    records: Sequence[Mapping[str, Any]], games: Mapping[Any, Mapping[str, Any]]
) -> list[PositionProfile]:
    """One profile per game size. Policies in records are in the game's own row order; the row
    shown at position k under rotation r is original row ``rotation_order(m, r)[k]``."""
    from stratbench.suites.nashgap.games import rotation_order

    by_m: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for gid, rs in _scored_by_game(records).items():
        ne = games.get(gid, {}).get("nash_equilibrium_row")
        if not (isinstance(ne, list) and all(is_num(x) for x in ne)):
            ne = None
        shown, shown_ne = [], []
        for r in rs:
            pol = r["policy"]
            m = len(pol)
            rot = r.get("rotation")
            order = rotation_order(m, rot if isinstance(rot, int) else 0)
            shown.append([float(pol[order[k]]) for k in range(m)])
            if isinstance(ne, list) and len(ne) == m:
                shown_ne.append([float(ne[order[k]]) for k in range(m)])
        if len({len(p) for p in shown}) != 1:
            continue  # a record with a malformed policy length: leave the game out
        acc = by_m.setdefault(len(shown[0]), ([], []))
        acc[0].append(np.mean(shown, axis=0))
        acc[1].append(np.mean(shown_ne, axis=0) if shown_ne else np.full(len(shown[0]), np.nan))
    out = []
    for m, (pl, ne) in sorted(by_m.items()):
        arr = np.asarray(pl)
        out.append(PositionProfile(
            m, arr.shape[0], [float(x) for x in arr.mean(axis=0)],
            [bootstrap_ci(arr[:, k]) for k in range(m)],
            [float(x) for x in np.nanmean(np.asarray(ne), axis=0)] if not np.all(np.isnan(ne)) else [float("nan")] * m,
        ))
    return out


def _mode_view(ctx: Ctx, run: RunDir, anchor: str, mode: str, records: list[dict[str, Any]],
               games: Mapping[Any, Mapping[str, Any]]) -> Html:
    per_bucket = per_bucket_values(records, games)
    if not per_bucket:
        return el("p", f"{mode}: no scored trials to plot", class_="warn")
    rows = []
    for label, b in per_bucket.items():
        cells: list[Any] = [label, len(b.get("nash_gap", []))]
        for key in BUCKET_METRICS:
            v = b.get(key, [])
            cells.append(f"{fmt_num(float(np.mean(v)))} {fmt_ci(bootstrap_ci(v))}" if v else "—")
        rows.append(cells)
    parts: list[Any] = [
        el("h4", f"Nash gap and exploitability per bucket ({mode})"),
        table(("bucket", "games", "Nash gap [95% CI]", "exploitability [95% CI]",
               "normalized exploitability [95% CI]"), rows),
        ctx.figure(
            f"{anchor}_{mode}_buckets",
            lambda: plots.bucket_distributions(
                per_bucket, (("nash_gap", "Nash gap"), ("exploitability", "exploitability")),
                f"{run.player()} — {mode}"),
            f"Nash-gap and exploitability distributions per bucket ({mode})",
            f"Per-game means over trials, by bucket ({mode}); boxes show quartiles, dots are games."),
        el("h4", f"Position bias ({mode})"),
        el("p", "Mean probability the player puts on the row shown first, second, … (after any row-order "
           "rotation), next to the Nash equilibrium's probability on the same rows. A player without "
           "position bias tracks the Nash bars, not the position.", class_="note"),
    ]
    for prof in position_profiles(records, games):
        parts.append(table(
            ("shown position", "player [95% CI]", "Nash equilibrium", "player − Nash"),
            [(k + 1, f"{fmt_num(prof.player[k])} {fmt_ci(prof.player_ci[k])}", fmt_num(prof.nash[k]),
              fmt_num(prof.player[k] - prof.nash[k])) for k in range(prof.m)],
            caption=f"{prof.m} rows, {prof.n_games} games", class_="position-bias"))
        def draw(p: PositionProfile = prof) -> bytes:
            return plots.position_bias_plot(list(range(1, p.m + 1)), p.player, p.player_ci, p.nash,
                                            f"{run.player()} — {mode}, {p.m} rows")

        parts.append(ctx.figure(f"{anchor}_{mode}_position_bias_{prof.m}", draw,
                                f"Position bias ({mode})", f"Probability by shown position ({mode}, {prof.m} rows)"))
    return join(parts)


def nashgap_view(ctx: Ctx, run: RunDir, anchor: str, suite_name: str = "nashgap") -> SuiteView:
    """A Nash-gap folder (single mode or combined): per mode, the headline table, per-bucket
    distributions and position bias, and a leaderboard entry grouped by the exact games played."""
    from stratbench.suites.nashgap.run import MODE_FILES, SINGLE_FILES

    parts: list[Any] = []
    entries: list[LeaderEntry] = []
    games_raw, prob = read_json(run.path / "games.json")
    games: dict[Any, Mapping[str, Any]] = {}
    if isinstance(games_raw, list):
        games = {g.get("game_id"): g for g in games_raw
                 if isinstance(g, Mapping) and isinstance(g.get("game_id"), (int, str))}
    else:
        parts.append(el("p", (prob or "games.json: not a list") + " — buckets and the Nash reference are unknown",
                        class_="warn"))
    # Runs are compared only on identical games: the fingerprint is over the payoff matrices.
    fingerprint = hashlib.sha256(json.dumps(
        [g.get("payoff_matrix") for g in games.values()] if games else str(run.path), default=str
    ).encode()).hexdigest()[:10]
    layouts = [(m, *files) for m, files in MODE_FILES.items()]
    if any((run.path / f).exists() for f in SINGLE_FILES):
        layouts = [("mixed" if run.config.get("mixed_strategy") else "pure", *SINGLE_FILES)]
    for mode, trials_name, summary_name in layouts:
        spath, tpath = run.path / summary_name, run.path / trials_name
        if not spath.exists() and not tpath.exists():
            continue
        summary, sprob = read_json(spath)
        if isinstance(summary, Mapping):
            mode = summary["mode"] if isinstance(summary.get("mode"), str) else mode
            parts.append(summary_view(summary, HEADLINE_KEYS, summary_name))
            buckets = sorted({bucket_label(g) for g in games.values()})
            seed = run.config.get("seed")
            group = (f"nashgap · {mode} · {len(games)} games ({', '.join(buckets)}"
                     + (f", seed {seed}" if seed is not None else "") + f") · games {fingerprint}")
            name = str(summary.get("agent") or run.player())
            entries.append(LeaderEntry(suite_name, group, name, anchor, run.rel, dict(summary)))
        else:
            parts.append(el("p", (sprob or f"{summary_name}: not a JSON object") + " (run unfinished?)",
                            class_="warn"))
        if tpath.exists():
            records, bad = read_jsonl_all(tpath)
            if bad:
                parts.append(el("p", f"{trials_name}: {bad} malformed lines skipped", class_="warn"))
            parts.append(_mode_view(ctx, run, anchor, mode, records, games))
    return SuiteView(parts, entries)
