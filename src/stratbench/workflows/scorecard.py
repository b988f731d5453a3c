"""`stratbench scorecard`: every suite for every model at one named budget, next to chance and
optimal references, in one folder with one table.

The plan comes from the suites' scorecard parts (:mod:`stratbench.suites.scorecards`), each
planning its runs through its own `jobs` hook — the path suite files take — so every run in the
folder is an ordinary result folder (resumable, mergeable, comparable, reported), and its numbers
are those of the same suite run by hand with the same settings and seed. The folder::

    scorecard_<time>/
        suite_metadata.json   the plan (models, budget, seed) and every run's folder and status
        nashgap/<player>/...  tmgbench/...  chbench/...  tom/...   the runs
        scorecard.json        the scores (stratbench.scoring.Scorecard): identical for the same
                              models, budget and seed however the work was done (resumed, cached)
        cost.json             what this folder's work cost: model calls, cache hits, tokens, seconds
        scorecard.csv         one row per player × suite: both of the above
        report/index.html     the HTML report, the scorecard on its first screen

`--resume FOLDER` finishes an interrupted scorecard (finished runs are kept, an interrupted one is
finished in place); the response cache makes a re-run of the same scorecard free.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from stratbench.checks import RULES, SEED, check_value
from stratbench.errors import InputError
from stratbench.models.prices import load_price_table
from stratbench.render.csv_cells import csv_row
from stratbench.runner.folders import (
    check_not_a_listed_run,
    create_run_folder,
    migrate_run_json,
    missing_dirs,
    now_iso,
    run_metadata,
)
from stratbench.runner.jsonl import write_csv_atomic, write_json_atomic
from stratbench.runner.lifecycle import announce_folder
from stratbench.runner.lock import folder_lock
from stratbench.scoring import (
    BUDGETS,
    SCORECARD_VERSION,
    CostRow,
    PlayerEntry,
    Role,
    Scorecard,
    ScoreCell,
    paired_difference,
    read_scorecard,
)
from stratbench.suites import SUITES
from stratbench.suites.base import Job
from stratbench.suites.scorecards import ScorecardModel, ScorecardPart, ScorecardRun
from stratbench.workflows.jobs import check_listed_runs, family, finished_runs, run_jobs
from stratbench.workflows.suite_file import refused_leaves_nothing
from stratbench.workflows.suite_plan import check_job_models, check_no_redacted_urls, pending_jobs

__all__ = ["ScorecardResult", "chat_by_default", "check_scorecard", "compare_scorecards", "is_scorecard_folder", "pair_models", "parts",
           "plan_scorecard", "read_scorecard", "run_scorecard", "scorecard_models"]

META = "suite_metadata.json"
KIND = "scorecard"
ROLE_ROWS: tuple[Role, ...] = ("optimal", "chance")


@dataclass
class ScorecardResult:
    folder: Path
    scorecard: Scorecard
    costs: list[CostRow]
    n_errors: int  # errored records of the runs done in this session
    report: Path | None


def parts() -> list[ScorecardPart]:
    """Every registered suite's scorecard part, in registry order."""
    out = []
    for name in SUITES.names():
        part = SUITES.get(name).scorecard_part()
        if part is not None:
            out.append(part)
    return out


def chat_by_default(spec: str) -> bool:
    """Whether a spec names an instruction-tuned model when the user does not say: its backend's
    traits (the embedded instruct model and the hosted chat APIs; every other model is read as a
    raw model)."""
    from stratbench.models import backend_traits

    return backend_traits(spec).chat_model


def scorecard_models(models: Sequence[str | ScorecardModel], chat: bool | None, base_url: str | None,
                     reasoning_effort: str | None = None, think_tags: str | None = None,
                     max_tokens: int | None = None) -> list[ScorecardModel]:
    """The players a scorecard of ``models`` scores, checked as `stratbench scorecard` checks its
    ``--model`` flags (one InputError line each): a spec string becomes a :class:`ScorecardModel`
    labelled by its spec, read as a chat model per ``chat`` (None: :func:`chat_by_default`), with
    ``base_url`` and ``reasoning_effort`` for HTTP specs only (either given to none is refused); refused are no models, reference
    (scripted) players, specs that do not parse, duplicate labels and labels of reference rows.
    Nothing is opened or written. :func:`run_scorecard` makes its players with it; the trend
    (:mod:`stratbench.workflows.trend`) makes each checkpoint's the same way."""
    from stratbench.models import check_base_url_applies, check_reasoning_effort, is_http_spec, split_spec

    if not models:
        raise InputError("give at least one --model")
    out = []
    for m in models:
        if isinstance(m, str):
            spec = m.strip()
            from stratbench.suites import all_suites

            if any(s.scripted.matches(spec) for s in all_suites()):
                raise InputError(f"--model {m!r} is a reference (scripted) player: the scorecard runs the reference "
                                 "players by itself; give it language models")
            try:
                split_spec(spec)
            except InputError as e:
                raise InputError(f"--model {m!r}: {e}; the scorecard scores language models (the reference "
                                 "players run by themselves)") from None
            m = ScorecardModel(spec, spec, chat_by_default(spec) if chat is None else chat,
                               base_url if is_http_spec(spec) else None,
                               reasoning_effort if is_http_spec(spec) else None, think_tags, max_tokens)
        else:
            split_spec(m.spec)
        out.append(m)
    check_value("--reasoning-effort", reasoning_effort, RULES["reasoning_effort"])
    check_value("--think-tags", think_tags, RULES["think_tags"])
    check_value("--max-tokens", max_tokens, RULES["max_tokens"])
    check_reasoning_effort(reasoning_effort, [m.spec for m in out])
    check_base_url_applies(base_url, [m.spec for m in out])
    labels = [m.label for m in out]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputError(f"--model {dup[0]} is given twice")
    taken = {name for p in parts() for name, _ in p.references} | set(ROLE_ROWS)
    clash = sorted(set(labels) & taken)
    if clash:
        raise InputError(f"--model {clash[0]}: the name of a reference player; give the model another label")
    return out


def plan_scorecard(models: Sequence[ScorecardModel], budget: str, seed: int) -> list[tuple[Job, str, Role]]:
    """Every run of the scorecard, configs validated; nothing is written."""
    if budget not in BUDGETS:
        raise InputError(f"unknown --budget {budget!r}; use {', '.join(BUDGETS)}")
    check_value("--seed", seed, SEED)
    plan = []
    for p in parts():
        for job, player, role in p.jobs(models, budget, seed):
            job.key = f"{family(job.suite)}|{player}|{job.seed}|{job.setting}"
            plan.append((job, player, role))
    efforts = {m.label: m.reasoning_effort for m in models if m.reasoning_effort is not None}
    for job, player, role in plan:  # (not part of a run's key: the scorecard's saved models say it)
        if role == "model" and player in efforts and hasattr(job.config, "reasoning_effort"):
            job.config.reasoning_effort = efforts[player]
    tags = {m.label: m.think_tags for m in models if m.think_tags is not None}
    for job, player, role in plan:  # (likewise: a model's thinking tags, where given)
        if role == "model" and player in tags and hasattr(job.config, "think_tags"):
            job.config.think_tags = tags[player]
    budgets = {m.label: m.max_tokens for m in models if m.max_tokens is not None}
    for job, player, role in plan:  # (likewise: a model's output budget, where given)
        if role == "model" and player in budgets and hasattr(job.config, "max_tokens"):
            job.config.max_tokens = budgets[player]
            if hasattr(job.config, "qa_max_tokens"):  # (ToM's direct answers: a sampled chat model's)
                job.config.qa_max_tokens = budgets[player]
    keys = [j.key for j, _, _ in plan]
    if len(set(keys)) != len(keys):  # pragma: no cover - the parts plan distinct runs
        raise RuntimeError("the scorecard plans one run twice")
    return plan


def _config(models: Sequence[ScorecardModel], budget: str, seed: int) -> dict[str, Any]:
    # (a model's reasoning_effort, think_tags and max_tokens only when given: the saved plan of a
    # scorecard without them is as before)
    return {"models": [{k: v for k, v in asdict(m).items() if k not in ("reasoning_effort", "think_tags", "max_tokens")
                        or v is not None}
                       for m in models], "budget": budget, "seed": seed}


def _from_config(cfg: dict[str, Any], where: str) -> tuple[list[ScorecardModel], str, int]:
    try:
        models = [ScorecardModel(**m) for m in cfg["models"]]
        for m in models:
            check_value(f"{where}: a model's reasoning_effort", m.reasoning_effort, RULES["reasoning_effort"])
            check_value(f"{where}: a model's think_tags", m.think_tags, RULES["think_tags"])
            check_value(f"{where}: a model's max_tokens", m.max_tokens, RULES["max_tokens"])
        return models, str(cfg["budget"]), int(cfg["seed"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: not a scorecard folder (its plan cannot be read)") from None


def _url_on_resume(models: Sequence[ScorecardModel], base_url: str, folder: Path) -> list[ScorecardModel]:
    """--base-url given to a resumed scorecard: where its models are served now — a server that
    moved, or the saved URL given again with the credentials that were not saved (***). Like a
    resumed run's --base-url it is a runtime setting (no run's key or record depends on it), and
    like a new scorecard's it goes to its HTTP models (refused for a scorecard of local models only).
    Refused too for a scorecard whose models were saved with different URLs: one flag cannot say
    where each is now. Nothing is saved: the credentials in it never are, and the folder keeps its
    plan."""
    from stratbench.models import check_base_url_applies, is_http_spec
    from stratbench.redact import redact_url

    check_base_url_applies(base_url, [m.spec for m in models])
    saved = sorted({m.base_url for m in models if m.base_url is not None and is_http_spec(m.spec)})
    if len(saved) > 1:
        raise InputError(f"--base-url {redact_url(base_url)}: the scorecard in {folder} has models at several "
                         f"base URLs ({', '.join(saved)}); one --base-url cannot say where each is now")
    return [replace(m, base_url=base_url) if is_http_spec(m.spec) else m for m in models]


def _read_meta(folder: Path, flag: str) -> dict[str, Any]:
    try:
        meta = json.loads((folder / META).read_text())
        if meta.get("suite") != KIND or not isinstance(meta.get("config"), dict):
            raise KeyError
    except (OSError, ValueError, KeyError, AttributeError, RecursionError):
        raise InputError(f"{flag}{folder}: not a scorecard folder") from None
    meta = migrate_run_json(meta, f"{flag}{folder}/{META}")
    if meta.get("kind", KIND) != KIND or meta.get("suite_version", 1) != 1:
        raise InputError(f"{flag}{folder}/{META}: kind {meta.get('kind')!r}, suite_version "
                         f"{meta.get('suite_version')!r} are not a scorecard's (edited by hand)")
    return meta


def run_scorecard(models: Sequence[str | ScorecardModel] = (), budget: str = "quick", seed: int = 0,
                  output_dir: str | Path = "results", resume_dir: str | Path | None = None,
                  chat: bool | None = None, base_url: str | None = None, no_cache: bool = False,
                  report: Callable[[Path], Path] | None = None,
                  on_run: Callable[[dict[str, Any]], None] | None = None, timeout: float | None = None,
                  retries: int | None = None, wait_for_server: float | None = None,
                  reasoning_effort: str | None = None, price_table: str | None = None,
                  think_tags: str | None = None, max_tokens: int | None = None) -> ScorecardResult:
    """Run (or, with ``resume_dir``, finish) a scorecard; write scorecard.json, cost.json,
    scorecard.csv and, with ``report`` (a report builder: folder -> index page; the workflows
    layer does not know the report), the report. :func:`stratbench.api.scorecard` passes the
    HTML report's builder. ``chat``: read every model as a chat model (True), as a raw
    model (False), or decide per model (None: `embedded-instruct` and hosted chat APIs are chat
    models). ``timeout``, ``retries``, ``wait_for_server``: the HTTP settings of every run (the
    suites' defaults when None); like a suite's runtime settings they are the command's, not the
    plan's, so a resume may change them. ``price_table``: saved with the scorecard (absolute), its
    Nash-gap runs price their cost with it; a resume keeps the saved one (or, when it is gone, takes
    this one in its place). ``max_tokens``: the
    output budget of the models' generated answers in every suite (saved; None: each suite's
    default). Everything is checked before the folder exists."""
    http = {k: v for k, v in (("timeout", timeout), ("retries", retries), ("wait_for_server", wait_for_server))
            if v is not None}
    for k, v in http.items():
        check_value("--" + k.replace("_", "-"), v, RULES[k])
    made: list[Path] = []
    if resume_dir is not None:
        out = Path(resume_dir)
        meta = _read_meta(out, "--resume ")
        if meta.get("status") == "finished":  # (a trend's checkpoint: the trend resumes it, its tables follow)
            check_not_a_listed_run(out, "scorecard")
        ms, budget, seed = _from_config(meta["config"], f"--resume {out}")
        saved_prices = meta["config"].get("price_table")
        if isinstance(saved_prices, str) and saved_prices.strip() and not os.path.exists(saved_prices):
            # the table the scorecard priced with is gone (the folder copied to another machine):
            # the command's --price-table stands in for it, saved from now on (as a run's resume)
            if not price_table:
                raise InputError(f"--resume {out}: the price table saved with the scorecard ({saved_prices}) is "
                                 "gone; give it (or another) with --price-table FILE")
            load_price_table(price_table)
            meta["config"]["price_table"] = os.path.abspath(price_table)
            saved_prices = meta["config"]["price_table"]
        price_table = saved_prices if isinstance(saved_prices, str) else None  # (--price-table: cli.plan checks)
        if base_url is not None:
            ms = _url_on_resume(ms, base_url, out)
        plan = plan_scorecard(ms, budget, seed)
        if [j.key for j, _, _ in plan] != meta.get("plan"):
            raise InputError(f"--resume {out}: the saved plan no longer gives the same runs with this version "
                             "of stratbench; run the scorecard again")
        # what is left to run checked as a new scorecard's models are, before the folder changes
        pending = pending_jobs((j for j, _, _ in plan), meta)
        check_no_redacted_urls(pending, out, f"stratbench scorecard --resume {shlex.quote(str(out))} --base-url URL")
        check_job_models(pending)
    else:
        ms = scorecard_models(models, chat, base_url, reasoning_effort, think_tags, max_tokens)
        plan = plan_scorecard(ms, budget, seed)
        if price_table is not None:  # read again on resume, perhaps from another folder
            load_price_table(price_table)
            price_table = os.path.abspath(price_table)
        # every model opened (GGUF file there, base URL and API key given, chat template where
        # needed) before the folder exists: a refusal leaves nothing behind
        check_job_models(j for j, _, _ in plan)
        made = missing_dirs(output_dir)
        out = create_run_folder(output_dir, "scorecard").path
        meta = run_metadata(KIND, {**_config(ms, budget, seed), **({"price_table": price_table} if price_table
                                                                      else {})}, kind=KIND)
        meta.update(runs=[], plan=[j.key for j, _, _ in plan], no_cache=no_cache)
    if meta.get("no_cache"):
        for job, _, _ in plan:
            if hasattr(job.config, "no_cache"):
                job.config.no_cache = True
    for job, _, _ in plan:
        for k, v in http.items():
            if hasattr(job.config, k):
                setattr(job.config, k, v)
        if price_table is not None and hasattr(job.config, "price_table"):  # (the Nash-gap runs' cost)
            job.config.price_table = price_table
    jobs = [j for j, _, _ in plan]
    extra = _entry_extra(plan)
    finished = finished_runs(out, meta, jobs, extra) if resume_dir else set()
    with refused_leaves_nothing(out, meta, new=resume_dir is None, made=made), folder_lock(out):
        write_json_atomic(out / META, meta)  # resumable from its first moment
        announce_folder(out)
        runs, n_errors = run_jobs(out, meta, jobs, on_run, finished=finished, timed=True, extra=extra)
        card, costs = score_folder(out, ms, budget, seed, plan, runs)
        write_json_atomic(out / "scorecard.json", card)
        write_json_atomic(out / "cost.json", costs)
        write_scorecard_csv(out / "scorecard.csv", card, costs)
        meta.update(runs=runs, end_time=now_iso(), status="finished")
        write_json_atomic(out / META, meta)
    index = report(out) if report is not None else None
    return ScorecardResult(out, card, costs, n_errors, index)


def _entry_extra(plan: Sequence[tuple[Job, str, Role]]) -> Callable[[Job], dict[str, Any]]:
    """The keys a scorecard's run entries hold beside a suite file's: the player, its role, the
    registered suite."""
    roles = {j.key: (player, role) for j, player, role in plan}
    return lambda j: {"player": roles[j.key][0], "role": roles[j.key][1], "registry": j.suite}


def _scorecard_runs(out: Path, plan: Sequence[tuple[Job, str, Role]], runs: Sequence[dict[str, Any]]) -> list[ScorecardRun]:
    by_key = {r["key"]: r for r in runs}
    found = []
    for job, player, role in plan:
        r = by_key.get(job.key)
        if r and r.get("status") == "finished" and r.get("folder"):
            found.append(ScorecardRun(job, out / r["folder"], str(r["folder"]), player, role))
    return found


def score_folder(out: Path, models: Sequence[ScorecardModel], budget: str, seed: int,
                 plan: Sequence[tuple[Job, str, Role]], runs: Sequence[dict[str, Any]]) -> tuple[Scorecard, list[CostRow]]:
    """The scorecard and the costs of a folder's finished runs."""
    sruns = _scorecard_runs(out, plan, runs)
    cells: list[ScoreCell] = []
    players: list[PlayerEntry] = [PlayerEntry(player=m.label, role="model", spec=m.spec, policy={}) for m in models]
    role_rows = {r: PlayerEntry(player=r, role=r, spec=None, policy={}) for r in ROLE_ROWS}
    others: dict[str, PlayerEntry] = {}
    for p in parts():
        mine = [r for r in sruns if SUITES.get(r.job.suite).family == SUITES.get(p.suite).family]
        cells += p.cells(mine, models, seed)
        for entry in players:  # the policy the plan gave the model's runs of this suite
            used = {str(getattr(j.config, "policy", None) or "") for j, player, role in plan
                    if role == "model" and player == entry["player"]
                    and SUITES.get(j.suite).family == SUITES.get(p.suite).family} - {""}
            entry["policy"][p.suite] = "/".join(sorted(used)) or next(
                m.policy for m in models if m.label == entry["player"])
        for name, role in p.references:
            if role in role_rows:
                role_rows[role]["policy"][p.suite] = name
            else:
                others.setdefault(name, PlayerEntry(player=name, role="reference", spec=None, policy={}))
                others[name]["policy"][p.suite] = "scripted"
    card = Scorecard(version=SCORECARD_VERSION, budget=budget, seed=seed, suites=[p.entry(budget) for p in parts()],
                     players=players + [role_rows[r] for r in ROLE_ROWS] + list(others.values()), cells=cells)
    return card, _costs(sruns, runs)


def _costs(sruns: Sequence[ScorecardRun], runs: Sequence[dict[str, Any]]) -> list[CostRow]:
    from stratbench.runner.folders import read_run_json

    seconds = {r["key"]: float(r.get("seconds") or 0.0) for r in runs}
    acc: dict[tuple[str, str], CostRow] = {}
    for r in sruns:
        fam = SUITES.get(r.job.suite).family
        row = acc.setdefault((r.player, fam), CostRow(player=r.player, suite=fam, model_calls=0, model_cache_hits=0,
                                                      tokens_in=0, tokens_out=0, seconds=0.0))
        try:
            totals = read_run_json(r.folder).get("totals") or {}
        except InputError:
            totals = {}
        row["model_calls"] += int(totals.get("model_calls") or 0)
        row["model_cache_hits"] += int(totals.get("model_cache_hits") or 0)
        row["tokens_in"] += int(totals.get("model_tokens_in") or 0)
        row["tokens_out"] += int(totals.get("model_tokens_out") or 0)
        row["seconds"] = round(row["seconds"] + seconds.get(r.job.key, 0.0), 3)
    return list(acc.values())


CSV_COLUMNS = ("player", "role", "reference", "suite", "status", "metric", "value", "ci95_low", "ci95_high",
               "normalized", "normalized_ci95_low", "normalized_ci95_high", "n_units", "unit", "scored",
               "parse_failed", "error", "model_calls", "model_cache_hits", "tokens_in", "tokens_out", "seconds",
               "runs")


def write_scorecard_csv(path: Path, card: Scorecard, costs: Sequence[CostRow]) -> None:
    """scorecard.csv: one row per player × suite (the scores, and what they cost here)."""
    suites = {s["suite"]: s for s in card["suites"]}
    roles = {p["player"]: p["role"] for p in card["players"]}
    cost = {(c["player"], c["suite"]): c for c in costs}

    def write(fh: Any) -> None:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for c in card["cells"]:
            s = suites[c["suite"]]
            none: list[float | None] = [None, None]
            ci: list[float | None] = list(c["ci95"]) if c["ci95"] else none
            nci: list[float | None] = list(c["normalized_ci95"]) if c["normalized_ci95"] else none
            k = cost.get((c["reference"] or c["player"], c["suite"]))
            w.writerow(csv_row([c["player"], roles.get(c["player"], "reference"), c["reference"] or "", c["suite"],
                                c["status"], s["metric"], c["value"], ci[0], ci[1], c["normalized"], nci[0], nci[1],
                                c["n_units"], s["unit"], c["counts"].get("scored"), c["counts"].get("parse_failed"),
                                c["counts"].get("error"),
                                *((k["model_calls"], k["model_cache_hits"], k["tokens_in"], k["tokens_out"],
                                   k["seconds"]) if k else ("", "", "", "", "")),
                                ";".join(c["runs"])]))

    write_csv_atomic(path, write)  # all or nothing; a refused write names the file


# scorecard.json against a recomputation from the records: equal on one machine; the tolerance
# covers another machine's floating point (BLAS, libm) only — an edited number is far outside it
REL_TOL = ABS_TOL = 1e-6
CHECKED_FIELDS = ("status", "n_units", "counts", "value", "ci95", "normalized", "normalized_ci95", "reference",
                  "exact", "runs")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return bool(a == b)


def check_against_records(saved: Scorecard, computed: Scorecard, where: str) -> None:
    """InputError (one line) unless scorecard.json holds the cells its runs' records give — the
    same cells, each with the same status, counts, numbers (within float tolerance), reference,
    exactness and runs; and the same players (the table's rows) and suites (its columns)."""
    fix = (f"the file was edited, or its runs were; rewrite it from the records with stratbench scorecard "
           f"--resume {where}")
    if (saved["budget"], saved["seed"]) != (computed["budget"], computed["seed"]):
        raise InputError(f"{where}/scorecard.json: its budget/seed ({saved['budget']}/{saved['seed']}) are not the "
                         f"scorecard's ({computed['budget']}/{computed['seed']}); {fix}")
    got: dict[tuple[str, str], dict[str, Any]] = {(c["player"], c["suite"]): dict(c) for c in saved["cells"]}
    want: dict[tuple[str, str], dict[str, Any]] = {(c["player"], c["suite"]): dict(c) for c in computed["cells"]}
    if len(got) != len(saved["cells"]) or got.keys() != want.keys():
        odd = sorted(got.keys() - want.keys())
        lost = sorted(want.keys() - got.keys())
        what = (f"{odd[0][0]} on {odd[0][1]} is not a cell of its runs" if odd else
                f"no cell for {lost[0][0]} on {lost[0][1]}" if lost else "a cell is given twice")
        raise InputError(f"{where}/scorecard.json: {what}; {fix}")
    for name in ("players", "suites"):  # a row dropped from the table, a player or suite relabelled
        if not _same(saved[name], computed[name]):
            raise InputError(f"{where}/scorecard.json: its {name} are not the scorecard's; {fix}")
    for key, w in want.items():
        g = got[key]
        for f in CHECKED_FIELDS:
            if not _same(g[f], w[f]):
                raise InputError(f"{where}/scorecard.json: {key[0]} on {key[1]}: {f} {g[f]!r} "
                                 f"disagrees with its records ({w[f]!r}); {fix}")


def _finished_scorecard(folder: Path, flag: str) -> tuple[Scorecard, list[ScorecardModel], list[ScorecardRun]]:
    """A finished scorecard's cells recomputed from its runs' records (checked against its
    scorecard.json), its models and its runs."""
    meta = _read_meta(folder, flag)
    if meta.get("status") != "finished":
        raise InputError(f"{flag}{folder}: the scorecard is not finished (status {meta.get('status')!r}); "
                         f"finish it with stratbench scorecard --resume {folder}")
    saved = read_scorecard(folder, flag)
    ms, budget, seed = _from_config(meta["config"], f"{flag}{folder}")
    runs = meta.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise InputError(f"{flag}{folder}: suite_metadata.json lists no runs")
    plan = plan_scorecard(ms, budget, seed)
    if [j.key for j, _, _ in plan] != meta.get("plan"):
        raise InputError(f"{flag}{folder}: the saved plan no longer gives the same runs with this version of "
                         "stratbench; its records cannot be rescored")
    # every run's records read as a resume reads them, its summaries agreeing, and its entry what
    # the run is (suite, model, seed, setting, errors, headline: as the report checks it)
    check_listed_runs(folder, meta, [j for j, _, _ in plan], _entry_extra(plan))
    try:
        computed, _ = score_folder(folder, ms, budget, seed, plan, runs)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise InputError(f"{flag}{folder}: its runs' records cannot be read ({type(e).__name__}: {e})") from None
    check_against_records(saved, computed, f"{flag}{folder}")
    return computed, ms, _scorecard_runs(folder, plan, runs)


def check_scorecard(folder: Path) -> None:
    """InputError when a finished scorecard's scorecard.json disagrees with its runs' records (an
    edited file); an unfinished scorecard (no scorecard.json yet) passes. What the report calls
    before it shows a scorecard's table."""
    meta = _read_meta(folder, "")
    if meta.get("status") == "finished" or (folder / "scorecard.json").is_file():
        # (a scorecard.json beside a status edited to "running" is checked all the same)
        _finished_scorecard(folder, "")


def check_scorecard_runs(folder: Path) -> None:
    """InputError when a scorecard folder's suite_metadata.json lists runs other than the ones its
    plan and its run folders give (`check_listed_runs`): what the report checks before it shows
    the list."""
    meta = _read_meta(folder, "")
    ms, budget, seed = _from_config(meta["config"], str(folder))
    plan = plan_scorecard(ms, budget, seed)
    if [j.key for j, _, _ in plan] != meta.get("plan"):
        raise InputError(f"{folder}/{META}: its plan is not the runs its config gives (edited by hand, or written by "
                         "another version of stratbench)")
    check_listed_runs(folder, meta, [j for j, _, _ in plan], _entry_extra(plan))


def pair_models(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, str]]:
    """Which model of scorecard A is compared with which of B: by label when the two hold the
    same labels (one model, two settings), else by position (two checkpoints, two names)."""
    if set(a) == set(b):
        return [(x, x) for x in a]
    if len(a) != len(b):
        raise InputError(f"the scorecards hold different models ({', '.join(a)} vs {', '.join(b)}) and not as "
                         "many of them; compare scorecards of the same models, or one model each")
    return list(zip(a, b))


def compare_scorecards(folder_a: str | Path, folder_b: str | Path, seed: int = 0,
                       checked: dict[Path, Any] | None = None) -> dict[str, Any]:
    """B − A of the normalised score per model and suite. Paired over the units both scorecards
    scored (the same games, grids, episodes: same budget and seed), with the joint bootstrap of
    :func:`stratbench.scoring.paired_difference`; CHBench's score is one fitted level, so its
    difference is unpaired and its CI is left out (the two fits' own CIs are in the rows). Every
    number is recomputed from the runs' records; a scorecard.json that disagrees with them is
    refused (:func:`check_against_records`). A failed cell (nothing scored) has no score and no
    difference."""
    fa, fb = Path(folder_a), Path(folder_b)

    def finished(folder: Path) -> Any:
        # `checked`: the scorecards a caller comparing many pairs (a trend) has checked already,
        # each read and checked against its records once, not once per pair it is in
        if checked is None:
            return _finished_scorecard(folder, "")
        key = folder.resolve()
        if key not in checked:
            checked[key] = _finished_scorecard(folder, "")
        return checked[key]

    ca, ma, ra = finished(fa)
    cb, mb, rb = finished(fb)
    if (ca["budget"], ca["seed"]) != (cb["budget"], cb["seed"]):
        note = (f"budgets/seeds differ (A: {ca['budget']}/{ca['seed']}, B: {cb['budget']}/{cb['seed']}): "
                "only shared units are paired")
    else:
        note = ""
    cells_a = {(c["player"], c["suite"]): c for c in ca["cells"]}
    cells_b = {(c["player"], c["suite"]): c for c in cb["cells"]}
    rows = []
    for la, lb in pair_models([m.label for m in ma], [m.label for m in mb]):
        for p in parts():
            a_runs = [r for r in ra if family(r.job.suite) == family(p.suite)]
            b_runs = [r for r in rb if family(r.job.suite) == family(p.suite)]
            xa, xb = cells_a.get((la, p.suite)), cells_b.get((lb, p.suite))
            failed = any(x is None or x["status"] == "failed" for x in (xa, xb))
            ua, ub = (None, None) if failed else (p.units(a_runs, la), p.units(b_runs, lb))
            va = xa.get("normalized") if xa else None
            vb = xb.get("normalized") if xb else None
            row: dict[str, Any] = {"model_a": la, "model_b": lb, "suite": p.suite, "title": p.title,
                                   "a": va, "b": vb, "a_ci95": xa.get("normalized_ci95") if xa else None,
                                   "b_ci95": xb.get("normalized_ci95") if xb else None,
                                   "a_status": xa["status"] if xa else "failed",
                                   "b_status": xb["status"] if xb else "failed"}
            if ua is not None and ub is not None:
                diff, ci, n = paired_difference(ua, ub, seed)
                row.update(diff=diff, diff_ci95=ci, paired=True, n_units=n)
            else:
                row.update(diff=(vb - va) if va is not None and vb is not None else None, diff_ci95=None,
                           paired=False, n_units=min(int(xa["n_units"]) if xa else 0, int(xb["n_units"]) if xb else 0))
            ci = row["diff_ci95"]
            row["significant"] = bool(ci and (ci[0] > 0 or ci[1] < 0))
            rows.append(row)
    return {"kind": "scorecard", "run_a": str(fa), "run_b": str(fb), "budget_a": ca["budget"],
            "budget_b": cb["budget"], "note": note, "rows": rows}


def is_scorecard_folder(folder: str | Path) -> bool:
    """Whether a folder is a scorecard (its suite_metadata.json says so)."""
    try:
        meta = json.loads((Path(folder) / META).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("suite") == KIND
