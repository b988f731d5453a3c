"""`stratbench trend`: the scorecard of every checkpoint of a training run, at one budget and seed, in
one folder — a suite's score along the run, where it rises above chance and where it falls back.

Each checkpoint is an ordinary scorecard (run by :func:`run_scorecard`: resumable, comparable,
reported), so the trend adds no way of scoring of its own. The folder::

    trend_<time>/
        trend_metadata.json        the plan (budget, seed, chat/base_url options) and the checkpoints:
                                   spec, label, step, tokens, scorecard folder, status
        ckpt_<step>/scorecard_<time>/   one scorecard per checkpoint
        trend.json                 per suite: the score per step, consecutive paired differences,
                                   emergence and regressions (:mod:`stratbench.workflows.trend_analysis`)
        trend.csv                  one row per step × suite
        report/index.html          the curves first, then the emergence/regression table

``resume_dir`` finishes an interrupted trend (an unfinished scorecard is resumed in place, finished
ones are not touched); ``add_to`` adds checkpoints to a trend: only they run. Every input is checked
before a folder is created or changed.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratbench.checks import REASONING_EFFORTS, RULES, SEED, check_value
from stratbench.errors import InputError
from stratbench.render.csv_cells import csv_row
from stratbench.runner.folders import (
    create_run_folder,
    migrate_run_json,
    missing_dirs,
    now_iso,
    remove_empty_dirs,
    run_metadata,
)
from stratbench.runner.jsonl import write_bytes_atomic, write_csv_atomic, write_json_atomic
from stratbench.runner.lifecycle import announce_folder
from stratbench.runner.lock import folder_lock
from stratbench.scoring import BUDGETS, read_scorecard
from stratbench.suites import SUITES
from stratbench.suites.scorecards import ScorecardModel
from stratbench.workflows.scorecard import (
    META as SCORECARD_META,
)
from stratbench.workflows.scorecard import (
    check_scorecard,
    compare_scorecards,
    plan_scorecard,
    run_scorecard,
    scorecard_models,
)
from stratbench.workflows.suite_plan import check_job_models
from stratbench.workflows.trend_analysis import ALPHA, P_VALUE_METHOD, StepScore, suite_trend

__all__ = ["TREND_VERSION", "Checkpoint", "TrendResult", "checkpoints", "run_trend", "trend_rows"]

TREND_VERSION = 1
META = "trend_metadata.json"
KIND = "trend"


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of the series: its model spec, the label its scorecard gives it, its
    training step and (optionally) the tokens it had seen."""

    spec: str
    step: int
    tokens: int | None = None

    @property
    def label(self) -> str:
        return self.spec

    @property
    def subdir(self) -> str:
        """The folder (in the trend folder) its scorecard is created in."""
        return f"ckpt_{self.step}"


@dataclass
class TrendResult:
    folder: Path
    trend: dict[str, Any]  # trend.json
    table: list[dict[str, Any]]  # trend.csv's rows: one per step × suite
    n_errors: int  # errored records of the checkpoints' scorecards
    report: Path | None


MAX_STEP = 10**18 - 1  # 18 digits, as --step-from reads: each step names a folder (ckpt_<step>)


def _int(flag: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{flag} {value!r}: give a whole number")
    if value < 0:
        raise InputError(f"{flag} {value}: give a number >= 0")
    return value


def _steps_from(models: Sequence[str], pattern: str) -> list[int]:
    """Each model's step read from its spec by ``pattern`` (its first group, or the whole match)."""
    if not pattern.strip():
        raise InputError("--step-from: empty; give a regular expression such as 'ckpt-(\\d+)'")
    try:
        rx = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as e:
        raise InputError(f"--step-from {pattern!r}: not a regular expression ({e})") from None
    out = []
    for m in models:
        found = rx.search(m)
        text = (found.group(1) if rx.groups else found.group(0)) if found else None
        if text is None or not text.isdigit() or not text.isascii():
            raise InputError(f"--step-from {pattern!r}: --model {m} has no step in it (the pattern does not "
                             "match it with a number; give --step per model instead)")
        if len(text.lstrip("0")) > 18:  # (a step no training run reaches; no int() of 5,000 digits)
            raise InputError(f"--step-from {pattern!r}: --model {m[:60]}…: its step has {len(text):,} digits; "
                             "give --step per model instead")
        out.append(int(text))
    return out


def checkpoints(models: Sequence[str], steps: Sequence[int] = (), step_from: str | None = None,
                tokens: Sequence[int] = (), taken: Sequence[Checkpoint] = ()) -> list[Checkpoint]:
    """The checkpoints the flags name, checked (one InputError line each): a step per model
    (``steps`` in order, or read by ``step_from``), distinct whole steps >= 0 — also against the
    ``taken`` checkpoints of the trend added to —, ``tokens`` one per model if given. Ordered by step."""
    specs = [str(m).strip() for m in models]
    if not specs:
        raise InputError("give at least one --model")
    if any(not s for s in specs):
        raise InputError("--model: empty; give a model spec")
    dup = sorted({s for s in specs if specs.count(s) > 1})
    if dup:
        raise InputError(f"--model {dup[0]} is given twice")
    old = {c.spec for c in taken}
    again = [s for s in specs if s in old]
    if again:
        raise InputError(f"--model {again[0]}: already a checkpoint of the trend")
    if steps and step_from is not None:
        raise InputError("--step and --step-from: give one of them (--step per model, or a pattern that reads the "
                         "step from each model's name)")
    if step_from is not None:
        got = _steps_from(specs, step_from)
    elif not steps:
        raise InputError("--step: no step given; give --step per --model, or --step-from PATTERN")
    else:
        got = [_int("--step", s) for s in steps]
        big = next((s for s in got if s > MAX_STEP), None)
        if big is not None:  # (its folder ckpt_<step> would be a name no file system takes)
            shown = str(big) if big < 10**40 else f"a number of {len(str(big)):,} digits"
            raise InputError(f"--step {shown}: a step of at most 18 digits, please (no training run reaches more)")
        if len(got) != len(specs):
            raise InputError(f"--step: {len(got)} given for {len(specs)} --model; give one per model, in order")
    toks: list[int | None] = [None] * len(specs)
    if tokens:
        toks = [_int("--tokens", t) for t in tokens]
        if len(toks) != len(specs):
            raise InputError(f"--tokens: {len(toks)} given for {len(specs)} --model; give one per model, in order")
    all_steps = got + [c.step for c in taken]
    dups = sorted({s for s in all_steps if all_steps.count(s) > 1})
    if dups:
        where = " (already a checkpoint of the trend)" if dups[0] in {c.step for c in taken} else ""
        if step_from is not None:  # (no --step was given: name the models the pattern read it from)
            named = [m for m, st in zip(specs, got) if st == dups[0]]
            raise InputError(f"--step-from {step_from!r} reads step {dups[0]} from {' and '.join(named)}{where}; "
                             "each checkpoint needs its own step")
        raise InputError(f"--step {dups[0]} is given twice{where}; each checkpoint needs its own step")
    return sorted((Checkpoint(s, st, t) for s, st, t in zip(specs, got, toks)), key=lambda c: c.step)


def _entry(c: Checkpoint, folder: str | None = None, status: str = "pending") -> dict[str, Any]:
    return {"spec": c.spec, "label": c.label, "step": c.step, "tokens": c.tokens, "scorecard": folder,
            "status": status}


def _read_meta(folder: Path, flag: str) -> dict[str, Any]:
    """A trend folder's metadata, checked as this module writes it, before anything runs or is
    written: one InputError line naming the file and what is wrong with it (not JSON, another
    format or trend version, a config or checkpoint field of the wrong type, duplicate or unordered
    steps, a checkpoint's scorecard folder outside its ``ckpt_<step>`` folder, missing, or not the
    checkpoint's finished scorecard at the trend's budget and seed)."""
    path = folder / META
    if not path.is_file():
        raise InputError(f"{flag} {folder}: not a trend folder (no {META})")
    where = f"{flag} {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text; the trend folder was changed by hand") from None
    except OSError as e:
        raise InputError(f"{where}: cannot be read ({e.strerror or e})") from None
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(f"{where}: not valid JSON; the trend folder was changed by hand") from None
    if not isinstance(meta, dict) or meta.get("kind") != KIND:
        raise InputError(f"{flag} {folder}: not a trend folder ({META} is not a trend's)")
    meta = migrate_run_json(meta, where)
    if meta.get("trend_version") != TREND_VERSION:
        raise InputError(f"{where}: trend_version {meta.get('trend_version')!r} is not "
                         f"{TREND_VERSION}, the one this stratbench writes")
    _check_config(meta.get("config"), where)
    cps = meta.get("checkpoints")
    if not isinstance(cps, list) or not cps:
        raise InputError(f"{where}: checkpoints must be a non-empty list (got {_what(cps)})")
    for i, c in enumerate(cps):
        problem = _checkpoint_problem(c)
        if problem is not None:
            raise InputError(f"{where}: checkpoints[{i}]: {problem}")
    steps, specs = [c["step"] for c in cps], [c["spec"] for c in cps]
    dup = sorted({s for s in steps if steps.count(s) > 1})
    if dup:
        raise InputError(f"{where}: step {dup[0]} is given to {steps.count(dup[0])} checkpoints; each needs its own")
    if steps != sorted(steps):
        raise InputError(f"{where}: the checkpoints are not in step order ({', '.join(map(str, steps))})")
    again = sorted({s for s in specs if specs.count(s) > 1})
    if again:
        raise InputError(f"{where}: model {again[0]} is given to {specs.count(again[0])} checkpoints")
    cfg = meta["config"]
    for i, c in enumerate(cps):
        problem = _scorecard_folder_problem(c, folder)
        if problem is not None:
            raise InputError(f"{where}: checkpoints[{i}]: {problem}")
        if c["status"] == "finished":
            card = read_scorecard(folder / c["scorecard"], f"{where}: checkpoints[{i}]: ")
            if (card.get("budget"), card.get("seed")) != (cfg["budget"], cfg["seed"]):
                raise InputError(f"{where}: checkpoints[{i}]: its scorecard {c['scorecard']} is at budget "
                                 f"{card.get('budget')!r}, seed {card.get('seed')!r}, not the trend's "
                                 f"{cfg['budget']!r}, {cfg['seed']!r}")
            if not any(x.get("player") == c["label"] and x.get("role") == "model" for x in card["players"]):
                raise InputError(f"{where}: checkpoints[{i}]: its scorecard {c['scorecard']} does not score "
                                 f"{c['label']}")
        if c.get("scorecard"):
            problem = _read_as_saved_problem(c, cfg, folder)
            if problem is not None:
                raise InputError(f"{where}: checkpoints[{i}]: {problem}; the trend folder was changed by hand")
    listed = {f"ckpt_{c['step']}" for c in cps}
    try:
        unlisted = sorted(p.name for p in folder.iterdir() if p.name.startswith("ckpt_") and p.name not in listed
                          and any(q.name.startswith("scorecard_") for q in p.iterdir()))
    except OSError:
        unlisted = []
    if unlisted:  # (a checkpoint dropped from the list: its scorecard would vanish from the curves unsaid)
        raise InputError(f"{where}: {folder / unlisted[0]} holds a scorecard but no checkpoint of the trend is at "
                         f"step {unlisted[0][len('ckpt_'):]}; the trend folder was changed by hand")
    return meta


#: how the trend's config reads every checkpoint, as its scorecard saved its model
_READ_AS = ("chat", "reasoning_effort", "think_tags", "max_tokens")


def _read_as_saved_problem(c: dict[str, Any], cfg: dict[str, Any], folder: Path) -> str | None:
    """What is wrong when a checkpoint's scorecard read its model otherwise than the trend's
    config says (config.chat, reasoning_effort, think_tags or max_tokens edited after it ran: the
    checkpoints added next would be read another way and compared as one series)."""
    try:
        saved = json.loads((folder / c["scorecard"] / SCORECARD_META).read_text(encoding="utf-8"))
        (model,) = [m for m in saved["config"]["models"] if m.get("spec") == c["spec"]]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return f"its scorecard {c['scorecard']} does not hold the checkpoint's model as the trend saves it"
    want = _scorecard_model(Checkpoint(c["spec"], c["step"], c.get("tokens")), cfg, None)
    for k in _READ_AS:
        if model.get(k) != getattr(want, k):
            return (f"config.{k} reads the checkpoint as {getattr(want, k)!r}, but its scorecard {c['scorecard']} "
                    f"ran it with {model.get(k)!r}")
    return None


def _what(x: Any) -> str:
    return f"{type(x).__name__} {x!r}" if len(repr(x)) <= 40 else type(x).__name__


def _check_config(cfg: Any, where: str) -> None:
    """The trend's config (:func:`_config`) as it was written: the types, and the budget, seed and
    reasoning effort a scorecard accepts."""
    if not isinstance(cfg, dict):
        raise InputError(f"{where}: config must be an object (got {_what(cfg)})")
    if cfg.get("budget") not in BUDGETS:
        raise InputError(f"{where}: config.budget {cfg.get('budget')!r} is none of {', '.join(BUDGETS)}")
    for key, ok, want in (("seed", _is_whole(cfg.get("seed")), "a whole number >= 0"),
                          ("chat", cfg.get("chat") is None or isinstance(cfg.get("chat"), bool), "true, false or null"),
                          ("base_url", cfg.get("base_url") is None or isinstance(cfg.get("base_url"), str),
                           "a URL or null"),
                          ("no_cache", isinstance(cfg.get("no_cache", False), bool), "true or false"),
                          ("reasoning_effort", cfg.get("reasoning_effort") is None
                           or cfg.get("reasoning_effort") in REASONING_EFFORTS,
                           "an effort or null")):
        if not ok:
            raise InputError(f"{where}: config.{key} must be {want} (got {_what(cfg.get(key))})")
    try:
        check_value("config.seed", cfg["seed"], SEED)
        check_value("config.think_tags", cfg.get("think_tags"), RULES["think_tags"])
        check_value("config.max_tokens", cfg.get("max_tokens"), RULES["max_tokens"])
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def _is_whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _checkpoint_problem(c: Any) -> str | None:
    """What is wrong with one saved checkpoint's fields (None: nothing): their types and values."""
    if not isinstance(c, dict):
        return f"must be an object (got {_what(c)})"
    if not isinstance(c.get("spec"), str) or not c["spec"].strip():
        return f"spec must be a model spec (got {_what(c.get('spec'))})"
    if c.get("label") != c["spec"]:
        return f"label {c.get('label')!r} is not its spec {c['spec']!r}"
    if not _is_whole(c.get("step")):
        return f"step must be a whole number >= 0 (got {_what(c.get('step'))})"
    if c.get("tokens") is not None and not _is_whole(c["tokens"]):
        return f"tokens must be a whole number >= 0 or null (got {_what(c['tokens'])})"
    if c.get("status") not in ("pending", "running", "finished"):
        return f"status {c.get('status')!r} is none of pending, running, finished"
    rel = c.get("scorecard")
    if rel is None and c["status"] == "finished":
        return "finished, but no scorecard folder is recorded"
    if rel is not None and not isinstance(rel, str):
        return f"scorecard must be a folder name or null (got {_what(rel)})"
    return None


def _scorecard_folder_problem(c: dict[str, Any], folder: Path) -> str | None:
    """What is wrong with a checkpoint's recorded scorecard folder (None: nothing, or none
    recorded): it must be ``ckpt_<step>/scorecard_<time>`` inside the trend folder (no absolute
    path, no .., no link out of it) and be there, with its suite_metadata.json."""
    rel = c.get("scorecard")
    if rel is None:
        return None
    if "\0" in rel:
        return "scorecard holds a NUL character"
    p = Path(rel)
    if (p.is_absolute() or ".." in p.parts or len(p.parts) != 2 or p.parts[0] != f"ckpt_{c['step']}"
            or not p.parts[1].startswith("scorecard_")):
        return f"scorecard {rel!r} is not a folder ckpt_{c['step']}/scorecard_<time> of the trend folder"
    full = folder / p
    try:
        inside = full.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        inside = False
    if not inside:
        return f"scorecard {rel!r} leads out of the trend folder"
    if not (full / SCORECARD_META).is_file():
        return f"scorecard {rel!r} is missing (no {SCORECARD_META} there)"
    return None


def _saved_checkpoints(meta: dict[str, Any]) -> list[Checkpoint]:
    return [Checkpoint(c["spec"], c["step"], c.get("tokens")) for c in meta["checkpoints"]]


def _scorecard_model(c: Checkpoint, cfg: dict[str, Any], base_url: str | None) -> ScorecardModel:
    """A checkpoint's scorecard player; the URL is an HTTP checkpoint's (the trend's checkpoints are
    checked together for one, :func:`run_trend`)."""
    from stratbench.models import is_http_spec

    url = base_url if is_http_spec(c.spec) else None
    (m,) = scorecard_models([c.spec], cfg.get("chat"), url, cfg.get("reasoning_effort"), cfg.get("think_tags"),
                            cfg.get("max_tokens"))
    return m


def _found_scorecard(out: Path, c: Checkpoint, entry: dict[str, Any], flag: str) -> Path | None:
    """The scorecard folder a checkpoint has (recorded, or created in its ckpt_<step> folder
    before a kill could record it); None when it has none yet."""
    if entry.get("scorecard"):
        f = out / entry["scorecard"]
        if not (f / SCORECARD_META).is_file():
            raise InputError(f"{flag} {out}: checkpoint {c.step}'s scorecard {f} is missing; the trend folder was "
                             "changed by hand")
        return f
    try:
        found = sorted(p for p in (out / c.subdir).iterdir() if (p / SCORECARD_META).is_file())
    except OSError:
        return None
    if len(found) > 1:
        raise InputError(f"{flag} {out}/{c.subdir}: holds {len(found)} scorecards for one checkpoint; remove all "
                         "but one")
    return found[0] if found else None


def _config(budget: str, seed: int, chat: bool | None, base_url: str | None, no_cache: bool,
            reasoning_effort: str | None, think_tags: str | None = None,
            max_tokens: int | None = None) -> dict[str, Any]:
    # (think_tags and max_tokens only when given: a trend without them saves what it saved before)
    more = {k: v for k, v in (("think_tags", think_tags), ("max_tokens", max_tokens)) if v is not None}
    return {"budget": budget, "seed": seed, "chat": chat, "base_url": base_url, "no_cache": no_cache,
            "reasoning_effort": reasoning_effort, **more}


def run_trend(models: Sequence[str] = (), steps: Sequence[int] = (), step_from: str | None = None,
              tokens: Sequence[int] = (), budget: str | None = None, seed: int | None = None,
              output_dir: str | Path = "results", resume_dir: str | Path | None = None,
              add_to: str | Path | None = None, chat: bool | None = None, base_url: str | None = None,
              no_cache: bool = False, report: Callable[[Path], Path] | None = None,
              scorecard_report: Callable[[Path], Path] | None = None, on_run: Callable[[dict[str, Any]], None] | None = None, timeout: float | None = None,
              retries: int | None = None, wait_for_server: float | None = None,
              reasoning_effort: str | None = None, think_tags: str | None = None, max_tokens: int | None = None,
              on_checkpoint: Callable[[Checkpoint, str], None] | None = None) -> TrendResult:
    """Run a trend (``models`` with ``steps`` or ``step_from``; ``budget`` default quick, ``seed``
    default 0), finish one (``resume_dir``), or add checkpoints to one (``add_to``: only the new
    checkpoints run, at the trend's budget and seed). Writes trend.json, trend.csv and, with
    ``report`` (folder -> index page), the trend's page; ``scorecard_report`` builds each checkpoint's
    scorecard report. Every input is checked before a folder is created
    or changed; a refused new trend leaves nothing behind."""
    if resume_dir is not None and add_to is not None:
        raise InputError("--resume and --add: give one of them (--add also finishes what is unfinished)")
    for k, v in (("timeout", timeout), ("retries", retries), ("wait_for_server", wait_for_server)):
        if v is not None:
            check_value("--" + k.replace("_", "-"), v, RULES[k])
    from stratbench.redact import is_redacted_url

    made: list[Path] = []
    existing = resume_dir if resume_dir is not None else add_to
    if existing is not None:
        flag = "--resume" if resume_dir is not None else "--add"
        out = Path(existing)
        meta = _read_meta(out, flag)
        cfg = meta["config"]
        for name, given in (("--budget", budget), ("--seed", seed), ("--chat/--raw", chat),
                            ("--reasoning-effort", reasoning_effort), ("--think-tags", think_tags),
                            ("--max-tokens", max_tokens)):
            if given is not None:
                raise InputError(f"{name}: {flag} {out} keeps the trend's own ({name} is given when the trend is "
                                 "made); drop it")
        if resume_dir is not None and (models or steps or step_from or tokens):
            raise InputError(f"--resume {out} finishes the trend saved there; to add checkpoints use --add {out}")
        if add_to is not None and not models:
            raise InputError(f"--add {out}: give the new checkpoints' --model and --step")
        old = _saved_checkpoints(meta)
        new = checkpoints(models, steps, step_from, tokens, taken=old) if add_to is not None else []
        budget, seed = str(cfg.get("budget")), int(cfg.get("seed", 0))
        saved_url = cfg.get("base_url")
        url = base_url if base_url is not None else saved_url
    else:
        new = checkpoints(models, steps, step_from, tokens)
        budget = "quick" if budget is None else budget
        seed = 0 if seed is None else seed
        cfg = _config(budget, seed, chat, base_url, no_cache, reasoning_effort, think_tags, max_tokens)
        url = saved_url = base_url
        old = []
        meta = {}
        out = Path()
    # what will run, checked as a scorecard checks its models, before anything is created or changed
    entries = {c["step"]: c for c in meta.get("checkpoints", [])}
    # (a finished checkpoint whose scorecard holds failed calls is resumed too: they are tried again)
    todo = [c for c in old if entries[c.step].get("status") != "finished" or _holds_errors(out, entries[c.step])] + new
    # a finished checkpoint whose scorecard.json its records no longer give (edited by hand): found
    # before anything runs — --add ran and listed its new checkpoint, then refused (fuzz 29 A F5) —
    # and rewritten from its records by --resume (the scorecard's own --resume is refused inside a
    # trend: the line it printed sent the user round in a loop)
    for c in [c for c in old if c not in todo]:
        problem = _scorecard_problem(out, entries[c.step])
        if problem is not None and add_to is not None:
            raise InputError(f"{problem}; rewrite it from its records with stratbench trend --resume "
                             f"{shlex.quote(str(out))} first, then add")
        if problem is not None:
            todo.insert(0, c)
    todo.sort(key=lambda c: (c in new, c.step))
    found: dict[int, Path | None] = {}
    for c in todo:
        found[c.step] = _found_scorecard(out, c, entries[c.step], "--resume") if c.step in entries else None
    from stratbench.models import check_base_url_applies

    check_base_url_applies(base_url, [c.spec for c in old + new])
    ms = {c.step: _scorecard_model(c, cfg, url) for c in todo}
    if any(found.get(c.step) is None for c in todo) and url is not None and is_redacted_url(url):
        cmd = ("--add " + shlex.quote(str(existing)) + " " + " ".join(
            f"--model {shlex.quote(c.spec)} --step {c.step}" for c in new)) if add_to is not None else \
            f"--resume {shlex.quote(str(existing))}"
        raise InputError(f"{existing}: its base URL {url} was saved with the credentials redacted (***); give it "
                         f"again: stratbench trend {cmd} --base-url URL")
    for c in todo:
        plan = plan_scorecard([ms[c.step]], budget, seed)  # the budget and seed checked here
        check_job_models(j for j, _, _ in plan)
    if existing is None:
        made = missing_dirs(output_dir)
        out = create_run_folder(output_dir, "trend").path
        meta = run_metadata(KIND, cfg, kind=KIND)
        meta.update(trend_version=TREND_VERSION, checkpoints=[])
    started = False
    # an existing trend's metadata as it was: a refusal before any checkpoint started (an edited
    # scorecard found by the analysis) leaves the file as it found it, not marked running
    before = (out / META).read_bytes() if existing is not None else None
    try:
        with folder_lock(out):
            cps = sorted(old + new, key=lambda c: c.step)
            kept = {c["step"]: c for c in meta.get("checkpoints", [])}
            meta["checkpoints"] = [kept.get(c.step) or _entry(c) for c in cps]
            meta.update(status="running", end_time=None)
            write_json_atomic(out / META, meta)  # resumable from its first moment
            announce_folder(out)
            n_errors = 0
            for c in todo:
                entry = next(e for e in meta["checkpoints"] if e["step"] == c.step)
                prev = found.get(c.step)
                entry["status"] = "running"
                if prev is not None:
                    entry["scorecard"] = prev.relative_to(out).as_posix()
                write_json_atomic(out / META, meta)
                if on_checkpoint is not None:
                    on_checkpoint(c, "resumed" if prev is not None else "started")
                started = True

                def record(folder: Path, entry: dict[str, Any] = entry, c: Checkpoint = c) -> None:
                    entry["scorecard"] = folder.relative_to(out).as_posix()
                    write_json_atomic(out / META, meta)

                kw: dict[str, Any] = {"report": scorecard_report, "on_run": on_run, "timeout": timeout, "retries": retries,
                                      "wait_for_server": wait_for_server}
                if prev is not None:  # (a URL given again only where its credentials were not saved)
                    again = base_url if saved_url is not None and is_redacted_url(saved_url) else None
                    res = run_scorecard(resume_dir=prev, base_url=again, **kw)
                else:
                    from stratbench.runner.lifecycle import on_run_folder

                    def first(folder: Path, c: Checkpoint = c, entry: dict[str, Any] = entry) -> None:
                        if folder.parent == out / c.subdir and not entry.get("scorecard"):
                            record(folder, entry, c)

                    with on_run_folder(first):
                        res = run_scorecard([ms[c.step]], budget=budget, seed=seed, output_dir=out / c.subdir,
                                            no_cache=bool(cfg.get("no_cache")), **kw)
                    record(res.folder)
                n_errors += sum(x["counts"].get("error", 0) for x in res.scorecard["cells"]
                                if x["player"] == c.label)
                entry["status"] = "finished"
                write_json_atomic(out / META, meta)
            trend = analyse(out, meta)
            table = trend_rows(trend)
            write_json_atomic(out / "trend.json", trend)
            write_trend_csv(out / "trend.csv", table)
            meta.update(status="finished", end_time=now_iso())
            write_json_atomic(out / META, meta)
    except (InputError, OSError):
        if existing is None and not started:
            import shutil

            shutil.rmtree(out, ignore_errors=True)
            remove_empty_dirs(made)
        elif before is not None and not started:
            write_bytes_atomic(out / META, before)
        raise
    index = report(out) if report is not None else None
    return TrendResult(out, trend, table, n_errors, index)


def _scorecard_problem(out: Path, entry: dict[str, Any]) -> str | None:
    """Why a finished checkpoint's scorecard.json is not what its records give (the scorecard's
    check, without its advice to resume the scorecard alone), or None."""
    folder = entry.get("scorecard")
    if not isinstance(folder, str) or not folder:
        return None  # (named where the scorecard is read: `_found_scorecard`, `analyse`)
    try:
        check_scorecard(out / folder)
    except InputError as e:
        return str(e).split("; the file was edited, or its runs were;")[0]
    return None


def _holds_errors(out: Path, entry: dict[str, Any]) -> bool:
    """Whether a finished checkpoint's scorecard counts errored records (failed calls) in a cell;
    an unreadable scorecard.json is named where the scorecard is read (`_found_scorecard`)."""
    import json

    folder = entry.get("scorecard")
    if not isinstance(folder, str) or not folder:
        return False
    try:
        card = json.loads((out / folder / "scorecard.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    cells = card.get("cells") if isinstance(card, dict) else None
    return any(isinstance(c, dict) and isinstance(c.get("counts"), dict)
               and isinstance(n := c["counts"].get("error"), int) and n > 0 for c in cells or [])


def analyse(out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """trend.json from the finished checkpoints: each step's cells from its scorecard.json (checked
    against its records by the comparisons), each consecutive pair compared by
    :func:`compare_scorecards` (paired over the shared units, its bootstrap seeded by the trend's
    seed)."""
    seed = int(meta["config"].get("seed", 0))
    cps = meta["checkpoints"]
    folders = [out / c["scorecard"] for c in cps]
    cards = [read_scorecard(f) for f in folders]
    if len(folders) == 1:
        check_scorecard(folders[0])  # (pairs are checked against their records by compare)
    checked: dict[Path, Any] = {}  # each scorecard checked against its records once, not per pair
    pairs = [compare_scorecards(a, b, seed=seed, checked=checked) for a, b in zip(folders, folders[1:])]
    suites = cards[0]["suites"] if cards else []
    out_suites = []
    for s in suites:
        points = []
        part = SUITES.get(s["suite"]).scorecard_part()
        for c, card, folder in zip(cps, cards, folders):
            cell = next((x for x in card["cells"] if x["player"] == c["label"] and x["suite"] == s["suite"]), None)
            chance = None
            if cell and cell["status"] != "failed" and cell.get("runs"):  # (a fitted level: its own reference)
                chance = part.chance_threshold(folder / cell["runs"][0], c["spec"], seed)
            points.append(StepScore(c["step"], c.get("tokens"), c["label"], cell["status"] if cell else "failed",
                                    cell["normalized"] if cell else None, cell["normalized_ci95"] if cell else None,
                                    int(cell["n_units"]) if cell else 0, chance))
        rows = [next(r for r in p["rows"] if r["suite"] == s["suite"]) for p in pairs]
        out_suites.append(suite_trend(s, points, rows))
    return {"version": TREND_VERSION, "kind": KIND, "budget": meta["config"].get("budget"), "seed": seed,
            "alpha": ALPHA, "multiple_comparisons": "holm", "p_value_method": P_VALUE_METHOD,
            "emergence_rule": "the first step above chance: its normalised score's 95% CI lies above 0 or, for "
                              "a fitted level bounded at chance (CHBench), its score lies above the 95th "
                              "percentile of the level fitted to uniform random play (a point's 'chance')",
            "checkpoints": [{k: c[k] for k in ("spec", "label", "step", "tokens", "scorecard")} for c in cps],
            "suites": out_suites}


CSV_COLUMNS = ("step", "tokens", "label", "suite", "status", "normalized", "normalized_ci95_low",
               "normalized_ci95_high", "n_units", "chance", "above_chance", "diff_from_previous", "diff_ci95_low",
               "diff_ci95_high", "diff_n_units", "p_value", "p_holm", "regression", "emergence_step", "scorecard")


def trend_rows(trend: dict[str, Any]) -> list[dict[str, Any]]:
    """trend.csv's rows: one per step × suite (the step's score, and its difference from the
    previous step with the regression decision; the suite's emergence step on every row)."""
    folders = {c["step"]: c["scorecard"] for c in trend["checkpoints"]}
    rows = []
    for s in trend["suites"]:
        diffs = {d["step_b"]: d for d in s["differences"]}
        em = s["emergence"]
        em_step = em["step"] if em["decision"] == "emerged" else ("none" if em["decision"] == "never"
                                                                  else "undetermined")
        for p in s["points"]:
            d = diffs.get(p["step"])
            ci = p["ci95"] or [None, None]
            dci = (d or {}).get("ci95") or [None, None]
            rows.append({"step": p["step"], "tokens": p["tokens"], "label": p["label"], "suite": s["suite"],
                         "status": p["status"], "normalized": p["score"], "normalized_ci95_low": ci[0],
                         "normalized_ci95_high": ci[1], "n_units": p["n_units"], "chance": p.get("chance"),
                         "above_chance": p["above_chance"],
                         "diff_from_previous": d["diff"] if d else None, "diff_ci95_low": dci[0],
                         "diff_ci95_high": dci[1], "diff_n_units": d["n_units"] if d else None,
                         "p_value": d["p_value"] if d else None, "p_holm": d["p_holm"] if d else None,
                         "regression": d["regression"] if d else "", "emergence_step": em_step,
                         "scorecard": folders.get(p["step"])})
    return rows


def write_trend_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """trend.csv, written whole or not at all."""
    def write(fh: Any) -> None:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow(csv_row([r[k] for k in CSV_COLUMNS]))

    write_csv_atomic(path, write)


def is_trend_folder(folder: str | Path) -> bool:
    """Whether a folder is a trend (its trend_metadata.json says so)."""
    try:
        meta = json.loads((Path(folder) / META).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("kind") == KIND

