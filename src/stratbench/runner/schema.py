"""The written schema of every result folder's `run.json` and its totals.

Every run command writes one `run.json` in its folder when it starts (status "running") and again
when it ends (status "finished", end time, totals). Readers — resume, merge, compare, report — rely
on these keys; suites add their own config and, in `totals`, counts of their own units (documented
in each suite's `records` module). Field docs follow inspect_ai's `EvalLog` in spirit: what each
key holds and why it is there.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

from pydantic import Field

RunStatus = Literal["running", "finished"]

FORMAT_VERSION = 2
"""The version of the result-folder format (run.json and the records beside it) this release
writes. 1: folders written before run.json carried ``format_version`` (read as 1 when absent; the
same keys, so they resume, merge and report unchanged). A folder of a newer format is refused
with one line instead of being misread. Bump it, with a step in `runner.folders.migrate_run_json`,
whenever a key changes meaning or a reader could misread an older folder."""

SUITE_VERSION_DOC = """A suite's version (run.json ``suite_version``; ``SuiteBase.version`` and the
``version`` of its `RunPlan`s): which definition of the benchmark — its games, prompts, answer
reading and metrics — a run's records come from, as lm-eval's task versions and inspect_ai's
``task_version`` say it. A suite bumps it when a change makes a new run's numbers incomparable with
an older run's. A run is resumed and merged only by the version that started it, and compared only
with a run of the same version; a folder of a newer version than the code knows is refused."""

Status = Literal["ok", "parsed", "parse_failed", "error"]
"""A record's status, in every suite: `ok` (a scripted player), `parsed` (a model answer was
understood), `parse_failed` (it was not: nothing is guessed), `error` (no answer; the reason is kept)."""

SCORED_STATUSES: tuple[str, ...] = ("ok", "parsed")
"""Statuses whose records enter the metrics; the others are counted, never scored."""


class GitInfo(TypedDict):
    commit: str | None  # the stratbench source revision, None outside a git checkout
    dirty: bool | None  # uncommitted changes to tracked files


Count = Annotated[int, Field(ge=0)]  # a count read back below 0 is a hand-edited file
Amount = Annotated[float, Field(ge=0)]


class RunTotals(TypedDict, total=False):
    """Counts over the whole run (summed over shards by `stratbench merge`)."""

    records: Count  # records written to the run's JSONL files
    errors: Count  # records (or units) whose model call failed: the exit code is 1 when > 0
    model_calls: Count  # calls that reached a backend (cache hits excluded)
    model_cache_hits: Count  # answers replayed from the response cache (free)
    model_cache_failures: Count  # only when > 0: requests the cache failed to serve or store (answers kept)
    model_errors: Count  # backend calls that failed after their retries
    model_tokens_in: Count  # prompt tokens evaluated by the backend
    model_tokens_out: Count  # tokens generated
    # only when > 0: calls whose provider reported no usable token counts (absent, negative, not
    # a number, absurd: `models.base.reported_count`); the counts they did not report are in
    # neither the tokens nor the cost (their reported ones are)
    model_usage_unknown: Count
    model_cost_usd: Amount  # with --price-table only: the cost of the tokens above


class ShardRun(TypedDict):
    folder: str
    shard: str
    start_time: str | None
    end_time: str | None
    git: GitInfo | None
    platform: str | None
    versions: dict[str, str | None] | None


class RunMeta(TypedDict, total=False):
    """`run.json`. `suite` names the benchmark (`nashgap`, `tmgbench`, `chbench`, `tom`, ...) and
    `kind` which of its run types wrote the folder (`run`, `atomic`, `complex`, `baseline`, `fit`,
    `stories`); together they select the registered suite that can resume, merge, compare and
    report the folder."""

    suite: Required[str]
    format_version: int  # FORMAT_VERSION of the release that created the folder (absent: 1)
    suite_version: int  # the version of the suite's definition that wrote the run (absent: 1)
    kind: str  # absent in folders written before it existed: inferred from the config
    config: Required[dict[str, Any]]  # the full resolved config: enough to repeat or resume the run
    versions: dict[str, str | None]  # stratbench, python and key packages
    git: GitInfo
    platform: str
    command: list[str]  # argv, never keys (they come from the environment only)
    start_time: str  # ISO 8601, UTC
    end_time: str | None
    status: RunStatus
    totals: RunTotals
    agent: dict[str, Any]  # the player: name, policy, model identity (never secrets)
    players: dict[str, Any]  # CHBench: every player's identity and policy
    games: list[dict[str, Any]]  # CHBench: the games played, uncertain ones flagged
    resumed_at: list[str]  # one time per --resume
    merged_from: list[str]  # `stratbench merge`: the shard folders
    shard_runs: list[ShardRun]
    merged_at: str


Record = dict[str, Any]
"""A JSONL record. Each suite documents its record keys as a TypedDict in its `records` module;
records stay plain dicts at run time (they are written as they are produced)."""

__all__ = ["FORMAT_VERSION", "SCORED_STATUSES", "GitInfo", "NotRequired", "Record", "RunMeta", "RunStatus", "RunTotals", "ShardRun", "Status"]
