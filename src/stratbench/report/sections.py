"""Per-run report sections: the headline table with CIs, suite-specific views, figures, metadata,
totals and a sample of records. Each view reads only what the folder holds and says what it lacks.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratbench.report.discover import (
    RunDir,
    read_json,
    read_jsonl_head,
)
from stratbench.render.html import (
    Html,
    el,
    fmt_ci,
    fmt_num,
    img_data_uri,
    join,
    kv_table,
    table,
)

__all__ = ["Ctx", "LeaderEntry", "RunView", "compact_csv_table", "csv_table", "metric_cell", "render_run", "slug", "text_file"]

MAX_PNG_BYTES = 15_000_000
MAX_TEXT_CHARS = 2_000  # per raw answer in the record sample
SCORED = ("ok", "parsed")

#: Headline keys per suite, in the order shown; any other key with a `_ci95` sibling follows.
HEADLINE: dict[str, tuple[str, ...]] = {
    "nashgap": (
        "mean_nash_gap", "median_nash_gap", "mean_nash_gap_normalized", "mean_exploitability",
        "mean_exploitability_normalized", "mean_mixture_exploitability",
        "mean_mixture_exploitability_normalized", "mean_llm_value", "mean_br_value", "position_bias",
        "mean_label_mass", "parse_failure_rate", "error_rate", "renormalized_rate", "n_games",
        "n_games_unscored", "n_trials_scored", "total_trials",
    ),
    "tmgbench": (
        "par_pct", "id_pct", "bd_pct", "sd_pct", "accuracy_pct", "anti_id_pct", "anti_bd_pct",
        "mean_label_mass", "parse_failure_rate", "error_rate", "n_grids", "n_tasks", "n_records",
    ),
    "tom": ("regret_per_step", "tom_accuracy", "tom_regret_per_step", "n_episodes", "n_error_episodes",
            "tokens_evaluated_per_episode"),
}

#: Leaderboard columns per suite: (key, label); the first is the sort key.
LEADERBOARD: dict[str, tuple[tuple[tuple[str, str], ...], bool]] = {
    # (columns, lower_is_better)
    # ranked by the debiased exploitability (of the policy averaged over row orders): the Nash gap
    # alone is blind to play inside a mixed equilibrium's support
    "nashgap": ((("mean_mixture_exploitability", "debiased expl."), ("mean_exploitability", "exploitability"),
                 ("mean_nash_gap", "Nash gap"), ("position_bias", "position bias"),
                 ("mean_label_mass", "label mass"), ("parse_failure_rate", "parse failures"),
                 ("error_rate", "errors"), ("n_games", "games"), ("policy", "policy"),
                 ("order_rotations", "rotations")), True),
    "tmgbench": ((("par_pct", "PAR %"), ("id_pct", "ID %"), ("bd_pct", "BD %"),
                  ("accuracy_pct", "accuracy %"), ("parse_failure_rate", "parse failures"),
                  ("error_rate", "errors")), False),
    "tom": ((("regret_per_step", "regret/step"), ("tom_accuracy", "ToM accuracy"),
             ("tom_regret_per_step", "ToM regret/step"), ("n_episodes", "episodes")), True),
}

RAW_KEYS = ("raw_response", "raw", "response", "completion", "text", "output", "answer_text", "story")
ID_KEYS = ("game_id", "trial_id", "task_id", "mode", "rotation", "episode", "t", "round", "repeat", "row",
           "col", "variant", "game", "partner", "player", "agent", "model", "role", "prompting", "status")
DECISION_KEYS = ("llm_decision", "answer", "parsed", "my_action", "prediction", "action", "distribution")


def slug(text: str) -> str:
    """File- and anchor-safe name derived from a path, unique enough via a short hash."""
    base = "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:50].strip("-") or "root"
    return f"{base}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


@dataclass
class Ctx:
    """Where generated figures go; collects the files written."""

    out_dir: Path
    max_records: int
    run_figures: bool = True  # draw per-run figures (skipped for big folders: they cost ~0.3 s each)
    summary_figures: bool = True  # leaderboard figures
    written: list[Path] = field(default_factory=list)

    def figure(self, stem: str, draw: Callable[[], bytes], alt: str, caption: Any, *,
               per_run: bool = True) -> Html | None:
        """Draw a PNG (unless figures of this kind are off), save it next to the report, embed it."""
        if not (self.run_figures if per_run else self.summary_figures):
            return None
        png = draw()
        path = self.out_dir / f"{stem}.png"
        path.write_bytes(png)
        self.written.append(path)
        return el("figure", img_data_uri(png, alt), el("figcaption", caption))

    def embed(self, path: Path, caption: Any) -> Html:
        """Embed a PNG the run wrote itself (left where it is)."""
        try:
            size = path.stat().st_size
            if size > MAX_PNG_BYTES:
                return el("p", f"{path.name}: {size / 1e6:.1f} MB, too large to embed", class_="warn")
            data = path.read_bytes()
        except OSError as e:
            return el("p", f"{path.name}: unreadable ({e})", class_="warn")
        if not data.startswith(b"\x89PNG"):
            return el("p", f"{path.name}: not a PNG file", class_="warn")
        return el("figure", img_data_uri(data, path.name), el("figcaption", caption))


@dataclass
class LeaderEntry:
    """One model's headline numbers, for leaderboards across runs of the same suite."""

    suite: str
    group: str  # runs are compared only within a group (same games, mode, setting)
    name: str
    anchor: str
    rel: str
    summary: dict[str, Any]
    tokens: int | None = None
    cost: float | None = None


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


# ------------------------------------------------------------------------------------------------
# Generic pieces
# ------------------------------------------------------------------------------------------------


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def metric_cell(s: Mapping[str, Any], key: str) -> str:
    """``value [low, high]`` for a summary key with a CI, else the value."""
    v = s.get(key)
    ci = s.get(f"{key}_ci95")
    text = fmt_num(v, key) if not isinstance(v, (dict, list)) else json.dumps(v, default=str)[:200]
    return f"{text} {fmt_ci(ci, key)}" if ci else text


def headline_table(summary: Mapping[str, Any], suite: str) -> Html:
    """Headline metrics with their 95% CIs: the suite's preferred keys, then any other key that
    carries a CI. Everything else is in the collapsed "all keys" table below it."""
    keys = [k for k in HEADLINE.get(suite, ()) if k in summary]
    keys += [k[:-5] for k in summary if k.endswith("_ci95") and k[:-5] in summary and k[:-5] not in keys]
    if not keys:  # unknown suite: every scalar number
        keys = [k for k, v in summary.items() if _is_num(v)]
    rows = [(k, fmt_num(summary.get(k), k), fmt_ci(summary.get(f"{k}_ci95"), k)) for k in keys]
    return table(("metric", "value", "95% CI"), rows, class_="headline")


def _is_record(d: Mapping[str, Any]) -> bool:
    return any(_is_num(v) for k, v in d.items() if not k.endswith("_ci95"))


def _record_rows(val: Any, path: tuple[str, ...], depth: int = 0) -> list[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Records (mappings with numbers) inside nested dicts/lists, each with its key path — e.g.
    CHBench's mechanisms → player → metrics, or ToM's list of settings."""
    if depth > 4:
        return []
    if isinstance(val, Mapping):
        if _is_record(val):
            return [(path, val)]
        return [row for k, v in val.items() for row in _record_rows(v, (*path, str(k)), depth + 1)]
    if isinstance(val, list):
        return [row for v in val if isinstance(v, Mapping) for row in _record_rows(v, path, depth + 1)]
    return []


def _nested_tables(summary: Mapping[str, Any]) -> list[Html]:
    """Lists of records and (nested) dicts of records in a summary (ToM settings, CH players per
    mechanism) as one table per top-level key."""
    out: list[Html] = []
    for key, val in summary.items():
        if not isinstance(val, (Mapping, list)) or key.endswith("_ci95"):
            continue
        rows = _record_rows(val, ())
        if not rows:
            continue
        cols: list[str] = []
        for _, r in rows:
            for k, v in r.items():
                if not k.endswith("_ci95") and k not in cols and not isinstance(v, (dict, list)):
                    cols.append(k)
        # identifying (text) columns first, then the numbers
        cols.sort(key=lambda c: 0 if any(isinstance(r.get(c), str) for _, r in rows) else 1)
        named = any(p for p, _ in rows)
        head = ([key] if named else []) + cols
        body = [([" / ".join(p)] if named else []) + [metric_cell(r, c) for c in cols] for p, r in rows]
        out.append(el("h4", key))
        out.append(table(head, body, class_="wide"))
    return out


def summary_view(summary: Any, suite: str, label: str) -> Html:
    if not isinstance(summary, Mapping):
        return el("p", f"{label}: not a JSON object", class_="warn")
    parts: list[Any] = [el("h4", f"Headline ({label}, means with 95% bootstrap CIs)")]
    flat = {k: v for k, v in summary.items() if not isinstance(v, (dict, list)) or k.endswith("_ci95")}
    if any(_is_num(v) for v in flat.values()):
        parts.append(headline_table(summary, suite))
    parts.extend(_nested_tables(summary))
    counts = summary.get("status_counts")
    if isinstance(counts, Mapping):
        parts.append(el("p", "Status counts: ", join(
            [el("span", f"{k}: {v}", class_="pill" + (" bad" if k in ("error", "parse_failed") and v else ""))
             for k, v in counts.items()], " ")))
    parts.append(el("details", el("summary", f"All keys of {label}"), kv_table(summary)))
    return join(parts)


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
    git = meta.get("git") if isinstance(meta.get("git"), Mapping) else {}
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
    tok = [v for k, v in totals.items() if _is_num(v) and (k.endswith(("tokens_in", "tokens_out"))
                                                           or k == "tokens_evaluated")]
    cost = [v for k, v in totals.items() if _is_num(v) and k.endswith("cost_usd")]
    return (int(sum(tok)) if tok else None), (float(sum(cost)) if cost else None)


# ------------------------------------------------------------------------------------------------
# Suite-specific views
# ------------------------------------------------------------------------------------------------


def _plots() -> Any:
    from stratbench.report import plots

    return plots


def _tmgbench_views(run: RunDir, summary: Mapping[str, Any]) -> list[Any]:
    rows = []
    for n in (0, 1, 2):
        if any(f"{m}_{n}_pct" in summary for m in ("par", "id", "bd")):
            rows.append((f"{n}-NE games", *(fmt_num(summary.get(f"{m}_{n}_pct"), "x_pct")
                                            for m in ("par", "id", "bd", "anti_id", "anti_bd"))))
    if not rows:
        return []
    return [el("h4", "By number of pure Nash equilibria (percent)"),
            table(("games", "PAR", "ID", "BD", "anti-ID", "anti-BD"), rows)]


def _tom_views(ctx: Ctx, run: RunDir, anchor: str, pngs: list[Path]) -> list[Any]:
    if any(p.name.startswith("regret_curve") for p in pngs):
        return []
    curves, _ = read_json(run.path / "curves.json")
    if isinstance(curves, Mapping) and curves and all(
            isinstance(v, list) and all(_is_num(x) for x in v) for v in curves.values()):
        return [ctx.figure(f"{anchor}_regret_curve", lambda: _plots().curves_plot(curves, "Regret per step", "regret"),
                           "ToM regret curves", "Regret per step (drawn from curves.json)")]
    return []


def _chbench_views(ctx: Ctx, run: RunDir, anchor: str, pngs: list[Path]) -> list[Any]:
    if any(p.name.startswith("level_distribution") for p in pngs):
        return []
    fits, _ = read_json(run.path / "fit.json")
    if isinstance(fits, Mapping) and fits and all(isinstance(f, Mapping) for f in fits.values()):
        try:
            return [ctx.figure(f"{anchor}_level_distribution",
                               lambda: _plots().level_distributions(fits, "Fitted level distributions"),
                               "CH level distributions",
                               "Fitted cognitive-hierarchy level distributions (from fit.json)")]
        except (TypeError, ValueError):
            return [el("p", "fit.json: level distributions could not be drawn", class_="warn")]
    return []


# ------------------------------------------------------------------------------------------------
# A whole run
# ------------------------------------------------------------------------------------------------


def _group_for(run: RunDir, summary: Mapping[str, Any]) -> str:
    c = run.config
    if run.suite == "tmgbench":
        parts = [summary.get(k) or c.get(k) for k in ("setting", "form", "prompting")]
        if c.get("games"):
            parts.append(f"games {c['games']}")
        return "tmgbench · " + " · ".join(str(p) for p in parts if p)
    if run.suite == "tom":
        parts = [summary.get(k) for k in ("game", "partner", "prompting", "T")]
        return "tom · " + " · ".join(str(p) for p in parts if p is not None)
    return run.suite


def render_run(ctx: Ctx, run: RunDir) -> RunView:
    anchor = slug(run.rel)
    try:
        names = sorted(p for p in run.path.iterdir() if p.is_file())
    except OSError:
        names = []
    pngs = [p for p in names if p.suffix.lower() == ".png"]
    totals = totals_of(run)
    tokens, cost = tokens_cost(totals)
    player = run.player()
    if player == "?" and run.suite == "chbench":  # one fit covers several players
        ch_summary = read_json(run.path / "summary.json")[0]
        players = ch_summary.get("players") if isinstance(ch_summary, Mapping) else None
        player = ", ".join(map(str, players)) if isinstance(players, Mapping) and players else "?"
    parts: list[Any] = []
    entries: list[LeaderEntry] = []

    for p in run.problems:
        parts.append(el("p", p, class_="warn"))

    if run.suite == "nashgap":
        from stratbench.report.nashgap_view import nashgap_views

        views, found = nashgap_views(ctx, run, anchor)
        parts.extend(views)
        for mode, group, s in found:
            entries.append(LeaderEntry("nashgap", group, str(s.get("agent") or player), anchor, run.rel, s,
                                       tokens, cost))
    else:
        summary_files = [p for p in names if p.name.startswith("summary") and p.suffix == ".json"]
        for sp in summary_files:
            summary, prob = read_json(sp)
            if prob:
                parts.append(el("p", prob, class_="warn"))
                continue
            parts.append(summary_view(summary, run.suite, sp.name))
            if not isinstance(summary, Mapping):
                continue
            if run.suite == "tmgbench":
                parts.extend(_tmgbench_views(run, summary))
            if run.suite in LEADERBOARD and run.suite != "nashgap":
                settings = summary.get("settings")
                items = settings if isinstance(settings, list) else [summary]
                for s in items:
                    if isinstance(s, Mapping):
                        name = str(s.get("model") or s.get("player") or player)
                        entries.append(LeaderEntry(run.suite, _group_for(run, s), name, anchor, run.rel, dict(s),
                                                   tokens, cost))
        if not summary_files:
            parts.append(el("p", "No summary.json (run unfinished, or not a stratbench run).", class_="warn"))
        if run.suite == "tom":
            parts.extend(_tom_views(ctx, run, anchor, pngs))
        if run.suite == "chbench":
            parts.extend(_chbench_views(ctx, run, anchor, pngs))

    if pngs:
        parts.append(el("h4", "Figures written by the run"))
        parts.append(el("div", [ctx.embed(p, p.name) for p in pngs], class_="figs"))
    for md in (p for p in names if p.suffix == ".md"):
        parts.append(el("details", el("summary", md.name), text_file(md), open=True))
    for cp in (p for p in names if p.suffix == ".csv"):
        parts.append(el("details", el("summary", cp.name), csv_table(cp)))

    parts.append(el("h4", "Tokens and cost"))
    if totals:
        parts.append(kv_table(totals))
    else:
        parts.append(el("p", "run.json has no totals (run unfinished?)", class_="note"))
    parts.append(el("details", el("summary", "Run metadata: versions, git revision, config"), metadata_view(run)))

    jsonls = [p for p in names if p.suffix == ".jsonl"]
    if jsonls:
        parts.append(el("h4", f"Sample records (first {ctx.max_records} per file)"))
        for jp in jsonls:
            parts.append(records_sample(jp, ctx.max_records))
    parts.append(el("details", el("summary", f"Files ({len(names)})"), table(
        ("file", "bytes"), [(p.name, p.stat().st_size) for p in names])))

    status = (run.run or {}).get("status", "unknown")
    head = el("h3", el("a", run.rel, href=f"#{anchor}"), " ", el("span", run.suite, class_="pill"),
              " ", el("span", player, class_="pill model"),
              " ", el("span", str(status), class_="pill" + ("" if status == "finished" else " bad")))
    overview = {"rel": run.rel, "anchor": anchor, "suite": run.suite, "player": player, "status": status,
                "records": totals.get("records", totals.get("episodes")),
                "errors": totals.get("errors"), "tokens": tokens, "cost": cost,
                "start": (run.run or {}).get("start_time")}
    return RunView(run, anchor, head, join(parts), entries, overview)

