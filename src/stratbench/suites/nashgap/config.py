"""The Nash-gap suite's configuration: everything that defines a run, stored whole in run.json so
a run can be resumed and repeated. Flag names and defaults follow the original benchmark's CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stratbench.checks import check_config, check_units
from stratbench.errors import InputError
from stratbench.games.normal_form import MAX_ACTIONS
from stratbench.models.prices import load_price_table  # noqa: F401 - (its old home: imported from here)
from stratbench.players.runtime import RuntimeOptions
from stratbench.runner.shard import Shard, as_shard
from stratbench.suites.nashgap.games import BUCKETS, DEFAULT_PAYOFF_MAX, DEFAULT_PAYOFF_MIN
from stratbench.suites.nashgap.players import Agent, resolve_player_spec


@dataclass
class NashgapConfig(RuntimeOptions):
    """Everything that defines a Nash-gap run; stored whole in run.json so a run can be resumed
    and repeated. Flag names and defaults follow the original benchmark's CLI. How its model runs
    (server, timeouts, concurrency, cache, temperature, chat template): `RuntimeOptions`."""

    num_games: int = 100
    num_trials: int = 100
    num_rows: int = 3
    num_cols: int = 3
    seed: int | None = None
    model: str | None = None  # player spec; None → --llm-type alias, else the embedded model
    llm_type: str | None = None
    llm_model: str | None = None
    llm_seed: int | None = None  # defaults to `seed`, so a seeded run is fully reproducible
    # logprob (raw models, exact) | choice (chat models, exact: labels scored after "Action: " in
    # the assistant's turn) | sample; None → choice with --chat where the model's template is
    # known, else logprob where the backend has log-probs, else sample
    policy: str | None = None
    order_rotations: int = 1
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
    # the original benchmark's generator draws payoffs from U(-100, 100)
    payoff_min: float = DEFAULT_PAYOFF_MIN
    payoff_max: float = DEFAULT_PAYOFF_MAX
    # None: 2 for generated games (filled in by the run), each game's own precision for a games
    # file; N: generated games are drawn at N decimals and a games file's payoffs rounded to N
    decimals: int | None = None
    games_file: str | None = None
    # `--shard i/n` ("2/3"), or run.json's {"index", "count"}; None = the whole run. Shards split
    # the games (each game with all its trials and rotations), so per-game means are never split.
    shard: Any = None

    def derived_keys(self) -> tuple[str, ...]:
        """Settings the run works out itself, saved as it did (a collection's plan does not know
        them): with a games file, the number of games is the file's."""
        return ("num_games",) if self.games_file is not None else ()

    def validate(self) -> None:
        check_config(self)  # seeds, temperature, counts (--num-games must be at least 1 (got 0)), ...
        if not (1 <= self.num_rows <= MAX_ACTIONS and 1 <= self.num_cols <= MAX_ACTIONS):
            raise InputError(
                f"--num-rows/--num-cols must be 1..{MAX_ACTIONS} (got {self.num_rows}x{self.num_cols})"
            )
        if self.bucket is not None and self.bucket not in BUCKETS:
            raise InputError(f"unknown --bucket {self.bucket!r}; known: {', '.join(BUCKETS)}")
        if not (np.isfinite(self.payoff_min) and np.isfinite(self.payoff_max)) or not (
            self.payoff_min < self.payoff_max
        ):
            raise InputError(
                f"payoff range must be finite with min < max (got {self.payoff_min}, {self.payoff_max})"
            )
        if self.bucket is not None and self.games_file is not None:
            raise InputError("--bucket and --games-file cannot be combined")
        if self.policy not in (None, "logprob", "choice", "sample"):
            raise InputError(f"unknown --policy {self.policy!r}; use logprob, choice or sample")
        self.check_http_options([self.player])
        if self.games_file is None:
            self.check_size(self.num_games)
        shard = self.shard_spec
        if not shard.whole and self.seed is None:
            why = "generate the same games" if self.games_file is None else "draw the same samples"
            raise InputError(f"--shard {shard} needs --seed: every shard must {why}")
        if not shard.whole and self.games_file is None and shard.count > self.num_games:
            raise InputError(f"--shard {shard}: more shards than games ({self.num_games})")

    def check_size(self, n_games: int) -> None:
        """The run's trials (games × trials or rotations × modes) within what a run may hold."""
        per_game = max(self.num_trials, self.order_rotations) * len(self.modes)
        check_units(n_games * per_game, "--num-games × --num-trials")

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
        """An exact policy (logprob, choice) needs one call per game and rotation: repeated trials
        of the same prompt would return the same distribution."""
        return self.order_rotations if agent.exact_policy else self.num_trials
