"""`stratbench chbench run`: repeated play between players, then cognitive-hierarchy levels.

Work units are *matches*: (mechanism, game, row player, column player), each played for T rounds
with the repeated-game engine. Pairs: every unordered pair of ``models`` including self-play (the
paper's utility tables have a diagonal), plus every (model, opponent) pair for ``opponents`` (which
do not play each other). Asymmetric games are also played with roles swapped (not for self-play).

The run goes through the shared lifecycle (:func:`stratbench.runner.lifecycle.execute`): a match's
rounds are appended to ``rounds.jsonl`` the moment the match ends; ``--resume`` keeps finished
matches (every round there, none an error) and replays partial or errored ones (cached calls cost
nothing). At the end the file is put in canonical match order, so concurrency and sharding never
change it, and the analysis (fits, tables, plots: :mod:`.tables`) is a pure function of the
records — shared with ``stratbench merge`` (:func:`merge_chbench`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Any, ClassVar

from stratbench.checks import Ints, Rule, check_config, check_units
from stratbench.errors import InputError
from stratbench.players import draw
from stratbench.players.runtime import RuntimeOptions
from stratbench.runner.folders import read_run_json
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    Progress,
    RunPlan,
    RunResult,
    Stream,
    check_meta,
    execute,
    merge_streams,
    rebuild_config,
)
from stratbench.runner.schema import Record, RunMeta
from stratbench.runner.shard import Shard, as_shard, check_shard_count, shard_tag
from stratbench.runner.validation import ABSENT, scripted_problem
from stratbench.seeding import derive_seed
from stratbench.suites.chbench.catalogue import CHGame, select_games
from stratbench.suites.chbench.prompts import MECHANISMS
from stratbench.suites.chbench.records import RoundRecord, round_record

#: k̂, the CH levels fitted: the exact Level-K search grows ~4-8x per level (fit.K_HAT_MAX = 6)
K_HAT_RULE = Ints(2, 6)

SUITE = "chbench"
KIND = "run"
ROUNDS_FILE = "rounds.jsonl"


@dataclass
class ChbenchConfig(RuntimeOptions):
    """Everything a CHBench run depends on (recorded in run.json; `--resume` reloads it); how its
    models run: `RuntimeOptions` (4 calls in flight by default)."""

    FIELD_RULES: ClassVar[dict[str, Rule]] = {"k_hat": K_HAT_RULE}
    WHEN_SET: ClassVar[tuple[str, ...]] = (*RuntimeOptions.WHEN_SET, "max_tokens")

    models: list[str] = field(default_factory=lambda: ["embedded"])
    opponents: list[str] = field(default_factory=list)
    mechanisms: list[str] = field(default_factory=lambda: ["baseline"])
    rounds: int = 30
    games: str = "all"
    seed: int = 0
    policy: str | None = None
    chat: bool = False
    max_concurrency: int = 4
    prefix_reuse: bool = False
    self_play: bool = True
    k_hat: int = 4
    restarts: int = 10
    bootstrap: int = 100
    corrections: str | None = None
    keep_prompts: bool = True
    # --max-tokens: the budget of every generated answer and advisor message; None: the paper's
    # (16 tokens for an answer, 96 for a message), which leaves a reasoning model no room to think
    max_tokens: int | None = None
    output_dir: str = "results"
    # as given: None (the whole run), "i/n" or a Shard; run.json records {"index", "count"} or None
    shard: dict[str, int] | str | Shard | None = None

    def validate(self) -> None:
        from stratbench.players import check_policy
        from stratbench.suites.chbench.players import player_key, scripted_agent

        # --games is the catalogue's to read ("all", "recoverable" or ids)
        check_config(self, flags={"mechanisms": "--mechanism", "games": None})
        for m in self.mechanisms:
            if m not in MECHANISMS:
                raise InputError(f"unknown --mechanism {m!r}; known: {', '.join(MECHANISMS)}")
        check_policy(self.policy)
        if self.policy == "choice" and not self.chat:
            raise InputError("--policy choice scores the chat conversation (the model's chat template): add --chat")
        named: dict[str, int] = {}
        specs = [*self.models, *self.opponents]
        for i, spec in enumerate(specs):  # (a spec spelt two ways is one player: level-k:01, level-k:1)
            first = specs[named.setdefault(player_key(spec), i)]
            if named[player_key(spec)] != i:
                also = f" ({first!r} and {spec!r} are one player)" if first != spec else ""
                raise InputError(f"each player may be named once across --models and --opponents{also}")
        for spec in self.models + self.opponents:
            if scripted_agent(spec) is None:
                from stratbench.models import split_spec

                split_spec(spec)  # raises InputError for unknown specs
        self.check_http_options(list(self.models) + list(self.opponents))
        select_games(self.games, self.corrections)


@dataclass(frozen=True)
class Match:
    """A unit of work: ``rounds`` rounds of one game between two seats under one mechanism."""

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
        from stratbench.models import is_http_spec

        key = (spec, seat if self.config.prefix_reuse else 0)
        if key not in self._models:
            c = self.config
            self._models[key] = c.open_model(  # reuse: own cache identity
                spec, chat=c.chat or None, prefix_reuse=c.prefix_reuse,
                chat_template=c.chat_template if is_http_spec(spec) else None)
        return self._models[key]

    def policy_for(self, spec: str) -> str:
        """The policy `spec` plays, checked against what its backend can do (one InputError line
        before anything is written). Default: ``choice`` with --chat where the model scores chat
        conversations (local models with a chat template), else ``logprob`` where it gives
        log-probabilities, else ``sample``."""
        if spec not in self.policies:
            model = self._model(spec, 0)
            pol = self.config.policy
            if pol is None:
                pol = ("choice" if self.config.chat and model.supports_chat_scoring
                       else "logprob" if model.supports_logprobs else "sample")
            if self.config.chat:  # one line for a model without a chat template, not an error per record
                model.check_chat(scoring=pol == "choice")
            if pol == "logprob" and not model.supports_logprobs:
                raise InputError(f"{spec}: this backend gives no log-probabilities; use --policy sample")
            if pol in ("logprob", "choice"):  # ten actions or more: " 1" begins " 10"
                from stratbench.models.labels import check_closed
                from stratbench.suites.chbench.catalogue import select_games

                sizes = {n for g in select_games(self.config.games, self.config.corrections) for n in g.game.shape}
                check_closed(model, ([f" {i + 1}" for i in range(n)] for n in sorted(sizes)), "a game of this run")
            self.policies[spec] = pol
        return self.policies[spec]

    def player(self, spec: str, seat: int, mechanism: str) -> Any:
        from stratbench.suites.chbench.players import ModelPlayer, ScriptedPlayer, scripted_agent

        agent = scripted_agent(spec)
        if agent is not None:
            return ScriptedPlayer(spec, agent)
        return ModelPlayer(spec, self._model(spec, seat), mechanism, self.policy_for(spec),
                           self.config.temperature, self.config.chat, max_tokens=self.config.max_tokens)

    def describe(self) -> dict[str, Any]:
        return {spec: m.describe() for (spec, seat), m in self._models.items() if seat == 0}

    def usage(self) -> dict[str, int]:
        """The players' usage summed (every count the backends keep: calls, cache hits, errors,
        tokens, and for HTTP backends requests and retries)."""
        tot = {"calls": 0, "cache_hits": 0, "errors": 0, "tokens_in": 0, "tokens_out": 0}
        for m in self._models.values():
            for k, v in m.usage.as_dict().items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    tot[k] = tot.get(k, 0) + int(v)
        return tot

    async def aclose(self) -> None:
        for m in self._models.values():
            await m.aclose()


# ----------------------------------------------------------------------------- the run plan


class ChbenchPlan(RunPlan):
    """One CHBench run (or shard) for :func:`~stratbench.runner.lifecycle.execute`: its units are
    matches, each writing its rounds to ``rounds.jsonl``."""

    suite = SUITE
    kind = KIND

    def __init__(self, config: ChbenchConfig) -> None:
        self.config = config
        self.matches: list[Match] = []  # the unsharded run's matches, in canonical order
        self.units: list[Match] = []  # this shard's
        self._order: dict[str, int] = {}  # match id → position in the unsharded run
        self.factory: PlayerFactory | None = None

    def build_units(self) -> None:
        """The matches of the run and of this shard (from the config, nothing opened)."""
        self.matches = all_matches(self.config)
        self.units = as_shard(self.config.shard).select(self.matches)
        self._order = {m.id: i for i, m in enumerate(self.matches)}

    # -- before any folder exists
    def prepare(self) -> None:
        self.config.shard = as_shard(self.config.shard).to_json()
        self.config.validate()
        self.build_units()
        check_shard_count(as_shard(self.config.shard), len(self.matches), "matches")
        check_units(len(self.matches) * self.config.rounds, "--rounds × the run's matches")

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_chbench_meta(meta, folder)
        self.config = rebuild_config(ChbenchConfig, meta["config"], given=self.config)
        self.build_units()

    def open(self) -> None:
        from stratbench.suites.chbench.players import scripted_agent

        self.factory = PlayerFactory(self.config)
        for spec in sorted({s for m in self.units for s in (m.row, m.col)}):
            if scripted_agent(spec) is None:
                self.factory.policy_for(spec)  # open each model (and check its policy) before any file is written

    def folder_spec(self) -> FolderSpec:
        # a shard's folder is named for it (chbench_<time>_shard1of2), as every suite's shards are
        return FolderSpec(self.config.output_dir, "chbench", tag=shard_tag(as_shard(self.config.shard)))

    def config_json(self) -> dict[str, Any]:
        return self.config.to_json()

    # -- writing
    def update_meta(self, meta: RunMeta, new: bool) -> None:
        if new:
            meta["games"] = [{"id": g.id, "name": g.game.name, "symmetric": g.symmetric, "uncertain": g.uncertain}
                             for g in select_games(self.config.games, self.config.corrections)]
        meta.setdefault("players", {})

    def finish_meta(self, meta: RunMeta) -> None:
        if self.factory is not None:  # each player's identity and the policy it played
            old = meta.get("players", {})
            meta["players"] = {**old, **self.factory.describe(), **{
                s: {"policy": p} | old.get(s, {}) for s, p in self.factory.policies.items()}}

    def streams(self) -> list[Stream[Any]]:
        rounds = self.config.rounds
        return [Stream(
            file=ROUNDS_FILE, units=self.units, work=self._play, unit_key=lambda m: m.id,
            record_unit=lambda r: r["match_id"],
            sort_key=lambda r: (self._order.get(r["match_id"], len(self._order)), r["round"]),
            concurrency=1 if self.config.prefix_reuse else max(1, self.config.max_concurrency),
            unit_done=lambda rs: len(rs) == rounds and all(r["status"] != "error" for r in rs),
            label="matches", unit_name="matches", record_key=lambda r: (r["match_id"], r["round"]),
            record_schema=RoundRecord, record_problem=self._record_problem)]

    def _scripted_problem(self, r: Record, m: Any, seat: str) -> str | None:
        """A scripted seat's move is fixed by the game, its seat and the round's seed: played again,
        it must be the record's (an edited reference move is no reference)."""
        import numpy as np

        from stratbench.suites.chbench.players import ScriptedPlayer, scripted_agent
        from stratbench.suites.chbench.repeated import COL, ROW, perspective

        spec = m.row if seat == "row" else m.col
        agent = scripted_agent(spec) if r.get(f"{seat}_status") == "ok" else None
        if agent is None:
            return None
        why = scripted_problem(r, {f"{seat}_{k}": v for k, v in _SCRIPTED_FIELDS.items()}, spec)
        if why is not None:
            return why
        s = ROW if seat == "row" else COL
        players = self.__dict__.setdefault("_scripted", {})
        player = players.setdefault(spec, ScriptedPlayer(spec, agent))
        p = player.strategy(perspective(m.game.game, s), s)
        a = draw(p, derive_seed(m.seed(self.config.seed), r["round"], s))
        pol = r.get(f"{seat}_policy")
        if r.get(f"{seat}_action") != a or not (isinstance(pol, list) and len(pol) == p.size
                                                 and np.allclose(pol, p, rtol=0, atol=1e-9)):
            return (f"{seat}_action {r.get(f'{seat}_action')!r} with policy {pol!r}, but {spec} plays {a} "
                    f"from {[round(float(x), 6) for x in p]} in round {r['round']} with run.json's seed {self.config.seed}")
        return None

    def _reply_problem(self, r: Record, seat: str, n: int) -> str | None:
        """A sampled move read as parsed must read so again from its raw text, with the same action
        and answer form (a parse failure may be an echoed prompt line, which needs the prompt: it
        is left as written)."""
        from stratbench.parsing import parse_action
        from stratbench.suites.chbench.players import answer_form, message_text

        raw = r.get(f"{seat}_raw")
        if r.get(f"{seat}_status") == "ok" and r.get(f"{seat}_policy") is None:  # a scripted move states its policy
            return f"{seat}_status 'ok' with neither a policy nor the raw answer it was read from"
        if r.get(f"{seat}_status") != "parsed" or r.get(f"{seat}_policy") is not None:
            return None
        if not isinstance(raw, str):
            return f"{seat}_status 'parsed' with neither a policy nor the raw answer it was read from"
        labels = tuple(str(i + 1) for i in range(n))
        p = parse_action(message_text(raw, self.config.chat), labels)
        if not p.ok or p.action != r.get(f"{seat}_action"):
            said = f"action {p.action}" if p.ok else "no action"
            return f"{seat}_action {r.get(f'{seat}_action')!r}, but its raw answer reads as {said} when read again"
        form = answer_form(raw, p, labels, r.get(f"{seat}_finish_reason"))
        if f"{seat}_parse" in r and r[f"{seat}_parse"] != form:
            return f"{seat}_parse {r[f'{seat}_parse']!r}, but its raw answer is a {form} answer"
        return None

    def _record_problem(self, r: Record) -> str | None:
        """A round no match of this run can have played (edited by hand): its round, game or a
        seat's action out of range — refused as the file is read, not a crash of the summary."""
        if getattr(self, "_by_id", None) is None:
            self._by_id = {u.id: u for u in self.units}
        m = self._by_id.get(r.get("match_id"))  # type: ignore[arg-type]
        if m is None:
            return None  # (named by the unit check)
        if r.get("game_id") != m.game.id:
            return f"game_id {r.get('game_id')!r} is not its match's game {m.game.id}"
        if not 1 <= r["round"] <= self.config.rounds:
            return f"round {r['round']} is outside 1..{self.config.rounds}"
        for key, want in (("mechanism", m.mechanism), ("game", m.game.game.name), ("row_player", m.row),
                          ("col_player", m.col)):
            if r.get(key) != want:
                return f"{key} {r.get(key)!r} is not its match's ({want!r})"
        for seat, n in zip(("row", "col"), m.game.n_actions):
            a = r.get(f"{seat}_action")
            if a is not None and not 0 <= a < n:
                return f"{seat}_action {a} is no action of the game (0..{n - 1})"
            why = _distribution_problem(r.get(f"{seat}_policy"), n)
            if why:
                return f"{seat}_policy {why}"
            status, pol = r.get(f"{seat}_status"), r.get(f"{seat}_policy")
            if (a is None) != (status in ("parse_failed", "error")):
                return f"{seat}_status {status!r} with {seat}_action {a!r}: a move has an action exactly when it did not fail"
            if isinstance(pol, list) and a is not None and 0 <= a < len(pol) and not pol[a] > 0:
                return f"{seat}_action {a} has probability {pol[a]!r} in the policy it was drawn from"
            if status == "parsed" and isinstance(pol, list) and isinstance(a, int) and r.get(f"{seat}_raw") is None:
                # a scored move: its action is the one the round's seed draws from its policy
                seed = derive_seed(m.seed(self.config.seed), r["round"], 0 if seat == "row" else 1)
                try:
                    drawn = draw(pol, seed)
                except ValueError:
                    return f"{seat}_policy {pol!r} is no distribution its action could be drawn from"
                if drawn != a:
                    return (f"{seat}_action {a}, but the round's seed draws {drawn} from its policy (with run.json's "
                            f"seed {self.config.seed})")
            why = self._reply_problem(r, seat, n) or self._scripted_problem(r, m, seat)
            if why:
                return why
            if status in ("ok", "parsed") and r.get(f"{seat}_error") is not None:
                return f"{seat}_error {r.get(f'{seat}_error')!r} on a {status} move (only a failed move has one)"
            if pol is not None and r.get(f"{seat}_raw") is not None:
                return f"{seat}_raw beside a {seat}_policy: a move is scored or generated, not both"
            lat = r.get(f"{seat}_latency_s")
            if isinstance(lat, (int, float)) and not isinstance(lat, bool) and not lat >= 0:
                return f"{seat}_latency_s {lat!r} is below 0"
            mass = r.get(f"{seat}_label_mass")
            if mass is not None and not (isinstance(mass, (int, float)) and 0 <= mass <= 1 + 1e-6):
                return f"{seat}_label_mass {mass!r} is no probability"
            for k in ("tokens_in", "tokens_out"):
                v = r.get(f"{seat}_{k}")
                if isinstance(v, int) and v < 0:
                    return f"{seat}_{k} {v} is below 0"
        a, b = r.get("row_action"), r.get("col_action")
        both = a is not None and b is not None
        seats = {r.get("row_status"), r.get("col_status")}
        status = "complete" if both else "error" if "error" in seats else "parse_failed"
        if r.get("status") != status:  # a round's status is what its two moves make it
            return f"status {r.get('status')!r}, but its moves make the round {status!r}"
        for seat, matrix in (("row", m.game.game.payoff_row), ("col", m.game.game.payoff_col)):
            v, pays = r.get(f"{seat}_payoff"), float(matrix[a, b]) if both else None
            if (v is None) != (pays is None) or (v is not None and pays is not None and abs(v - pays) > 1e-9):
                return f"{seat}_payoff {v!r}, but the game pays {pays!r} for actions {a}, {b}"
        return None

    async def _play(self, m: Match) -> list[Record]:
        from stratbench.suites.chbench.repeated import play_match

        assert self.factory is not None
        row = self.factory.player(m.row, 0, m.mechanism)
        col = self.factory.player(m.col, 1, m.mechanism)
        played = await play_match(m.game.game, row, col, self.config.rounds, m.seed(self.config.seed),
                                  keep_prompts=self.config.keep_prompts)
        head = {"match_id": m.id, "mechanism": m.mechanism, "game_id": m.game.id, "game": m.game.game.name,
                "row_player": m.row, "col_player": m.col}
        out: list[RoundRecord] = [round_record(head, r) for r in played]
        return out  # type: ignore[return-value]

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        from stratbench.suites.chbench.tables import analyse_records

        rounds = records.get(ROUNDS_FILE, [])
        summary = analyse_records(folder, self.config, rounds)
        return Outcome({"": summary}, sum(1 for r in rounds if r["status"] == "error"),
                       {"matches": len({r["match_id"] for r in rounds})})

    def totals(self, records: dict[str, list[Record]], outcome: Outcome) -> dict[str, Any]:
        return {"matches": outcome.totals["matches"], **super().totals(records, outcome)}

    def usage(self) -> dict[str, Any]:
        return self.factory.usage() if self.factory is not None else super().usage()

    async def aclose(self) -> None:
        if self.factory is not None:
            await self.factory.aclose()


#: what a scripted seat's move holds of the keys a model's move fills (see scripted_problem)
_SCRIPTED_FIELDS: dict[str, tuple[Any, ...]] = {
    "raw": (None,), "tokens_in": (0,), "tokens_out": (0,), "prompt": (None,),  # (an error: refused on an ok move)
    **dict.fromkeys(("label_mass", "consultation", "parse", "finish_reason", "reasoning", "usage_unknown"), ABSENT),
}


def check_chbench_meta(meta: RunMeta, folder: Path, flag: str = "--resume") -> None:
    """InputError unless run.json is a CHBench run's (not a fit's)."""
    check_meta(meta, folder, SUITE, (KIND,), flag)
    if "mechanisms" not in meta["config"]:  # written before run.json had "kind": a fit has no mechanisms
        raise InputError(f"{flag} {folder}: not a chbench run folder")


def run_chbench(config: ChbenchConfig, progress: Progress | None = None,
                resume_dir: str | Path | None = None) -> RunResult:
    """Play every match (of ``config.shard``), then fit and tabulate; with ``resume_dir``, finish
    that folder's run (its saved config is used; ``config`` is ignored)."""
    return execute(ChbenchPlan(config), progress, resume_dir)


def chbench_plan(folder: Path) -> ChbenchPlan:
    """The CHBench run (or shard) in ``folder`` as its run.json plans it, no player opened: its
    streams check the rounds read back (compare, the report)."""
    plan = ChbenchPlan(rebuild_config(ChbenchConfig, read_run_json(folder)["config"]))
    plan.build_units()
    return plan


def merge_chbench(folders: list[Path], out: Path) -> Outcome:
    """Write into ``out`` the rounds of the finished shards ``folders`` in the unsharded order
    (every match exactly once) and redo the analysis on them."""
    meta: RunMeta = read_run_json(folders[0])  # type: ignore[assignment]
    check_chbench_meta(meta, folders[0], "merge")
    plan = ChbenchPlan(rebuild_config(ChbenchConfig, meta["config"], shard=None))
    plan.build_units()
    return merge_streams(plan, folders, out)


__all__ = ["ChbenchConfig", "ChbenchPlan", "Match", "PlayerFactory", "all_matches", "merge_chbench", "pairs",
           "run_chbench", "select_games"]


def _distribution_problem(policy: Any, n: int) -> str | None:
    """Why ``policy`` (a record's action distribution, or None) is no distribution over n actions."""
    if policy is None:
        return None
    if not (isinstance(policy, list) and len(policy) == n and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and -1e-9 <= x <= 1 + 1e-9 for x in policy)
            and abs(sum(policy) - 1) <= 1e-6):
        return f"{policy!r} is no distribution over the game's {n} actions"
    return None
