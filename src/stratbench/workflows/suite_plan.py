"""Reading a suite file (TOML or YAML): its top-level keys (name, seeds, models, output_dir) and one
section per registered suite, every section turned into that suite's validated jobs — all before
anything runs or is written. `stratbench.workflows.suite_file` runs the plan.

The file is read by :mod:`stratbench.files` (size, UTF-8, nesting and YAML-alias limits); the top
level has a pydantic schema, and every section key is checked against the type of the suite
config's field it sets (``[nashgap] num_games: expected an integer, got 2.5``) before the suite
sees it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stratbench.checks import SEED, check_value
from stratbench.errors import InputError
from stratbench.files import NonEmptyText, Text, check_field_types, read_mapping, validate
from stratbench.suites import SUITES
from stratbench.suites.base import Job, SuiteModel

TOP_KEYS = {"name", "seeds", "models", "output_dir"}


class ModelTable(BaseModel):
    """One entry of a suite file's ``models`` (a bare string is ``{spec = "..."}``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    spec: NonEmptyText
    label: NonEmptyText | None = None
    policy: Text | None = None
    base_url: Text | None = None
    chat: bool | None = None


class TopLevel(BaseModel):
    """A suite file's own keys (sections are checked by their suites)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    name: Text | None = None
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    models: list[Any] = Field(min_length=1)
    output_dir: NonEmptyText | None = None


MODEL_KEYS = set(ModelTable.model_fields)


def _sections() -> list[str]:
    """Suite names a file may have a section for: every registered suite that plans jobs."""
    return [n for n in SUITES.names() if SUITES.get(n).in_suite_files]


def _models(path: Path, items: list[Any]) -> list[SuiteModel]:
    out = []
    for k, item in enumerate(items):
        where = f"{path}: models[{k}]"
        if isinstance(item, str):
            item = {"spec": item}
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected a model spec or a table with a 'spec'")
        unknown = sorted(set(item) - MODEL_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(MODEL_KEYS))}")
        m: ModelTable = validate(ModelTable, item, where)
        out.append(SuiteModel(m.spec.strip(), (m.label or m.spec).strip(), m.policy, m.base_url, m.chat))
    labels = [m.label for m in out]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputError(f"{path}: models {dup} appear twice (give them distinct labels)")
    return out


def _check_section_types(path: Path, suite: str, params: dict[str, Any], models: list[SuiteModel],
                         seeds: list[int]) -> None:
    """Each key of a section has the type of the suite config's field it sets. The config's type is
    that of a job planned from the suite's defaults (the registry names no config classes)."""
    if not params:
        return
    probe = SUITES.get(suite).jobs(str(path), {}, models[:1], seeds[:1])
    for cls in dict.fromkeys(type(j.config) for j in probe):
        check_field_types(cls, params, f"{path}: [{suite}]")


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _in_section(message: str, p: Path, suite: str, params: dict[str, Any]) -> str:
    """A suite's refusal of a section's settings, said as the file's: the file and section named
    first, and a command-line flag the suite's checks name (``--num-games``) said as the key of the
    section that set it (``num_games``) — the user wrote no flag."""
    if message.startswith(f"{p}:"):
        return message
    keys = set(params) | {"seed", "model"}
    def key(m: re.Match[str]) -> str:
        name = m.group(1).replace("-", "_")
        return next((k for k in (name, name + "s") if k in keys), m.group(0))  # --mechanism: mechanisms

    message = _FLAG.sub(key, message)
    return f"{p}: [{suite}] {message}"


def read_suite_file(path: str | Path) -> dict[str, Any]:
    """A suite file's data (TOML or YAML), read through the safe readers."""
    p = Path(path)
    try:
        return read_mapping(p)
    except InputError as e:
        if str(e) == f"{p}: file not found":
            raise InputError(f"{p}: suite file not found") from None
        raise


#: section settings that name a file or folder: a relative one names it from the suite file's
#: folder (never from the folder the command runs in, which may hold another file of that name)
FILE_KEYS = ("price_table", "chat_template", "games_file", "stories_dir", "corrections")


def file_folder(path: str | Path) -> str:
    """The folder a suite file's relative file settings are read from (absolute: a suite folder
    saves it, and its resume may run elsewhere)."""
    import os

    return os.path.dirname(os.path.abspath(path))


def with_file_paths(data: dict[str, Any], folder: str | Path) -> dict[str, Any]:
    """A suite file's data with each section's relative `FILE_KEYS` setting made absolute from
    `folder` (the file's folder, `file_folder`), not from the folder the command runs in."""
    import os

    out = dict(data)
    for section, params in data.items():
        if section in TOP_KEYS or not isinstance(params, dict):
            continue
        out[section] = {k: os.path.abspath(os.path.join(folder, v)) if k in FILE_KEYS and isinstance(v, str)
                        and v.strip() and "\0" not in v and not os.path.isabs(v) else v for k, v in params.items()}
    return out


#: a section's settings naming what its runs read (games, stories, corrections, a template): their
#: content is saved with a suite as a digest, so a resume that would play a changed file is refused
INPUT_KEYS = ("chat_template", "games_file", "stories_dir", "corrections")


def path_digest(path: str, label: str) -> str:
    """``sha256:<hex>`` of what a suite's runs read from a file — its bytes — or from a folder of
    stories — each top-level ``*.txt`` entry's name and bytes, in sorted order (the story loader's
    files; other entries are never read). Read as the runs read them (`stratbench.files`: regular
    files under the size cap), so a named pipe, a device or a huge file is one line, never a hang."""
    import hashlib
    import os

    from stratbench.files import list_dir, read_bytes

    h = hashlib.sha256()
    if os.path.isdir(path):
        for p in list_dir(path, label):
            if p.name.endswith(".txt"):
                h.update(p.name.encode("utf-8", "surrogateescape") + b"\0")
                h.update(hashlib.sha256(read_bytes(p, f"{label}:")).digest())
    else:
        h.update(read_bytes(path, label))
    return "sha256:" + h.hexdigest()


def input_settings(data: dict[str, Any]) -> dict[str, str]:
    """``{"<section>.<key>": path}`` for each `INPUT_KEYS` setting a suite's data gives."""
    out: dict[str, str] = {}
    for section, params in data.items():
        if section in TOP_KEYS or not isinstance(params, dict):
            continue
        for k in INPUT_KEYS:
            v = params.get(k)
            if isinstance(v, str) and v.strip():
                out[f"{section}.{k}"] = v
    return out


#: the digest of an input setting whose path names nothing (a setting its runs do not read, such
#: as a classic-setting suite's stories_dir: nothing to compare)
ABSENT_INPUT = "absent"


def may_be_absent(data: dict[str, Any], key: str) -> bool:
    """Whether an input setting can name nothing in a suite that ran: only a stories folder its
    runs never read (a TMGBench section not in the story setting) — every other input a run reads
    exists when the suite starts, so an `ABSENT_INPUT` there was written by hand."""
    section, name = key.rsplit(".", 1)
    params = data.get(section)
    return name == "stories_dir" and isinstance(params, dict) and params.get("setting") != "story"


def input_digests(data: dict[str, Any], where: str = "") -> dict[str, str]:
    """``{"<section>.<key>": digest}`` for each `INPUT_KEYS` setting of a suite's data (its paths
    absolute, `with_file_paths`): `ABSENT_INPUT` where the path names nothing (a file that is gone
    is named by the checks that read it), else one InputError line (``where``: the suite file or
    folder, named first) for a file that cannot be read."""
    import os

    out: dict[str, str] = {}
    for key, path in input_settings(data).items():
        if "\0" in path or not os.path.exists(path):
            out[key] = ABSENT_INPUT
            continue
        section, name = key.rsplit(".", 1)
        out[key] = path_digest(path, f"{where}: [{section}] {name}" if where else f"[{section}] {name}")
    return out


def plan_suite_file(path: str | Path) -> tuple[dict[str, Any], list[Job]]:
    """The parsed file and every run it describes, all configs checked; nothing is written. The
    data is the file's as written (relative paths too: the saved plan is compared with the file
    given again on resume); the runs read its relative file settings from its folder."""
    data = read_suite_file(path)
    return data, plan_suite_data(with_file_paths(data, file_folder(path)), Path(path))


def plan_suite_data(data: dict[str, Any], p: Path) -> list[Job]:
    """Every run a suite file's data describes (`p` names it in messages), all configs checked —
    a resumed suite plans from the data saved in its folder, not from the file as it is now."""
    suites = _sections()
    unknown = sorted(set(data) - TOP_KEYS - set(suites))
    if unknown:
        raise InputError(f"{p}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(TOP_KEYS | set(suites)))}")
    sections = [s for s in suites if s in data]
    if not sections:
        raise InputError(f"{p}: no suite section; add at least one of [{'], ['.join(suites)}]")
    top_data = {k: v for k, v in data.items() if k in TOP_KEYS}
    if isinstance(top_data.get("seeds"), int) and not isinstance(top_data.get("seeds"), bool):
        top_data["seeds"] = [top_data["seeds"]]
    if "models" not in top_data:
        raise InputError(f"{p}: models: missing; list the models to run, e.g. models = [\"embedded\"]")
    top: TopLevel = validate(TopLevel, top_data, str(p))
    seeds = top.seeds
    dup = sorted({s for s in seeds if seeds.count(s) > 1})
    if dup:
        raise InputError(f"{p}: seeds: {dup[0]} is listed twice")
    for s in seeds:
        check_value(f"{p}: seeds: a seed", s, SEED)
    if top.output_dir is not None and "\0" in top.output_dir:
        raise InputError(f"{p}: output_dir: a folder name cannot hold a NUL character")
    models = _models(p, top.models)
    jobs: list[Job] = []
    for suite in sections:
        params = data[suite] if data[suite] is not None else {}
        if not isinstance(params, dict):
            raise InputError(f"{p}: [{suite}] must be a table of settings")
        try:
            _check_section_types(p, suite, params, models, seeds)
            jobs += SUITES.get(suite).jobs(str(p), dict(params), models, seeds)
        except TypeError as e:
            raise InputError(f"{p}: [{suite}] {e}") from None
        except InputError as e:
            raise InputError(_in_section(str(e), p, suite, params)) from None
    seen: set[Any] = set()
    for j in jobs:
        j.key = f"{SUITES.get(j.suite).family}|{j.label}|{j.seed}|{j.setting}"
        same = (j.suite, j.label, j.seed, repr(j.config))  # (names spelt two ways resolve to one config)
        if j.key in seen or same in seen:  # (one run twice: two identical folders, two rows of runs.csv)
            raise InputError(_listed_twice(p, j, data))
        seen |= {j.key, same}
    return jobs


def _listed_twice(p: Path, job: Job, data: dict[str, Any]) -> str:
    """The line refusing a suite file that plans ``job``'s run twice: the section's list that names
    an entry twice (``[tom] games: 'rps' is listed twice``), as duplicate models and seeds are."""
    section = next((s for s in _sections() if s in data and SUITES.get(s).name == job.suite), job.suite)
    params = data.get(section) if isinstance(data.get(section), dict) else {}
    for key, value in (params or {}).items():
        if isinstance(value, list):
            items = [v.strip().lower() if isinstance(v, str) else v for v in value]
            dup = next((v for i, v in enumerate(items) if v in items[:i]), None)
            if dup is not None:
                return f"{p}: [{section}] {key}: {value[items.index(dup)]!r} is listed twice"
    return f"{p}: [{section}] plans the run {job.setting or job.label or job.suite!r} (seed {job.seed}) twice"


def _job_specs(config: Any) -> list[str]:
    """The player specs a job's config names (its model, its models, its opponents)."""
    specs = [getattr(config, "model", None)]
    for name in ("models", "opponents"):
        more = getattr(config, name, None)
        if isinstance(more, (list, tuple)):
            specs += list(more)
    return [x.strip() for x in specs if isinstance(x, str) and x.strip()]


def check_job_models(jobs: Iterable[Job]) -> None:
    """Open every model the jobs play — once per model and server — and close it again, before a
    collection's folder exists: a model that cannot be opened (a missing GGUF file, an
    openai-compatible model without a base URL, a hosted API without its key, a chat model without
    a chat template) is one error line and nothing written, not a refusal from the collection's
    first run after its folder was made. A job's suite's scripted players (`SuiteBase.scripted`)
    have no model to open. Nothing is sent to a server."""
    import asyncio

    from stratbench.models import ModelOptions, is_http_spec, load_model, split_spec

    wanted: dict[tuple[str, str | None, str | None, str | None], dict[str, bool]] = {}
    hottest: dict[tuple[str, str | None, str | None, str | None], float] = {}  # the highest temperature a model samples at
    for job in jobs:
        cfg = job.config
        roster = SUITES.get(job.suite).scripted
        for spec in _job_specs(cfg):
            if roster.matches(spec):
                continue  # a scripted player (nash, uniform, level-k:1, ...)
            split_spec(spec)  # (the suite's own checks passed it: a model spec)
            http = is_http_spec(spec)
            key = (spec, getattr(cfg, "base_url", None) if http else None,
                   getattr(cfg, "chat_template", None) if http else None,
                   getattr(cfg, "reasoning_effort", None) if http else None)
            flags = wanted.setdefault(key, {"chat": False, "choice": False})
            temperature = getattr(cfg, "temperature", None)
            if isinstance(temperature, (int, float)):
                hottest[key] = max(hottest.get(key, temperature), temperature)
            if getattr(cfg, "chat", False):
                flags["chat"] = True
                flags["choice"] |= getattr(cfg, "policy", None) == "choice"
    for key, flags in wanted.items():
        spec, base_url, chat_template, effort = key
        model = load_model(spec, ModelOptions(base_url=base_url, chat=True if flags["chat"] else None,
                                              chat_template=chat_template, reasoning_effort=effort,
                                              temperature=hottest.get(key)))
        try:
            if flags["chat"]:
                model.check_chat(scoring=flags["choice"])
        finally:
            asyncio.run(model.aclose())


def pending_jobs(jobs: Iterable[Job], meta: dict[str, Any]) -> list[Job]:
    """The jobs of a collection that are not finished yet, or finished with failed calls (what a
    resume still runs: a run's resume tries its errors again, `jobs.finished_runs`)."""
    done = {r.get("key") for r in meta.get("runs", []) if isinstance(r, dict) and r.get("status") == "finished"
            and not has_errors(r)}
    return [j for j in jobs if j.key not in done]


def has_errors(entry: dict[str, Any]) -> bool:
    """Whether a collection's run entry counts errored records (failed calls: a resume tries them again)."""
    errors = entry.get("errors")
    return isinstance(errors, int) and not isinstance(errors, bool) and errors > 0


def check_no_redacted_urls(jobs: Iterable[Job], folder: Path, give_again: str) -> None:
    """A resumed collection whose unfinished runs would connect with a URL read back from its
    folder — where credentials are saved as ``***`` — is refused in one line that says how to give
    the URL again (``give_again``: the command that does), before anything changes."""
    from stratbench.models import is_http_spec
    from stratbench.redact import is_redacted_url

    for job in jobs:
        url = getattr(job.config, "base_url", None)
        if not isinstance(url, str) or not is_redacted_url(url):
            continue
        http = [s for s in _job_specs(job.config) if _is_model(s) and is_http_spec(s)]
        if http:
            raise InputError(f"--resume {folder}: {http[0]}: its base URL {url} was saved with the credentials "
                             f"redacted (***); give it again: {give_again}")


def _is_model(spec: str) -> bool:
    from stratbench.models import split_spec

    try:
        split_spec(spec)
    except InputError:
        return False
    return True
