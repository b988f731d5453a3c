"""`stratbench tom run`: a language model plays repeated games against a scripted partner.

Only LM prompting (log-probabilities of the action tokens after "A: Option") is implemented; the
other prompting strategies of the paper are not yet. Episodes run in order on one model with prefix
reuse (each round's prompt extends the previous one, so a round costs only its new tokens); every
finished episode's rounds are appended to `rounds.jsonl` at once, and `--resume` skips finished
episodes. The regret reference is the exact optimal T-step response to the known partner.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import JsonlWriter, read_jsonl, write_json_atomic
from stratbench.seeding import derive_seed

PROMPTINGS = ("LM",)


def run_tom_model(model_spec: str, game: str, partner: str, prompting: str, rounds: int, episodes: int,
                  seed: int, output_dir: str, label_set: str = "neutral", predict: bool = True,
                  resume: str | None = None) -> tuple[Path, dict[str, Any]]:
    from stratbench.agents.registry import open_model
    from stratbench.models.registry import ModelOptions
    from stratbench.suites.tom.baseline_run import _plot_curves
    from stratbench.suites.tom.episodes import arun_lm_episode
    from stratbench.suites.tom.games import GAMES
    from stratbench.suites.tom.partners import PARTNERS
    from stratbench.suites.tom.regret import mean_ci

    if resume:
        folder = Path(resume)
        try:
            meta = json.loads((folder / "run.json").read_text())
            c = meta["config"]
        except (OSError, ValueError, KeyError):
            raise InputError(f"--resume {folder}: not a tom run folder") from None
        model_spec, game, partner, prompting = c["model"], c["game"], c["partner"], c["prompting"]
        rounds, episodes, seed, label_set, predict = c["rounds"], c["episodes"], c["seed"], c["label_set"], c["predict"]
    if prompting not in PROMPTINGS:
        raise InputError(f"--prompting {prompting}: only {', '.join(PROMPTINGS)} is implemented so far")
    if game not in GAMES:
        raise InputError(f"unknown --game {game!r}; known: {', '.join(GAMES)}")
    if partner not in PARTNERS and partner not in ("tft", "single", "wsls"):
        raise InputError(f"unknown --partner {partner!r}; known: {', '.join(PARTNERS)}")
    if rounds < 1 or episodes < 1:
        raise InputError("--rounds and --episodes must be at least 1")
    model = open_model(model_spec, ModelOptions(prefix_reuse=True), no_cache=True)
    if not resume:
        folder = create_run_folder(output_dir, "tom").path
        meta = run_metadata("tom", {"model": model_spec, "game": game, "partner": partner,
                                    "prompting": prompting, "rounds": rounds, "episodes": episodes,
                                    "seed": seed, "label_set": label_set, "predict": predict})
        meta["agent"] = {"name": model_spec, "policy": "logprob", "model": model.describe()}
    write_json_atomic(folder / "run.json", meta)
    path = folder / "rounds.jsonl"
    prev = read_jsonl(path, repair=True)
    done = {r["episode"] for r in prev if r.get("t") == rounds - 1 or r.get("status") == "error"}
    # only whole episodes count as done: drop partial ones (written in one go, so rare)
    kept = [r for r in prev if r["episode"] in done]
    if len(kept) != len(prev):
        from stratbench.runner.jsonl import write_jsonl_atomic

        write_jsonl_atomic(path, kept)

    async def main() -> None:
        try:
            with JsonlWriter(path) as w:
                for e in range(episodes):
                    if e in done:
                        continue
                    ep = await arun_lm_episode(model, game, partner, rounds, derive_seed(seed, e),
                                               label_set=label_set, predict=predict)
                    for r in ep["records"]:
                        w.write({"episode": e, "game": game, "partner": partner,
                                 "initial_state": ep["initial_state"], **r})
        finally:
            await model.aclose()

    asyncio.run(main())
    recs = read_jsonl(path)
    by: dict[int, list[dict[str, Any]]] = {}
    for r in recs:
        by.setdefault(r["episode"], []).append(r)
    complete = {e: rs for e, rs in by.items() if all(r["status"] != "error" for r in rs) and len(rs) == rounds}
    from stratbench.suites.tom.games import get_game
    from stratbench.suites.tom.partners import make_partner
    from stratbench.suites.tom.regret import regret_per_step

    g = get_game(game)
    p = make_partner(partner, g)
    regrets, accs, curves = [], [], []
    for e, rs in sorted(complete.items()):
        rs = sorted(rs, key=lambda r: r["t"])
        mine = np.array([r["my_action"] for r in rs])
        theirs = np.array([r["partner_action"] for r in rs])
        per = regret_per_step(g, p, mine, theirs, initial_state=rs[0]["initial_state"])
        per = np.asarray(per, dtype=float)
        curves.append(per if per.ndim else np.full(rounds, float(per)))
        regrets.append(float(np.mean(per)))
        if predict:
            accs.append(float(np.mean([r["prediction"] == r["partner_action"] for r in rs])))
    reg = mean_ci(regrets, seed=seed)
    acc = mean_ci(accs, seed=seed) if accs else {"mean": None, "ci95": None}
    summary = {"game": game, "partner": partner, "prompting": prompting, "model": model_spec,
               "regret_per_step": reg["mean"], "regret_per_step_ci95": reg["ci95"],
               "tom_accuracy": acc["mean"], "tom_accuracy_ci95": acc["ci95"],
               "n_episodes": len(complete), "n_error_episodes": len(by) - len(complete),
               "tokens_evaluated": int(sum(r.get("tokens_in", 0) for r in recs)),
               "tokens_evaluated_per_episode": (int(sum(r.get("tokens_in", 0) for r in recs)) / max(1, len(by)))}
    write_json_atomic(folder / "summary.json", summary)
    if curves:
        _plot_curves({f"{game}/{partner}": list(np.mean(curves, axis=0))}, folder / "regret_curve.png")
    meta.update(end_time=now_iso(), status="finished", totals={"episodes": len(by), "errors": len(by) - len(complete),
                                                               "tokens_evaluated": summary["tokens_evaluated"]})
    write_json_atomic(folder / "run.json", meta)
    return folder, summary
