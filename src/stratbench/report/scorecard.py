"""The scorecard on the report's first screen: one row per player, one column per suite (the
normalised score with its CI over the raw metric), and a grouped bar chart with the references
marked. The numbers come from `scorecard.json` (:mod:`stratbench.scoring`), never recomputed here,
so the page, the CLI's table and scorecard.csv cannot disagree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stratbench.errors import InputError
from stratbench.render.figures import RC, figure, png, short
from stratbench.render.html import Html, el, fmt_num, join, table
from stratbench.render.views import Ctx
from stratbench.scoring import Scorecard, read_scorecard

__all__ = ["find_scorecards", "scorecard_plot", "scorecard_section"]

MAX_SCORECARDS = 3  # a folder of many scorecards shows the newest few; the rest are linked runs
_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")


def _is_scorecard(folder: Path) -> bool:
    """A folder holding a scorecard.json, or whose suite_metadata.json says it is a finished
    scorecard (its scorecard.json deleted: the report says so instead of leaving the table out
    without a word)."""
    if (folder / "scorecard.json").is_file():
        return True
    try:
        meta = json.loads((folder / "suite_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("suite") == "scorecard" and meta.get("status") == "finished"


def find_scorecards(root: Path) -> list[Path]:
    """Scorecard folders at `root` or one level below (e.g. ``results/scorecard_<time>/``),
    newest first (their names carry the time)."""
    if _is_scorecard(root):
        return [root]
    try:
        found = [p for p in root.iterdir() if p.is_dir() and _is_scorecard(p)]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name, reverse=True)


def _score(c: Mapping[str, Any]) -> str:
    s = c.get("normalized")
    if not isinstance(s, (int, float)):
        return "—"
    ci = c.get("normalized_ci95")
    text = f"{s:.0f}"
    if isinstance(ci, list) and len(ci) == 2 and not c.get("exact"):
        text += f" [{ci[0]:.0f}, {ci[1]:.0f}]"
    return text


def _cell(c: Mapping[str, Any] | None, key: str) -> Any:
    if c is None:
        return ""
    counts = c.get("counts") or {}
    bad = int(counts.get("error", 0) or 0) + int(counts.get("parse_failed", 0) or 0)
    if c.get("status") == "failed":
        return el("span", f"failed ({counts.get('error', 0)} errors, {counts.get('parse_failed', 0)} unparsed)",
                  class_="warn")
    ref = f"{c['reference']}: " if c.get("reference") else ""
    parts: list[Any] = [el("b", ref + _score(c)), el("br"), el("span", fmt_num(c.get("value"), key), class_="note")]
    if c.get("status") == "errors":
        parts += [" ", el("span", f"{bad} failed", class_="warn")]
    return join(parts)


def scorecard_table(card: Scorecard) -> Html:
    suites = card["suites"]
    cells = {(c["player"], c["suite"]): c for c in card["cells"]}
    headers: list[Any] = ["player"] + [join([s["title"], el("br"), el("span", s["metric_label"], class_="note")])
                                       for s in suites]
    rows = []
    for p in card["players"]:
        name: Any = p["player"] if p["role"] == "model" else el("span", f"{p['player']} ({p['role']})", class_="note")
        rows.append([name] + [_cell(cells.get((p["player"], s["suite"])), s["metric"]) for s in suites])
    return table(headers, rows, class_="wide scorecard",
                 caption="Normalised score [95% CI] (0 = chance, 100 = optimal) over the raw metric; "
                         "failed records are counted, never scored.")


def scorecard_plot(card: Scorecard) -> bytes:
    """Grouped bars per suite: each model's normalised score with its 95% CI; chance (0) and
    optimal (100) as lines; the other references as labelled markers."""
    import matplotlib as mpl
    import numpy as np

    suites = card["suites"]
    cells = {(c["player"], c["suite"]): c for c in card["cells"]}
    models = [p["player"] for p in card["players"] if p["role"] == "model"]
    refs = [p["player"] for p in card["players"] if p["role"] == "reference"]
    n, k = len(suites), max(1, len(models))
    width = 0.8 / k
    with mpl.rc_context(RC):
        fig = figure(max(6.5, 1.6 * n + 0.4 * n * k), 3.8)
        ax = fig.add_subplot()
        x = np.arange(n)
        for i, m in enumerate(models):
            vals, lo, hi = [], [], []
            for s in suites:
                c = cells.get((m, s["suite"]))
                v = c.get("normalized") if c else None
                ci = c.get("normalized_ci95") if c else None
                v = float(v) if isinstance(v, (int, float)) else np.nan
                vals.append(v)
                lo.append(v - ci[0] if isinstance(ci, list) and len(ci) == 2 else 0.0)
                hi.append(ci[1] - v if isinstance(ci, list) and len(ci) == 2 else 0.0)
            pos = x - 0.4 + width * (i + 0.5)
            # a score at its CI's end may differ from it in the last bit: error bars are never negative
            ax.bar(pos, vals, width * 0.9, yerr=np.clip([lo, hi], 0.0, None), capsize=3, color=_COLORS[i % len(_COLORS)],
                   label=short(m, 30))
        for j, s in enumerate(suites):
            for r in refs:
                c = cells.get((r, s["suite"]))
                v = c.get("normalized") if c else None
                if isinstance(v, (int, float)):
                    ax.plot([j + 0.42], [v], marker="D", color="#333333", markersize=4)
                    ax.annotate(short(r, 16), (j + 0.45, v), fontsize=7, va="center", color="#333333")
        ax.axhline(0, color="#999999", lw=1, ls="--")
        ax.axhline(100, color="#333333", lw=1, ls="--")
        ax.text(n - 0.4, 0, "chance", va="bottom", ha="left", fontsize=7, color="#777777")
        ax.text(n - 0.4, 100, "optimal", va="bottom", ha="left", fontsize=7, color="#333333")
        ax.set_xticks(x, [s["title"] for s in suites])
        ax.set_xlim(-0.55, n - 0.05 + 0.5)
        ax.set_ylabel("normalised score (0 = chance, 100 = optimal)")
        ax.set_title(f"scorecard — budget {card['budget']}, seed {card['seed']} (95% CI; ◆ other references)")
        if models:
            ax.legend(fontsize=7, loc="upper left", frameon=False)
        fig.tight_layout()
        return png(fig)


def scorecard_section(ctx: Ctx, folder: Path, rel: str, check: Callable[[Path], None] | None = None) -> Html:
    """The scorecard of one folder: its table, figure and formulas (a warning line when its
    scorecard.json is unreadable, or — ``check`` — disagrees with its runs' records: an edited
    score is never shown)."""
    try:
        card = read_scorecard(folder)
        if check is not None:
            check(folder)
    except InputError as e:
        print(f"warning: {e}; the report leaves out the scorecard's table", file=sys.stderr)
        return el("p", f"{e} — the scorecard is not shown", class_="warn")
    stem = "scorecard-" + "".join(ch if ch.isalnum() else "-" for ch in rel)[:60]
    fig = ctx.figure(stem, lambda: scorecard_plot(card), "scorecard: normalised scores per suite",
                     "Normalised score per suite with 95% CI; dashed lines: chance (0) and optimal (100).",
                     per_run=False)
    formulas = el("ul", [el("li", el("b", s["title"]), f": {s['formula']} (units: {s['unit']})") for s in card["suites"]])
    return el("section", join([
        el("p", "Folder: ", el("code", rel), f" — budget {card['budget']}, seed {card['seed']}.", class_="note"),
        scorecard_table(card), fig, el("details", el("summary", "How the scores are normalised"), formulas),
    ]), class_="run")


def scorecard_sections(ctx: Ctx, root: Path, folders: Sequence[Path],
                       check: Callable[[Path], None] | None = None) -> list[Html]:
    out = []
    for f in folders[:MAX_SCORECARDS]:
        rel = f.relative_to(root).as_posix() if f != root else f.name
        out.append(scorecard_section(ctx, f, rel, check))
    return out
