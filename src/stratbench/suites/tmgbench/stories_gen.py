"""Story generation for TMGBench's story-based setting.

Any configured model is asked, with the paper's generation prompt and a topic, to write a story for
a classic game. A story is accepted only if it parses and its payoff matrix *equals* the classic
game's — the paper relied on GPT-4o getting this right; here it is checked. Every attempt is
recorded (accepted, mismatch, unparseable, call error) in `generation.jsonl`; accepted stories are
written as `story-based/{id}_{k}.txt` in the paper's file format. A run is a :class:`StoryGenPlan`
executed by the shared lifecycle; an interrupted generation is finished with `--resume FOLDER`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratbench.errors import GameFormatError, InputError
from stratbench.models.base import GenerateRequest, LanguageModel
from stratbench.players.replies import no_answer
from stratbench.players.runtime import RuntimeOptions
from stratbench.runner.jsonl import write_atomic, write_json_atomic
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    Progress,
    RunPlan,
    RunResult,
    Stream,
    check_meta,
    execute,
    rebuild_config,
)
from stratbench.runner.schema import Record, RunMeta
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.suites.tmgbench.config import selected_games
from stratbench.suites.tmgbench.games import RGGame, game_by_id
from stratbench.suites.tmgbench.prompts import STORY_TOPICS, generation_prompt
from stratbench.suites.tmgbench.records import StoriesSummary, StoryAttemptRecord
from stratbench.suites.tmgbench.stories import format_story, load_story_dir, parse_story, verify_story

__all__ = ["StoryGenConfig", "StoryGenPlan", "generate_stories", "verify_story_dir"]

GENERATION = "generation.jsonl"
STORY_DIR = "story-based"


@dataclass
class StoryGenConfig(RuntimeOptions):
    """`tmgbench stories generate`; how its model runs: `RuntimeOptions` (no chat template: a story is
    generated, never scored)."""

    model: str | None = None
    games: str | None = None  # comma-separated ids; default all 144
    variants: int = 5
    topics: str | None = None  # comma-separated; default the paper's named topics
    max_attempts: int = 3
    seed: int | None = None
    max_tokens: int = 2048
    chat: bool = False  # send the generation prompt as a user message (the model's chat template)
    output_dir: str = "results"


async def _write_story(model: LanguageModel, c: StoryGenConfig, g: RGGame, k: int, topic: str,
                       out_dir: Path) -> list[StoryAttemptRecord]:
    """Story ``k`` of game ``g``: up to ``max_attempts`` generations, stopping at the first whose
    matrix is the game's (written to ``out_dir``); one record per attempt."""
    prompt = generation_prompt(g.payoff_A, g.payoff_B, topic)
    attempts: list[StoryAttemptRecord] = []
    for a in range(c.max_attempts):
        (res,) = await model.generate([GenerateRequest(
            prompt, max_tokens=c.max_tokens, temperature=c.temperature,
            seed=derive_seed(c.seed or 0, int(g.id), k), sample_index=a, chat=c.chat)])
        rec = StoryAttemptRecord(game_id=g.id, variant=k, attempt=a, topic=topic, raw_response=res.text,
                                 status="error", error=res.error, finish_reason=res.finish_reason)
        if res.rendered is not None:
            rec["rendered_prompt"] = res.rendered
        if res.reasoning is not None:  # a reasoning model's thinking, apart from the story
            rec["reasoning"] = res.reasoning
        if res.ok and (cut := no_answer(res)) is not None:  # cut inside its thinking: no story
            rec["status"], rec["error"] = "parse_failed", cut
        elif res.ok:
            try:
                story = parse_story(res.text or "", g.id, k)
            except GameFormatError as e:
                rec["status"], rec["error"] = "parse_failed", str(e)
            else:
                problems = verify_story(story, g.payoff_A, g.payoff_B)
                if problems:
                    rec["status"], rec["error"] = "rejected", "; ".join(problems)
                else:
                    path = out_dir / f"{g.id}_{k}.txt"
                    write_atomic(path, format_story(story))
                    del rec["error"]
                    rec["status"], rec["path"] = "accepted", str(path)
        attempts.append(rec)
        if rec["status"] == "accepted":
            break
    return attempts


class StoryGenPlan(RunPlan):
    """Generate `variants` stories for each selected game, as the lifecycle runs it."""

    suite = "tmgbench-stories"
    kind = "stories"

    def __init__(self, config: StoryGenConfig) -> None:
        self.config = config
        self.spec = (config.model or "embedded").strip()
        self.topics: list[str] = []
        self.games: list[RGGame] = []
        self.model: LanguageModel | None = None
        self.out_dir: Path | None = None

    def prepare(self) -> None:
        c = self.config
        if c.variants < 1 or c.max_attempts < 1:
            raise InputError("--variants and --max-attempts must be at least 1")
        self._select()
        if c.seed is None:
            c.seed = fresh_seed()

    def _select(self) -> None:
        c = self.config
        self.topics = [t.strip() for t in c.topics.split(",")] if c.topics else list(STORY_TOPICS)
        if not all(self.topics):
            raise InputError("--topics: empty topic name")
        self.games = selected_games(c.games)

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_meta(meta, folder, "tmgbench-stories", ("stories",))
        self.config.check_runtime()
        self.config = rebuild_config(StoryGenConfig, meta["config"], given=self.config)
        self.spec = (self.config.model or "embedded").strip()
        self._select()
        self.out_dir = folder / STORY_DIR
        self.out_dir.mkdir(exist_ok=True)

    def open(self) -> None:

        c = self.config
        self.model = c.open_model(self.spec, chat=c.chat or None)
        if c.chat:
            self.model.check_chat()  # one line for a model without a chat template

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "stories")

    def config_json(self) -> dict[str, Any]:
        return {**self.config.to_json(), "player": self.spec}

    def write_inputs(self, folder: Path) -> None:
        self.out_dir = folder / STORY_DIR
        self.out_dir.mkdir()

    def update_meta(self, meta: RunMeta, new: bool) -> None:
        assert self.model is not None
        meta["agent"] = self.model.describe()

    def streams(self) -> list[Stream[Any]]:
        c, model, out_dir, topics = self.config, self.model, self.out_dir, self.topics
        assert model is not None and out_dir is not None
        order = {g.id: i for i, g in enumerate(self.games)}

        async def work(unit: tuple[RGGame, int]) -> list[Record]:
            g, k = unit
            return [dict(r) for r in await _write_story(model, c, g, k, topics[k % len(topics)], out_dir)]

        return [Stream(GENERATION, [(g, k) for g in self.games for k in range(c.variants)], work,
                       unit_key=lambda u: (u[0].id, u[1]), record_unit=lambda r: (r["game_id"], r["variant"]),
                       sort_key=lambda r: (order[r["game_id"]], r["variant"], r["attempt"]),
                       concurrency=c.max_concurrency, label="stories", unit_name="stories",
                       record_key=lambda r: (r["game_id"], r["variant"], r["attempt"]),
                       record_schema=StoryAttemptRecord)]

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        recs = records[GENERATION]
        n_requested = len(self.games) * self.config.variants
        counts = {s: sum(r["status"] == s for r in recs) for s in ("accepted", "rejected", "parse_failed", "error")}
        summary = StoriesSummary(n_requested=n_requested, n_accepted=counts["accepted"],
                                 acceptance_rate=counts["accepted"] / n_requested, attempts=len(recs),
                                 attempt_status_counts=counts, stories_dir=str(folder / STORY_DIR))
        write_json_atomic(folder / "summary.json", summary)
        # rejected and unparseable stories are outcomes of the experiment; failed calls are errors
        # (exit code 1, and --resume tries those stories again)
        return Outcome({"": dict(summary)}, counts["error"])

    def usage(self) -> dict[str, Any]:
        return self.model.usage.as_dict() if self.model is not None else {"calls": 0}

    async def aclose(self) -> None:
        if self.model is not None:
            await self.model.aclose()


def generate_stories(config: StoryGenConfig, progress: Progress | None = None,
                     resume_dir: str | Path | None = None) -> RunResult:
    """Generate story files with a model (or, with `resume_dir`, finish an interrupted generation);
    writes generation.jsonl, summary.json and story-based/."""
    return execute(StoryGenPlan(config), progress, resume_dir)


def verify_story_dir(directory: str) -> list[tuple[str, list[str]]]:
    """(file, problems) for every story file in `directory`, checked against its classic game."""
    out = []
    for story in load_story_dir(directory):
        try:
            g = game_by_id(story.game_id)
        except KeyError:
            out.append((str(story.path), [f"unknown game id {story.game_id}"]))
            continue
        out.append((str(story.path), verify_story(story, g.payoff_A, g.payoff_B)))
    return out
