"""The Nash-gap suite's configuration: everything that defines a run, stored whole in run.json so
a run can be resumed and repeated. Flag names and defaults follow the original benchmark's CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.errors import InputError
from stratbench.games.normal_form import MAX_ACTIONS
from stratbench.runner.shard import Shard, as_shard
from stratbench.suites.nashgap.games import BUCKETS, DEFAULT_DECIMALS
from stratbench.suites.nashgap.players import Agent, resolve_player_spec


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
