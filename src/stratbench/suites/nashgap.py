"""The Nash-gap suite: random zero-sum games, the player as the row player, the column player
fixed at its Nash strategy.

Work is games × trials × modes. Each trial record is appended to a JSONL file the moment it
completes; a run can be resumed from its folder; every decision's randomness is keyed by
(llm seed, game, trial, mode), so results are identical for any number of workers. Failed calls and
unparseable answers are recorded as such and excluded from the gap statistics, never replaced.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from stratbench.agents.base import Agent, Decision, DecisionRequest, SCORED_STATUSES
from stratbench.agents.registry import make_agent
from stratbench.analysis.stats import bootstrap_ci, describe
from stratbench.analysis.zerosum_metrics import zero_sum_metrics
from stratbench.errors import InputError
from stratbench.games.generators import BUCKETS, DEFAULT_DECIMALS, generate_games
from stratbench.games.normal_form import MAX_ACTIONS, NormalFormGame, load_games
from stratbench.prompts.nashgap import nashgap_prompt
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import (
    JsonlWriter,
    read_jsonl,
    rewrite_sorted,
    write_json_atomic,
    write_jsonl_atomic,
)
from stratbench.runner.pool import run_pool
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.solvers.zerosum import ZeroSumSolution, has_saddle_point, solve_zero_sum

SUITE = "nashgap"
MODE_INDEX = {"pure": 0, "mixed": 1}
MODE_FILES = {
    # mode: (trials file, summary file) inside a combined folder
    "pure": ("trials_pure_actions.jsonl", "summary_pure_actions.json"),
    "mixed": ("trials_mixed_strategy.jsonl", "summary_mixed_strategy.json"),
}
SINGLE_FILES = ("trials.jsonl", "summary.json")


@dataclass
class NashgapConfig:
    """Everything that defines a Nash-gap run; stored whole in run.json so a run can be resumed
    and repeated. Flag names and defaults follow the original benchmark's CLI."""

    num_games: int = 100
    num_trials: int = 100
    num_rows: int = 3
    num_cols: int = 3
    seed: int | None = None
    llm_type: str = "random"
    llm_model: str | None = None
    llm_seed: int | None = None  # defaults to `seed`, so a seeded run is fully reproducible
    output_dir: str = "results"
    parallel: bool = False
    num_workers: int = 4
    combined: bool = False
    mixed_strategy: bool = False
    overwrite: bool = False
    bucket: str | None = None
    payoff_min: float = -10.0
    payoff_max: float = 10.0
    decimals: int = DEFAULT_DECIMALS
    games_file: str | None = None

    def validate(self) -> None:
        if self.num_trials < 1:
            raise InputError(f"--num-trials must be at least 1 (got {self.num_trials})")
        if self.games_file is None and self.num_games < 1:
            raise InputError(f"--num-games must be at least 1 (got {self.num_games})")
        if not (1 <= self.num_rows <= MAX_ACTIONS and 1 <= self.num_cols <= MAX_ACTIONS):
            raise InputError(
                f"--num-rows/--num-cols must be 1..{MAX_ACTIONS} (got {self.num_rows}x{self.num_cols})"
            )
        if self.num_workers < 1:
            raise InputError(f"--num-workers must be at least 1 (got {self.num_workers})")
        if self.bucket is not None and self.bucket not in BUCKETS:
            raise InputError(f"unknown --bucket {self.bucket!r}; known: {', '.join(BUCKETS)}")
        if not (np.isfinite(self.payoff_min) and np.isfinite(self.payoff_max)) or not (
            self.payoff_min < self.payoff_max
        ):
            raise InputError(
                f"payoff range must be finite with min < max (got {self.payoff_min}, {self.payoff_max})"
            )
        if not 0 <= self.decimals <= 10:
            raise InputError(f"--decimals must be 0..10 (got {self.decimals})")
        if self.bucket is not None and self.games_file is not None:
            raise InputError("--bucket and --games-file cannot be combined")

    @property
    def modes(self) -> list[str]:
        if self.combined:
            return ["pure", "mixed"]
        return ["mixed" if self.mixed_strategy else "pure"]

    @property
    def concurrency(self) -> int:
        return self.num_workers if self.parallel else 1


@dataclass
class GameEntry:
    game_id: int
    game: NormalFormGame
    solution: ZeroSumSolution
    bucket: str | None
    seed: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "payoff_matrix": self.game.payoff_row.tolist(),
            "nash_equilibrium_row": self.solution.row_strategy.tolist(),
            "nash_equilibrium_col": self.solution.col_strategy.tolist(),
            "value": self.solution.value,
            "bucket": self.bucket,
            "seed": self.seed,
            "num_rows": self.game.shape[0],
            "num_cols": self.game.shape[1],
            "payoff_range": self.game.payoff_range,
            "saddle_point": has_saddle_point(self.game.payoff_row),
            "row_labels": list(self.game.row_labels),
            "col_labels": list(self.game.col_labels),
        }


@dataclass
class NashgapResult:
    folder: Path
    summaries: dict[str, dict[str, Any]]  # mode -> summary
    n_errors: int = 0
    totals: dict[str, Any] = field(default_factory=dict)


def build_games(config: NashgapConfig) -> list[GameEntry]:
    """The run's games, each solved; game k depends only on (seed, k)."""
    if config.games_file is not None:
        games = load_games(config.games_file)
        for k, g in enumerate(games):
            if not g.is_zero_sum:
                raise InputError(f"{config.games_file}: game {k} is not zero-sum")
        seed = None
    else:
        assert config.seed is not None
        seed = config.seed
        games = generate_games(
            config.seed, config.num_games, config.num_rows, config.num_cols,
            config.payoff_min, config.payoff_max, config.bucket, config.decimals,
        )
    return [
        GameEntry(k, g, solve_zero_sum(g.payoff_row), config.bucket, seed)
        for k, g in enumerate(games)
    ]


def _entries_from_json(items: list[dict[str, Any]]) -> list[GameEntry]:
    out = []
    for d in items:
        g = NormalFormGame.zero_sum(d["payoff_matrix"], d.get("row_labels"), d.get("col_labels"))
        sol = ZeroSumSolution(
            np.array(d["nash_equilibrium_row"]), np.array(d["nash_equilibrium_col"]),
            float(d["value"]), 0.0,
        )
        out.append(GameEntry(int(d["game_id"]), g, sol, d.get("bucket"), d.get("seed")))
    return out


def policy_of(decision: Decision, mode: str, n: int) -> np.ndarray | None:
    """The distribution a decision is scored as: the exact policy when the player knows it,
    else the stated strategy (mixed) or the chosen action (pure)."""
    if not decision.scored:
        return None
    if decision.policy is not None:
        return np.asarray(decision.policy, dtype=float)
    if mode == "mixed" and decision.strategy is not None:
        return np.asarray(decision.strategy, dtype=float)
    if mode == "pure" and decision.action is not None:
        v = np.zeros(n)
        v[decision.action] = 1.0
        return v
    return None


def make_record(
    entry: GameEntry, trial_id: int, mode: str, seed: int, prompt: str, decision: Decision,
    agent_name: str,
) -> dict[str, Any]:
    n = entry.game.shape[0]
    pi = policy_of(decision, mode, n)
    status = decision.status
    error = decision.error
    if decision.scored and pi is None:
        status, error = "error", "player returned no decision"
    metrics: dict[str, Any]
    if pi is not None and status in SCORED_STATUSES:
        metrics = zero_sum_metrics(
            entry.game.payoff_row, pi, entry.solution.col_strategy, entry.solution.value
        ).as_dict()
    else:
        metrics = dict.fromkeys(
            ("llm_value", "best_response_value", "nash_gap", "exploitability",
             "nash_gap_normalized", "exploitability_normalized")
        )
    return {
        "game_id": entry.game_id,
        "trial_id": trial_id,
        "mode": mode,
        "agent": agent_name,
        "llm_decision": decision.action if mode == "pure" else decision.strategy,
        "policy": pi.tolist() if pi is not None else None,
        **metrics,
        "status": status,
        "error": error,
        "renormalized": decision.renormalized,
        "raw_sum": decision.raw_sum,
        "raw_response": decision.raw_response,
        "latency_s": decision.latency_s,
        "usage": decision.usage,
        "seed": seed,
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
    }


def summarise(
    records: Sequence[dict[str, Any]], entries: Sequence[GameEntry], num_trials: int, seed: int
) -> dict[str, Any]:
    """Per-game aggregation first (trials nest in games), then means over games with bootstrap
    95% CIs. Keys of the original benchmark are kept; failures are counted, not scored."""
    by_game: dict[int, list[dict[str, Any]]] = {}
    counts = {"ok": 0, "parsed": 0, "parse_failed": 0, "error": 0}
    renorm = 0
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        renorm += bool(r.get("renormalized"))
        if r["status"] in SCORED_STATUSES:
            by_game.setdefault(r["game_id"], []).append(r)
    per_game: dict[str, list[float]] = {
        k: [] for k in ("nash_gap", "nash_gap_normalized", "llm_value", "best_response_value",
                        "exploitability", "exploitability_normalized",
                        "mixture_exploitability", "mixture_exploitability_normalized")
    }
    entry_by_id = {e.game_id: e for e in entries}
    for gid in sorted(by_game):
        rs = by_game[gid]
        e = entry_by_id[gid]
        for k in ("nash_gap", "nash_gap_normalized", "llm_value", "best_response_value",
                  "exploitability", "exploitability_normalized"):
            per_game[k].append(float(np.mean([r[k] for r in rs])))
        # The player as a randomising strategy: the average of its trial policies.
        mixture = np.mean([r["policy"] for r in rs], axis=0)
        mm = zero_sum_metrics(e.game.payoff_row, mixture, e.solution.col_strategy, e.solution.value)
        per_game["mixture_exploitability"].append(mm.exploitability)
        per_game["mixture_exploitability_normalized"].append(mm.exploitability_normalized)

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
    for key in ("nash_gap", "nash_gap_normalized", "llm_value", "exploitability",
                "exploitability_normalized", "mixture_exploitability",
                "mixture_exploitability_normalized"):
        vals = per_game[key]
        name = f"mean_{key}"
        if key not in ("nash_gap", "llm_value"):
            s[name] = describe(vals)["mean"]
        s[f"{name}_ci95"] = bootstrap_ci(vals, seed=boot)
    s["mean_br_value_ci95"] = bootstrap_ci(per_game["best_response_value"], seed=boot)
    s["n_games"] = len(by_game)
    s["n_games_unscored"] = len(entries) - len(by_game)
    s["n_trials_scored"] = counts["ok"] + counts["parsed"]
    s["parse_failure_rate"] = counts["parse_failed"] / total if total else 0.0
    s["error_rate"] = counts["error"] / total if total else 0.0
    s["renormalized_rate"] = renorm / total if total else 0.0
    s["status_counts"] = counts
    return s


def _resolve_seeds(config: NashgapConfig) -> NashgapConfig:
    if config.seed is None and config.games_file is None:
        config.seed = fresh_seed()
    if config.seed is None:
        config.seed = 0
    if config.llm_seed is None:
        config.llm_seed = config.seed
    return config


def _files(config: NashgapConfig, mode: str) -> tuple[str, str]:
    return MODE_FILES[mode] if config.combined else SINGLE_FILES


def _folder_names(config: NashgapConfig) -> tuple[str, str | None]:
    prefix = "pure_and_mixed" if config.combined else "run"
    return prefix, (f"{prefix}_latest" if config.overwrite else None)


ProgressFactory = Callable[[int, str], Any]


async def _run_mode(
    folder: Path, config: NashgapConfig, entries: list[GameEntry], mode: str, agent: Agent,
    agent_name: str, progress: Any | None,
) -> list[dict[str, Any]]:
    trials_file, _ = _files(config, mode)
    path = folder / trials_file
    previous = read_jsonl(path, repair=True)
    kept = [r for r in previous if r["status"] != "error"]
    if len(kept) != len(previous):
        # Errored records are retried on resume; drop them so each unit has exactly one record.
        write_jsonl_atomic(path, kept)
    done = {(r["game_id"], r["trial_id"]) for r in kept}
    prompts = {e.game_id: nashgap_prompt(e.game, mode, config.decimals) for e in entries}
    units = [
        (e, t) for e in entries for t in range(config.num_trials) if (e.game_id, t) not in done
    ]
    task = progress.add_task(f"{mode}", total=len(entries) * config.num_trials,
                             completed=len(done)) if progress else None

    async def work(unit: tuple[GameEntry, int]) -> dict[str, Any]:
        e, t = unit
        seed = derive_seed(config.llm_seed, e.game_id, t, MODE_INDEX[mode])
        req = DecisionRequest(e.game, mode, prompts[e.game_id], e.game.row_labels, seed,  # type: ignore[arg-type]
                              e.game_id, t)
        t0 = time.perf_counter()
        try:
            d = await agent.decide(req)
        except Exception as exc:  # a player bug or backend failure is recorded, never hidden
            d = Decision("error", error=f"{type(exc).__name__}: {exc}")
        if not d.latency_s:
            d.latency_s = time.perf_counter() - t0
        return make_record(e, t, mode, seed, prompts[e.game_id], d, agent_name)

    with JsonlWriter(path) as writer:
        def on_result(_: Any, rec: dict[str, Any]) -> None:
            writer.write(rec)
            if progress is not None:
                progress.advance(task)

        await run_pool(units, work, config.concurrency, on_result)
    return rewrite_sorted(path, key=lambda r: (r["game_id"], r["trial_id"]))


def run_nashgap(
    config: NashgapConfig,
    agent: Agent | None = None,
    progress: Any | None = None,
    resume_dir: str | Path | None = None,
) -> NashgapResult:
    """Run (or, with `resume_dir`, finish) a Nash-gap benchmark and write its result folder.

    All input is validated before anything is written, so bad input never leaves a partial folder.
    """
    if resume_dir is not None:
        folder = Path(resume_dir)
        meta_path = folder / "run.json"
        if not meta_path.is_file() or not (folder / "games.json").is_file():
            raise InputError(f"--resume {folder}: not a Nash-gap result folder (no run.json/games.json)")
        meta = json.loads(meta_path.read_text())
        if meta.get("suite") != SUITE:
            raise InputError(f"--resume {folder}: folder is a {meta.get('suite')!r} run, not nashgap")
        saved = meta["config"]
        keep = {k: getattr(config, k) for k in ("parallel", "num_workers")}
        config = NashgapConfig(**{k: v for k, v in saved.items() if k in NashgapConfig.__annotations__})
        for k, v in keep.items():
            setattr(config, k, v)
        entries = _entries_from_json(json.loads((folder / "games.json").read_text()))
        agent = agent or make_agent(config.llm_type, config.llm_model)
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    else:
        config.validate()
        config = _resolve_seeds(config)
        agent = agent or make_agent(config.llm_type, config.llm_model)
        entries = build_games(config)
        prefix, overwrite_name = _folder_names(config)
        folder = create_run_folder(config.output_dir, prefix, overwrite_name).path
        write_json_atomic(folder / "games.json", [e.to_json() for e in entries])
        meta = run_metadata(SUITE, asdict(config))
        meta["agent"] = agent.describe()
    write_json_atomic(folder / "run.json", meta)

    agent_name = config.llm_type if not config.llm_model else f"{config.llm_type}:{config.llm_model}"

    async def main() -> dict[str, list[dict[str, Any]]]:
        out = {}
        try:
            for mode in config.modes:
                out[mode] = await _run_mode(folder, config, entries, mode, agent, agent_name, progress)
        finally:
            await agent.aclose()
        return out

    all_records = asyncio.run(main())
    summaries = {}
    n_errors = 0
    for mode, recs in all_records.items():
        s = summarise(recs, entries, config.num_trials, config.seed or 0)
        s["mode"] = mode
        s["agent"] = agent_name
        summaries[mode] = s
        n_errors += s["status_counts"]["error"]
        write_json_atomic(folder / _files(config, mode)[1], s)
    meta["end_time"] = now_iso()
    meta["status"] = "finished"
    meta["totals"] = {
        "records": sum(len(r) for r in all_records.values()),
        "errors": n_errors,
    }
    write_json_atomic(folder / "run.json", meta)
    return NashgapResult(folder, summaries, n_errors, meta["totals"])
