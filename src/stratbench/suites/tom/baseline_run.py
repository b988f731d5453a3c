"""`stratbench tom baseline`: the tabular R-max baseline as a result folder.

Files: ``episodes.jsonl`` (one record per episode: its trajectory - actions, predictions, the
partner's initial state - and its metrics; :class:`records.BaselineEpisodeRecord`),
``summary.json`` (``settings``: one row per game × partner with the suite's keys and 95% CIs over
episodes), ``curves.json`` and ``regret_curve.png`` (per-step regret). The run goes through the
shared lifecycle (:func:`stratbench.runner.lifecycle.execute`); its units of work are the game ×
partner settings, each simulating its episodes at once (vectorised) and writing their records. The
summary and curves are computed from the records (:func:`results.summarize_baseline`), which is
what makes a merge of shards equal to the unsharded run. ``--shard i/n`` keeps every n-th episode
of each setting (round-robin over the episode index); episode e always plays with its own seed
``derive_seed(seed, e)``. Runs take seconds: they are not resumable.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from stratbench.checks import check_config, check_units
from stratbench.errors import InputError
from stratbench.runner.folders import read_run_json
from stratbench.runner.jsonl import read_jsonl, write_bytes_atomic, write_json_atomic, write_jsonl_atomic
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    Progress,
    RunPlan,
    RunResult,
    Stream,
    check_meta,
    execute,
    read_stream,
    rebuild_config,
)
from stratbench.runner.schema import Record, RunMeta
from stratbench.runner.shard import Shard, as_shard, shard_tag
from stratbench.suites.tom.records import EPISODES_FILE, BaselineEpisodeRecord, BaselineSummary, BaselineTotals

AGENT = "tabular-rmax"
M = 1  # R-max's "known" threshold: partners are deterministic given the state (see tabular)

Setting = tuple[str, str]  # (game, partner)


@dataclass
class BaselineConfig:
    """`tom baseline`: the tabular R-max agent on every game × partner."""

    games: list[str] = field(default_factory=lambda: ["rps"])
    partners: list[str] = field(default_factory=lambda: ["single_action"])
    episodes: int = 300
    rounds: int = 100
    seed: int = 0
    output_dir: str = "results"
    shard: Any = None

    def validate(self) -> None:
        """Flag values (each game and partner once, counts within bounds), games and partners known."""
        from stratbench.suites.tom.games import GAMES
        from stratbench.suites.tom.partners import make_partner

        check_config(self, flags={"games": "--game", "partners": "--partner"})
        check_units(len(self.games) * len(self.partners) * self.episodes * self.rounds,
                    "--episodes × --rounds × settings")
        for g in self.games:
            if g not in GAMES:
                raise InputError(f"unknown --game {g!r}; known: {', '.join(GAMES)}")
        for p in self.partners:
            make_partner(p, self.games[0])  # raises InputError naming the known partners


def baseline_config(saved: dict[str, Any], **overrides: Any) -> BaselineConfig:
    """A `tom baseline` run's config from run.json's saved one. Its ``agent`` and ``m`` are not
    settings (every baseline run plays the tabular R-max agent with m = M) but are shown as the
    run's player: a run.json that names another was edited (the report would file the run under
    that name), and is refused as an edited ``player`` of the other suites is."""
    for key, value in (("agent", AGENT), ("m", M)):
        if key in saved and saved[key] != value:
            raise InputError(f"run.json's saved config is not valid: {key} is {saved[key]!r:.80} but the baseline "
                             f"plays {value!r}; the folder is left as it is")
    return rebuild_config(BaselineConfig, saved, **overrides)


class BaselinePlan(RunPlan):
    """One `tom baseline` run (or the unsharded run its shards are merged into)."""

    suite = "tom"
    kind = "baseline"

    def __init__(self, config: BaselineConfig) -> None:
        self.config = config
        self.t0 = time.perf_counter()

    @property
    def shard(self) -> Shard:
        return as_shard(self.config.shard)

    def prepare(self) -> None:
        c = self.config
        c.validate()
        shard = self.shard
        if shard.count > c.episodes:
            raise InputError(f"--shard {shard}: more shards than episodes ({c.episodes})")

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_meta(meta, folder, "tom", ("baseline",))
        given = self.config.shard
        self.config = baseline_config(meta["config"])
        if given is not None and as_shard(given) != self.shard:
            raise InputError(f"--resume {folder}: the folder is shard {self.shard}, not {given}")

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "tom_baseline", tag=shard_tag(self.shard))

    def config_json(self) -> dict[str, Any]:
        c = self.config
        return {"games": list(c.games), "partners": list(c.partners), "episodes": c.episodes, "rounds": c.rounds,
                "seed": c.seed, "agent": AGENT, "m": M, "shard": self.shard.to_json(), "output_dir": str(c.output_dir)}

    def episode_ids(self) -> list[int]:
        return self.shard.select(list(range(self.config.episodes)))

    def streams(self) -> list[Stream[Any]]:
        from stratbench.suites.tom.results import baseline_order

        c = self.config
        self.t0 = time.perf_counter()
        settings: list[Setting] = [(g, p) for g in c.games for p in c.partners]
        return [Stream(EPISODES_FILE, settings, self.simulate, unit_key=lambda s: s,
                       record_unit=setting_of, sort_key=baseline_order(c.games, c.partners), label="settings",
                       unit_name="settings", record_key=lambda r: (r["game"], r["partner"], int(r["episode"])),
                       record_schema=BaselineEpisodeRecord, record_problem=self.record_problem,
                       unit_done=self.setting_done)]

    def record_problem(self, r: Record) -> str | None:
        """An episode of the tabular agent is fixed by the run's seed and its index: it is played
        again (each setting once, all the run's episodes at a time, as the run played them) and
        must be the record, trajectory and metrics alike (within 1e-9: another machine's last
        bits). An edited regret, accuracy, action or status is no result."""
        setting = (r.get("game"), r.get("partner"))
        cache: dict[Any, dict[int, Record]] = self.__dict__.setdefault("_replayed", {})
        if setting not in cache:
            c = self.config
            if setting[0] not in c.games or setting[1] not in c.partners:
                return None  # (a setting of another run: the unit check names it)
            played = _replay(cast(Setting, setting), self.episode_ids(), c)
            cache[setting] = {int(x["episode"]): cast(Record, x) for x in played}
        e = r.get("episode")
        want = cache[setting].get(e) if isinstance(e, int) and not isinstance(e, bool) else None
        if want is None:
            return f"episode {e!r}, which this run does not play"
        for k in sorted(set(r) | set(want)):
            if k not in want:
                return f"{k} {r[k]!r}, which no {AGENT} episode has"
            if not _same(r.get(k), want[k]):
                return (f"{k} {_short(r.get(k))}, but the {AGENT} agent's episode {e} gives {_short(want[k])} "
                        f"(seed {self.config.seed})")
        return None

    def setting_done(self, records: list[Record]) -> bool:
        """A setting killed while its episodes were being written is not finished."""
        return len(records) == len(self.episode_ids())

    async def simulate(self, setting: Setting) -> list[Record]:
        """The shard's episodes of one game × partner, one record each."""
        from stratbench.suites.tom.games import GAMES
        from stratbench.suites.tom.partners import make_partner
        from stratbench.suites.tom.results import baseline_episode_records
        from stratbench.suites.tom.tabular import simulate_rmax

        g, p = setting
        c = self.config
        ids = self.episode_ids()
        sim = simulate_rmax(GAMES[g], make_partner(p, g), ids, c.rounds, c.seed, m=M)
        return [cast(Record, r) for r in baseline_episode_records(g, p, ids, sim)]

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        """summary.json, curves.json and regret_curve.png from the episode records."""
        from stratbench.suites.tom.plots import regret_curves_plot
        from stratbench.suites.tom.results import summarize_baseline

        rows, curves = summarize_baseline(records[EPISODES_FILE], self.config_json())
        summary: BaselineSummary = {"settings": rows}
        if not self.shard.whole:
            summary["shard"] = str(self.shard)
        write_json_atomic(folder / "summary.json", summary)
        write_json_atomic(folder / "curves.json", curves)
        write_bytes_atomic(folder / "regret_curve.png",
                           regret_curves_plot(curves, "Tabular R-max baseline: regret per step"))
        return Outcome({"": dict(summary)}, 0, totals={"settings": len(rows)})

    def totals(self, records: dict[str, list[Record]], outcome: Outcome) -> dict[str, Any]:
        """The baseline has no model: settings, records, errors (0) and the seconds it took."""
        totals: BaselineTotals = {"settings": outcome.totals["settings"], "records": len(records[EPISODES_FILE]),
                                  "errors": 0, "seconds": time.perf_counter() - self.t0}
        return dict(totals)


def _replay(setting: Setting, ids: list[int], c: BaselineConfig) -> list[Any]:
    """The records the run writes for ``setting``'s episodes ``ids``."""
    from stratbench.suites.tom.games import GAMES
    from stratbench.suites.tom.partners import make_partner
    from stratbench.suites.tom.results import baseline_episode_records
    from stratbench.suites.tom.tabular import simulate_rmax

    g, p = setting
    sim = simulate_rmax(GAMES[g], make_partner(p, g), ids, c.rounds, c.seed, m=M)
    return list(baseline_episode_records(g, p, ids, sim))


def _same(a: Any, b: Any) -> bool:
    """A value read back is the one written: a float within 1e-9 (a NaN is written as null)."""
    if isinstance(b, float):
        if math.isnan(b):
            return a is None
        return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return type(a) is type(b) and bool(a == b)


def _short(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def setting_of(record: Record) -> Hashable:
    return record["game"], record["partner"]


def run_tom_baseline(config: BaselineConfig, progress: Progress | None = None,
                     resume_dir: str | Path | None = None) -> RunResult:
    """Run (or, with `resume_dir`, finish) the tabular agent on every game × partner; the result's
    summary is ``{"settings": rows}`` (and, for a shard, ``"shard"``)."""
    return execute(BaselinePlan(config), progress, resume_dir)


def merge_baselines(folders: list[Path], out: Path) -> Outcome:
    """`stratbench merge` of `tom baseline` shards (already checked to be shards 1..n of one
    config): every episode of every setting exactly once, in the unsharded order, summarised by the
    plan as the unsharded run.

    Not :func:`~stratbench.runner.lifecycle.merge_streams`: the run's units are settings, and every
    shard holds a part of every setting, so the completeness check is per episode."""
    saved = read_run_json(folders[0])["config"]
    plan = BaselinePlan(baseline_config(saved, shard=None))
    (stream,) = plan.streams()
    records: list[Record] = []
    for f in folders:
        path = Path(f) / EPISODES_FILE
        if not path.is_file():
            raise InputError(f"{f}: no {EPISODES_FILE}; not a finished tom shard")
        read_stream(path, stream)  # every episode read as a resume reads it (played again)
        try:
            records.extend(read_jsonl(path))  # (as written: an episode written twice is counted twice below)
        except ValueError as e:
            raise InputError(str(e)) from None
    c = plan.config
    keys = [(r["game"], r["partner"], int(r["episode"])) for r in records]
    want = {(g, p, e) for g in c.games for p in c.partners for e in range(c.episodes)}
    if len(set(keys)) != len(keys) or set(keys) != want:
        # (the words of merge_streams: a finished run's check, one folder, says "the finished run holds only")
        twice = len(keys) - len(set(keys))
        odd = len(set(keys) - want)
        raise InputError(f"{EPISODES_FILE}: the shards hold {len(set(keys) & want)} of the run's {len(want)} episodes"
                         + (f" and {twice} twice" if twice else "") + (f" and {odd} not in the run" if odd else "")
                         + "; merge every shard of one run once, each after it has finished")
    records.sort(key=stream.sort_key)
    write_jsonl_atomic(out / EPISODES_FILE, records)
    return plan.summarise(out, {EPISODES_FILE: records})
