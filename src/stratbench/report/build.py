"""`stratbench report DIR`: one static HTML page for a result folder or a folder of runs.

The page is self-contained: figures are embedded as base64 PNG data URIs, there is no script and
no external resource, and a Content-Security-Policy forbids both, so the file can be mailed,
archived or opened offline. The figures the report draws itself are also written next to it as
PNG files (the suites' own PNGs stay in their run folders). Every piece of text taken from the
result files goes through the escaping builder in :mod:`stratbench.render.html`.

The page and its PNGs are written to a hidden staging folder (``.tmp-<name>-<pid>``) and put in
place when complete — a new output folder by one rename, an existing one file by file with
``index.html`` last — so a report killed midway never leaves a half folder or a half page.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import stratbench
from stratbench.errors import InputError
from stratbench.files import file_problem, os_problem
from stratbench.render.html import Html, el, fmt_num, join, kv_table, table
from stratbench.render.views import RunDir
from stratbench.report.discover import SuiteDir, discover
from stratbench.report.plots import leaderboard_plot
from stratbench.report.scorecard import find_scorecards, scorecard_sections
from stratbench.report.sections import (
    Ctx,
    LeaderEntry,
    RunView,
    compact_csv_table,
    csv_table,
    metric_cell,
    render_run,
    slug,
    text_file,
)
from stratbench.runner.folders import STAGING_PREFIX, remove_stale_staging
from stratbench.runner.jsonl import write_error
from stratbench.runner.lock import folder_lock
from stratbench.suites import SUITES

__all__ = ["MARKER", "ReportResult", "build_report"]

MARKER = "stratbench-report"
AUTO_RUN_FIGURES = 12
MAX_OPEN_LEADERBOARDS = 6
MAX_OPEN_OVERVIEW = 20
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:1rem 2rem;color:#222;line-height:1.4}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
h3{margin-top:1.6rem}h3 a{color:inherit;text-decoration:none}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.88rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}caption{text-align:left;font-size:.85rem;color:#555;padding:.2rem 0}
table.kv td:first-child{font-family:monospace;white-space:nowrap}
table.headline td:nth-child(2),table.headline td:nth-child(3){font-family:monospace;text-align:right}
table.wide{display:block;overflow-x:auto;max-width:100%}table.wide td{white-space:nowrap}
table.records pre{margin:0;max-width:48rem;max-height:14rem;overflow:auto;white-space:pre-wrap;
word-break:break-word;font-size:.8rem}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;max-height:30rem;white-space:pre-wrap}
section.run{border:1px solid #e2e2e2;border-radius:6px;padding:.2rem 1rem 1rem;margin:1rem 0}
.pill{display:inline-block;font-size:.75rem;background:#eef;border-radius:9px;padding:0 .5rem;
margin-right:.2rem;font-weight:normal}.pill.model{background:#efe}.pill.bad{background:#fdd}
.warn{color:#a40000}.note{color:#555;font-size:.88rem}
figure{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.8rem;color:#555}
.figs figure img{max-width:560px}nav ul{columns:2;font-size:.9rem}
details{margin:.4rem 0}summary{cursor:pointer;color:#225}summary h3{display:inline-block;margin:.6rem 0}
"""


@dataclass(frozen=True)
class ReportResult:
    index: Path  # the HTML page
    figures: list[Path]  # PNGs the report drew, next to the page
    n_runs: int
    n_suites: int


def _default_output(root: Path) -> Path:
    return root / "report"


def _check_output(out: Path) -> None:
    """A report goes into a new folder, an empty one, or one holding an earlier report of ours —
    never over the files of a folder that is something else (`-o /`, `-o ~/site` with its own
    index.html)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--output {out}: exists and is not a folder")
    if out.is_dir() and not _is_ours(out):
        try:
            other = next((p.name for p in out.iterdir() if not p.name.startswith(STAGING_PREFIX)), None)
        except OSError as e:
            raise InputError(f"--output {out}: {os_problem(e)}") from None
        if other is not None:
            raise InputError(f"--output {out}: an existing folder that holds other files ({other}, ...), not a "
                             "stratbench report; give a new or empty folder")


def _is_ours(out: Path) -> bool:
    """Whether ``out`` holds a report of ours (its index.html carries the marker; a pipe or a
    device in its place is not opened: it would block, or never end)."""
    if file_problem(out / "index.html") is not None:
        return False
    try:
        with open(out / "index.html", encoding="utf-8", errors="replace") as fh:
            return MARKER in fh.read(2000)
    except OSError:
        return False


def _stage_output(out: Path) -> tuple[Path, list[Path]]:
    """A new staging folder for the report (a hidden sibling of a new output folder; inside an
    existing one) and the folders created for it (removed again if the report fails)."""
    base = out if out.is_dir() else out.parent
    made = [d for d in (base, *base.parents) if not d.exists()]
    try:
        base.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(base)  # of reports and merges that were killed
        tmp = base / f"{STAGING_PREFIX}{out.name or 'report'}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    except OSError as e:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise InputError(f"--output {out}: {os_problem(e)}") from None
    return tmp, made


def _publish(tmp: Path, out: Path) -> None:
    """Put the staged report in place: a new folder by one rename; into an existing folder file by
    file, index.html last (the PNGs of an earlier report of ours there are removed first)."""
    if not out.exists():
        os.rename(tmp, out)
        return
    if _is_ours(out):
        for p in out.glob("*.png"):
            p.unlink()
    for f in sorted(tmp.iterdir(), key=lambda p: (p.name == "index.html", p.name)):
        os.replace(f, out / f.name)
    tmp.rmdir()


def _rank_key(e: LeaderEntry, key: str, lower_better: bool) -> tuple[int, float]:
    """Entries without the metric sort last; the rest best first."""
    v = e.summary.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return (1, 0.0)
    return (0, float(v) if lower_better else -float(v))


def _leaderboards(ctx: Ctx, views: list[RunView]) -> list[Html]:
    """A ranked table (and bar chart) per group of comparable runs with two or more entries."""
    groups: dict[str, list[LeaderEntry]] = {}
    for v in views:
        for e in v.entries:
            groups.setdefault(e.group, []).append(e)
    out: list[tuple[str, Html]] = []
    for group, entries in sorted(groups.items()):
        if len(entries) < 2:
            continue
        suite = entries[0].suite
        board = SUITES.get(suite).leaderboard
        if board is None:
            continue
        cols, lower_better = board.columns, board.lower_is_better
        key = next((k for k, _ in cols if any(isinstance(e.summary.get(k), (int, float)) for e in entries)), None)
        if key is None:
            continue
        ranked = sorted(entries, key=lambda e: _rank_key(e, key, lower_better))
        shown_cols = [(k, lab) for k, lab in cols if any(k in e.summary for e in entries)]
        rows = []
        for i, e in enumerate(ranked, 1):
            rows.append([i, e.name, el("a", e.rel, href=f"#{e.anchor}")]
                        + [metric_cell(e.summary, k) for k, _ in shown_cols]
                        + [fmt_num(e.tokens) if e.tokens is not None else "—",
                           f"${e.cost:.4f}" if e.cost is not None else "—"])
        label = dict(cols)[key]
        anchor = slug("lb-" + group)
        parts: list[Any] = [
            el("p", f"Ranked by {label} ({'lower' if lower_better else 'higher'} is better); "
               "values are means with 95% bootstrap CIs over units (games, grids or episodes).", class_="note"),
            table(["#", "model", "run"] + [lab for _, lab in shown_cols] + ["tokens", "cost"], rows, class_="wide"),
        ]
        with_vals = [e for e in ranked if _rank_key(e, key, lower_better)[0] == 0]
        if len(with_vals) >= 2:
            names = [e.name for e in with_vals]
            values = [float(e.summary[key]) for e in with_vals]
            cis = [e.summary.get(f"{key}_ci95") for e in with_vals]
            def draw(n: list[str] = names, v: list[float] = values, c: list[Any] = cis, lab: str = label) -> bytes:
                return leaderboard_plot(n, v, c, lab, f"{lab} (95% CI)")

            parts.append(ctx.figure(f"{anchor}_leaderboard", draw, f"Leaderboard: {label}",
                                    f"{label} with 95% CI, per model", per_run=False))
        out.append((group, el("div", join(parts), id=anchor)))
    if len(out) > MAX_OPEN_LEADERBOARDS:  # e.g. a tiered suite: one group per bucket × seed × mode
        return [el("details", el("summary", title), body) for title, body in out]
    return [join([el("h3", title), body]) for title, body in out]


def _suite_section(s: SuiteDir) -> Html:
    anchor = slug("suite-" + s.rel)
    parts: list[Any] = [el("h3", el("a", s.rel, href=f"#{anchor}"), " ", el("span", "suite folder", class_="pill"))]
    for p in s.problems:
        parts.append(el("p", p, class_="warn"))
    if s.withheld:
        parts.append(el("p", "The collection's tables and list of runs are not shown; its runs are listed below "
                             "on their own.", class_="warn"))
        return el("section", join(parts), id=anchor, class_="run")
    order = sorted(s.tables, key=lambda p: (0 if "aggregated" in p.name and p.suffix == ".csv" else 1, p.name))
    for i, table_path in enumerate(order):
        compact = compact_csv_table(table_path) if table_path.suffix == ".csv" else None
        if compact is not None:
            parts.append(el("details", el("summary", f"{table_path.name} (headline columns)"), compact, open=(i == 0)))
        body = csv_table(table_path) if table_path.suffix == ".csv" else text_file(table_path)
        parts.append(el("details", el("summary", table_path.name + (" (all columns)" if compact is not None else "")),
                        body, open=(i == 0 and compact is None)))
    if isinstance(s.metadata, dict):
        parts.append(el("details", el("summary", "suite_metadata.json"), kv_table(s.metadata)))
    elif s.metadata is not None:
        parts.append(el("details", el("summary", "suite_metadata.json"), el("pre", str(s.metadata)[:20000])))
    return el("section", join(parts), id=anchor, class_="run")


def _short_time(iso: Any) -> str:
    """'2026-11-22T14:21:23+00:00' -> '2026-11-22 14:21:23' (the full value is in the metadata)."""
    if not isinstance(iso, str) or not iso:
        return "—"
    return iso.replace("T", " ")[:19]


def _overview(views: list[RunView]) -> Html:
    rows = []
    tok_sum, cost_sum, any_tok, any_cost = 0, 0.0, False, False
    for v in views:
        o = v.overview
        if o["tokens"] is not None:
            tok_sum += o["tokens"]
            any_tok = True
        if o["cost"] is not None:
            cost_sum += o["cost"]
            any_cost = True
        rows.append([el("a", o["rel"], href=f"#{o['anchor']}"), o["suite"], o["player"], o["status"],
                     fmt_num(o["records"]), fmt_num(o["errors"]),
                     fmt_num(o["tokens"]) if o["tokens"] is not None else "—",
                     f"${o['cost']:.4f}" if o["cost"] is not None else "—", _short_time(o["start"])])
    if len(views) > 1:
        rows.append([el("b", "total"), "", "", "", "", "", fmt_num(tok_sum) if any_tok else "—",
                     f"${cost_sum:.4f}" if any_cost else "—", ""])
    return table(("run", "suite", "model / player", "status", "records", "errors", "tokens", "cost", "started"),
                 rows, class_="wide")


def build_report(path: str | Path, output: str | Path | None = None, max_records: int = 10,
                 figures: str = "auto", check_scorecard: Callable[[Path], None] | None = None,
                 check_run: Callable[[Path], None] | None = None,
                 check_suite: Callable[[Path], None] | None = None) -> ReportResult:
    """Write ``<output>/index.html`` (default ``<path>/report/``) for the runs under ``path``.

    Works on one result folder, a folder of runs (e.g. ``results/``) or a suite folder; partial or
    unknown folders get a report of what they hold. ``figures``: "all", "none", or "auto" (the
    per-run figures the report draws itself only when there are at most
    :data:`AUTO_RUN_FIGURES` runs — a tiered suite has dozens, and each figure costs ~0.3 s; the
    suites' own PNGs and the leaderboard charts are always shown). Raises InputError for a
    missing folder or a bad option. ``check_scorecard`` (the workflows' check that a finished
    scorecard.json agrees with its runs' records, passed by :func:`stratbench.api.report`: the
    report does not know how cells are computed) raises InputError for a scorecard whose table
    is then not shown, a warning line in its place. ``check_run`` (likewise the workflows'
    check that a finished run's run.json, records and summaries are what the run wrote) raises
    InputError for a run whose numbers are then not shown: the reason in their place, and once on
    stderr. ``check_suite`` (the check that a collection's suite_metadata.json lists the runs its
    plan and its run folders give) raises InputError for a suite folder whose tables and metadata
    are then not shown, likewise.
    """
    if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 0:
        raise InputError(f"--max-records must be a non-negative integer, got {max_records!r}")
    if figures not in ("auto", "all", "none"):
        raise InputError(f"--figures must be auto, all or none, got {figures!r}")
    root = Path(path)
    if not root.exists():
        raise InputError(f"{root}: no such folder")
    if not root.is_dir():
        raise InputError(f"{root}: not a folder (give a result folder or a folder of runs)")
    out = Path(output) if output is not None else _default_output(root)
    _check_output(out)
    runs, suites = discover(root, exclude=out)
    tmp, made = _stage_output(out)
    try:
        with folder_lock(tmp):  # a live report's staging folder is never taken for a stale one
            written = _write_report(root, tmp, runs, suites, max_records, figures, check_scorecard, check_run,
                                    check_suite)
            _publish(tmp, out)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(e, OSError):
            name = Path(e.filename).name if isinstance(e.filename, str) else ""
            raise write_error(out / name if name and name != tmp.name else out, e) from None
        raise
    return ReportResult(out / "index.html", [out / p.name for p in written], len(runs), len(suites))


def _withhold_failing(folders: Sequence[RunDir | SuiteDir], check: Callable[[Path], None] | None, what: str) -> None:
    """Each folder that ``check`` refuses is shown withheld (its problem named, ``what`` left out),
    with one warning line: the report never shows an edited folder's numbers as they stand. A
    folder already withheld (a run with a file it cannot read) is not checked again."""
    if check is None:
        return
    for f in folders:
        if f.withheld:
            continue
        try:
            check(f.path)
        except InputError as e:
            f.problems.append(f"{e}")
            f.withheld = True
            print(f"warning: {e}; the report leaves out {what}", file=sys.stderr)


def _refusing_unreadable(check: Callable[[Path], None] | None,
                         unreadable: list[RunDir]) -> Callable[[Path], None] | None:
    """``check`` of a collection, refusing first one that holds a run whose files cannot be read:
    the collection's check would read them (a pipe blocks for good), and its tables stand on them."""
    if check is None or not unreadable:
        return check

    def checked(path: Path) -> None:
        top = path.resolve()
        for r in unreadable:
            if r.path == top or top in r.path.parents:
                raise InputError(f"{path}: its run {r.rel} has a result file the report cannot read")
        check(path)
    return checked


def _write_report(root: Path, out: Path, runs: list[RunDir], suites: list[SuiteDir], max_records: int,
                  figures: str, check_scorecard: Callable[[Path], None] | None = None,
                  check_run: Callable[[Path], None] | None = None,
                  check_suite: Callable[[Path], None] | None = None) -> list[Path]:
    """Render the page and its PNGs into ``out``; the PNGs written."""
    unreadable = [r for r in runs if r.withheld]  # (discover withholds a run whose files cannot be read)
    for r in unreadable:
        print(f"warning: {r.problems[0]}; the report leaves out its numbers", file=sys.stderr)
    check_suite = _refusing_unreadable(check_suite, unreadable)
    check_scorecard = _refusing_unreadable(check_scorecard, unreadable)
    _withhold_failing(suites, check_suite, "the collection's tables and list of runs")
    _withhold_failing(runs, check_run, "its numbers")
    run_figs = figures == "all" or (figures == "auto" and len(runs) <= AUTO_RUN_FIGURES)
    ctx = Ctx(out, max_records, run_figures=run_figs, summary_figures=figures != "none")
    views = [render_run(ctx, r) for r in runs]

    by_suite: dict[str, list[RunView]] = {}
    for v in views:
        by_suite.setdefault(v.run.suite, []).append(v)
    leaderboards = _leaderboards(ctx, views)

    scorecards = scorecard_sections(ctx, root, find_scorecards(root), check_scorecard)
    nav_items = []
    if scorecards:
        nav_items.append(el("li", el("a", "Scorecard", href="#scorecard")))
    if suites:
        nav_items.append(el("li", el("a", "Suite folders", href="#suites")))
    if leaderboards:
        nav_items.append(el("li", el("a", "Leaderboards", href="#leaderboards")))
    nav_items.append(el("li", el("a", "Overview", href="#overview")))
    for suite, vs in by_suite.items():
        nav_items.append(el("li", el("a", f"{suite} ({len(vs)} run{'s' if len(vs) != 1 else ''})",
                                     href=f"#{slug('suite-runs-' + suite)}")))

    body: list[Any] = [
        el("h1", "stratbench report"),
        el("p", "Folder: ", el("code", str(root.resolve())), el("br"),
           f"Generated {_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')} by stratbench "
           f"{stratbench.__version__}; {len(runs)} run folder{'s' if len(runs) != 1 else ''}"
           + (f", {len(suites)} suite folder{'s' if len(suites) != 1 else ''}" if suites else "")
           + ". Means carry 95% bootstrap CIs over units (games, grids, episodes).", class_="note"),
        None if run_figs or figures == "none" else el(
            "p", f"Per-run figures are left out for folders with more than {AUTO_RUN_FIGURES} runs "
            "(stratbench report --figures all draws them).", class_="note"),
        el("nav", el("ul", nav_items)),
    ]
    if scorecards:  # the first screen: the scorecard before the navigation and the runs
        body[1:1] = [el("h2", "Scorecard", id="scorecard"), *scorecards]
    if suites:
        body += [el("h2", "Suite folders", id="suites"), *[_suite_section(s) for s in suites]]
    if leaderboards:
        body += [el("h2", "Leaderboards", id="leaderboards"),
                 el("p", "Runs are ranked only against runs of the same suite on the same games and setting.",
                    class_="note"), *leaderboards]
    overview = _overview(views)
    body += [el("h2", "Overview", id="overview"),
             overview if len(views) <= MAX_OPEN_OVERVIEW else el(
                 "details", el("summary", f"All {len(views)} run folders"), overview)]
    for suite, vs in by_suite.items():
        body += [el("h2", f"{suite} runs", id=slug("suite-runs-" + suite)), *[v.html(collapsed=len(views) > AUTO_RUN_FIGURES) for v in vs]]

    page = Html("<!DOCTYPE html>\n") + el(
        "html",
        el("head",
           el("meta", charset="utf-8"),
           el("meta", http_equiv="Content-Security-Policy", content=CSP),
           el("meta", name="viewport", content="width=device-width, initial-scale=1"),
           el("meta", name="generator", content=MARKER),
           el("title", f"stratbench report — {root.resolve().name}"),
           el("style", Html(_CSS))),
        el("body", join(body)),
        lang="en",
    )
    (out / "index.html").write_text(page, encoding="utf-8")
    return list(ctx.written)
