"""The TMGBench suite: the 144 Robinson–Goforth 2×2 games, classic setting, atomic form.

Two ways to play, like every suite:
- `logprob` (raw models): the prompt is a plain completion ending where the answer list starts;
  the 16 possible answer sets (subsets of the 4 cells) are scored as continuations, so the model's
  answer *distribution* is exact — Freq_{i,j,o} is the probability that cell o is in the answer and
  PAR the probability of the exact standard set. Only direct answers (DA) can be scored this way.
- `sample`: T generations per game (the paper's repetitions, default 4), parsed without executing
  anything; unparseable answers are counted, not guessed.
Scripted players (`oracle`, `empty`, `uniform`) give exact reference distributions.

Work units are (game, repetition); each record is appended to `answers.jsonl` as it completes and a
run resumes from its folder.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, read_run_json, run_metadata
from stratbench.runner.jsonl import read_jsonl, resume_records, rewrite_sorted, write_json_atomic, write_jsonl_atomic
from stratbench.runner.pool import stream_pool
from stratbench.runner.shard import Shard, as_shard, shard_tag
from stratbench.seeding import derive_seed, fresh_seed

SUITE = "tmgbench"
METHODS = ("DA", "CoT", "FoToM", "SoToM", "reFoToM", "reSoToM")
SCRIPTED = ("oracle", "empty", "uniform")
ALL_SUBSETS: tuple[frozenset[int], ...] = tuple(
    frozenset(c) for k in range(5) for c in combinations((1, 2, 3, 4), k)
)


def subset_key(s: frozenset[int]) -> str:
    """'' for the empty set, else the sorted choice numbers: '14'."""
    return "".join(str(o) for o in sorted(s))


@dataclass
class TmgbenchConfig:
    model: str | None = None
    policy: str | None = None
    prompting: str = "DA"
    setting: str = "classic"
    form: str = "atomic"
    repeats: int = 4
    seed: int | None = None
    output_dir: str = "results"
    max_concurrency: int = 8
    no_cache: bool = False
    temperature: float = 1.0
    max_tokens: int = 1024
    chat: bool = False
    base_url: str | None = None
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
        if self.repeats < 1:
            raise InputError(f"--repeats must be at least 1 (got {self.repeats})")
        if self.policy not in (None, "logprob", "sample"):
            raise InputError(f"unknown --policy {self.policy!r}; use logprob or sample")
        if self.policy == "logprob" and self.prompting != "DA":
            raise InputError("--policy logprob scores direct answers only: use --prompting DA "
                             "(or --policy sample for reasoning prompts)")
        if not self.shard_spec.whole and self.seed is None:
            raise InputError(f"--shard {self.shard_spec} needs --seed: every shard must draw the same samples")


def shard_units(shard: Shard, units: list[Any], what: str) -> list[Any]:
    """This shard's units; a split into more shards than units is refused (a shard would be empty)."""
    if shard.count > len(units):
        raise InputError(f"--shard {shard}: more shards than {what} ({len(units)})")
    return shard.select(units)


def resumed_config(config: TmgbenchConfig, saved: dict[str, Any], folder: Path) -> TmgbenchConfig:
    """The saved config of a run being resumed; it keeps its shard (a different --shard is refused)."""
    out = TmgbenchConfig(**{k: v for k, v in saved.items() if k in TmgbenchConfig.__annotations__})
    if config.shard is not None and as_shard(config.shard) != out.shard_spec:
        raise InputError(f"--resume {folder}: the folder is shard {out.shard_spec}, not {config.shard}")
    return out


@dataclass
class TmgbenchResult:
    folder: Path
    summary: dict[str, Any]
    n_errors: int = 0
    totals: dict[str, Any] = field(default_factory=dict)


def selected_games(config: TmgbenchConfig) -> list[Any]:
    from stratbench.games.robinson_goforth import all_games, game_by_id

    if not config.games:
        return all_games()
    out = []
    for gid in config.games.split(","):
        try:
            out.append(game_by_id(gid.strip()))
        except (KeyError, ValueError):
            raise InputError(f"--games: unknown TMGBench game id {gid.strip()!r}") from None
    return out


def load_units(config: TmgbenchConfig, games: list[Any]) -> list[tuple[Any, int, Any]]:
    """(game, variant, story) work items: one per game in the classic setting (variant 0), one per
    story file in the story setting. Every story is verified against its classic game first: a
    story whose payoff matrix is not the game's would measure something else."""
    if config.setting == "classic":
        return [(g, 0, None) for g in games]
    from stratbench.games.tmgbench_stories import load_story_dir, verify_story

    wanted = {g.id: g for g in games}
    units = []
    for story in load_story_dir(config.stories_dir):  # type: ignore[arg-type]
        g = wanted.get(story.game_id)
        if g is None:
            continue
        problems = verify_story(story, g.payoff_A, g.payoff_B)
        if problems:
            raise InputError(f"{story.path}: story does not match game {g.id}: {problems[0]}")
        units.append((g, story.variant, story))
    if not units:
        raise InputError(f"--stories-dir {config.stories_dir}: no story files for the selected games")
    return units


def _scripted_distribution(name: str, std: frozenset[int]) -> dict[str, float]:
    if name == "oracle":
        return {subset_key(std): 1.0}
    if name == "empty":
        return {"": 1.0}
    return {subset_key(s): 1.0 / len(ALL_SUBSETS) for s in ALL_SUBSETS}


class _Player:
    """What answers a TMGBench task: a scripted reference, or a model under a policy."""

    def __init__(self, config: TmgbenchConfig) -> None:
        self.spec = config.player
        self.model = None
        if self.spec in SCRIPTED:
            self.policy = "scripted"
            return
        from stratbench.models import open_model
        from stratbench.models import ModelOptions

        self.model = open_model(
            self.spec, ModelOptions(base_url=config.base_url, max_concurrency=config.max_concurrency,
                                    chat=config.chat or None),
            no_cache=config.no_cache,
        )
        self.policy = config.policy or ("logprob" if self.model.supports_logprobs else "sample")
        if self.policy == "logprob" and config.prompting != "DA":
            raise InputError("--policy logprob scores direct answers only: use --prompting DA "
                             "(or --policy sample for reasoning prompts)")

    @property
    def exact(self) -> bool:
        return self.policy in ("scripted", "logprob")

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.spec, "policy": self.policy}
        if self.model is not None:
            d["model"] = self.model.describe()
        return d


async def _answer(player: _Player, config: TmgbenchConfig, game: Any, repeat: int,
                  variant: int = 0, story: Any = None) -> dict[str, Any]:
    """One task → one record (never raises for model failures)."""
    from stratbench.games.robinson_goforth import standard_answer
    from stratbench.models.base import GenerateRequest, ScoreRequest
    from stratbench.parsing.answer_sets import parse_answer_set
    from stratbench.prompts.tmgbench import build_completion_prompt, build_messages, completion_candidates

    std = standard_answer(game)
    rec: dict[str, Any] = {"game_id": game.id, "row": game.row, "col": game.col, "variant": variant,
                           "setting": config.setting, "repeat": repeat,
                           "player": player.spec, "policy": player.policy,
                           "prompting": config.prompting, "standard": sorted(std)}
    t0 = time.perf_counter()
    if player.policy == "scripted":
        rec.update(status="ok", distribution=_scripted_distribution(player.spec, std), prompt_sha256=None)
    elif player.policy == "logprob":
        prompt = build_completion_prompt(game.payoff_A, game.payoff_B, config.prompting, story)
        cands = completion_candidates()
        (res,) = await player.model.score([ScoreRequest(prompt, tuple(t for _, t in cands))])  # type: ignore[union-attr]
        rec["prompt_sha256"] = hashlib.sha256(prompt.encode()).hexdigest()
        rec["usage"] = {"tokens_in": res.tokens_in, "cached": res.cached, "n_tokens": res.n_tokens}
        if not res.ok:
            rec.update(status="error", error=res.error)
        else:
            lp = np.asarray(res.logprobs, dtype=float)
            m = lp.max()
            w = np.exp(lp - m)
            rec.update(status="parsed", label_mass=float(np.exp(m) * w.sum()),
                       logprobs={subset_key(s): float(x) for (s, _), x in zip(cands, lp)},
                       distribution={subset_key(s): float(x) for (s, _), x in zip(cands, w / w.sum())})
    else:
        seed = derive_seed(config.seed or 0, int(game.id), variant, repeat)
        if config.chat:
            msgs = build_messages(game.payoff_A, game.payoff_B, config.prompting, story)
            system, prompt = msgs[0]["content"], msgs[1]["content"]
        else:
            system = None
            prompt = build_completion_prompt(game.payoff_A, game.payoff_B, config.prompting, story)
        (res,) = await player.model.generate([GenerateRequest(  # type: ignore[union-attr]
            prompt, max_tokens=config.max_tokens, temperature=config.temperature, seed=seed,
            sample_index=repeat, chat=config.chat, system=system)])
        rec["prompt_sha256"] = hashlib.sha256(prompt.encode()).hexdigest()
        rec["usage"] = {"tokens_in": res.tokens_in, "tokens_out": res.tokens_out, "cached": res.cached}
        rec["raw_response"] = res.text
        if not res.ok:
            rec.update(status="error", error=res.error)
        else:
            text = res.text if config.chat else "```python\n" + (res.text or "")
            p = parse_answer_set(text)
            if p.ok:
                rec.update(status="parsed", answer=sorted(p.cells))  # type: ignore[arg-type]
            else:
                rec.update(status="parse_failed", error=p.error)
    rec["latency_s"] = time.perf_counter() - t0
    return rec


def _distribution(rec: dict[str, Any]) -> dict[Any, float] | None:
    if rec.get("distribution") is not None:
        return {frozenset(int(c) for c in k): v for k, v in rec["distribution"].items()}
    return None


def summarise(records: Sequence[dict[str, Any]], seed: int) -> tuple[dict[str, Any], Any]:
    """Paper metrics (percent) from the records: exact distributions where the player gave them,
    else the T sampled answers per grid (parse failures count as wrong answers)."""
    from stratbench.analysis.tmgbench_metrics import (
        metrics_from_distributions,
        metrics_from_samples,
        summary_keys,
    )

    errors = sum(r["status"] == "error" for r in records)
    usable = [r for r in records if r["status"] != "error"]
    if not usable:
        return {"n_grids": 0, "error_rate": 1.0 if records else 0.0, "n_records": len(records)}, None
    dists = {r["game_id"]: _distribution(r) for r in usable if _distribution(r) is not None}
    if dists and len(dists) == len({r["game_id"] for r in usable}):
        # exact players: average the distributions of a grid's records (rotations / repeats)
        by: dict[str, list[dict[Any, float]]] = {}
        for r in usable:
            by.setdefault(r["game_id"], []).append(_distribution(r))  # type: ignore[arg-type]
        avg = {}
        for gid, ds in by.items():
            keys = set().union(*ds)
            avg[gid] = {k: sum(d.get(k, 0.0) for d in ds) / len(ds) for k in keys}
        m = metrics_from_distributions(avg, seed=seed)
    else:
        samples: dict[str, list[Any]] = {}
        for r in usable:
            ans = frozenset(r["answer"]) if r["status"] == "parsed" else None
            samples.setdefault(r["game_id"], []).append(ans)
        m = metrics_from_samples(samples, seed=seed)
    s = summary_keys(m)
    masses = [r["label_mass"] for r in usable if r.get("label_mass") is not None]
    s["mean_label_mass"] = float(np.mean(masses)) if masses else None
    s["error_rate"] = errors / len(records)
    s["n_records"] = len(records)
    s["status_counts"] = {k: sum(r["status"] == k for r in records)
                          for k in ("ok", "parsed", "parse_failed", "error")}
    return s, m


_SPREAD_KEYS = ("par_pct", "id_pct", "bd_pct", "par_0_pct", "par_1_pct", "par_2_pct", "id_0_pct",
                "id_1_pct", "id_2_pct", "bd_0_pct", "bd_1_pct", "bd_2_pct")


def summarise_variants(records: Sequence[dict[str, Any]], seed: int) -> tuple[dict[str, Any], Any]:
    """Story setting: metrics per story variant, then mean ± std over variants (the paper's
    report for the story setting). Classic runs have one variant and no spread."""
    variants = sorted({r.get("variant", 0) for r in records})
    if len(variants) <= 1:
        return summarise(records, seed)
    per = {}
    for v in variants:
        per[v], _ = summarise([r for r in records if r.get("variant", 0) == v], seed)
    s: dict[str, Any] = {}
    for k in _SPREAD_KEYS:
        vals = [p[k] for p in per.values() if p.get(k) is not None]
        s[k] = float(np.mean(vals)) if vals else None
        s[f"{k}_std"] = float(np.std(vals)) if vals else None
    s["n_variants"] = len(variants)
    s["n_records"] = len(records)
    s["error_rate"] = sum(r["status"] == "error" for r in records) / len(records)
    fails = [p.get("parse_failure_rate") for p in per.values() if p.get("parse_failure_rate") is not None]
    s["parse_failure_rate"] = float(np.mean(fails)) if fails else 0.0
    s["status_counts"] = {k: sum(r["status"] == k for r in records)
                          for k in ("ok", "parsed", "parse_failed", "error")}
    s["variants"] = {str(v): p for v, p in per.items()}
    return s, None


def _record_order(r: dict[str, Any]) -> tuple[Any, ...]:
    """The canonical order of answers.jsonl (records arrive in completion order)."""
    return (r.get("variant", 0), r["row"], r["col"], r["repeat"])


def _write_outputs(folder: Path, records: list[dict[str, Any]], config: TmgbenchConfig, player: str,
                   policy: str, repeats: int) -> dict[str, Any]:
    """summary.json, grids.json and (all 144 games) the heat maps from an atomic run's records;
    shared by a run and by merging its shards, so both compute the same thing."""
    summary, metrics = summarise_variants(records, derive_seed(config.seed or 0, 4))
    summary.update(player=player, policy=policy, prompting=config.prompting,
                   setting=config.setting, form=config.form, repeats=repeats)
    if not config.shard_spec.whole:
        summary["shard"] = str(config.shard_spec)
    write_json_atomic(folder / "summary.json", summary)
    if metrics is not None:
        write_json_atomic(folder / "grids.json", metrics.grids)
        if len(metrics.grids) == 144:
            from stratbench.suites.tmgbench.heatmaps import write_all_heatmaps

            write_all_heatmaps(metrics.grids, folder)
    return summary


def run_tmgbench(config: TmgbenchConfig, progress: Any | None = None,
                 resume_dir: str | Path | None = None) -> TmgbenchResult:
    """Run (or finish) TMGBench for one player; writes answers.jsonl, summary.json, grids.json
    and the heat maps. Bad input fails before any folder is created."""
    if resume_dir is not None:
        folder = Path(resume_dir)
        meta = read_run_json(folder, "--resume ")
        if meta.get("suite") != SUITE:
            raise InputError(f"--resume {folder}: folder is a {meta.get('suite')!r} run, not tmgbench")
        keep = config.max_concurrency
        config = resumed_config(config, meta["config"], folder)
        config.max_concurrency = keep
        games = selected_games(config)
        units_all = shard_units(config.shard_spec, load_units(config, games), "games")
        player = _Player(config)
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    else:
        config.validate()
        if config.seed is None:
            config.seed = fresh_seed()
        games = selected_games(config)
        units_all = shard_units(config.shard_spec, load_units(config, games), "games")
        config.shard = config.shard_spec.to_json()
        player = _Player(config)
        folder = create_run_folder(config.output_dir, "tmgbench", tag=shard_tag(config.shard_spec)).path
        meta = run_metadata(SUITE, {**asdict(config), "player": config.player}, kind="atomic")
        meta["agent"] = player.describe()
    write_json_atomic(folder / "run.json", meta)

    path = folder / "answers.jsonl"
    kept = resume_records(path)
    done = {(r["game_id"], r.get("variant", 0), r["repeat"]) for r in kept}
    repeats = 1 if player.exact else config.repeats
    units = [(g, v, st, t) for g, v, st in units_all for t in range(repeats) if (g.id, v, t) not in done]
    task = progress.add_task("tmgbench", total=len(units_all) * repeats, completed=len(done)) if progress else None

    async def main() -> None:
        async def work(unit: tuple[Any, int, Any, int]) -> dict[str, Any]:
            g, v, st, t = unit
            try:
                return await _answer(player, config, g, t, v, st)
            except Exception as exc:  # recorded, never hidden
                return {"game_id": g.id, "row": g.row, "col": g.col, "variant": v, "repeat": t,
                        "player": player.spec, "status": "error",
                        "error": f"{type(exc).__name__}: {exc}"}

        try:
            await stream_pool(units, work, config.max_concurrency, path,
                              (lambda: progress.advance(task)) if progress is not None else None)
        finally:
            if player.model is not None:
                await player.model.aclose()

    asyncio.run(main())
    records = rewrite_sorted(path, key=_record_order)
    summary = _write_outputs(folder, records, config, player.spec, player.policy, repeats)
    n_errors = summary.get("status_counts", {}).get("error", 0)
    usage = player.model.usage.as_dict() if player.model is not None else {"calls": 0}
    meta.update(end_time=now_iso(), status="finished",
                totals={"records": len(records), "errors": n_errors,
                        **{f"model_{k}": v for k, v in usage.items()}})
    write_json_atomic(folder / "run.json", meta)
    return TmgbenchResult(folder, summary, n_errors, meta["totals"])


def merge_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Combine the finished shards of one TMGBench run into `out` (see `stratbench merge`): the
    shards' records in the unsharded order, then the summary, grids and heat maps computed from all
    of them exactly as an unsharded run computes them. Complex-form runs merge their tasks."""
    metas = [json.loads((f / "run.json").read_text()) for f in folders]
    saved = dict(metas[0]["config"], shard=None)
    if saved.get("form", "atomic") != "atomic":
        from stratbench.suites.tmgbench.complex_run import merge_complex_shards

        return merge_complex_shards(folders, out)
    config = TmgbenchConfig(**{k: v for k, v in saved.items() if k in TmgbenchConfig.__annotations__})
    summaries = []
    for f in folders:
        if not (f / "summary.json").is_file():
            raise InputError(f"{f}: no summary.json; finish the shard with --resume {f}")
        summaries.append(json.loads((f / "summary.json").read_text()))
    first = summaries[0]
    for f, sm in zip(folders, summaries):
        for k in ("player", "policy", "repeats"):
            if sm.get(k) != first.get(k):
                raise InputError(f"{f}: summary.json has {k}={sm.get(k)!r}, {folders[0]} has {first.get(k)!r}")
    records = [r for f in folders for r in read_jsonl(f / "answers.jsonl")]
    records.sort(key=_record_order)
    keys = [(r["game_id"], r.get("variant", 0), r["repeat"]) for r in records]
    if len(set(keys)) != len(keys):
        raise InputError(f"the shards hold {len(keys) - len(set(keys))} answers twice; "
                         "merge each shard of one run once")
    if config.setting == "classic":
        want = {(g.id, 0, t) for g in selected_games(config) for t in range(int(first["repeats"]))}
        if set(keys) != want:
            raise InputError(f"the shards hold {len(set(keys) & want)} of the run's {len(want)} answers; "
                             "merge all shards of one run, each after it has finished")
    write_jsonl_atomic(out / "answers.jsonl", records)
    return _write_outputs(out, records, config, first["player"], first["policy"], int(first["repeats"]))
