"""`stratbench chbench run`: repeated play between players, then cognitive-hierarchy levels.

Work units are *matches*: (mechanism, game, row player, column player), each played for T rounds
with the repeated-game engine. Pairs: every unordered pair of ``models`` including self-play (the
paper's utility tables have a diagonal), plus every (model, opponent) pair for ``opponents`` (which
do not play each other). Asymmetric games are also played with roles swapped (not for self-play).

A match's rounds are appended to ``rounds.jsonl`` the moment the match ends; ``--resume`` keeps
finished matches and replays partial or errored ones (cached calls cost nothing). At the end the
file is put in canonical unit order, so concurrency and sharding never change it, and the analysis
(fits, tables, plots) is a pure function of the records — shared with ``stratbench merge``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import asdict, dataclass, field
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Any, Callable

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import JsonlWriter, read_jsonl, write_json_atomic, write_jsonl_atomic
from stratbench.runner.pool import run_pool
from stratbench.runner.shard import Shard, parse_shard, shard_from_json
from stratbench.seeding import derive_seed
from stratbench.suites.chbench.catalogue import CHGame, build_catalogue, load_corrections, recoverable
from stratbench.suites.chbench.prompts import MECHANISMS

SUITE = "chbench"
ROUNDS_FILE = "rounds.jsonl"


@dataclass
class ChbenchConfig:
    """Everything a CHBench run depends on (recorded in run.json; `--resume` reloads it)."""

    models: list[str] = field(default_factory=lambda: ["embedded"])
    opponents: list[str] = field(default_factory=list)
    mechanisms: list[str] = field(default_factory=lambda: ["baseline"])
    rounds: int = 30
    games: str = "all"
    seed: int = 0
    policy: str | None = None
    temperature: float = 1.0
    chat: bool = False
    base_url: str | None = None
    max_concurrency: int = 4
    no_cache: bool = False
    prefix_reuse: bool = False
    self_play: bool = True
    k_hat: int = 4
    restarts: int = 10
    bootstrap: int = 100
    corrections: str | None = None
    keep_prompts: bool = True
    output_dir: str = "results"
    shard: dict[str, int] | None = None

    def validate(self) -> None:
        from stratbench.suites.chbench.players import scripted_agent

        if not self.models:
            raise InputError("--models: give at least one player")
        for m in self.mechanisms:
            if m not in MECHANISMS:
                raise InputError(f"unknown --mechanism {m!r}; known: {', '.join(MECHANISMS)}")
        if self.rounds < 1:
            raise InputError("--rounds must be at least 1")
        if self.policy not in (None, "logprob", "sample"):
            raise InputError(f"unknown --policy {self.policy!r}; use logprob or sample")
        if self.k_hat < 2 or self.restarts < 1 or self.bootstrap < 0:
            raise InputError("--k-hat must be >= 2, --restarts >= 1, --bootstrap >= 0")
        if len(set(self.models)) != len(self.models) or set(self.models) & set(self.opponents):
            raise InputError("each player may be named once across --models and --opponents")
        for spec in self.models + self.opponents:
            if scripted_agent(spec) is None:
                from stratbench.models import split_spec

                split_spec(spec)  # raises InputError for unknown specs
        select_games(self.games, self.corrections)


def select_games(games: str, corrections: str | None = None) -> list[CHGame]:
    cat = build_catalogue()
    if corrections:
        cat = load_corrections(corrections, cat)
    key = games.strip().lower()
    if key == "all":
        return list(cat)
    if key == "recoverable":
        return list(recoverable(cat))
    by_id = {g.id: g for g in cat}
    out = []
    for part in key.split(","):
        try:
            gid = int(part)
        except ValueError:
            raise InputError(f"--games {games!r}: expected all, recoverable or ids like 1,2,11") from None
        if gid not in by_id:
            raise InputError(f"--games: no game {gid} (the catalogue has 1..{len(cat)})")
        out.append(by_id[gid])
    return out


@dataclass(frozen=True)
class Match:
    mechanism: str
    game: CHGame
    row: str
    col: str

    @property
    def id(self) -> str:
        return f"{self.mechanism}|{self.game.id}|{self.row}|{self.col}"

    def seed(self, base: int) -> int:
        h = int(hashlib.sha256(self.id.encode()).hexdigest()[:15], 16)
        return derive_seed(base, h)


def pairs(config: ChbenchConfig) -> list[tuple[str, str]]:
    ps = [(a, b) for a, b in combinations_with_replacement(config.models, 2)
          if config.self_play or a != b]
    ps += [(m, o) for m in config.models for o in config.opponents]
    return ps


def all_matches(config: ChbenchConfig) -> list[Match]:
    """Every match of the unsharded run, in canonical order."""
    games = select_games(config.games, config.corrections)
    out = []
    for mech in config.mechanisms:
        for a, b in pairs(config):
            for g in games:
                out.append(Match(mech, g, a, b))
                if not g.symmetric and a != b:
                    out.append(Match(mech, g, b, a))
    return out


# ----------------------------------------------------------------------------- players


class PlayerFactory:
    """Opens each model once (per seat with prefix reuse, so each seat's KV cache follows its own
    growing prompt) and makes a fresh per-match player object."""

    def __init__(self, config: ChbenchConfig) -> None:
        self.config = config
        self._models: dict[tuple[str, int], Any] = {}
        self.policies: dict[str, str] = {}

    def _model(self, spec: str, seat: int) -> Any:
        from stratbench.models import open_model
        from stratbench.models import ModelOptions

        key = (spec, seat if self.config.prefix_reuse else 0)
        if key not in self._models:
            opts = ModelOptions(base_url=self.config.base_url, max_concurrency=self.config.max_concurrency,
                                chat=self.config.chat or None, prefix_reuse=self.config.prefix_reuse)
            self._models[key] = open_model(spec, opts, no_cache=self.config.no_cache or self.config.prefix_reuse)
        return self._models[key]

    def policy_for(self, spec: str) -> str:
        if spec not in self.policies:
            model = self._model(spec, 0)
            pol = self.config.policy or ("logprob" if model.supports_logprobs else "sample")
            if pol == "logprob" and not model.supports_logprobs:
                raise InputError(f"{spec}: this backend gives no log-probabilities; use --policy sample")
            self.policies[spec] = pol
        return self.policies[spec]

    def player(self, spec: str, seat: int, mechanism: str) -> Any:
        from stratbench.suites.chbench.players import ModelPlayer, ScriptedPlayer, scripted_agent

        agent = scripted_agent(spec)
        if agent is not None:
            return ScriptedPlayer(spec, agent)
        return ModelPlayer(spec, self._model(spec, seat), mechanism, self.policy_for(spec),
                           self.config.temperature, self.config.chat)

    def describe(self) -> dict[str, Any]:
        return {spec: m.describe() for (spec, seat), m in self._models.items() if seat == 0}

    def usage(self) -> dict[str, int]:
        tot = {"calls": 0, "cache_hits": 0, "errors": 0, "tokens_in": 0, "tokens_out": 0}
        for m in self._models.values():
            u = m.usage.as_dict()
            for k in tot:
                tot[k] += int(u.get(k, 0))
        return tot

    async def aclose(self) -> None:
        for m in self._models.values():
            await m.aclose()


# ----------------------------------------------------------------------------- running


def _load_resume(folder: Path) -> tuple[ChbenchConfig, dict[str, Any]]:
    try:
        meta = json.loads((folder / "run.json").read_text())
        if meta.get("suite") != SUITE or "mechanisms" not in meta["config"]:
            raise KeyError
        c = dict(meta["config"])
    except (OSError, ValueError, KeyError):
        raise InputError(f"--resume {folder}: not a chbench run folder") from None
    return ChbenchConfig(**c), meta


def run_chbench(
    config: ChbenchConfig, resume_dir: str | None = None, shard: str | Shard | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Path, dict[str, Any], int]:
    """Play every match (of this shard), then fit and tabulate. Returns (folder, summary, n_error_rounds)."""
    if resume_dir:
        folder: Path | None = Path(resume_dir)
        config, meta = _load_resume(folder)  # type: ignore[arg-type]
    else:
        folder = None
        config.shard = parse_shard(shard).to_json()
        config.validate()
    sh = shard_from_json(config.shard)
    units = sh.select(all_matches(config))
    order = {m.id: i for i, m in enumerate(units)}
    factory = PlayerFactory(config)
    from stratbench.suites.chbench.players import scripted_agent

    for spec in sorted({s for m in units for s in (m.row, m.col)}):
        if scripted_agent(spec) is None:
            factory.policy_for(spec)  # open each model (and check its policy) before any file is written
    if folder is None:
        folder = create_run_folder(config.output_dir, "chbench").path
        meta = run_metadata(SUITE, asdict(config), kind="run")
        meta["games"] = [{"id": g.id, "name": g.game.name, "symmetric": g.symmetric, "uncertain": g.uncertain}
                         for g in select_games(config.games, config.corrections)]
    path = folder / ROUNDS_FILE
    prev = read_jsonl(path, repair=True) if path.exists() else []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in prev:
        by.setdefault(r["match_id"], []).append(r)
    done = {mid for mid, rs in by.items()
            if len(rs) == config.rounds and all(r["status"] != "error" for r in rs)}
    kept = [r for r in prev if r["match_id"] in done]
    if len(kept) != len(prev):
        write_jsonl_atomic(path, kept)
    todo = [m for m in units if m.id not in done]
    meta.setdefault("players", {})
    write_json_atomic(folder / "run.json", meta)

    from stratbench.suites.chbench.repeated import play_match

    async def worker(m: Match) -> list[dict[str, Any]]:
        row = factory.player(m.row, 0, m.mechanism)
        col = factory.player(m.col, 1, m.mechanism)
        recs = await play_match(m.game.game, row, col, config.rounds, m.seed(config.seed),
                                keep_prompts=config.keep_prompts)
        head = {"match_id": m.id, "mechanism": m.mechanism, "game_id": m.game.id, "game": m.game.game.name,
                "row_player": m.row, "col_player": m.col}
        return [{**head, **r} for r in recs]

    finished = [len(done)]

    async def main() -> None:
        try:
            with JsonlWriter(path) as w:
                def on_result(_: Match, recs: list[dict[str, Any]]) -> None:
                    for r in recs:
                        w.write(r)
                    finished[0] += 1
                    if progress:
                        progress(finished[0], len(units))

                conc = 1 if config.prefix_reuse else max(1, config.max_concurrency)
                await run_pool(todo, worker, conc, on_result)
        finally:
            await factory.aclose()

    asyncio.run(main())
    records = read_jsonl(path)
    records.sort(key=lambda r: (order.get(r["match_id"], len(order)), r["round"]))
    write_jsonl_atomic(path, records)
    summary = analyse(folder, config, records)
    n_err = sum(1 for r in records if r["status"] == "error")
    meta["players"] = {**meta.get("players", {}), **factory.describe(), **{
        s: {"policy": p} | meta.get("players", {}).get(s, {}) for s, p in factory.policies.items()}}
    usage = factory.usage()
    meta.update(end_time=now_iso(), status="finished", totals={
        "matches": len({r["match_id"] for r in records}), "records": len(records), "errors": n_err,
        **{f"model_{k}": v for k, v in usage.items()}})
    write_json_atomic(folder / "run.json", meta)
    return folder, summary, n_err


def analyse(folder: Path, config: ChbenchConfig, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Fits, tables and plots from the round records (used by run, resume and merge)."""
    from stratbench.suites.chbench.tables import analyse_records

    return analyse_records(folder, config, records)


def merge_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Combine the shards' rounds into `out` in the unsharded order and redo the analysis."""
    config, _ = _load_resume(folders[0])
    config.shard = None
    order = {m.id: i for i, m in enumerate(all_matches(config))}
    records = [r for f in folders for r in read_jsonl(Path(f) / ROUNDS_FILE)]
    records.sort(key=lambda r: (order.get(r["match_id"], len(order)), r["round"]))
    write_jsonl_atomic(out / ROUNDS_FILE, records)
    return analyse(out, config, records)
