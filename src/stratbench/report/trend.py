"""The page of a checkpoint trend (`trend_<time>/report/index.html`): its first screen is the curves —
per suite, the normalised score against the training step with its 95% CI band, chance and optimal
marked — then the emergence / regression table, the scores per step, the method, and links to each
checkpoint's own scorecard report.

The numbers come from `trend.json` (written by the trend workflow), never recomputed here. The page
is self-contained and escaped like every report (:mod:`stratbench.render.html`); the figure is also
written next to it as a PNG, and `index.html` is written last, each file whole or not at all.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import stratbench
from stratbench.errors import InputError
from stratbench.render.html import Html, el, img_data_uri, join, table
from stratbench.report.build import _CSS, CSP, MARKER
from stratbench.report.plots import trend_plot
from stratbench.runner.jsonl import write_atomic, write_bytes_atomic

__all__ = ["build_trend_report", "emergence_text", "trend_table"]


def _score(p: Mapping[str, Any]) -> str:
    if p.get("score") is None:
        return "failed (undetermined)"
    ci = p.get("ci95")
    return f"{p['score']:.0f}" + (f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "")


def emergence_text(s: Mapping[str, Any]) -> str:
    """The emergence decision of a suite in words."""
    em = s["emergence"]
    if em["decision"] == "emerged":
        stays = {"yes": "stays above chance", "no": "falls back to chance later",
                 "undetermined": "later steps undetermined"}.get(str(em.get("stays_above")), "")
        return f"step {em['step']} ({stays})"
    return "never (every step at chance)" if em["decision"] == "never" else "undetermined"


def _regression_text(s: Mapping[str, Any]) -> str:
    found = ", ".join(f"→ {x}" for x in s["regressions"]) or "none"
    if s.get("undetermined_pairs"):
        found += f"; undetermined at step{'s' if len(s['undetermined_pairs']) > 1 else ''} " + ", ".join(
            str(x) for x in s["undetermined_pairs"])
    return found


def trend_table(trend: Mapping[str, Any]) -> Html:
    """Per suite: emergence, whether it stays, regressions (Holm-adjusted) and undetermined pairs."""
    rows = [[s["title"], emergence_text(s), _regression_text(s)] for s in trend["suites"]]
    return table(["suite", "emerges above chance at", "regressions (paired, Holm-adjusted p < 0.05)"], rows,
                 caption="Emergence: the first step whose score's 95% CI lies above 0 (CHBench: whose fitted "
                         "level lies above the 95th percentile of the level fitted to uniform random play). A "
                         "regression: a significantly negative difference from the previous checkpoint (paired; "
                         "CHBench: of two independent fits).")


def _steps_table(trend: Mapping[str, Any]) -> Html:
    suites = trend["suites"]
    headers: list[Any] = ["step", "tokens", "checkpoint"] + [s["title"] for s in suites]
    rows = []
    for i, c in enumerate(trend["checkpoints"]):
        row: list[Any] = [str(c["step"]), "" if c.get("tokens") is None else f"{c['tokens']:,}", c["label"]]
        for s in suites:
            p = s["points"][i]
            d = next((x for x in s["differences"] if x["step_b"] == c["step"]), None)
            parts: list[Any] = [_score(p)]
            if d is not None:
                diff = "—" if d["diff"] is None else f"{d['diff']:+.0f}"
                ci = f" [{d['ci95'][0]:+.0f}, {d['ci95'][1]:+.0f}]" if d["ci95"] else ""
                p_holm = "" if d["p_holm"] is None else f", p_Holm {d['p_holm']:.3g}"
                mark = el("b", " regression", class_="warn") if d["regression"] == "yes" else None
                parts += [el("br"), el("span", f"Δ {diff}{ci}{p_holm}", class_="note"), mark]
            row.append(join(parts))
        rows.append(row)
    return table(headers, rows, class_="wide",
                 caption="Normalised score [95% CI] per step; Δ: paired difference from the previous step "
                         "[95% CI over the shared units].")


def _links(trend: Mapping[str, Any]) -> Html:
    items = []
    for c in trend["checkpoints"]:
        rel = f"../{c['scorecard']}/report/index.html"
        items.append(el("li", f"step {c['step']}: ", el("a", c["label"], href=rel), " ",
                        el("code", c["scorecard"])))
    return el("ul", items)


def build_trend_report(folder: str | Path) -> Path:
    """Write ``<folder>/report/index.html`` (and the curves' PNG beside it) from the folder's
    trend.json; the page's path."""
    root = Path(folder)
    try:
        trend = json.loads((root / "trend.json").read_text(encoding="utf-8"))
        if not isinstance(trend, dict) or not isinstance(trend.get("suites"), list):
            raise ValueError
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        raise InputError(f"{root}: no readable trend.json (an unfinished trend? finish it with stratbench trend "
                         "--resume)") from None
    out = root / "report"
    out.mkdir(exist_ok=True)
    png = trend_plot(trend)
    write_bytes_atomic(out / "trend.png", png)
    method = el("ul", [
        el("li", "Score: the scorecard's normalised score of the checkpoint (0 = chance, 100 = optimal) with its "
                 "95% bootstrap CI over the suite's units."),
        el("li", "Emergence: ", trend.get("emergence_rule", ""), "; decided only when every earlier step is."),
        el("li", "Differences: stratbench compare of consecutive checkpoints, paired over the units both scored."),
        el("li", "p-values and multiple comparisons: ", trend.get("p_value_method", "")),
        el("li", "A failed cell (nothing scored) or a difference without a paired CI (CHBench: one fit per "
                 "scorecard) is undetermined: no number is shown for it."),
    ])
    body = [
        el("h1", "stratbench checkpoint trend"),
        el("p", "Folder: ", el("code", str(root.resolve())), el("br"),
           f"Budget {trend.get('budget')}, seed {trend.get('seed')}, {len(trend['checkpoints'])} checkpoints. "
           f"Generated {_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')} by stratbench "
           f"{stratbench.__version__}.", class_="note"),
        el("h2", "Curves", id="curves"),
        el("figure", img_data_uri(png, "normalised score per suite against the training step"),
           el("figcaption", "Normalised score per suite against the training step; band: 95% CI; dashed: chance "
                            "(0) and optimal (100); dash-dotted (CHBench): the level uniform play reaches 5% of "
                            "the time, above which a point is above chance; dotted: emergence; red triangles: "
                            "regressions.")),
        el("h2", "Emergence and regressions", id="decisions"),
        trend_table(trend),
        el("h2", "Scores per step", id="steps"),
        _steps_table(trend),
        el("details", el("summary", "How it is decided"), method),
        el("h2", "Checkpoints", id="checkpoints"),
        _links(trend),
    ]
    page = Html("<!DOCTYPE html>\n") + el(
        "html",
        el("head", el("meta", charset="utf-8"), el("meta", http_equiv="Content-Security-Policy", content=CSP),
           el("meta", name="viewport", content="width=device-width, initial-scale=1"),
           el("meta", name="generator", content=MARKER),
           el("title", f"stratbench trend — {root.resolve().name}"), el("style", Html(_CSS))),
        el("body", join(body)),
        lang="en",
    )
    write_atomic(out / "index.html", page)
    return out / "index.html"
