"""CHBench analysis of a run's round records: CH fits, the paper's tables and plots.

Per mechanism and player (models and scripted opponents alike — a scripted level-K player is a
built-in check that the fit reads levels right):

- **pooled fit** of Level-K and Poisson CH over every action the player took (all opponents, both
  roles, all games), with whether the data identify its mean level (``identified``, and the range
  over every maximum-likelihood fit, ``mean_level_range``) and a 95% bootstrap CI over *games*
  (games resampled with replacement, refitted) that covers that range;
- **per-opponent fits**, whose mean and variance across opponents are the paper's Tables 3-5;
- k̂ likelihood-improvement ratios (3→4, 4→5) and the mean KL(s^k ‖ s^{k+1}) between levels;
- **average utility** per (player, opponent) (Tables 11-14) and its variance across opponents
  (Table 15), with a bootstrap CI over games of the player's overall average;
- how a player's generated answers were read (policy ``sample``): ``strict_parse_rate`` (the reply
  was exactly the number asked for) and ``flexible_parse_rate`` (extracted from other text), over
  its moves; with ``parse_failure_rate`` and ``error_rate`` they add up to 1. Fits and utilities
  use every parsed action (strict or flexible) and never an unparsed move; a strict-only variant
  of the fits is not computed (CHBench's levels are fitted to play, and a dropped move would
  change the opponent's history too), but ``strict_mean_utility`` (over ``strict_n_actions``) is
  mean_utility with the player's flexible answers counted as failures. The run's summary has both
  rates over every generated answer, and ``parsing.md`` tabulates them per player. Players without
  generated answers (scripted, ``logprob``, ``choice``) have no such keys; a sampled player that
  never answered is still listed (``n_actions`` 0, no fit).

Fits are exhaustive and need no seed (`fit.py`); every bootstrap's seed is derived from (run seed,
mechanism, player, CH model) positions, so the analysis is a deterministic function of the records
and the config.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.render.csv_cells import csv_cell, csv_row
from stratbench.runner.jsonl import write_atomic, write_bytes_atomic, write_csv_atomic, write_json_atomic
from stratbench.runner.schema import Record
from stratbench.seeding import derive_seed
from stratbench.stats import bootstrap_ci
from stratbench.suites.chbench import plots
from stratbench.suites.chbench.catalogue import select_games
from stratbench.suites.chbench.fit import (
    CSV_COLUMNS,
    PlayerObservations,
    fit,
    fit_report,
    write_observations_csv,
)

CH_MODELS = ("level_k", "poisson")
POOLED = "*"


def _players(config: Any) -> list[str]:
    return list(config.models) + list(config.opponents)


def player_observations(records: list[dict[str, Any]], games: list[Any], players: list[str],
                  opponent: str | None = None) -> dict[str, PlayerObservations]:
    """Action counts per player (optionally only against `opponent`) over the run's games."""
    gids = tuple(g.id for g in games)
    gpos = {g: i for i, g in enumerate(gids)}
    n = max(max(g.game.shape) for g in games)
    counts = {p: np.zeros((2, len(gids), n)) for p in players}
    for r in records:
        for seat, me, op in ((0, "row", "col"), (1, "col", "row")):
            pl, opp = r[f"{me}_player"], r[f"{op}_player"]
            if opponent is not None and opp != opponent:
                continue
            a = r.get(f"{me}_action")
            if a is not None and pl in counts:
                counts[pl][seat, gpos[r["game_id"]], a] += 1
    gs = tuple(g.game for g in games)
    return {p: PlayerObservations(p, gids, gs, c) for p, c in counts.items()}


def _fit_or_none(obs: PlayerObservations, model: str, k_hat: int) -> Any:
    if obs.n_actions_observed == 0:
        return None
    return fit(obs, model, k_hat)  # type: ignore[arg-type]


def _utilities(records: list[dict[str, Any]], player: str) -> dict[str, list[tuple[int, float]]]:
    """(game_id, payoff) of each of `player`'s complete rounds, by opponent."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        if r["status"] != "complete":
            continue
        for me, op in (("row", "col"), ("col", "row")):
            if r[f"{me}_player"] == player:
                out.setdefault(r[f"{op}_player"], []).append((r["game_id"], float(r[f"{me}_payoff"])))
    return out


def _move_rates(records: list[dict[str, Any]], player: str) -> dict[str, Any]:
    st = [r[f"{me}_status"] for r in records for me in ("row", "col") if r[f"{me}_player"] == player]
    n = len(st)
    out: dict[str, Any] = {"n_moves": n,
                           "parse_failure_rate": (st.count("parse_failed") / n) if n else None,
                           "error_rate": (st.count("error") / n) if n else None}
    # sampled moves carry "<seat>_parse" (strict, flexible, or None when nothing was read)
    kinds = [r[f"{me}_parse"] for r in records for me in ("row", "col")
             if r[f"{me}_player"] == player and f"{me}_parse" in r]
    if kinds:
        out.update(_parse_rates(kinds))
        # the strict twin of mean_utility: the player's flexible answers count as failures (their
        # rounds are dropped, like a parse failure's)
        strict = [float(r[f"{me}_payoff"]) for r in records if r["status"] == "complete"
                  for me in ("row", "col") if r[f"{me}_player"] == player and r.get(f"{me}_parse", "strict") == "strict"]
        out.update(strict_n_actions=sum(1 for k in kinds if k == "strict"),
                   strict_mean_utility=float(np.mean(strict)) if strict else None)
    return out


def _parse_rates(kinds: list[Any]) -> dict[str, float]:
    return {"strict_parse_rate": kinds.count("strict") / len(kinds),
            "flexible_parse_rate": kinds.count("flexible") / len(kinds)}


def analyse_records(folder: Path, config: Any, records: list[Record]) -> dict[str, Any]:
    """Fits, tables and the level-distribution plot of a run (or merged shards) from its round
    records: writes fit.json, observations_<mechanism>.csv, the tables and summary.json, and returns
    the summary. ``config`` is the run's ChbenchConfig."""
    games_all = select_games(config.games, config.corrections)
    by_id = {g.id: g for g in games_all}
    players = _players(config)
    fits_out: dict[str, Any] = {}
    summary: dict[str, Any] = {"k_hat": config.k_hat, "rounds": config.rounds, "mechanisms": {}}
    for mi, mech in enumerate(config.mechanisms):
        recs = [r for r in records if r["mechanism"] == mech]
        if not recs:
            continue
        played = sorted({r["game_id"] for r in recs})
        games = [g for g in games_all if g.id in played]
        pooled = player_observations(recs, games, players)
        # every player's counts against each opponent, counted once per opponent
        by_opponent = {o: player_observations(recs, games, players, opponent=o)
                       for o in sorted({r[f"{s}_player"] for r in recs for s in ("row", "col")})}
        fits_out[mech] = {}
        summary["mechanisms"][mech] = {}
        write_observations_csv(folder / f"observations_{mech}.csv", (
            {"game_id": r["game_id"], "round": r["round"], "row_player": r["row_player"],
             "col_player": r["col_player"],
             "row_action": by_id[r["game_id"]].game.row_labels[r["row_action"]],
             "col_action": by_id[r["game_id"]].game.col_labels[r["col_action"]]}
            for r in recs if r["row_action"] is not None and r["col_action"] is not None))
        for pi, p in enumerate(players):
            obs = pooled[p]
            if obs.n_actions_observed == 0:
                # nothing to fit, but a player that moved and never answered is reported (its
                # parse and error rates say why), never left out
                rates = _move_rates(recs, p)
                if rates["n_moves"] and "strict_parse_rate" in rates:
                    summary["mechanisms"][mech][p] = {"n_actions": 0, "mean_utility": None, **rates}
                continue
            opps = sorted({r["col_player"] if r["row_player"] == p else r["row_player"]
                           for r in recs if p in (r["row_player"], r["col_player"])})
            per_opp_obs = {o: by_opponent[o][p] for o in opps}
            pf: dict[str, Any] = {}
            row: dict[str, Any] = {}
            for cm_i, cm in enumerate(CH_MODELS):
                s = derive_seed(config.seed, mi, pi, cm_i)
                # the fit is exhaustive (no restarts, no seed); the seed is the bootstrap's
                d = fit_report(obs, cm, config.k_hat, config.bootstrap, derive_seed(s, 1))  # type: ignore[arg-type]
                per = {}
                for o in opps:
                    r_o = _fit_or_none(per_opp_obs[o], cm, config.k_hat)
                    if r_o is not None:
                        per[o] = {"mean_level": r_o.mean_level, "level_distribution": list(r_o.level_distribution),
                                  "identified": r_o.identified, "mean_level_range": list(r_o.mean_level_range),
                                  "n_obs": r_o.n_obs}
                d["per_opponent"] = per
                pf[cm] = d
                lv = [v["mean_level"] for v in per.values()]
                row.update({
                    f"{cm}_mean_level": d["mean_level"], f"{cm}_mean_level_ci95": d["mean_level_ci95"],
                    f"{cm}_identified": d["identified"], f"{cm}_mean_level_range": d["mean_level_range"],
                    f"{cm}_level_distribution": d["level_distribution"],
                    f"{cm}_mean_level_across_opponents": float(np.mean(lv)) if lv else None,
                    f"{cm}_var_level_across_opponents": float(np.var(lv)) if lv else None,
                })
                if cm == "poisson":
                    row["poisson_lambda"] = d["lambda"]
            fits_out[mech][p] = pf
            util = _utilities(recs, p)
            per_opp_u = {o: float(np.mean([v for _, v in util[o]])) for o in sorted(util)}
            by_game: dict[int, list[float]] = {}
            for o in util:
                for gid, v in util[o]:
                    by_game.setdefault(gid, []).append(v)
            game_means = [float(np.mean(v)) for _, v in sorted(by_game.items())]
            all_u = [v for o in util for _, v in util[o]]
            row.update({
                "mean_utility": float(np.mean(all_u)) if all_u else None,
                "mean_utility_ci95": bootstrap_ci(game_means, seed=derive_seed(config.seed, mi, pi, 9)),
                "utility_by_opponent": per_opp_u,
                "utility_var_across_opponents": float(np.var(list(per_opp_u.values()))) if per_opp_u else None,
                "n_opponents": len(opps), "n_games": len(games), "n_actions": obs.n_actions_observed,
                **_move_rates(recs, p),
            })
            summary["mechanisms"][mech][p] = row
    st = [r["status"] for r in records]
    moves = [r[f"{s}_status"] for r in records for s in ("row", "col")]
    summary.update({
        "n_matches": len({r["match_id"] for r in records}), "n_rounds": len(records),
        "complete_round_rate": (st.count("complete") / len(st)) if st else None,
        "parse_failure_rate": (moves.count("parse_failed") / len(moves)) if moves else None,
        "error_rate": (moves.count("error") / len(moves)) if moves else None,
    })
    kinds = [r[f"{s}_parse"] for r in records for s in ("row", "col") if f"{s}_parse" in r]
    if kinds:  # over every generated answer of the run (policy sample)
        summary.update(_parse_rates(kinds))
    write_json_atomic(folder / "fit.json", fits_out)
    write_tables(folder, summary, players)
    png = None
    try:
        panels = plots.run_panels(summary)
        if panels:
            png = plots.level_distributions(panels, "Pooled CH level distributions")
    except Exception as e:  # a failed plot must not lose the numbers: it is recorded in summary.json
        summary["plot_error"] = f"{type(e).__name__}: {e}"
    if png is not None:  # outside the try: a refused write is one line naming the file, not a plot error
        write_bytes_atomic(folder / "level_distribution.png", png)
    write_json_atomic(folder / "summary.json", summary)
    return summary


def _fmt(x: Any, nd: int = 4) -> str:
    return "" if x is None else f"{x:.{nd}f}"


def _ci(x: Any) -> str:
    return "" if not x else f"[{x[0]:.2f}, {x[1]:.2f}]"


def _unidentified(s: dict[str, Any], cm: str) -> str:
    """"*" and the range of maximisers' mean levels when the data do not identify the level."""
    if s.get(f"{cm}_identified", True) is not False:
        return ""
    lo, hi = s.get(f"{cm}_mean_level_range") or (None, None)
    return "*" if lo is None else f"* (max. likelihood anywhere in {lo:.2f}-{hi:.2f})"


def write_tables(folder: Path, summary: dict[str, Any], players: list[str]) -> None:
    """levels.csv/.md (Tables 3-5 layout), utilities_<mech>.csv/.md (11-14), utility_variance (15),
    parsing.md (parse rates of generated answers, when there are any)."""
    mechs = list(summary["mechanisms"])
    rows = []
    for p in players:
        for mech in mechs:
            s = summary["mechanisms"][mech].get(p)
            if not s or not s.get("n_actions"):  # no action: no fit
                continue
            for cm in CH_MODELS:
                rng = s.get(f"{cm}_mean_level_range") or [None, None]
                rows.append({"player": p, "mechanism": mech, "ch_model": cm,
                             "var_across_opponents": s.get(f"{cm}_var_level_across_opponents"),
                             "mean_across_opponents": s.get(f"{cm}_mean_level_across_opponents"),
                             "pooled_mean_level": s.get(f"{cm}_mean_level"),
                             "identified": s.get(f"{cm}_identified"),
                             "pooled_mean_level_low": rng[0], "pooled_mean_level_high": rng[1],
                             "ci95_low": (s.get(f"{cm}_mean_level_ci95") or [None])[0],
                             "ci95_high": (s.get(f"{cm}_mean_level_ci95") or [None, None])[1]})
    def levels_csv(fh: Any) -> None:
        w = csv.DictWriter(fh, fieldnames=["player", "mechanism", "ch_model", "var_across_opponents",
                                           "mean_across_opponents", "pooled_mean_level", "identified",
                                           "pooled_mean_level_low", "pooled_mean_level_high", "ci95_low", "ci95_high"])
        w.writeheader()
        w.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)  # names never run as formulas
    write_csv_atomic(folder / "levels.csv", levels_csv)
    md = ["# CH levels (mean and variance of the mean level across opponents; pooled mean with 95% "
          "bootstrap CI over games)", "",
          "A pooled mean marked * is not identified: several level mixtures fit the play equally well; the "
          "lowest mean level is shown, with every maximiser's range after it (fit.json: `identified`, "
          "`mean_level_range`).", ""]
    for cm, title in (("level_k", "Level-K CH"), ("poisson", "Poisson CH")):
        md += [f"## {title}", "", "| Player | " + " | ".join(f"{m} Var | {m} Mean | {m} pooled [95% CI]" for m in mechs) + " |",
               "|---|" + "---|---|---|" * len(mechs)]
        for p in players:
            cells = []
            for m in mechs:
                s = summary["mechanisms"][m].get(p) or {}
                cells += [_fmt(s.get(f"{cm}_var_level_across_opponents")),
                          _fmt(s.get(f"{cm}_mean_level_across_opponents")),
                          f"{_fmt(s.get(f'{cm}_mean_level'), 3)}{_unidentified(s, cm)} "
                          f"{_ci(s.get(f'{cm}_mean_level_ci95'))}".strip()]
            md.append(f"| {p} | " + " | ".join(cells) + " |")
        md.append("")
    write_atomic(folder / "levels.md", "\n".join(md))
    var_rows = []
    for m in mechs:
        opps = sorted({o for p in players for o in (summary["mechanisms"][m].get(p) or {}).get("utility_by_opponent", {})})
        def utilities_csv(fh: Any, m: str = m, opps: list[str] = opps) -> None:
            uw = csv.writer(fh)
            uw.writerow(csv_row(["player"] + opps))
            for p in players:
                u = (summary["mechanisms"][m].get(p) or {}).get("utility_by_opponent")
                if u:
                    uw.writerow(csv_row([p] + [_fmt(u.get(o)) for o in opps]))
        write_csv_atomic(folder / f"utilities_{m}.csv", utilities_csv)
        lines = [f"# Average utility per round under {m} (player \\ opponent)", "",
                 "| Player \\ Opponent | " + " | ".join(opps) + " |", "|---|" + "---|" * len(opps)]
        for p in players:
            u = (summary["mechanisms"][m].get(p) or {}).get("utility_by_opponent")
            if u:
                lines.append(f"| {p} | " + " | ".join(_fmt(u.get(o)) for o in opps) + " |")
        write_atomic(folder / f"utilities_{m}.md", "\n".join(lines) + "\n")
    for p in players:
        var_rows.append([p] + [_fmt((summary["mechanisms"][m].get(p) or {}).get("utility_var_across_opponents"))
                               for m in mechs])
    lines = ["# Utility variance across opponents", "", "| Player | " + " | ".join(mechs) + " |",
             "|---|" + "---|" * len(mechs)] + ["| " + " | ".join(r) + " |" for r in var_rows]
    write_atomic(folder / "utility_variance.md", "\n".join(lines) + "\n")
    parsed = [(m, p, sm) for m in mechs for p in players
              if "strict_parse_rate" in (sm := summary["mechanisms"][m].get(p) or {})]
    if parsed:  # generated answers (policy sample) only
        lines = ["# How generated answers were read (strict: exactly the number asked for; flexible: "
                 "extracted from other text)", "",
                 "| Mechanism | Player | moves | strict | flexible | parse failed | error | utility | strict utility |",
                 "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {m} | {p} | {s['n_moves']} | {_fmt(s['strict_parse_rate'])} | {_fmt(s['flexible_parse_rate'])} "
                  f"| {_fmt(s['parse_failure_rate'])} | {_fmt(s['error_rate'])} | {_fmt(s.get('mean_utility'))} "
                  f"| {_fmt(s.get('strict_mean_utility'))} |" for m, p, s in parsed]
        write_atomic(folder / "parsing.md", "\n".join(lines) + "\n")


__all__ = ["CSV_COLUMNS", "analyse_records", "write_tables"]
