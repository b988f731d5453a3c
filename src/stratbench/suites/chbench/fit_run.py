"""`stratbench chbench fit --data FILE`: cognitive-hierarchy fits of observed play collected
anywhere (CSV: game_id, round, row_player, col_player, row_action, col_action), written as
`fit.json` (per player and CH model) and `summary.json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import write_json_atomic


def run_fit(data: str, k_hat: int, restarts: int, seed: int, output_dir: str,
            corrections: str | None = None) -> tuple[Path, dict[str, Any]]:
    from stratbench.suites.chbench.catalogue import build_catalogue, load_corrections
    from stratbench.suites.chbench.fit import fit, observations_from_csv

    if k_hat < 1 or restarts < 1:
        raise InputError("--k-hat and --restarts must be at least 1")
    if not Path(data).is_file():
        raise InputError(f"--data {data}: file not found")
    cat = build_catalogue()
    if corrections:
        cat = load_corrections(corrections, cat)
    obs = observations_from_csv(data, cat)
    folder = create_run_folder(output_dir, "chbench_fit").path
    meta = run_metadata("chbench", kind="fit", config={"data": data, "k_hat": k_hat, "restarts": restarts, "seed": seed,
                                    "corrections": corrections})
    write_json_atomic(folder / "run.json", meta)
    fits: dict[str, dict[str, Any]] = {}
    for player, o in sorted(obs.items()):
        fits[player] = {m: fit(o, m, k_hat, restarts, seed).to_dict() for m in ("level_k", "poisson")}
    write_json_atomic(folder / "fit.json", fits)
    summary = {p: {"poisson_lambda": f["poisson"].get("lambda"),
                   "poisson_mean_level": f["poisson"]["mean_level"],
                   "level_k_mean_level": f["level_k"]["mean_level"],
                   "n_obs": f["level_k"]["n_obs"]} for p, f in fits.items()}
    write_json_atomic(folder / "summary.json", {"players": summary, "k_hat": k_hat})
    meta.update(end_time=now_iso(), status="finished", totals={"players": len(fits)})
    write_json_atomic(folder / "run.json", meta)
    return folder, fits
