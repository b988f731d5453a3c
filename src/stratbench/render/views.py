"""The pieces every report view is built from, shared by the report and the suites' own views:
reading a result folder without trusting it (:class:`RunDir`, :func:`read_json`, JSONL readers that
count malformed lines instead of failing), where figures go (:class:`Ctx`), summary tables with
their CIs, leaderboard entries, and :func:`default_view` — the view of a suite that needs nothing
special. Every piece of text from a result file goes through the escaping builder in
:mod:`stratbench.render.html`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stratbench.render.html import Html, el, fmt_ci, fmt_num, img_data_uri, join, kv_table, table

MAX_PNG_BYTES = 15_000_000
SCORED = ("ok", "parsed")


def is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def slug(text: str) -> str:
    """File- and anchor-safe name derived from a path, unique enough via a short hash."""
    base = "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:50].strip("-") or "root"
    return f"{base}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"



def read_json(path: Path) -> tuple[Any, str | None]:
    """(data, problem): problem is one line when the file is missing or not valid JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return None, f"{path.name}: missing"
    except RecursionError:
        return None, f"{path.name}: unreadable (nested too deeply)"
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"{path.name}: unreadable ({type(e).__name__}: {str(e)[:120]})"


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def read_jsonl_head(path: Path, n: int) -> tuple[list[dict[str, Any]], int, int]:
    """(first n records, total lines, malformed lines): counts the whole file, parses only the
    first n good lines — trial files can be large and a sample needs only the head."""
    records: list[dict[str, Any]] = []
    total = bad = 0
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                total += 1
                if len(records) < n:
                    rec = _parse_line(line)
                    if rec is None:
                        bad += 1
                    else:
                        records.append(rec)
    except OSError:
        pass
    return records, total, bad


def read_jsonl_all(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(records, malformed lines). Malformed lines (a torn tail, a hand edit) are counted, not
    fatal: the report says how many it skipped."""
    records, _, bad = read_jsonl_head(path, sys.maxsize)
    return records, bad


@dataclass
class RunDir:
    """One result folder. ``run`` is run.json (None when absent or unreadable)."""

    path: Path
    rel: str
    run: dict[str, Any] | None
    suite: str  # as run.json names it (or guessed from the files); "unknown" when neither says
    problems: list[str] = field(default_factory=list)
    entry: str = ""  # the registered suite that reads the folder ("" when none does)
    withheld: bool = False  # its files are not what the run wrote: its numbers are not shown

    @property
    def config(self) -> dict[str, Any]:
        c = (self.run or {}).get("config")
        return c if isinstance(c, dict) else {}

    def player(self, summary: dict[str, Any] | None = None) -> str:
        """The model or player this run evaluated, as recorded (may be model-chosen text)."""
        c = self.config
        for key in ("player", "model", "agent"):
            v = c.get(key)
            if isinstance(v, str) and v:
                return v
        models = c.get("models")  # suites where several players meet (CHBench)
        if isinstance(models, list) and models and all(isinstance(m, str) for m in models):
            return ", ".join(models)
        agent = (self.run or {}).get("agent")
        if isinstance(agent, dict) and isinstance(agent.get("name"), str):
            return agent["name"]
        for key in ("agent", "player", "model"):
            v = (summary or {}).get(key)
            if isinstance(v, str) and v:
                return v
        return "?"



@dataclass(frozen=True)
class Leaderboard:
    """How the report ranks comparable runs of a suite: columns (summary key, label), the first
    with a value being the ranking key."""

    columns: tuple[tuple[str, str], ...]
    lower_is_better: bool


class ViewedSuite(Protocol):
    """What :func:`default_view` needs of a suite (`stratbench.suites.base.SuiteBase` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def headline_keys(self) -> tuple[str, ...]: ...

    @property
    def leaderboard(self) -> Leaderboard | None: ...

    def leaderboard_group(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str: ...

    def summary_extras(self, summary: Mapping[str, Any]) -> list[Any]: ...


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


def metric_cell(s: Mapping[str, Any], key: str) -> str:
    """``value [low, high]`` for a summary key with a CI, else the value."""
    v = s.get(key)
    ci = s.get(f"{key}_ci95")
    text = fmt_num(v, key) if not isinstance(v, (dict, list)) else json.dumps(v, default=str)[:200]
    return f"{text} {fmt_ci(ci, key)}" if ci else text


def headline_table(summary: Mapping[str, Any], headline_keys: tuple[str, ...] = ()) -> Html:
    """Headline metrics with their 95% CIs: the suite's preferred keys, then any other key that
    carries a CI. Everything else is in the collapsed "all keys" table below it."""
    keys = [k for k in headline_keys if k in summary]
    keys += [k[:-5] for k in summary if k.endswith("_ci95") and k[:-5] in summary and k[:-5] not in keys]
    if not keys:  # unknown suite: every scalar number
        keys = [k for k, v in summary.items() if is_num(v)]
    rows = [(k, fmt_num(summary.get(k), k), fmt_ci(summary.get(f"{k}_ci95"), k)) for k in keys]
    return table(("metric", "value", "95% CI"), rows, class_="headline")


def _is_record(d: Mapping[str, Any]) -> bool:
    return any(is_num(v) for k, v in d.items() if not k.endswith("_ci95"))


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


def summary_view(summary: Any, headline_keys: tuple[str, ...], label: str) -> Html:
    if not isinstance(summary, Mapping):
        return el("p", f"{label}: not a JSON object", class_="warn")
    parts: list[Any] = [el("h4", f"Headline ({label}, means with 95% bootstrap CIs)")]
    flat = {k: v for k, v in summary.items() if not isinstance(v, (dict, list)) or k.endswith("_ci95")}
    if any(is_num(v) for v in flat.values()):
        parts.append(headline_table(summary, headline_keys))
    parts.extend(_nested_tables(summary))
    counts = summary.get("status_counts")
    if isinstance(counts, Mapping):
        parts.append(el("p", "Status counts: ", join(
            [el("span", f"{k}: {v}", class_="pill" + (" bad" if k in ("error", "parse_failed") and v else ""))
             for k, v in counts.items()], " ")))
    parts.append(el("details", el("summary", f"All keys of {label}"), kv_table(summary)))
    return join(parts)




@dataclass
class SuiteView:
    """A suite's part of one run's report section: HTML parts (summary tables, suite-specific
    tables and figures), leaderboard entries, and the player's name when run.json cannot say."""

    parts: list[Any]
    entries: list[LeaderEntry]
    player: str | None = None


def run_files(run: RunDir) -> list[Path]:
    try:
        return sorted(p for p in run.path.iterdir() if p.is_file())
    except OSError:
        return []


def leader_entries(suite: ViewedSuite, run: RunDir, summary: Mapping[str, Any], anchor: str,
                   player: str) -> list[LeaderEntry]:
    """Leaderboard entries of one summary: one, or one per row of a ``settings`` list."""
    if suite.leaderboard is None:
        return []
    settings = summary.get("settings")
    items = settings if isinstance(settings, list) else [summary]
    return [LeaderEntry(suite.name, suite.leaderboard_group(run.config, s), str(s.get("model") or s.get("player") or player),
                        anchor, run.rel, dict(s)) for s in items if isinstance(s, Mapping)]


def default_view(ctx: Ctx, run: RunDir, suite: ViewedSuite, anchor: str = "") -> SuiteView:
    """Every ``summary*.json`` of the folder as a headline table (the suite's keys first), and a
    leaderboard entry per summary (or per row of its ``settings``)."""
    parts: list[Any] = []
    entries: list[LeaderEntry] = []
    files = [p for p in run_files(run) if p.name.startswith("summary") and p.suffix == ".json"]
    for sp in files:
        summary, prob = read_json(sp)
        if prob:
            parts.append(el("p", prob, class_="warn"))
            continue
        parts.append(summary_view(summary, suite.headline_keys, sp.name))
        if isinstance(summary, Mapping):
            parts.extend(suite.summary_extras(summary))
            entries += leader_entries(suite, run, summary, anchor, run.player())
    if not files:
        parts.append(el("p", "No summary.json (run unfinished, or not a stratbench run).", class_="warn"))
    return SuiteView(parts, entries)
