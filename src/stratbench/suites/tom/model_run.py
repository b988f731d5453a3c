"""`stratbench tom run`: a language model plays repeated games against a scripted partner.

Strategies (``--prompting``): LM (log-probabilities of the action tokens after "A: Option", with
prefix reuse) and the paper's text-generation strategies (QA, CoT, CoT3, Social, SocialLM,
PlansInsights, Reflexion, Oracle, OracleMax, S2A, S2ACoT; :mod:`gen_episodes`), each with the ablations
``--no-history`` / ``--no-payoffs``, a label set (``--labels``) and literal-ToM prompts asked after
(``--tom-variant agent_first``) or before (``partner_first``) the agent acts.

Folder: ``run.json``, ``rounds.jsonl`` (one record per round, ids ``episode``/``t``, written an
episode at a time), ``summary.json`` and ``regret_curve.png`` - the summary is computed from the
records by :func:`results.summarize_rounds`. ``--resume`` keeps finished episodes (complete, or
stopped by a parse failure) and runs the rest again, errored ones included. ``--shard i/n`` plays
the episodes whose index e has ``e % n == i - 1``, episode e always with seed ``derive_seed(seed,
e)``, so ``stratbench merge`` of all shards equals the unsharded run record for record (timing and
cache-hit fields aside).

Model calls: LM prompting runs episodes one after another on a prefix-reusing backend without the
response cache (the cache would not save anything the prefix reuse does not, and each round's
prompt is new). Generation strategies go through the response cache (``--no-cache`` to bypass):
their prompts are deterministic given the history and every call carries its own seed and sample
index, so a re-run or resumed run replays finished calls for free, even at temperature > 0.
Episodes of generation strategies run concurrently (``--max-concurrency``), which helps API
backends; local backends serialise calls anyway.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import (
    JsonlWriter,
    read_jsonl,
    write_json_atomic,
    write_jsonl_atomic,
)
from stratbench.runner.shard import as_shard, shard_tag
from stratbench.seeding import derive_seed
from stratbench.suites.tom.strategies import PROMPTINGS, normalize_prompting  # noqa: F401 (re-export)


@dataclass
class TomRunConfig:
    """Everything `tom run` needs; stored as run.json's ``config``."""

    model: str = "embedded"
    game: str = "rps"
    partner: str = "single_action"
    prompting: str = "LM"
    rounds: int = 100
    episodes: int = 1
    seed: int = 0
    label_set: str = "neutral"
    predict: bool = True
    tom_variant: str = "agent_first"
    history: bool = True
    payoffs: bool = True
    chat: bool | None = None  # None: chat for openai: specs, completion-style prompts otherwise
    temperature: float = 0.7
    max_tokens: int = 384
    max_tries: int = 3
    memory: int = 1
    keep_prompts: bool = False
    shard: Any = None
    base_url: str | None = None
    max_concurrency: int = 8
    no_cache: bool = False
    output_dir: str = "results"

    def resolve(self) -> TomRunConfig:
        """Validate and fill defaults (canonical strategy name, chat mode, shard as JSON)."""
        from stratbench.models import split_spec
        from stratbench.suites.tom.games import get_game
        from stratbench.suites.tom.partners import make_partner
        from stratbench.suites.tom.prompts import TOM_VARIANTS

        self.prompting = normalize_prompting(self.prompting)
        g = get_game(self.game)
        self.game = g.name
        make_partner(self.partner, g)
        g.action_labels(self.label_set)
        if self.rounds < 1 or self.episodes < 1:
            raise InputError("--rounds and --episodes must be at least 1")
        if self.tom_variant not in TOM_VARIANTS:
            raise InputError(f"--tom-variant must be one of {', '.join(TOM_VARIANTS)}, got {self.tom_variant!r}")
        if self.max_concurrency < 1:
            raise InputError("--max-concurrency must be at least 1")
        kind, _ = split_spec(self.model)
        if self.chat is None:
            self.chat = kind == "openai"
        if self.chat and kind in ("embedded", "gguf"):
            raise InputError(f"{self.model}: raw GGUF models have no chat template; drop --chat")
        sh = as_shard(self.shard)
        if sh.count > self.episodes:
            raise InputError(f"--shard {sh}: more shards than episodes ({self.episodes})")
        self.shard = sh.to_json()
        if self.prompting != "LM":
            self.gen_settings()  # validates the generation settings
        return self

    def gen_settings(self) -> Any:
        from stratbench.suites.tom.gen_episodes import GenSettings

        return GenSettings(prompting=self.prompting, label_set=self.label_set, predict=self.predict,
                           tom_variant=self.tom_variant, history=self.history, payoffs=self.payoffs,
                           chat=bool(self.chat), temperature=self.temperature, max_tries=self.max_tries,
                           max_tokens=self.max_tokens, memory=self.memory, keep_prompts=self.keep_prompts)


def _load_resume(folder: Path) -> tuple[dict[str, Any], TomRunConfig]:
    try:
        meta = json.loads((folder / "run.json").read_text())
        saved = meta["config"]
        if meta.get("suite") != "tom" or "prompting" not in saved:
            raise KeyError
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"--resume {folder}: not a tom run folder") from None
    known = {f.name for f in fields(TomRunConfig)}
    return meta, TomRunConfig(**{k: v for k, v in saved.items() if k in known})


def finished_episodes(records: list[dict[str, Any]], rounds: int) -> set[int]:
    """Episodes a resumed run keeps: complete, or stopped by a parse failure (a model error is
    retried)."""
    from stratbench.suites.tom.results import episode_groups, episode_status

    return {e for e, rs in episode_groups(records).items() if episode_status(rs, rounds) in ("complete", "parse_failed")}


def write_run_outputs(folder: Path, records: list[dict[str, Any]], config: dict[str, Any],
                      shard: str | None = None) -> dict[str, Any]:
    """summary.json and regret_curve.png from the round records (used by the run and the merge)."""
    from stratbench.suites.tom.results import plot_curves, summarize_rounds

    summary, curve = summarize_rounds(records, config)
    if shard:
        summary["shard"] = shard
    write_json_atomic(folder / "summary.json", summary)
    name = f"{config['game']}/{config['partner']} ({config.get('prompting', 'LM')})"
    plot_curves({name: curve} if curve else {}, folder / "regret_curve.png",
                f"{config.get('model')}: regret per step")
    return summary


def run_tom_model(config: TomRunConfig, resume: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Run (or resume) `tom run`; returns the folder and the summary."""
    from stratbench.models import open_model
    from stratbench.models import ModelOptions
    from stratbench.suites.tom.results import ROUNDS_FILE, canonical_rounds

    if resume:
        folder = Path(resume)
        meta, saved = _load_resume(folder)
        if config.shard is not None and as_shard(config.shard) != as_shard(saved.shard):
            raise InputError(f"--resume {folder}: the folder is shard {as_shard(saved.shard)}, not {config.shard}")
        saved.max_concurrency, saved.base_url = config.max_concurrency, config.base_url or saved.base_url
        saved.no_cache = config.no_cache
        config = saved.resolve()
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    else:
        config.resolve()
        folder = create_run_folder(config.output_dir, "tom", tag=shard_tag(as_shard(config.shard))).path
        meta = run_metadata("tom", asdict(config), kind="run")
    lm = config.prompting == "LM"
    opts = ModelOptions(prefix_reuse=lm, base_url=config.base_url, max_concurrency=config.max_concurrency,
                        chat=bool(config.chat))
    model = open_model(config.model, opts, no_cache=lm or config.no_cache)
    meta["agent"] = {"name": config.model, "policy": "logprob" if lm else "generate",
                     "model": model.describe()}
    write_json_atomic(folder / "run.json", meta)

    path = folder / ROUNDS_FILE
    prev = read_jsonl(path, repair=True)
    done = finished_episodes(prev, config.rounds)
    kept = [r for r in prev if r["episode"] in done]
    if len(kept) != len(prev):
        write_jsonl_atomic(path, kept)
    shard = as_shard(config.shard)
    todo = [e for e in shard.select(list(range(config.episodes))) if e not in done]

    async def play(e: int) -> dict[str, Any]:
        seed = derive_seed(config.seed, e)
        if lm:
            from stratbench.suites.tom.episodes import arun_lm_episode

            return await arun_lm_episode(model, config.game, config.partner, config.rounds, seed,
                                         label_set=config.label_set, predict=config.predict,
                                         tom_variant=config.tom_variant, keep_prompts=config.keep_prompts,
                                         history=config.history, payoffs=config.payoffs)
        from stratbench.suites.tom.gen_episodes import arun_gen_episode

        return await arun_gen_episode(model, config.game, config.partner, config.rounds, seed,
                                      config.gen_settings())

    async def main() -> None:
        from stratbench.runner.pool import run_pool

        try:
            with JsonlWriter(path) as w:
                def write(e: int, ep: dict[str, Any]) -> None:
                    for r in ep["records"]:
                        w.write({"episode": e, "game": config.game, "partner": config.partner,
                                 "prompting": config.prompting, "initial_state": ep["initial_state"], **r})

                await run_pool(todo, play, 1 if lm else config.max_concurrency, write)
        finally:
            await model.aclose()

    asyncio.run(main())
    records = canonical_rounds(read_jsonl(path))
    write_jsonl_atomic(path, records)  # episodes finish in any order under concurrency
    cfg = asdict(config)
    summary = write_run_outputs(folder, records, cfg, None if shard.whole else str(shard))
    usage = model.usage.as_dict()
    meta.update(end_time=now_iso(), status="finished", totals={
        "records": len(records), "episodes": summary["n_episodes_run"], "complete_episodes": summary["n_episodes"],
        "parse_failed_episodes": summary["n_parse_failed_episodes"],
        "errors": summary["n_error_episodes"], "tokens_evaluated": summary["tokens_evaluated"],
        "tokens_generated": summary["tokens_generated"], **{f"model_{k}": v for k, v in usage.items()},
    })
    write_json_atomic(folder / "run.json", meta)
    return folder, summary
