"""Running TMGBench's complex forms (sequential, parallel, nested) for one player.

Tasks are sampled reproducibly (`tmgbench_complex.sample_tasks`); each task is one work unit and
one record in `tasks.jsonl`, streamed and resumable like every run. Complex forms need written
answers, so model players use sampled generations (log-prob scoring covers atomic DA tasks only);
the reference players `oracle` and `empty` answer exactly.

The model interface sends one prompt (plus an optional system message) per call, so a sequential
task's history — earlier games and the model's own replies — is written into the prompt as a
transcript ("User:" / "Assistant:" turns) rather than sent as separate chat messages.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.runner.folders import create_run_folder, now_iso, read_run_json, run_metadata
from stratbench.runner.jsonl import read_jsonl, resume_records, rewrite_sorted, write_json_atomic, write_jsonl_atomic
from stratbench.runner.pool import stream_pool
from stratbench.runner.shard import shard_tag
from stratbench.seeding import derive_seed, fresh_seed
from stratbench.suites.tmgbench.run import TmgbenchConfig, TmgbenchResult, resumed_config, shard_units

COMPLEX_SCRIPTED = ("oracle", "empty")


@dataclass
class ComplexConfig(TmgbenchConfig):
    """A complex-form run: TMGBench's settings plus the games per task and the number of tasks."""

    k: int | None = None  # games per task (default 3; nested: 2)
    num_tasks: int = 50


def _transcript(messages: list[dict[str, str]]) -> tuple[str | None, str]:
    """(system, prompt): a single-turn task is its user message; a multi-turn history becomes a
    plain transcript ending where the assistant's next reply goes."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    turns = [m for m in messages if m["role"] != "system"]
    if len(turns) == 1:
        return system, turns[0]["content"]
    lines = [f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in turns]
    return system, "\n\n".join(lines) + "\n\nAssistant:"


async def _run_task(model: Any, spec: str, config: TmgbenchConfig, task: Any) -> dict[str, Any]:
    from stratbench.models.base import GenerateRequest
    from stratbench.suites.tmgbench.complex import complex_messages, parse_complex_answer, score_complex

    rec: dict[str, Any] = {"task_index": task.index, "player": spec, "prompting": config.prompting,
                           **{f"task_{k}": v for k, v in task.to_json().items()}}
    t0 = time.perf_counter()
    if model is None:
        answers = task.expected if spec == "oracle" else [frozenset()] * task.n_answers
        rec.update(status="ok", **score_complex(task, answers))
    else:
        replies: list[str] = []
        steps = task.k if task.form == "sequential" else 1
        for step in range(steps):
            system, prompt = _transcript(complex_messages(task, config.prompting, replies))
            if not config.chat and system:
                prompt = f"{system}\n\n{prompt}"
                system = None
            (res,) = await model.generate([GenerateRequest(
                prompt, max_tokens=config.max_tokens, temperature=config.temperature,
                seed=derive_seed(config.seed or 0, task.index), sample_index=step,
                chat=config.chat, system=system)])
            if not res.ok:
                rec.update(status="error", error=res.error, raw_responses=replies)
                rec["latency_s"] = time.perf_counter() - t0
                return rec
            replies.append(res.text or "")
        answers = parse_complex_answer(replies if task.form == "sequential" else replies[0], task)
        rec["raw_responses"] = replies
        if answers is None:
            rec.update(status="parse_failed", **score_complex(task, None))
        else:
            rec.update(status="parsed", **score_complex(task, answers))
    rec["latency_s"] = time.perf_counter() - t0
    return _jsonable(rec)


def _jsonable(x: Any) -> Any:
    if isinstance(x, (frozenset, set)):
        return sorted(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def _write_summary(folder: Path, records: list[dict[str, Any]], config: TmgbenchConfig, k: int,
                   spec: str) -> dict[str, Any]:
    """summary.json of a complex-form run; shared by a run and by merging its shards."""
    from stratbench.suites.tmgbench.complex import summarise_complex

    scored = [r for r in records if r["status"] != "error"]
    summary = summarise_complex(scored) if scored else {"n_tasks": 0}
    n_errors = len(records) - len(scored)
    summary.update(form=config.form, k=k, player=spec, error_rate=n_errors / len(records) if records else 0.0)
    if not config.shard_spec.whole:
        summary["shard"] = str(config.shard_spec)
    write_json_atomic(folder / "summary.json", summary)
    return summary


def merge_complex_shards(folders: list[Path], out: Path) -> dict[str, Any]:
    """Merge the shards of one complex-form run: every sampled task once, in task order, and the
    summary recomputed from all of them."""
    from stratbench.suites.tmgbench.complex import sample_tasks

    saved = dict(json.loads((folders[0] / "run.json").read_text())["config"], shard=None)
    config = TmgbenchConfig(**{k2: v for k2, v in saved.items() if k2 in TmgbenchConfig.__annotations__})
    records = sorted((r for f in folders for r in read_jsonl(f / "tasks.jsonl")), key=lambda r: r["task_index"])
    got = [r["task_index"] for r in records]
    want = [t.index for t in sample_tasks(config.form, saved["k"], saved["num_tasks"], config.seed or 0)]
    if got != want:
        raise InputError(f"the shards hold {len(set(got) & set(want))} of the run's {len(want)} tasks"
                         + (f" and {len(got) - len(set(got))} duplicates" if len(got) != len(set(got)) else "")
                         + "; merge all shards of one run once, each after it has finished")
    write_jsonl_atomic(out / "tasks.jsonl", records)
    return _write_summary(out, records, config, saved["k"], saved["player"])


def run_complex(config: TmgbenchConfig, k: int | None, n_tasks: int, progress: Any | None = None,
                resume_dir: str | Path | None = None) -> TmgbenchResult:
    from stratbench.suites.tmgbench.complex import PAPER_K, sample_tasks

    if resume_dir is not None:
        folder = Path(resume_dir)
        meta = read_run_json(folder, "--resume ")
        saved = meta["config"]
        config = resumed_config(config, saved, folder)
        k, n_tasks = saved["k"], saved["num_tasks"]
    else:
        if config.form not in PAPER_K:
            raise InputError(f"unknown --form {config.form!r}")
        k = k or (2 if config.form == "nested" else 3)
        if n_tasks < 1:
            raise InputError(f"--num-tasks must be at least 1 (got {n_tasks})")
        if config.seed is None:
            if not config.shard_spec.whole:
                raise InputError(f"--shard {config.shard_spec} needs --seed: every shard must sample the same tasks")
            config.seed = fresh_seed()
        config.shard = config.shard_spec.to_json()
    spec = config.player
    if config.policy == "logprob":
        raise InputError("complex forms need written answers: use --policy sample")
    try:
        tasks = sample_tasks(config.form, k, n_tasks, config.seed or 0)
    except ValueError as e:
        raise InputError(f"--form {config.form} --k {k}: {e}") from None
    tasks = shard_units(config.shard_spec, tasks, "tasks")  # each task keeps its unsharded index and seed
    model = None
    if spec not in COMPLEX_SCRIPTED:
        if spec == "uniform":
            raise InputError("the uniform reference player has no complex-form answers; use oracle or empty")
        from stratbench.models import open_model
        from stratbench.models import ModelOptions

        model = open_model(spec, ModelOptions(base_url=config.base_url, max_concurrency=config.max_concurrency,
                                              chat=config.chat or None), no_cache=config.no_cache)
    if resume_dir is None:
        folder = create_run_folder(config.output_dir, f"tmgbench_{config.form}", tag=shard_tag(config.shard_spec)).path
        meta = run_metadata("tmgbench", {**asdict(config), "player": spec, "k": k, "num_tasks": n_tasks},
                            kind="complex")
        meta["agent"] = {"name": spec, "policy": "scripted" if model is None else "sample",
                         **({"model": model.describe()} if model is not None else {})}
    else:
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(now_iso())
    write_json_atomic(folder / "run.json", meta)
    path = folder / "tasks.jsonl"
    kept = resume_records(path)
    done = {r["task_index"] for r in kept}
    todo = [t for t in tasks if t.index not in done]
    bar = progress.add_task(config.form, total=len(tasks), completed=len(done)) if progress else None

    async def main() -> None:
        async def work(task: Any) -> dict[str, Any]:
            try:
                return await _run_task(model, spec, config, task)
            except Exception as exc:  # recorded, never hidden
                return {"task_index": task.index, "player": spec, "status": "error",
                        "error": f"{type(exc).__name__}: {exc}"}

        try:
            await stream_pool(todo, work, config.max_concurrency, path,
                              (lambda: progress.advance(bar)) if progress is not None else None)
        finally:
            if model is not None:
                await model.aclose()

    asyncio.run(main())
    records = rewrite_sorted(path, key=lambda r: r["task_index"])
    summary = _write_summary(folder, records, config, k, spec)
    n_errors = len(records) - sum(r["status"] != "error" for r in records)
    usage = model.usage.as_dict() if model is not None else {"calls": 0}
    meta.update(end_time=now_iso(), status="finished",
                totals={"records": len(records), "errors": n_errors, **{f"model_{k2}": v for k2, v in usage.items()}})
    write_json_atomic(folder / "run.json", meta)
    return TmgbenchResult(folder, summary, n_errors, meta["totals"])
