"""Per-run report sections: the suite's own view (headline tables with CIs, its tables and figures;
see `Suite.report_view`), then what every run has — its figures, tables, totals, metadata and a
sample of records. Each part reads only what the folder holds and says what it lacks.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratbench.render.html import Html, el, fmt_num, join, kv_table, table
from stratbench.render.views import (
    Ctx,
    LeaderEntry,
    RunDir,
    is_num,
    metric_cell,
    read_jsonl_head,
    run_files,
    slug,
)
from stratbench.suites import SUITES, SuiteBase

__all__ = ["Ctx", "LeaderEntry", "RunView", "compact_csv_table", "csv_table", "metric_cell", "render_run", "slug",
           "text_file"]

MAX_TEXT_CHARS = 2_000  # per raw answer in the record sample

RAW_KEYS = ("raw_response", "raw", "response", "completion", "text", "output", "answer_text", "story")
ID_KEYS = ("game_id", "trial_id", "task_id", "mode", "rotation", "episode", "t", "round", "repeat", "row",
           "col", "variant", "game", "partner", "player", "agent", "model", "role", "prompting", "status")
DECISION_KEYS = ("llm_decision", "answer", "parsed", "my_action", "prediction", "action", "distribution")


@dataclass
class RunView:
    run: RunDir
    anchor: str
    head: Html  # the <h3> line: folder, suite, player, status
    body: Html
    entries: list[LeaderEntry]
    overview: dict[str, Any]

    def html(self, collapsed: bool = False) -> Html:
        """The run's section; collapsed (a <details> under the heading) for big folders."""
        if collapsed:
            return el("section", el("details", el("summary", self.head), self.body), id=self.anchor, class_="run")
        return el("section", self.head, self.body, id=self.anchor, class_="run")


COMPACT_METRICS = ("mean_nash_gap", "mean_exploitability", "mean_exploitability_normalized",
                   "mean_mixture_exploitability", "position_bias", "mean_label_mass", "par_pct", "id_pct",
                   "bd_pct", "regret_per_step", "tom_accuracy", "parse_failure_rate", "error_rate")
MAX_COLUMNS = 14


def _read_csv(path: Path) -> tuple[list[list[str]], str | None]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return [], f"{path.name}: unreadable ({e})"
    return rows, None if rows else f"{path.name}: empty"


def _cell(c: str) -> str:
    try:
        f = float(c)
    except ValueError:
        return c
    return fmt_num(f) if ("." in c or "e" in c.lower()) else c


def csv_table(path: Path, limit: int = 200) -> Html:
    """A CSV file as a table (first `limit` rows), every cell escaped."""
    rows, prob = _read_csv(path)
    if prob:
        return el("p", prob, class_="warn")
    head, body = rows[0], rows[1:]
    note = el("p", f"first {limit} of {len(body)} rows", class_="note") if len(body) > limit else None
    return join([table(head, [[_cell(c) for c in r] for r in body[:limit]], class_="wide"), note])


def compact_csv_table(path: Path, limit: int = 500) -> Html | None:
    """A readable view of a wide results table (e.g. the tiered suite's big tables): the text
    columns that vary, then headline metrics as ``mean [low, high]`` (from ``<m>`` or ``<m>_mean``
    and ``<m>_ci95_low/high``). None when the table is narrow enough to show whole."""
    rows, prob = _read_csv(path)
    if prob or len(rows[0]) <= MAX_COLUMNS:
        return None
    head, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    idx = {h: i for i, h in enumerate(head)}

    def is_num(i: int) -> bool:
        vals = [r[i] for r in body if r[i] != ""]
        try:
            [float(v) for v in vals]
        except ValueError:
            return False
        return True

    constant = {h for h, i in idx.items() if len({r[i] for r in body}) <= 1}
    text_cols = [h for h, i in idx.items() if h not in constant and not is_num(i) and not h.endswith("_ci95")
                 and h not in ("seeds", "decision_source_counts", "model_folder")]
    metrics = []
    for m in COMPACT_METRICS:
        col = f"{m}_mean" if f"{m}_mean" in idx else (m if m in idx else None)
        if col is not None:
            metrics.append((m, col, f"{m}_ci95_low" if f"{m}_ci95_low" in idx else None,
                            f"{m}_ci95_high" if f"{m}_ci95_high" in idx else None))
    counts = [h for h in ("n_games_scored", "n_seeds", "seed") if h in idx and h not in constant]
    if not metrics:
        return None

    def metric(r: list[str], col: str, lo: str | None, hi: str | None) -> str:
        v = _cell(r[idx[col]]) if r[idx[col]] != "" else "—"
        if lo and hi and r[idx[lo]] != "" and r[idx[hi]] != "":
            return f"{v} [{_cell(r[idx[lo]])}, {_cell(r[idx[hi]])}]"
        return v

    out_rows = [[r[idx[h]] for h in text_cols] + [metric(r, *m[1:]) for m in metrics] + [r[idx[h]] for h in counts]
                for r in body[:limit]]
    same = ", ".join(f"{h} = {body[0][idx[h]]}" for h in head if h in constant and body)
    return join([
        table(text_cols + [m[0] + (" [95% CI]" if m[2] else "") for m in metrics] + counts, out_rows, class_="wide"),
        el("p", f"Same in every row: {same}." if same else None, class_="note") if same else None,
    ])


def text_file(path: Path, limit: int = 50_000) -> Html:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return el("p", f"{path.name}: unreadable ({e})", class_="warn")
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    return el("pre", text)


def _clip(text: str, n: int = MAX_TEXT_CHARS) -> str:
    return text if len(text) <= n else text[:n] + f" … [{len(text) - n} more characters]"


def _rounded(v: Any) -> Any:
    """Floats to 4 significant digits, for display of decisions and records only."""
    if isinstance(v, float):
        return float(f"{v:.4g}")
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


def _compact(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(_rounded(v), ensure_ascii=False, default=str)
    return _clip(s, n)


def records_sample(path: Path, n: int) -> Html:
    """The first n records of a JSONL file: ids, status, decision, raw model text, error.

    Raw text is shown verbatim (escaped) in <pre> so a reader sees exactly what the model wrote.
    """
    recs, total, bad = read_jsonl_head(path, n)
    head = el("p", f"{path.name}: {total} records; first {len(recs)} shown"
              + (f"; {bad} malformed lines among them skipped" if bad else ""), class_="note")
    if not recs:
        return head
    keys = {k for r in recs for k in r}
    ids = [k for k in ID_KEYS if k in keys]
    decisions = [k for k in DECISION_KEYS if k in keys][:2]
    raws = [k for k in RAW_KEYS if k in keys]
    rows = []
    for r in recs:
        row: list[Any] = [_compact(r.get(k), 60) if r.get(k) is not None else "—" for k in ids]
        row += [_compact(r.get(k)) if r.get(k) is not None else "—" for k in decisions]
        if raws:
            texts = [f"{k}: {r[k]}" if len(raws) > 1 else str(r[k]) for k in raws if r.get(k) is not None]
            row.append(el("pre", _clip("\n".join(texts))) if texts else "—")
        else:
            row.append(el("pre", _compact(r, 600)))
        row.append(_compact(r.get("error"), 300) if r.get("error") else "")
        rows.append(row)
    cols = ids + decisions + ([" / ".join(raws)] if raws else ["record"]) + ["error"]
    return join([head, table(cols, rows, class_="records")])


def metadata_view(run: RunDir) -> Html:
    meta = run.run
    if not isinstance(meta, Mapping):
        return el("p", "No run.json: versions, revision and config unknown.", class_="warn")
    git: Mapping[str, Any] = meta["git"] if isinstance(meta.get("git"), Mapping) else {}
    commit = git.get("commit")
    info = {
        "suite": meta.get("suite"),
        "status": meta.get("status"),
        "start_time": meta.get("start_time"),
        "end_time": meta.get("end_time"),
        "resumed_at": meta.get("resumed_at"),
        "git revision": (f"{commit}{' (dirty)' if git.get('dirty') else ''}" if commit else "not a git checkout"),
        "platform": meta.get("platform"),
        "command": " ".join(map(str, meta["command"])) if isinstance(meta.get("command"), list) else meta.get("command"),
        "shard": meta.get("shard"),
    }
    info = {k: v for k, v in info.items() if v is not None}
    parts = [kv_table(info)]
    if isinstance(meta.get("versions"), Mapping):
        parts += [el("h4", "Versions"), kv_table(meta["versions"])]
    if isinstance(meta.get("agent"), Mapping):
        parts += [el("h4", "Player"), kv_table(meta["agent"])]
    if isinstance(meta.get("config"), Mapping):
        parts += [el("h4", "Config"), kv_table(meta["config"])]
    return join(parts)


def totals_of(run: RunDir) -> dict[str, Any]:
    t = (run.run or {}).get("totals")
    return dict(t) if isinstance(t, Mapping) else {}


def tokens_cost(totals: Mapping[str, Any]) -> tuple[int | None, float | None]:
    """(tokens in + out, cost in USD) from run.json totals, whatever prefix the suite used."""
    tok = [v for k, v in totals.items() if is_num(v) and (k.endswith(("tokens_in", "tokens_out"))
                                                           or k == "tokens_evaluated")]
    cost = [v for k, v in totals.items() if is_num(v) and k.endswith("cost_usd")]
    return (int(sum(tok)) if tok else None), (float(sum(cost)) if cost else None)


# ------------------------------------------------------------------------------------------------
# A whole run
# ------------------------------------------------------------------------------------------------


def _suite_of(run: RunDir) -> SuiteBase:
    """The registered suite that reads the folder, or a generic one (headline of every number)."""
    return SUITES.get(run.entry) if run.entry else SuiteBase()


def render_run(ctx: Ctx, run: RunDir) -> RunView:
    anchor = slug(run.rel)
    names = run_files(run)
    pngs = [p for p in names if p.suffix.lower() == ".png"]
    totals = totals_of(run)
    tokens, cost = tokens_cost(totals)
    parts: list[Any] = [el("p", p, class_="warn") for p in run.problems]
    status = (run.run or {}).get("status", "unknown")
    # an unfinished run holding summaries: a finished run resumed (to retry its errors) and stopped
    # — its records have changed since those files were written (fuzz 25 B F1)
    stale = run.run is not None and status != "finished" and any(p.name.startswith("summary") and p.suffix == ".json" for p in names)
    entries: list[LeaderEntry]
    if run.withheld:  # no summary, table, figure or leaderboard entry from files the records contradict
        parts.append(el("p", "Its numbers are not shown: they are not what its records give.", class_="warn"))
        player, entries = run.player(), []
        names = [p for p in names if p.suffix in (".json", ".jsonl")]
        pngs = []
    elif stale:
        parts.append(el("p", f"Its summaries, tables and figures are not shown: they were written when the run "
                        f"last finished, and it was resumed since (status {status}), so its records have changed; "
                        "finish it with --resume.", class_="warn"))
        player, entries = run.player(), []
        names = [p for p in names if not p.name.startswith("summary") and p.suffix not in (".png", ".md", ".csv")]
        pngs = []
    else:
        view = _suite_of(run).report_view(ctx, run, anchor)
        player = view.player or run.player()
        parts.extend(view.parts)
        entries = view.entries
    for e in entries:
        e.tokens, e.cost = tokens, cost

    if pngs:
        parts.append(el("h4", "Figures written by the run"))
        parts.append(el("div", [ctx.embed(p, p.name) for p in pngs], class_="figs"))
    for md in (p for p in names if p.suffix == ".md"):
        parts.append(el("details", el("summary", md.name), text_file(md), open=True))
    for cp in (p for p in names if p.suffix == ".csv"):
        parts.append(el("details", el("summary", cp.name), csv_table(cp)))

    if run.withheld:  # (its counts and records are what was edited, or contradict what was)
        totals, tokens, cost = {}, None, None
    parts.append(el("h4", "Tokens and cost"))
    if totals:
        parts.append(kv_table(totals))
    else:
        parts.append(el("p", "not shown (see above)" if run.withheld else "run.json has no totals (run unfinished?)",
                        class_="note"))
    parts.append(el("details", el("summary", "Run metadata: versions, git revision, config"), metadata_view(run)))

    jsonls = [p for p in names if p.suffix == ".jsonl"] if not run.withheld else []
    if jsonls:
        parts.append(el("h4", f"Sample records (first {ctx.max_records} per file)"))
        for jp in jsonls:
            parts.append(records_sample(jp, ctx.max_records))
    parts.append(el("details", el("summary", f"Files ({len(names)})"), table(
        ("file", "bytes"), [(p.name, p.stat().st_size) for p in names])))

    head = el("h3", el("a", run.rel, href=f"#{anchor}"), " ", el("span", run.suite, class_="pill"),
              " ", el("span", player, class_="pill model"),
              " ", el("span", str(status), class_="pill" + ("" if status == "finished" else " bad")))
    overview = {"rel": run.rel, "anchor": anchor, "suite": run.suite, "player": player, "status": status,
                "records": totals.get("records", totals.get("episodes")),
                "errors": totals.get("errors"), "tokens": tokens, "cost": cost,
                "start": (run.run or {}).get("start_time")}
    return RunView(run, anchor, head, join(parts), entries, overview)

