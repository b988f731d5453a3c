"""Running the Nash-gap suite: random zero-sum games, the player as the row player, the column
player fixed at its Nash strategy.

Work is games × trials × modes; each mode streams its trials file. Every decision's randomness is
keyed by (llm seed, game, trial, mode), so results are identical for any number of workers and
shards. Failed calls and unparseable answers are recorded as such and excluded from the gap
statistics, never replaced. The run goes through the shared lifecycle
(:func:`stratbench.runner.lifecycle.execute`); this module says what the work is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from stratbench.checks import check_config
from stratbench.errors import InputError
from stratbench.files import parse_json, read_text
from stratbench.games.normal_form import NormalFormGame, load_games
from stratbench.models.labels import check_closed
from stratbench.players import draw
from stratbench.runner.folders import read_run_json, read_summary
from stratbench.runner.jsonl import first_record, write_atomic, write_json_atomic
from stratbench.runner.lifecycle import (
    RUNTIME_KEYS,
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
from stratbench.runner.shard import as_shard, shard_tag
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.solvers.zerosum import solve_zero_sum
from stratbench.suites.nashgap.config import NashgapConfig, load_price_table
from stratbench.suites.nashgap.games import (
    DEFAULT_DECIMALS,
    GameEntry,
    entries_from_json,
    generate_games,
    rotate_game,
    rotation_order,
    rounded_game,
    shown_decimals,
)
from stratbench.suites.nashgap.metrics import summarise
from stratbench.suites.nashgap.model_player import make_agent
from stratbench.suites.nashgap.players import SCRIPTED_AGENTS, Agent, Decision, DecisionRequest, settled
from stratbench.suites.nashgap.prompts import nashgap_prompt
from stratbench.suites.nashgap.records import TrialRecord, make_record, record_problem

SUITE = "nashgap"
MODE_INDEX = {"pure": 0, "mixed": 1}
MODE_FILES = {
    # mode: (trials file, summary file) inside a combined folder
    "pure": ("trials_pure_actions.jsonl", "summary_pure_actions.json"),
    "mixed": ("trials_mixed_strategy.jsonl", "summary_mixed_strategy.json"),
}
SINGLE_FILES = ("trials.jsonl", "summary.json")
# flags a resumed run takes from the command line rather than from its folder (RUNTIME_KEYS: how
# fast and through which server it runs, timeouts and retries), never what a record holds


def player_from_config(config: NashgapConfig) -> Agent:
    return make_agent(
        config.player, config.policy, model_options=config.model_options(chat=config.chat or None),
        no_cache=config.no_cache, temperature=config.temperature, max_tokens=config.max_tokens,
        chat=config.chat,
    )


def build_games(config: NashgapConfig) -> list[GameEntry]:
    """The run's games, each solved; game k depends only on (seed, k). A games file's games are
    played as they are (each shown at the precision its payoffs have), or rounded to
    ``--decimals`` when it is given: the game shown is the game scored."""
    if config.games_file is not None:
        games = []
        for k, g in enumerate(load_games(config.games_file)):
            if not g.is_zero_sum:
                raise InputError(f"{config.games_file}: game {k} is not zero-sum")
            if config.decimals is None:
                shown_decimals(g, None, f"{config.games_file}: game {k}")
            else:
                g = rounded_game(g, config.decimals)
            games.append(g)
        seed = None
    else:
        assert config.seed is not None
        seed = config.seed
        games = generate_games(
            config.seed, config.num_games, config.num_rows, config.num_cols,
            config.payoff_min, config.payoff_max, config.bucket,
            DEFAULT_DECIMALS if config.decimals is None else config.decimals,
        )
    return [
        GameEntry(k, g, solve_zero_sum(g.payoff_row), config.bucket, seed)
        for k, g in enumerate(games)
    ]


def read_games_json(path: Path) -> tuple[str, list[GameEntry]]:
    """A run's games.json: its text (a merge copies it verbatim) and its games; a file that is not
    one a run wrote is one InputError line naming it."""
    text = read_text(path)
    data = parse_json(text, str(path))
    try:
        if not isinstance(data, list) or not data:
            raise TypeError("expected a non-empty list of games")
        return text, entries_from_json(data)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise InputError(f"{path}: not the games.json of a Nash-gap run ({type(e).__name__}: {e})") from None


#: how far a saved equilibrium, value or payoff range may be from the solver's, relative to the
#: game's largest payoff (the solver agrees with itself to ~1e-12; an edit is more)
GAME_TOL = 1e-9


def check_games(config: NashgapConfig, path: Path) -> list[GameEntry]:
    """games.json's games, checked to be the ones its run's saved config gives: generated games are
    generated again from (seed, num_games, size, payoff range, bucket, decimals) and each solved
    once; a games file's games (which the file may no longer be there to read) are its payoffs and
    labels as saved, with every field a run derives from them (equilibria, value, saddle point,
    size, range, ids, no bucket or seed) derived again. An edited games.json, or a run.json whose
    config no longer gives its games (another seed, number of games, bucket, …), is one InputError
    naming games.json: a resume would otherwise go on with games its records were not played in,
    and run.json would say what the run did not play."""
    text, entries = read_games_json(path)
    data = parse_json(text, str(path))
    if config.games_file is None:
        try:
            again = build_games(config)
        except InputError as e:  # (the saved config was validated: only a generator limit is left)
            raise InputError(f"{path}: run.json's config gives no games ({e})") from None
    else:
        again = []
        for entry in entries:
            g = entry.game
            if config.decimals is not None and not np.array_equal(rounded_game(g, config.decimals).payoff_row,
                                                                   g.payoff_row):
                raise InputError(f"{path}: game {entry.game_id} has payoffs beyond run.json's decimals "
                                 f"{config.decimals} (games.json or run.json was edited)")
            again.append(GameEntry(len(again), g, solve_zero_sum(g.payoff_row), config.bucket, None))
    n_want = config.num_games if config.games_file is not None else len(again)  # (a games file's run saves its count)
    if len(data) != n_want:
        raise InputError(f"{path}: holds {len(data)} games, but run.json's config gives {n_want} "
                         "(games.json or run.json's config was edited)")
    for k, (saved, want) in enumerate(zip(data, (e.to_json() for e in again))):
        if not isinstance(saved, dict) or set(saved) != set(want):
            extra = sorted(set(saved) ^ set(want)) if isinstance(saved, dict) else []
            raise InputError(f"{path}: game {k} is not a game a run writes"
                             + (f" (keys {', '.join(map(str, extra))})" if extra else ""))
        scale = max(1.0, float(np.abs(np.asarray(want["payoff_matrix"], dtype=float)).max()))
        first = ("game_id", "num_rows", "num_cols", "bucket", "seed")  # (what names a difference best)
        for key in [*first, *(x for x in want if x not in first)]:
            if not _same(saved[key], want[key], GAME_TOL * scale):
                source = "run.json's config gives" if config.games_file is None else "its payoffs give"
                raise InputError(f"{path}: game {k} has {key} {_short(saved[key])}, but {source} "
                                 f"{_short(want[key])} (games.json or run.json's config was edited)")
    return entries


def _same(a: Any, b: Any, tol: float) -> bool:
    """Equal, floats within ``tol`` (a bool or a string only equal)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(_same(x, y, tol) for x, y in zip(a, b))
        return type(a) is type(b) and bool(a == b)
    if isinstance(a, int) and isinstance(b, int):
        return a == b  # (ids and seeds: exact, beyond a float's precision)
    return abs(float(a) - float(b)) <= tol


def _short(v: Any) -> str:
    import json

    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_layout(config: NashgapConfig, folder: Path) -> None:
    """InputError naming run.json when the folder holds the trials of the other layout (a combined
    run's two files beside a single-mode config, or trials.jsonl beside a combined one): run.json's
    ``combined`` was edited, and a resume would play every trial again beside the saved ones."""
    own = {mode_files(config, m)[0] for m in config.modes}
    other = sorted(f for f in (SINGLE_FILES[0], *(v[0] for v in MODE_FILES.values()))
                   if f not in own and (folder / f).exists())
    if other:
        said = "combined" if config.combined else "single-mode"
        raise InputError(f"{folder}/run.json: its config is a {said} run, but the folder holds {other[0]}, which "
                         f"{'a single-mode' if config.combined else 'a combined'} run writes: run.json's "
                         "combined was edited; the folder is left as it is")
    if not config.combined:  # (one file for either mode: its first record says which the run played)
        mode = (first_record(folder / SINGLE_FILES[0]) or {}).get("mode")
        if mode in MODE_INDEX and mode != config.modes[0]:
            raise InputError(f"{folder}/run.json: its config plays {config.modes[0]} strategies, but trials.jsonl "
                             f"holds {mode} trials: run.json's mixed_strategy was edited; the folder is left as it is")


def mode_files(config: NashgapConfig, mode: str) -> tuple[str, str]:
    """(trials file, summary file) of a mode."""
    return MODE_FILES[mode] if config.combined else SINGLE_FILES


def _folder_tag(config: NashgapConfig) -> str | None:
    """The folder-name suffix: the player's slug (several players in one command) and the shard
    (`shard2of3`), so shards copied together from several machines never collide."""
    parts = [config.folder_tag, shard_tag(config.shard_spec)]
    return "_".join(p for p in parts if p) or None


def _usage(agent: Agent, prices: dict[str, dict[str, float]]) -> dict[str, Any]:
    model = getattr(agent, "model", None)
    if model is None:
        return {"calls": 0}
    u: dict[str, Any] = model.usage.as_dict()
    price = prices.get(model.spec)
    if price is not None:  # cache hits cost nothing and are not counted in the tokens
        u["cost_usd"] = (u["tokens_in"] * price.get("input_per_million", 0)
                         + u["tokens_out"] * price.get("output_per_million", 0)) / 1e6
    return u


class NashgapPlan(RunPlan):
    """One Nash-gap run: its games (all of them in games.json; this shard's are played), the
    player, and one stream of trials per mode."""

    suite = SUITE
    kind = "run"

    def __init__(self, config: NashgapConfig, agent: Agent | None = None) -> None:
        self.config = config
        self.agent = agent
        self.entries: list[GameEntry] = []  # every game of the run (games.json)
        self.n_trials = 0
        self.agent_name = ""
        self.policy = "scripted"
        self.games_text: str | None = None  # a merge copies the shards' games.json verbatim
        self.repriced = False  # resumed with a --price-table in place of the saved one, which is gone

    # -- before any folder exists -------------------------------------------------------------
    def prepare(self) -> None:
        c = self.config
        c.validate()
        load_price_table(c.price_table)
        if c.seed is None:  # a games file's run draws one too: it seeds the player and the bootstrap
            c.seed = fresh_seed()
        if c.llm_seed is None:
            c.llm_seed = c.seed
        if c.decimals is None and c.games_file is None:
            c.decimals = DEFAULT_DECIMALS
        shard = c.shard_spec
        c.shard = shard.to_json()
        self.entries = build_games(c)  # all games (games.json lists them all); the shard picks its own
        if c.games_file is not None:
            c.check_size(len(self.entries))
            c.num_games = len(self.entries)  # run.json records the games played
        if not shard.whole and shard.count > len(self.entries):
            raise InputError(f"--shard {shard}: more shards than games ({len(self.entries)})")

    def check_folder(self, folder: Path) -> None:
        if not (folder / "run.json").is_file() or not (folder / "games.json").is_file():
            raise InputError(f"--resume {folder}: not a Nash-gap result folder (no run.json/games.json)")

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_meta(meta, folder, SUITE, ("run",))
        given = self.config
        check_config(given, only=RUNTIME_KEYS)  # the flags a resumed run takes from this command
        self.config = rebuild_config(NashgapConfig, meta["config"], given=given)
        saved_prices = self.config.price_table
        if isinstance(saved_prices, str) and saved_prices.strip() and not os.path.exists(saved_prices):
            # the table the run priced its cost estimate with is gone (the folder was copied to
            # another machine, /tmp was cleaned): the command's --price-table stands in for it
            if not given.price_table:
                raise InputError(f"--resume {folder}: the price table saved with the run ({saved_prices}) is gone; "
                                 "give it (or another) with --price-table FILE")
            load_price_table(given.price_table)
            self.config.price_table = os.path.abspath(given.price_table)
            # run.json names the table its cost is priced with from now on, and the cost of the
            # earlier sessions is priced again with it (update_meta): never a mix of two tables
            meta["config"]["price_table"] = self.config.price_table
            self.repriced = True
        if given.shard is not None and as_shard(given.shard) != self.config.shard_spec:
            raise InputError(f"--resume {folder}: the folder is shard {self.config.shard_spec}, not {given.shard}")
        check_layout(self.config, folder)
        self.entries = check_games(self.config, folder / "games.json")

    def open(self) -> None:
        self.agent = self.agent or player_from_config(self.config)
        model = getattr(self.agent, "model", None)
        if model is not None and getattr(self.agent, "exact_policy", False):
            # 11 actions or more: "1" begins "10"; only a local model scores whole answers exactly
            check_closed(model, (e.game.row_labels for e in self.played), "a game of this run")
        self.n_trials = self.config.trials_for(self.agent)
        self.agent_name = self.agent.name if getattr(self.agent, "model", None) is not None else self.config.player
        self.policy = getattr(self.agent, "policy", "scripted")

    def folder_spec(self) -> FolderSpec:
        c = self.config
        prefix = "pure_and_mixed" if c.combined else "run"
        tag = _folder_tag(c)
        return FolderSpec(c.output_dir, prefix, tag,
                          f"{prefix}_latest" + (f"_{tag}" if tag else "") if c.overwrite else None)

    def config_json(self) -> dict[str, Any]:
        return {**self.config.to_json(), "player": self.config.player}

    # -- writing ------------------------------------------------------------------------------
    def write_inputs(self, folder: Path) -> None:
        write_json_atomic(folder / "games.json", [e.to_json() for e in self.entries])

    def update_meta(self, meta: RunMeta, new: bool) -> None:
        if new and self.agent is not None:
            meta["agent"] = self.agent.describe()
        model = getattr(self.agent, "model", None)
        totals: Any = meta.get("totals")
        if self.repriced and model is not None and isinstance(totals, dict):
            # the earlier sessions' tokens at the replacement table's prices (resume_from)
            price = load_price_table(self.config.price_table).get(model.spec)
            tin, tout = totals.get("model_tokens_in", 0), totals.get("model_tokens_out", 0)
            if price is not None and isinstance(tin, (int, float)) and isinstance(tout, (int, float)):
                totals["model_cost_usd"] = (tin * price.get("input_per_million", 0)
                                            + tout * price.get("output_per_million", 0)) / 1e6
            else:
                totals.pop("model_cost_usd", None)

    @property
    def played(self) -> list[GameEntry]:
        """This shard's games, in the unsharded order."""
        return self.config.shard_spec.select(self.entries)

    def streams(self) -> list[Stream[Any]]:
        return [self._stream(mode) for mode in self.config.modes]

    def _stream(self, mode: str) -> Stream[tuple[GameEntry, int]]:
        c, agent = self.config, self.agent
        entries = self.played
        k_rot = c.order_rotations
        style = agent.prompt_style if agent is not None else "instruction"
        # The prompt of (game, rotation) is built once and shared by that rotation's trials.
        prompts: dict[tuple[int, int], tuple[NormalFormGame, str, list[int]]] = {}
        for e in entries:
            decimals = shown_decimals(e.game, c.decimals, f"game {e.game_id}")
            for r in range(min(k_rot, self.n_trials)):
                order = rotation_order(e.game.shape[0], r)
                shown = rotate_game(e.game, order) if r else e.game
                prompts[(e.game_id, r)] = (shown, nashgap_prompt(shown, mode, decimals, style), order)

        rows = {e.game_id: e.game.shape[0] for e in entries}
        games = {e.game_id: e for e in entries}

        async def work(unit: tuple[GameEntry, int]) -> Record:
            e, t = unit
            r = t % k_rot
            shown, prompt, order = prompts[(e.game_id, r)]
            seed = derive_seed(c.llm_seed or 0, e.game_id, t, MODE_INDEX[mode])
            req = DecisionRequest(shown, mode, prompt, shown.row_labels, seed, e.game_id, t)  # type: ignore[arg-type]
            t0 = time.perf_counter()
            try:
                assert agent is not None
                d = await agent.decide(req)
            except Exception as exc:  # a player bug or backend failure is recorded, never hidden
                d = Decision("error", error=f"{type(exc).__name__}: {exc}")
            if not d.latency_s:
                d.latency_s = time.perf_counter() - t0
            return dict(make_record(e, t, mode, seed, prompt, d, self.agent_name, order, r))

        return Stream(
            file=mode_files(c, mode)[0],
            units=[(e, t) for e in entries for t in range(self.n_trials)],
            work=work,
            unit_key=lambda u: (u[0].game_id, u[1]),
            record_unit=lambda r: (r["game_id"], r["trial_id"]),
            sort_key=lambda r: (r["game_id"], r["trial_id"]),
            concurrency=c.concurrency,
            label=mode,
            unit_name="trials",
            record_key=lambda r: (r["game_id"], r["trial_id"]),
            record_schema=TrialRecord,
            record_problem=lambda r: (record_problem(r, rows, games, mode, self.agent_name or None, k_rot)
                                      or self._seed_problem(r, mode)
                                      or self._replay_problem(r, games, prompts, mode)),
        )

    def _seed_problem(self, r: Record, mode: str) -> str | None:
        """A trial's seed is derived from the run's llm_seed, its game and trial; a log-prob pure
        trial's decision is the row that seed draws from its policy (as the player drew it). An
        edited seed, decision, or llm_seed in run.json (a resume would go on under another seed)
        is refused."""
        g, t, seed = r.get("game_id"), r.get("trial_id"), r.get("seed")
        if not isinstance(g, int) or not isinstance(t, int):
            return None
        want = derive_seed(self.config.llm_seed or 0, g, t, MODE_INDEX[mode])
        if seed != want:
            return (f"seed {seed!r}, but the run's llm_seed {self.config.llm_seed} gives {want} for game {g}, trial {t} "
                    "(run.json's llm_seed or the record was edited)")
        pol = r.get("policy")
        if mode == "pure" and r.get("status") == "parsed" and r.get("logprobs") is not None and isinstance(pol, list) \
                and pol and all(isinstance(x, (int, float)) for x in pol):
            order = rotation_order(len(pol), int(r.get("rotation") or 0))
            try:
                k = draw([pol[i] for i in order], want)
            except ValueError:
                return f"policy {pol!r} is no distribution its decision could be drawn from"
            if r.get("llm_decision") != order[k]:
                return f"llm_decision {r.get('llm_decision')!r}, but its seed draws row {order[k]} from its policy"
        return None

    def _replay_problem(self, r: Record, games: dict[int, GameEntry],
                        prompts: dict[tuple[int, int], tuple[NormalFormGame, str, list[int]]], mode: str) -> str | None:
        """A scripted reference player's trial is fixed by its game, trial and seed: played again,
        it must be the record's (an edited decision of a reference is no reference)."""
        factory = SCRIPTED_AGENTS.get(self.agent_name or "")
        e, t = games.get(r.get("game_id")), r.get("trial_id")  # type: ignore[arg-type]
        if factory is None or e is None or not isinstance(t, int) or r.get("status") == "error":
            return None
        rot = t % self.config.order_rotations
        if (e.game_id, rot) not in prompts:
            return None
        shown, prompt, order = prompts[(e.game_id, rot)]
        seed = derive_seed(self.config.llm_seed or 0, e.game_id, t, MODE_INDEX[mode])
        agent = self.__dict__.setdefault("_replayer", factory())  # one player: its solves are cached per game
        d = settled(agent.decide(DecisionRequest(shown, mode, prompt, shown.row_labels, seed, e.game_id, t)))  # type: ignore[arg-type]
        want: dict[str, Any] = dict(make_record(e, t, mode, seed, prompt, d, self.agent_name, order, rot))
        first = ("status", "seed", "llm_decision", "policy")  # (what names an edited play best)
        scale = max(1.0, float(np.abs(e.game.payoff_row).max()))
        # (every key but its timing and the hash of a prompt the reference never reads)
        for k in [*first, *sorted((set(r) | set(want)) - set(first) - {"latency_s", "prompt_sha256"})]:
            if k not in want:  # (a model's keys on a reference player's trial: a reply, a reasoning)
                return f"{k} {_short(r[k])} on a trial of {self.agent_name}, a scripted player, which never writes one"
            a, b = r.get(k), want[k]
            if not _same(a, b, 1e-9 * scale):  # (the whole trial: its metrics, and no model's reply, error or usage)
                return (f"{k} {_short(a)}, but {self.agent_name} {'plays' if k in first else 'writes'} {_short(b)} "
                        f"in game {e.game_id}, trial {t}")
        return None

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        c = self.config
        summaries: dict[str, dict[str, Any]] = {}
        n_errors = 0
        shard = c.shard_spec
        for mode in c.modes:
            trials_file, summary_file = mode_files(c, mode)
            s = summarise(records[trials_file], self.played, self.n_trials, c.seed or 0,
                          generated=self.policy == "sample")
            s["mode"] = mode
            s["agent"] = self.agent_name
            s["policy"] = self.policy
            s["order_rotations"] = c.order_rotations
            if not shard.whole:
                s["shard"] = str(shard)
            summaries[mode] = s
            n_errors += s["status_counts"]["error"]
            write_json_atomic(folder / summary_file, s)
        return Outcome(summaries, n_errors)

    def usage(self) -> dict[str, Any]:
        assert self.agent is not None
        return _usage(self.agent, load_price_table(self.config.price_table))

    async def aclose(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()

    # -- merging ------------------------------------------------------------------------------
    @classmethod
    def for_merge(cls, folders: list[Path]) -> "NashgapPlan":
        """The unsharded run whose finished shards are ``folders`` (its player is not opened: the
        number of trials, the player's name and policy come from the shards' summaries, which
        must agree)."""
        meta = read_run_json(folders[0])
        plan = cls(rebuild_config(NashgapConfig, meta["config"], shard=None))
        for f in folders:
            if not (f / "games.json").is_file():
                raise InputError(f"{f}: no games.json; not a Nash-gap result folder")
        games = [read_games_json(f / "games.json") for f in folders]
        for f, (text, _) in zip(folders[1:], games[1:]):
            if parse_json(text, str(f / "games.json")) != parse_json(games[0][0], str(folders[0] / "games.json")):
                raise InputError(f"{f}: games.json differs from {folders[0]}'s: the shards played different games")
        plan.games_text, plan.entries = games[0]
        for f in folders:
            check_layout(plan.config, f)
        check_games(plan.config, folders[0] / "games.json")
        firsts = []
        for mode in plan.config.modes:
            summary_file = mode_files(plan.config, mode)[1]
            shard_summaries = []
            for f in folders:
                if not (f / summary_file).is_file():
                    raise InputError(f"{f}: no {summary_file}; finish it with --resume {f}")
                shard_summaries.append(read_summary(f / summary_file,
                                                    {"num_trials_per_game": int, "agent": str, "policy": str}))
            first = shard_summaries[0]
            for f, sm in zip(folders, shard_summaries):
                for k in ("num_trials_per_game", "agent", "policy", "order_rotations"):
                    if sm.get(k) != first.get(k):
                        raise InputError(f"{f}: {summary_file} has {k}={sm.get(k)!r}, "
                                         f"{folders[0]} has {first.get(k)!r}")
            firsts.append(first)
        plan.n_trials = int(firsts[0]["num_trials_per_game"])
        plan.agent_name, plan.policy = firsts[0]["agent"], firsts[0]["policy"]
        # run.json's config gives the trials per game (a summary's count is what was played): a
        # config raised after the run finished is a run that holds fewer trials than it says
        want = plan.config.order_rotations if plan.policy in ("logprob", "choice") else plan.config.num_trials
        if plan.n_trials < want:
            n_games = len(plan.entries)
            raise InputError(f"{mode_files(plan.config, plan.config.modes[0])[0]}: the shards hold "
                             f"{plan.n_trials * n_games} of the run's {want * n_games} trials "
                             f"({plan.n_trials} of {want} per game); merge every shard of one run once, each after "
                             "it has finished")
        return plan


    @classmethod
    def for_folder(cls, folder: Path) -> "NashgapPlan":
        """The run (or shard) in ``folder`` as its run.json and games.json plan it, its player not
        opened: who played, under which policy and how many trials per game come from run.json's
        "agent" (a run writes it before its first record), so an unfinished run is read too."""
        meta = read_run_json(folder)
        plan = cls(rebuild_config(NashgapConfig, meta["config"]))
        if not (folder / "games.json").is_file():
            raise InputError(f"{folder}: no games.json; not a Nash-gap result folder")
        check_layout(plan.config, folder)
        plan.entries = check_games(plan.config, folder / "games.json")
        agent = meta.get("agent")
        name = agent.get("name") if isinstance(agent, dict) else None
        policy = agent.get("policy", "scripted") if isinstance(agent, dict) else "scripted"
        plan.policy = policy if isinstance(policy, str) else "scripted"
        # as a run names its records' agent: a model by its backend's name, a scripted player as the
        # config names it ("dummy", the original's name, plays as "random")
        plan.agent_name = name if isinstance(name, str) and plan.policy != "scripted" else plan.config.player
        exact = plan.policy in ("logprob", "choice")
        plan.n_trials = plan.config.order_rotations if exact else plan.config.num_trials
        return plan


def run_nashgap(
    config: NashgapConfig,
    agent: Agent | None = None,
    progress: Progress | None = None,
    resume_dir: str | Path | None = None,
) -> RunResult:
    """Run (or, with `resume_dir`, finish) a Nash-gap benchmark and write its result folder.

    All input is validated, and the player loaded, before anything is written: bad input never
    leaves a partial folder. `agent` replaces the player the config names (tests, custom players).
    """
    return execute(NashgapPlan(config, agent), progress, resume_dir)


def merge_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Combine the finished shards of one Nash-gap run into `out` (see `stratbench merge`).

    Shards hold whole games, so the merged trial files are the shards' records in the unsharded
    run's canonical order and the summaries are recomputed from all records over all games —
    the same computation, on the same numbers, as an unsharded run. Returns the summary (for a
    combined run, ``{mode: summary}``).
    """
    plan = NashgapPlan.for_merge(folders)
    write_atomic(out / "games.json", plan.games_text or "")
    summaries = merge_streams(plan, folders, out).summaries
    return summaries if plan.config.combined else summaries[plan.config.modes[0]]
