"""Running TMGBench's complex forms (sequential, parallel, nested) for one player.

Tasks are sampled reproducibly (`complex.sample_tasks`); each task is one work unit and one record
in `tasks.jsonl`, streamed and resumable like every run (a :class:`ComplexPlan` executed by the
shared lifecycle). Complex forms need written answers, so model players use sampled generations
(log-prob scoring covers atomic DA tasks only); the reference players `oracle` and `empty` answer
exactly.

A sequential task's history — earlier games and the model's own replies — is sent as real
user/assistant turns with `--chat` (rendered by the model's chat template, or a chat endpoint's
messages); a raw model (no `--chat`) reads it as a plain transcript ("User:" / "Assistant:")
ending where its next reply goes. The record keeps the last call's rendered prompt with `--chat`
(it holds the whole conversation), every reply's finish reason, and whether the answers were
written in the requested format (`parse`: strict or flexible, as atomic answers).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, cast

from stratbench.checks import Ints, Rule
from stratbench.errors import InputError
from stratbench.models.base import GenerateRequest, LanguageModel
from stratbench.players.runtime import WHEN_SET
from stratbench.runner.folders import read_run_json
from stratbench.runner.jsonl import first_record, write_json_atomic
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
from stratbench.runner.shard import shard_tag
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.suites.tmgbench.complex import (
    PAPER_K,
    ComplexTask,
    complex_messages,
    parse_complex_answer_detail,
    sample_tasks,
    score_complex,
    summarise_complex,
)
from stratbench.suites.tmgbench.config import (
    SUITE,
    TmgbenchConfig,
    check_resume_shard,
    refuse_repeated_units,
    shard_units,
)
from stratbench.suites.tmgbench.records import TaskRecord

__all__ = ["COMPLEX_SCRIPTED", "ComplexConfig", "ComplexPlan", "merge_complex", "run_complex"]

COMPLEX_SCRIPTED = ("oracle", "empty")
TASKS = "tasks.jsonl"


@dataclass
class ComplexConfig(TmgbenchConfig):
    """A complex-form run: TMGBench's settings plus the games per task and the number of tasks."""

    k: int | None = None  # games per task (default 3; nested: 2)
    num_tasks: int = 50

    FIELD_RULES: ClassVar[dict[str, Rule]] = {"k": Ints(1, 144)}  # a task's games are distinct


def as_complex(config: TmgbenchConfig, k: int | None = None, num_tasks: int | None = None) -> ComplexConfig:
    """A complex-form config from TMGBench settings; ``k`` / ``num_tasks`` given here win."""
    if isinstance(config, ComplexConfig) and k is None and num_tasks is None:
        return config
    base = {f.name: getattr(config, f.name) for f in fields(TmgbenchConfig)}
    return ComplexConfig(**base, k=k if k is not None else getattr(config, "k", None),
                         num_tasks=num_tasks if num_tasks is not None else getattr(config, "num_tasks", 50))


def _transcript(messages: list[dict[str, str]]) -> tuple[str | None, str]:
    """(system, prompt): a single-turn task is its user message; a multi-turn history becomes a
    plain transcript ending where the assistant's next reply goes."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    turns = [m for m in messages if m["role"] != "system"]
    if len(turns) == 1:
        return system, turns[0]["content"]
    lines = [f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in turns]
    return system, "\n\n".join(lines) + "\n\nAssistant:"


async def _run_task(model: LanguageModel | None, spec: str, config: TmgbenchConfig, task: ComplexTask) -> TaskRecord:
    rec: dict[str, Any] = {"task_index": task.index, "player": spec, "prompting": config.prompting,
                           **{f"task_{k}": v for k, v in task.to_json().items()}}
    t0 = time.perf_counter()
    if model is None:
        answers = task.expected if spec == "oracle" else [frozenset()] * task.n_answers
        rec.update(status="ok", **score_complex(task, answers))
    else:
        replies: list[str] = []
        finish: list[str | None] = []
        thoughts: list[str | None] = []  # reasoning models' thinking, one per reply
        steps = task.k if task.form == "sequential" else 1
        for step in range(steps):
            msgs = complex_messages(task, config.prompting, replies)
            system, prompt = _transcript(msgs)
            history: tuple[tuple[str, str], ...] = ()
            if not config.chat and system:
                prompt = f"{system}\n\n{prompt}"
                system = None
            elif config.chat and len(msgs) > 2:  # earlier games and replies as real turns
                history = tuple((m["role"], m["content"]) for m in msgs)
            (res,) = await model.generate([GenerateRequest(
                prompt, max_tokens=config.max_tokens, temperature=config.temperature,
                seed=derive_seed(config.seed or 0, task.index), sample_index=step,
                chat=config.chat, system=system, messages=history)])
            finish.append(res.finish_reason)
            if res.rendered is not None:
                rec["rendered_prompt"] = res.rendered
            if not res.ok:
                rec.update(status="error", error=res.error, raw_responses=replies, finish_reasons=finish)
                rec["latency_s"] = time.perf_counter() - t0
                return cast(TaskRecord, rec)
            replies.append(res.text or "")
            thoughts.append(res.reasoning)
        detail = parse_complex_answer_detail(replies if task.form == "sequential" else replies[0], task)
        rec["raw_responses"] = replies
        rec["finish_reasons"] = finish
        if any(t is not None for t in thoughts):
            rec["reasonings"] = thoughts
        if any(not p.ok for p in detail):
            rec.update(status="parse_failed", **score_complex(task, None))
        else:
            cut = "length" in finish
            strict = all(p.strict for p in detail) and not cut
            rec.update(status="parsed", **score_complex(task, [p.cells for p in detail]),
                       parse="strict" if strict else "flexible")
            if not strict:
                notes = list(dict.fromkeys(p.note for p in detail if p.note)) + (["cut at the token limit"] if cut else [])
                rec["parse_note"] = "; ".join(notes)
    rec["latency_s"] = time.perf_counter() - t0
    return cast(TaskRecord, _jsonable(rec))


def _jsonable(x: Any) -> Any:
    if isinstance(x, (frozenset, set)):
        return sorted(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def _strict_keys(scored: list[Record]) -> dict[str, Any]:
    """A model's tasks: `strict_parse_rate`, `flexible_parse_rate` (shares of the tasks that are not
    errors) and `strict_accuracy_pct`, the accuracy with flexible answers counted as failures.
    Nothing for scripted players or records written before answers said how they were parsed."""
    answered = [r for r in scored if r["status"] in ("parsed", "parse_failed")]
    if not answered or any(r["status"] == "parsed" and r.get("parse") not in ("strict", "flexible") for r in answered):
        return {}
    n = len(answered)
    strict = [r.get("parse") == "strict" for r in answered]
    return {"strict_parse_rate": sum(strict) / n,
            "flexible_parse_rate": sum(r.get("parse") == "flexible" for r in answered) / n,
            "strict_accuracy_pct": 100.0 * sum(bool(r.get("correct")) and s for r, s in zip(answered, strict)) / n}


class ComplexPlan(RunPlan):
    """One complex-form run (or shard) for one player, as the lifecycle runs it."""

    suite = SUITE
    kind = "complex"

    def __init__(self, config: ComplexConfig) -> None:
        self.config = config
        self.tasks: list[ComplexTask] = []
        self.model: LanguageModel | None = None

    # -- before any folder exists -----------------------------------------------------------------
    def prepare(self) -> None:
        c = self.config
        c.validate()  # the shared checks (flags' values, --k and --num-tasks included)
        if c.form not in PAPER_K:
            raise InputError(f"unknown --form {c.form!r}")
        c.k = c.k or (2 if c.form == "nested" else 3)
        if c.seed is None:
            if not c.shard_spec.whole:
                raise InputError(f"--shard {c.shard_spec} needs --seed: every shard must sample the same tasks")
            c.seed = fresh_seed()
        c.shard = c.shard_spec.to_json()
        self._build()

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        check_meta(meta, folder, SUITE, (self.kind,))
        given = self.config
        given.check_runtime()
        self.config = rebuild_config(ComplexConfig, meta["config"], given=self.config)  # shard included
        check_resume_shard(given.shard, self.config.shard_spec, str(folder))
        check_form(self.config, folder)
        self._build()

    def _build(self, shard: bool = True) -> None:
        """The run's tasks (this shard's, each keeping its unsharded index and seed); refusals of
        players that cannot answer complex tasks."""
        c = self.config
        if c.policy in ("logprob", "choice"):
            raise InputError("complex forms need written answers: use --policy sample")
        try:
            tasks = sample_tasks(c.form, c.k, c.num_tasks, c.seed or 0)  # type: ignore[arg-type]
        except ValueError as e:
            raise InputError(f"--form {c.form} --k {c.k}: {e}") from None
        self.tasks = shard_units(c.shard_spec, tasks, "tasks") if shard else tasks
        if c.player == "uniform":
            raise InputError("the uniform reference player has no complex-form answers; use oracle or empty")

    def open(self) -> None:
        c = self.config
        if c.player not in COMPLEX_SCRIPTED:

            self.model = c.open_model(c.player, chat=c.chat or None)
            if c.chat:
                self.model.check_chat()  # one line for a model without a chat template

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, f"tmgbench_{self.config.form}", tag=shard_tag(self.config.shard_spec))

    def config_json(self) -> dict[str, Any]:
        # (every field, chat_template even when None, as run.json always held it; the later optional
        # fields only when set: players.runtime.WHEN_SET)
        return {**{k: v for k, v in asdict(self.config).items() if k == "chat_template" or k not in WHEN_SET
                   or v is not None}, "player": self.config.player}

    # -- writing ----------------------------------------------------------------------------------
    def update_meta(self, meta: RunMeta, new: bool) -> None:
        if new:
            meta["agent"] = {"name": self.config.player, "policy": "scripted" if self.model is None else "sample",
                             **({"model": self.model.describe()} if self.model is not None else {})}

    def streams(self) -> list[Stream[Any]]:
        model, spec, config = self.model, self.config.player, self.config

        async def work(task: ComplexTask) -> Record:
            try:
                return dict(await _run_task(model, spec, config, task))
            except Exception as exc:  # recorded, never hidden
                return {"task_index": task.index, "player": spec, "status": "error",
                        "error": f"{type(exc).__name__}: {exc}"}

        tasks = {t.index: t for t in self.tasks}
        return [Stream(TASKS, self.tasks, work, unit_key=lambda t: t.index, record_unit=lambda r: r["task_index"],
                       sort_key=lambda r: r["task_index"], concurrency=config.max_concurrency, label=config.form,
                       unit_name="tasks", record_key=lambda r: r["task_index"], record_schema=TaskRecord,
                       record_problem=lambda r: task_problem(r, tasks, spec, config.prompting))]

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        """summary.json of a complex-form run; shared by a run and by merging its shards."""
        c, recs = self.config, records[TASKS]
        scored = [r for r in recs if r["status"] != "error"]
        summary: dict[str, Any] = summarise_complex(scored) if scored else {"n_tasks": 0}
        summary.update(_strict_keys(scored))
        n_errors = len(recs) - len(scored)
        summary.update(form=c.form, k=c.k, player=c.player, error_rate=n_errors / len(recs) if recs else 0.0)
        if not c.shard_spec.whole:
            summary["shard"] = str(c.shard_spec)
        write_json_atomic(folder / "summary.json", summary)
        return Outcome({"": summary}, n_errors)

    def usage(self) -> dict[str, Any]:
        return self.model.usage.as_dict() if self.model is not None else {"calls": 0}

    async def aclose(self) -> None:
        if self.model is not None:
            await self.model.aclose()

    # -- merging ----------------------------------------------------------------------------------
    @classmethod
    def for_merge(cls, folders: list[Path]) -> ComplexPlan:
        """The unsharded run whose shards are ``folders``: every sampled task (no model opened)."""
        plan = cls(rebuild_config(ComplexConfig, read_run_json(folders[0])["config"], shard=None))
        for f in folders:
            check_form(plan.config, f)
        plan._build(shard=False)
        return plan


def complex_plan(folder: Path) -> ComplexPlan:
    """The complex-form run (or shard) in ``folder`` as its run.json plans it, no model opened:
    its streams check the tasks read back (compare, the report)."""
    plan = ComplexPlan(rebuild_config(ComplexConfig, read_run_json(folder)["config"]))
    check_form(plan.config, folder)
    plan._build()
    return plan


def check_form(config: ComplexConfig, folder: Path) -> None:
    """InputError naming run.json when its config's form (or games per task) is not the one its
    tasks were sampled for (the first task record says): run.json was edited, and its tasks would
    otherwise be blamed, or a resume sample other tasks beside them."""
    if config.form not in PAPER_K:
        raise InputError(f"{folder}/run.json: config.form is {config.form!r}, but the folder is a complex-form run "
                         "(its kind): run.json was edited; the folder is left as it is")
    first = first_record(folder / TASKS) or {}
    for key, have in (("form", config.form), ("k", config.k)):
        saved = first.get(f"task_{key}")
        if first.get("status") != "error" and saved is not None and have is not None and saved != have:
            raise InputError(f"{folder}/run.json: config.{key} is {have!r}, but its tasks are {key} {saved!r} "
                             "(tasks.jsonl): run.json was edited; the folder is left as it is")


def run_complex(config: TmgbenchConfig, k: int | None = None, num_tasks: int | None = None,
                progress: Progress | None = None, resume_dir: str | Path | None = None) -> RunResult:
    """Run (or finish) one complex-form run; writes tasks.jsonl and summary.json. ``config`` is a
    :class:`ComplexConfig` (or TMGBench settings with ``k`` and ``num_tasks`` given here)."""
    return execute(ComplexPlan(as_complex(config, k, num_tasks)), progress, resume_dir)


def merge_complex(folders: list[Path], out: Path) -> Outcome:
    """Merge the shards of one complex-form run: every sampled task once, in task order, and the
    summary recomputed from all of them."""
    plan = ComplexPlan.for_merge(folders)
    refuse_repeated_units(folders, TASKS, lambda r: r["task_index"], "tasks")
    return merge_streams(plan, folders, out)


def task_problem(rec: Record, tasks: dict[int, ComplexTask], player: str, prompting: str) -> str | None:
    """Why a task record read back cannot be one this run wrote: another player's or prompting's,
    a task definition that is not the planned task's, or a score that is not what its answers get
    (recomputed with `score_complex`: an edited `correct` is no result)."""
    if rec.get("player") != player:
        return f"player {rec.get('player')!r}, but this run's player is {player!r}"
    task = tasks.get(rec.get("task_index"))  # type: ignore[arg-type]
    if task is None or rec.get("status") == "error":
        return None  # (an unknown task is named by the unit check)
    if rec.get("prompting", prompting) != prompting:
        return f"prompting {rec.get('prompting')!r}, but this run's is {prompting!r}"
    for k, v in task.to_json().items():
        if rec.get(f"task_{k}") != v:
            return f"task_{k} {rec.get(f'task_{k}')!r}, but task {task.index} has {v!r}"
    answers = rec.get("answers")
    if not isinstance(answers, list) or len(answers) != task.n_answers or not all(
            a is None or (isinstance(a, list) and all(isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= 4
                                                      for c in a)) for a in answers):
        return f"answers {answers!r} are not {task.n_answers} answers of choices 1-4 (or null)"
    again = score_complex(task, [frozenset(a) if a is not None else None for a in answers])
    defined = task.to_json()
    for k, v in again.items():
        if rec.get(k) != v:
            if k in defined:  # (the task's own definition, not a score)
                return f"{k} {rec.get(k)!r}, but task {task.index} has {v!r}"
            return f"{k} {rec.get(k)!r}, but its answers score {v!r}"
    scripted = player in COMPLEX_SCRIPTED
    allowed = {*_ALWAYS, *(f"task_{k}" for k in defined), *again, *(() if scripted else _MODEL_ONLY)}
    extra = sorted(set(rec) - allowed)
    if extra:
        k = extra[0]
        who = f"{player}, a reference player," if scripted else f"a {task.form} task"
        return f"{k} {_short(rec[k])}, which {who} never writes"
    return _answers_problem(rec, task, player)


#: keys of every scored complex task record (besides its task_* definition and its score)
_ALWAYS = ("task_index", "player", "prompting", "status", "latency_s")
#: keys only a model's task has: what it was asked and replied, and how the replies were read
_MODEL_ONLY = ("raw_responses", "finish_reasons", "reasonings", "parse", "parse_note", "rendered_prompt")


def _short(v: Any) -> str:
    import json

    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _answers_problem(rec: Record, task: ComplexTask, player: str) -> str | None:
    """A reference player's answers are fixed by its task (the oracle's the expected cells, the
    empty player's none); a model's are its replies read again as the run read them: an edited
    answer or status beside the model's own text is no result."""
    answers = rec.get("answers")
    if player in COMPLEX_SCRIPTED:
        want = [sorted(a) for a in task.expected] if player == "oracle" else [[] for _ in range(task.n_answers)]
        if rec.get("status") != "ok" or answers != want:
            return f"answers {answers!r}, but {player} answers {want!r} in task {task.index}"
        return None
    replies = rec.get("raw_responses")
    status = rec.get("status")
    if status == "ok":  # (a model's task is parsed, parse_failed or error: only a reference player's is ok)
        return f"status 'ok', but {player} is a model, whose answers are read from its replies"
    if status not in ("parsed", "parse_failed"):
        return None
    steps = task.k if task.form == "sequential" else 1
    if not isinstance(replies, list) or len(replies) != steps or not all(isinstance(x, str) for x in replies):
        return f"status {status!r} without the {steps} raw_responses it was read from"
    finish = rec.get("finish_reasons")
    if not isinstance(finish, list) or len(finish) != steps or not all(x is None or isinstance(x, str) for x in finish):
        return f"finish_reasons {_short(finish)} are not the {steps} finish reasons of its replies"
    thoughts = rec.get("reasonings")
    if "reasonings" in rec and (not isinstance(thoughts, list) or len(thoughts) != steps
                                or not all(x is None or isinstance(x, str) for x in thoughts)
                                or all(x is None for x in thoughts)):
        return f"reasonings {_short(thoughts)} are not the thinking of its {steps} replies"
    detail = parse_complex_answer_detail(replies if task.form == "sequential" else replies[0], task)
    again = "parsed" if all(p.ok for p in detail) else "parse_failed"
    if status != again:
        return f"status {status!r}, but its raw_responses read as {again} when read again"
    said = [sorted(p.cells or ()) for p in detail]
    if again == "parsed" and answers != said:
        return f"answers {answers!r}, but its raw_responses say {said!r}"
    # how the replies were read: strict when every answer is in the requested format and no reply
    # was cut at the token limit (as the run read them); a flexible read says why
    cut = "length" in finish
    strict = again == "parsed" and all(p.strict for p in detail) and not cut
    parse = None if again != "parsed" else "strict" if strict else "flexible"
    if rec.get("parse") != parse:
        return f"parse {rec.get('parse')!r}, but its raw_responses read as {parse!r} when read again"
    note = None
    if parse == "flexible":
        note = "; ".join(list(dict.fromkeys(p.note for p in detail if p.note)) + (["cut at the token limit"] if cut else []))
    if rec.get("parse_note") != note:
        return f"parse_note {_short(rec.get('parse_note'))}, but its raw_responses read as {_short(note)}"
    return None
