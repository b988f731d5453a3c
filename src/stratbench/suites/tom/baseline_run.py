"""`stratbench tom baseline`: the tabular R-max baseline as a result folder (summary.json with the
suite's keys and CIs, per-episode records, the regret-per-step curve as a PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import JsonlWriter, write_json_atomic

SUMMARY_KEYS = ("regret_per_step", "regret_per_step_ci95", "tom_accuracy", "tom_accuracy_ci95",
                "tom_regret_per_step", "tom_regret_per_step_ci95", "n_episodes", "game", "partner",
                "T", "seed", "m", "seconds")


def run_tom_baseline(games: list[str], partners: list[str], episodes: int, rounds: int, seed: int,
                     output_dir: str) -> tuple[Path, list[dict[str, Any]]]:
    from stratbench.suites.tom.games import GAMES
    from stratbench.suites.tom.partners import PARTNERS
    from stratbench.suites.tom.tabular import run_baseline

    for g in games:
        if g not in GAMES:
            raise InputError(f"unknown --game {g!r}; known: {', '.join(GAMES)}")
    for p in partners:
        if p not in PARTNERS and p not in ("tft", "single", "wsls"):
            raise InputError(f"unknown --partner {p!r}; known: {', '.join(PARTNERS)}")
    if episodes < 1 or rounds < 1:
        raise InputError("--episodes and --rounds must be at least 1")
    folder = create_run_folder(output_dir, "tom_baseline").path
    meta = run_metadata("tom", {"games": games, "partners": partners, "episodes": episodes,
                                "rounds": rounds, "seed": seed, "agent": "tabular-rmax"})
    write_json_atomic(folder / "run.json", meta)
    rows = []
    curves = {}
    with JsonlWriter(folder / "episodes.jsonl") as writer:
        for g in games:
            for p in partners:
                r = run_baseline(g, p, episodes=episodes, T=rounds, seed=seed)
                for e in range(r["n_episodes"]):
                    writer.write({"game": g, "partner": p, "episode": e, "status": "ok",
                                  "regret_per_step": float(r["episode_regret_per_step"][e]),
                                  "tom_accuracy": float(r["episode_tom_accuracy"][e]),
                                  "tom_regret_per_step": float(r["episode_tom_regret_per_step"][e])})
                rows.append({k: (list(r[k]) if k.endswith("_ci95") and r[k] is not None else r[k])
                             for k in SUMMARY_KEYS})
                curves[f"{g}/{p}"] = [float(x) for x in r["regret_curve"]]
    write_json_atomic(folder / "summary.json", {"settings": rows})
    write_json_atomic(folder / "curves.json", curves)
    _plot_curves(curves, folder / "regret_curve.png")
    meta.update(end_time=now_iso(), status="finished", totals={"settings": len(rows)})
    write_json_atomic(folder / "run.json", meta)
    return folder, rows


def _plot_curves(curves: dict[str, list[float]], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, ys in curves.items():
        ax.plot(range(1, len(ys) + 1), ys, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("regret (vs optimal T-step response)")
    ax.set_title("Tabular R-max baseline: regret per step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
