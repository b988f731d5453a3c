"""The settings of a TMGBench run (atomic or complex) and the work they select: the games, and this
shard's part of any list of units. Shared by the atomic run, the complex run and story generation."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from stratbench.checks import RULES, check_config, check_value, list_items
from stratbench.errors import InputError
from stratbench.players import check_policy
from stratbench.players.runtime import RuntimeOptions
from stratbench.runner.jsonl import read_jsonl
from stratbench.runner.schema import Record
from stratbench.runner.shard import Shard, as_shard
from stratbench.suites.tmgbench.games import RGGame, all_games, game_by_id

T = TypeVar("T")

SUITE = "tmgbench"  # run.json "suite" of atomic and complex runs
METHODS = ("DA", "CoT", "FoToM", "SoToM", "reFoToM", "reSoToM")
SCRIPTED = ("oracle", "empty", "uniform")


@dataclass
class TmgbenchConfig(RuntimeOptions):
    """A TMGBench atomic run (complex forms: `complex_run.ComplexConfig`); how its model runs:
    `RuntimeOptions`."""

    model: str | None = None
    policy: str | None = None
    prompting: str = "DA"
    setting: str = "classic"
    form: str = "atomic"
    repeats: int = 4
    seed: int | None = None
    output_dir: str = "results"
    max_tokens: int = 1024
    chat: bool = False
    games: str | None = None  # comma-separated ids; default all 144
    stories_dir: str | None = None  # story setting: folder of {id}_{k}.txt story files
    # `--shard i/n` ("2/3") or run.json's {"index", "count"}; None = the whole run. Atomic runs split
    # the (game, story variant) items, each with all its repetitions; complex runs split the tasks.
    shard: Any = None

    @property
    def player(self) -> str:
        return (self.model or "embedded").strip()

    @property
    def shard_spec(self) -> Shard:
        return as_shard(self.shard)

    def validate(self) -> None:
        check_config(self)
        if self.prompting not in METHODS:
            raise InputError(f"unknown --prompting {self.prompting!r}; known: {', '.join(METHODS)}")
        if self.setting not in ("classic", "story"):
            raise InputError(f"unknown --setting {self.setting!r}; use classic or story")
        if self.setting == "story" and not self.stories_dir:
            raise InputError("--setting story needs --stories-dir with {id}_{k}.txt story files")
        if self.form not in ("atomic", "sequential", "parallel", "nested"):
            raise InputError(f"unknown --form {self.form!r}; use atomic, sequential, parallel or nested")
        if self.form != "atomic" and self.setting != "classic":
            raise InputError(f"--form {self.form} runs on the classic games only")
        check_policy(self.policy)
        if self.policy in ("logprob", "choice") and self.prompting != "DA":
            raise InputError(f"--policy {self.policy} scores direct answers only: use --prompting DA "
                             "(or --policy sample for reasoning prompts)")
        if self.policy == "logprob" and self.chat:
            raise InputError("--policy logprob scores the raw completion prompt (no chat template): with --chat "
                             "use --policy choice (exact, with the chat template) or --policy sample")
        self.check_http_options([self.player])  # a scripted player takes none of them either
        if not self.shard_spec.whole and self.seed is None:
            raise InputError(f"--shard {self.shard_spec} needs --seed: every shard must draw the same samples")


def check_resume_shard(given: Any, saved: Shard, flag_folder: str) -> None:
    """A resumed run keeps the shard it was started with; asking for another one is refused."""
    if given is not None and as_shard(given) != saved:
        raise InputError(f"--resume {flag_folder}: the folder is shard {saved}, not {given}")


def shard_units(shard: Shard, units: list[T], what: str) -> list[T]:
    """This shard's units; a split into more shards than units is refused (a shard would be empty)."""
    if shard.count > len(units):
        raise InputError(f"--shard {shard}: more shards than {what} ({len(units)})")
    return shard.select(units)


def refuse_repeated_units(folders: Sequence[Path], file: str, unit_of: Callable[[Record], Hashable], what: str) -> None:
    """Before merging shards whose units write one record each: InputError when any unit has more
    than one record (in one shard or across shards), which only a copied or edited file can cause."""
    seen: dict[Hashable, tuple[int, Record]] = {}
    repeated = 0
    for k, f in enumerate(folders):
        for r in read_jsonl(Path(f) / file):
            key = unit_of(r)
            if key in seen and seen[key] != (k, r):  # (a line written twice, as it was: dropped with a note)
                repeated += 1
            seen.setdefault(key, (k, r))
    if repeated and len(folders) > 1:
        raise InputError(f"the shards hold {repeated} {what} twice; merge each shard of one run once")
    if repeated:
        raise InputError(f"{Path(folders[0]) / file}: {repeated} {what} written twice with different records")


def selected_games(games: str | None) -> list[RGGame]:
    """The games named by ``--games`` (comma-separated ids, in that order, each once), or all 144
    when it is not given (an empty ``--games`` is refused, never read as "all")."""
    if games is None:
        return all_games()
    check_value("--games", games, RULES["games"])
    out = []
    for gid in list_items("--games", games):
        try:
            out.append(game_by_id(gid))
        except (KeyError, ValueError):
            raise InputError(f"--games: unknown TMGBench game id {gid!r}") from None
    return out
