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
from typing import Any, Sequence

import numpy as np

from stratbench.suites.nashgap.players import Agent, Decision, DecisionRequest, SCORED_STATUSES
from stratbench.suites.nashgap.players import make_agent, resolve_player_spec
from stratbench.stats import bootstrap_ci, describe
from stratbench.analysis.zerosum_metrics import zero_sum_metrics
from stratbench.errors import InputError
from stratbench.games.generators import BUCKETS, DEFAULT_DECIMALS, generate_games
from stratbench.games.normal_form import MAX_ACTIONS, NormalFormGame, load_games
from stratbench.prompts.nashgap import nashgap_prompt
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import (
    read_jsonl,
    resume_records,
    rewrite_sorted,
    write_json_atomic,
    write_jsonl_atomic,
)
from stratbench.runner.pool import stream_pool
from stratbench.runner.shard import Shard, as_shard, shard_tag
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
    model: str | None = None  # player spec; None → --llm-type alias, else the embedded model
    llm_type: str | None = None
    llm_model: str | None = None
    llm_seed: int | None = None  # defaults to `seed`, so a seeded run is fully reproducible
    policy: str | None = None  # logprob | sample; None → logprob where the backend has log-probs
    order_rotations: int = 1
    base_url: str | None = None
    max_concurrency: int = 8
    no_cache: bool = False
    temperature: float = 1.0
    max_tokens: int = 512
    chat: bool = False
    price_table: str | None = None  # JSON: {spec: {"input_per_million": $, "output_per_million": $}}
    folder_tag: str | None = None  # appended to the folder name when one command runs several players
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
    # `--shard i/n` ("2/3"), or run.json's {"index", "count"}; None = the whole run. Shards split
    # the games (each game with all its trials and rotations), so per-game means are never split.
    shard: Any = None

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
        if self.order_rotations < 1:
            raise InputError(f"--order-rotations must be at least 1 (got {self.order_rotations})")
        if self.max_concurrency < 1:
            raise InputError(f"--max-concurrency must be at least 1 (got {self.max_concurrency})")
        if self.policy not in (None, "logprob", "sample"):
            raise InputError(f"unknown --policy {self.policy!r}; use logprob or sample")
        shard = self.shard_spec
        if not shard.whole and self.seed is None and self.games_file is None:
            raise InputError(f"--shard {shard} needs --seed: every shard must generate the same games")
        if not shard.whole and self.games_file is None and shard.count > self.num_games:
            raise InputError(f"--shard {shard}: more shards than games ({self.num_games})")

    @property
    def shard_spec(self) -> Shard:
        """The shard as a :class:`Shard` (the field holds the CLI's text or run.json's dict)."""
        return as_shard(self.shard)

    @property
    def player(self) -> str:
        return resolve_player_spec(self.model, self.llm_type, self.llm_model)

    @property
    def modes(self) -> list[str]:
        if self.combined:
            return ["pure", "mixed"]
        return ["mixed" if self.mixed_strategy else "pure"]

    @property
    def concurrency(self) -> int:
        """Decisions in flight. Results never depend on it (every decision is seeded by its ids)."""
        return self.num_workers if self.parallel else self.max_concurrency

    def trials_for(self, agent: Agent) -> int:
        """An exact (log-prob) policy needs one call per game and rotation: repeated trials of the
        same prompt would return the same distribution."""
        return self.order_rotations if agent.exact_policy else self.num_trials


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


def rotation_order(m: int, r: int) -> list[int]:
    """Presented row k is original row order[k]: rows move cyclically, labels stay in place."""
    return [(k + r) % m for k in range(m)]


def rotate_game(game: NormalFormGame, order: list[int]) -> NormalFormGame:
    return NormalFormGame(game.payoff_row[order], game.payoff_col[order], game.row_labels,
                          game.col_labels, game.name)


def policy_of(decision: Decision, mode: str, n: int) -> np.ndarray | None:
    """The distribution a decision is scored as (in presented order): the exact policy when the
    player knows it, else the stated strategy (mixed) or the chosen action (pure)."""
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


def _to_original(vec: Any, order: list[int]) -> Any:
    if vec is None:
        return None
    out = [0.0] * len(order)
    for k, v in enumerate(vec):
        out[order[k]] = v
    return out


def make_record(
    entry: GameEntry, trial_id: int, mode: str, seed: int, prompt: str, decision: Decision,
    agent_name: str, order: list[int] | None = None, rotation: int = 0,
) -> dict[str, Any]:
    """One trial's record; actions and policies are mapped back to the game's own row order."""
    n = entry.game.shape[0]
    order = order or list(range(n))
    shown = policy_of(decision, mode, n)
    status = decision.status
    error = decision.error
    if decision.scored and shown is None:
        status, error = "error", "player returned no decision"
    pi = np.asarray(_to_original(shown.tolist(), order)) if shown is not None else None
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
    scored = status in SCORED_STATUSES
    if mode == "pure":
        decided: Any = order[decision.action] if scored and decision.action is not None else None
    else:
        decided = _to_original(decision.strategy, order) if scored else None
    return {
        "game_id": entry.game_id,
        "trial_id": trial_id,
        "mode": mode,
        "agent": agent_name,
        "rotation": rotation,
        "llm_decision": decided,
        "policy": pi.tolist() if pi is not None else None,
        **metrics,
        "first_listed_prob": float(shown[0]) if shown is not None and scored else None,
        "label_mass": decision.label_mass,
        "logprobs": _to_original(decision.logprobs, order),
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


_PER_TRIAL = ("nash_gap", "nash_gap_normalized", "llm_value", "best_response_value",
              "exploitability", "exploitability_normalized")


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


def _folder_tag(config: NashgapConfig) -> str | None:
    """The folder-name suffix: the player's slug (several players in one command) and the shard
    (`shard2of3`), so shards copied together from several machines never collide."""
    parts = [config.folder_tag, shard_tag(config.shard_spec)]
    return "_".join(p for p in parts if p) or None


def _folder_names(config: NashgapConfig) -> tuple[str, str | None]:
    prefix = "pure_and_mixed" if config.combined else "run"
    tag = f"_{_folder_tag(config)}" if _folder_tag(config) else ""
    return prefix, (f"{prefix}_latest{tag}" if config.overwrite else None)


async def _run_mode(
    folder: Path, config: NashgapConfig, entries: list[GameEntry], mode: str, agent: Agent,
    agent_name: str, progress: Any | None,
) -> list[dict[str, Any]]:
    trials_file, _ = _files(config, mode)
    path = folder / trials_file
    kept = resume_records(path)
    done = {(r["game_id"], r["trial_id"]) for r in kept}
    n_trials = config.trials_for(agent)
    k_rot = config.order_rotations
    # The prompt of (game, rotation) is built once and shared by that rotation's trials.
    prompts: dict[tuple[int, int], tuple[NormalFormGame, str, list[int]]] = {}
    for e in entries:
        for r in range(min(k_rot, n_trials)):
            order = rotation_order(e.game.shape[0], r)
            shown = rotate_game(e.game, order) if r else e.game
            prompts[(e.game_id, r)] = (
                shown, nashgap_prompt(shown, mode, config.decimals, agent.prompt_style), order
            )
    units = [(e, t) for e in entries for t in range(n_trials) if (e.game_id, t) not in done]
    task = progress.add_task(f"{mode}", total=len(entries) * n_trials,
                             completed=len(done)) if progress else None

    async def work(unit: tuple[GameEntry, int]) -> dict[str, Any]:
        e, t = unit
        r = t % k_rot
        shown, prompt, order = prompts[(e.game_id, r)]
        seed = derive_seed(config.llm_seed, e.game_id, t, MODE_INDEX[mode])
        req = DecisionRequest(shown, mode, prompt, shown.row_labels, seed, e.game_id, t)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        try:
            d = await agent.decide(req)
        except Exception as exc:  # a player bug or backend failure is recorded, never hidden
            d = Decision("error", error=f"{type(exc).__name__}: {exc}")
        if not d.latency_s:
            d.latency_s = time.perf_counter() - t0
        return make_record(e, t, mode, seed, prompt, d, agent_name, order, r)

    await stream_pool(units, work, config.concurrency, path,
                      (lambda: progress.advance(task)) if progress is not None else None)
    return rewrite_sorted(path, key=lambda r: (r["game_id"], r["trial_id"]))


def player_from_config(config: NashgapConfig) -> Agent:
    from stratbench.models import ModelOptions

    return make_agent(
        config.player, config.policy,
        model_options=ModelOptions(base_url=config.base_url, max_concurrency=config.max_concurrency,
                                   chat=config.chat or None),
        no_cache=config.no_cache, temperature=config.temperature, max_tokens=config.max_tokens,
        chat=config.chat,
    )


def load_price_table(path: str | None) -> dict[str, dict[str, float]]:
    """Prices per million tokens by model spec, from a JSON file the user supplies."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise InputError(f"--price-table {path}: {e}") from None
    ok = isinstance(data, dict) and all(
        isinstance(v, dict) and all(isinstance(v.get(k, 0), (int, float)) and v.get(k, 0) >= 0
                                    for k in ("input_per_million", "output_per_million"))
        for v in data.values())
    if not ok:
        raise InputError(f"--price-table {path}: expected {{spec: {{\"input_per_million\": number, "
                         f"\"output_per_million\": number}}}}")
    return data


def _usage(agent: Agent, prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    model = getattr(agent, "model", None)
    if model is None:
        return {"calls": 0}
    u = model.usage.as_dict()
    price = prices.get(model.spec)
    if price is not None:  # cache hits cost nothing and are not counted in the tokens
        u["cost_usd"] = (u["tokens_in"] * price.get("input_per_million", 0)
                         + u["tokens_out"] * price.get("output_per_million", 0)) / 1e6
    return u


def run_nashgap(
    config: NashgapConfig,
    agent: Agent | None = None,
    progress: Any | None = None,
    resume_dir: str | Path | None = None,
) -> NashgapResult:
    """Run (or, with `resume_dir`, finish) a Nash-gap benchmark and write its result folder.

    All input is validated, and the player loaded, before anything is written: bad input never
    leaves a partial folder.
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
        keep = {k: getattr(config, k) for k in ("parallel", "num_workers", "max_concurrency")}
        given = config.shard
        config = NashgapConfig(**{k: v for k, v in saved.items() if k in NashgapConfig.__annotations__})
        if given is not None and as_shard(given) != config.shard_spec:
            raise InputError(f"--resume {folder}: the folder is shard {config.shard_spec}, not {given}")
        for k, v in keep.items():
            setattr(config, k, v)
        entries = _entries_from_json(json.loads((folder / "games.json").read_text()))
        shard = config.shard_spec
        agent = agent or player_from_config(config)
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    else:
        config.validate()
        load_price_table(config.price_table)
        config = _resolve_seeds(config)
        shard = config.shard_spec
        config.shard = shard.to_json()
        entries = build_games(config)  # all games (games.json lists them all); the shard picks below
        if not shard.whole and shard.count > len(entries):
            raise InputError(f"--shard {shard}: more shards than games ({len(entries)})")
        agent = agent or player_from_config(config)
        prefix, overwrite_name = _folder_names(config)
        folder = create_run_folder(config.output_dir, prefix, overwrite_name, _folder_tag(config)).path
        write_json_atomic(folder / "games.json", [e.to_json() for e in entries])
        meta = run_metadata(SUITE, {**asdict(config), "player": config.player}, kind="run")
        meta["agent"] = agent.describe()
    write_json_atomic(folder / "run.json", meta)

    agent_name = agent.name if getattr(agent, "model", None) is not None else config.player
    entries = shard.select(entries)  # this shard's games, in the unsharded order

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
        s = summarise(recs, entries, config.trials_for(agent), config.seed or 0)
        s["mode"] = mode
        s["agent"] = agent_name
        s["policy"] = getattr(agent, "policy", "scripted")
        s["order_rotations"] = config.order_rotations
        if not shard.whole:
            s["shard"] = str(shard)
        summaries[mode] = s
        n_errors += s["status_counts"]["error"]
        write_json_atomic(folder / _files(config, mode)[1], s)
    meta["end_time"] = now_iso()
    meta["status"] = "finished"
    meta["totals"] = {
        "records": sum(len(r) for r in all_records.values()),
        "errors": n_errors,
        **{f"model_{k}": v for k, v in _usage(agent, load_price_table(config.price_table)).items()},
    }
    write_json_atomic(folder / "run.json", meta)
    return NashgapResult(folder, summaries, n_errors, meta["totals"])


def merge_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Combine the finished shards of one Nash-gap run into `out` (see `stratbench merge`).

    Shards hold whole games, so the merged trial files are the shards' records in the unsharded
    run's canonical order and the summaries are recomputed from all records over all games —
    the same computation, on the same numbers, as an unsharded run. Returns the summary (for a
    combined run, ``{mode: summary}``).
    """
    metas = [json.loads((f / "run.json").read_text()) for f in folders]
    saved = metas[0]["config"]
    config = NashgapConfig(**{k: v for k, v in saved.items() if k in NashgapConfig.__annotations__})
    games_text = [(f / "games.json").read_text() if (f / "games.json").is_file() else None for f in folders]
    for f, text in zip(folders, games_text):
        if text is None:
            raise InputError(f"{f}: no games.json; not a Nash-gap result folder")
        if json.loads(text) != json.loads(games_text[0]):  # type: ignore[arg-type]
            raise InputError(f"{f}: games.json differs from {folders[0]}'s: the shards played different games")
    (out / "games.json").write_text(games_text[0])  # type: ignore[arg-type]
    entries = _entries_from_json(json.loads(games_text[0]))  # type: ignore[arg-type]
    summaries: dict[str, dict[str, Any]] = {}
    for mode in config.modes:
        trials_file, summary_file = _files(config, mode)
        shard_summaries = []
        records: list[dict[str, Any]] = []
        for f in folders:
            if not (f / summary_file).is_file():
                raise InputError(f"{f}: no {summary_file}; finish the shard with --resume {f}")
            shard_summaries.append(json.loads((f / summary_file).read_text()))
            records.extend(read_jsonl(f / trials_file))
        first = shard_summaries[0]
        for f, sm in zip(folders, shard_summaries):
            for k in ("num_trials_per_game", "agent", "policy", "order_rotations"):
                if sm.get(k) != first.get(k):
                    raise InputError(f"{f}: {summary_file} has {k}={sm.get(k)!r}, "
                                     f"{folders[0]} has {first.get(k)!r}")
        n_trials = int(first["num_trials_per_game"])
        records.sort(key=lambda r: (r["game_id"], r["trial_id"]))
        got = [(r["game_id"], r["trial_id"]) for r in records]
        want = [(e.game_id, t) for e in entries for t in range(n_trials)]
        if got != want:
            dup = len(got) - len(set(got))
            raise InputError(f"{trials_file}: the shards hold {len(set(got))} of the run's {len(want)} "
                             f"trials" + (f" and {dup} duplicates" if dup else "")
                             + "; merge each shard of one run once, after it has finished")
        write_jsonl_atomic(out / trials_file, records)
        s = summarise(records, entries, n_trials, config.seed or 0)
        for k in ("mode", "agent", "policy", "order_rotations"):
            s[k] = first[k]
        write_json_atomic(out / summary_file, s)
        summaries[mode] = s
    return summaries if config.combined else summaries[config.modes[0]]
