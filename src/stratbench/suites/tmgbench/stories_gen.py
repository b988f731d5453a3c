"""Story generation for TMGBench's story-based setting.

Any configured model is asked, with the paper's generation prompt and a topic, to write a story for
a classic game. A story is accepted only if it parses and its payoff matrix *equals* the classic
game's — the paper relied on GPT-4o getting this right; here it is checked. Every attempt is
recorded (accepted, mismatch, unparseable, call error) in `generation.jsonl`; accepted stories are
written as `story-based/{id}_{k}.txt` in the paper's file format.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stratbench.errors import GameFormatError, InputError
from stratbench.runner.folders import create_run_folder, now_iso, run_metadata
from stratbench.runner.jsonl import JsonlWriter, write_json_atomic
from stratbench.runner.pool import run_pool
from stratbench.seeding import derive_seed, fresh_seed


@dataclass
class StoryGenConfig:
    model: str | None = None
    games: str | None = None  # comma-separated ids; default all 144
    variants: int = 5
    topics: str | None = None  # comma-separated; default the paper's named topics
    max_attempts: int = 3
    seed: int | None = None
    temperature: float = 1.0
    max_tokens: int = 2048
    chat: bool = False
    base_url: str | None = None
    no_cache: bool = False
    max_concurrency: int = 8
    output_dir: str = "results"


@dataclass
class StoryGenResult:
    folder: Path
    summary: dict[str, Any]


def generate_stories(config: StoryGenConfig, progress: Any | None = None) -> StoryGenResult:
    from stratbench.models import open_model
    from stratbench.games.tmgbench_stories import format_story, parse_story, verify_story
    from stratbench.models.base import GenerateRequest
    from stratbench.models import ModelOptions
    from stratbench.prompts.tmgbench import STORY_TOPICS, generation_prompt
    from stratbench.suites.tmgbench.run import TmgbenchConfig, selected_games

    if config.variants < 1 or config.max_attempts < 1:
        raise InputError("--variants and --max-attempts must be at least 1")
    topics = [t.strip() for t in config.topics.split(",")] if config.topics else list(STORY_TOPICS)
    if not all(topics):
        raise InputError("--topics: empty topic name")
    games = selected_games(TmgbenchConfig(games=config.games))
    spec = (config.model or "embedded").strip()
    if config.seed is None:
        config.seed = fresh_seed()
    model = open_model(spec, ModelOptions(base_url=config.base_url, max_concurrency=config.max_concurrency,
                                          chat=config.chat or None), no_cache=config.no_cache)
    folder = create_run_folder(config.output_dir, "stories").path
    out_dir = folder / "story-based"
    out_dir.mkdir()
    meta = run_metadata("tmgbench-stories", {**asdict(config), "player": spec}, kind="stories")
    meta["agent"] = model.describe()
    write_json_atomic(folder / "run.json", meta)
    units = [(g, k) for g in games for k in range(config.variants)]
    task = progress.add_task("stories", total=len(units)) if progress else None

    async def one(unit: tuple[Any, int]) -> list[dict[str, Any]]:
        g, k = unit
        topic = topics[k % len(topics)]
        prompt = generation_prompt(g.payoff_A, g.payoff_B, topic)
        attempts: list[dict[str, Any]] = []
        for a in range(config.max_attempts):
            (res,) = await model.generate([GenerateRequest(
                prompt, max_tokens=config.max_tokens, temperature=config.temperature,
                seed=derive_seed(config.seed or 0, int(g.id), k), sample_index=a, chat=config.chat)])
            rec: dict[str, Any] = {"game_id": g.id, "variant": k, "attempt": a, "topic": topic,
                                   "raw_response": res.text}
            if not res.ok:
                rec.update(status="error", error=res.error)
            else:
                try:
                    story = parse_story(res.text or "", g.id, k)
                except GameFormatError as e:
                    rec.update(status="parse_failed", error=str(e))
                else:
                    problems = verify_story(story, g.payoff_A, g.payoff_B)
                    if problems:
                        rec.update(status="rejected", error="; ".join(problems))
                    else:
                        path = out_dir / f"{g.id}_{k}.txt"
                        path.write_text(format_story(story))
                        rec.update(status="accepted", path=str(path))
            attempts.append(rec)
            if rec["status"] == "accepted":
                break
        return attempts

    async def main() -> None:
        with JsonlWriter(folder / "generation.jsonl") as writer:
            def on_result(_: Any, recs: list[dict[str, Any]]) -> None:
                for r in recs:
                    writer.write(r)
                if progress is not None:
                    progress.advance(task)

            try:
                await run_pool(units, one, config.max_concurrency, on_result)
            finally:
                await model.aclose()

    asyncio.run(main())
    from stratbench.runner.jsonl import read_jsonl

    recs = read_jsonl(folder / "generation.jsonl")
    counts = {s: sum(r["status"] == s for r in recs) for s in ("accepted", "rejected", "parse_failed", "error")}
    summary = {"n_requested": len(units), "n_accepted": counts["accepted"],
               "acceptance_rate": counts["accepted"] / len(units), "attempts": len(recs),
               "attempt_status_counts": counts, "stories_dir": str(out_dir)}
    write_json_atomic(folder / "summary.json", summary)
    meta.update(end_time=now_iso(), status="finished",
                totals={f"model_{k}": v for k, v in model.usage.as_dict().items()})
    write_json_atomic(folder / "run.json", meta)
    return StoryGenResult(folder, summary)


def verify_story_dir(directory: str) -> list[tuple[str, list[str]]]:
    """(file, problems) for every story file in `directory`, checked against its classic game."""
    from stratbench.games.robinson_goforth import game_by_id
    from stratbench.games.tmgbench_stories import load_story_dir, verify_story

    out = []
    for story in load_story_dir(directory):
        try:
            g = game_by_id(story.game_id)
        except KeyError:
            out.append((str(story.path), [f"unknown game id {story.game_id}"]))
            continue
        out.append((str(story.path), verify_story(story, g.payoff_A, g.payoff_B)))
    return out
