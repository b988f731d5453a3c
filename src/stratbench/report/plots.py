"""Figures the report draws itself (suites draw their own): the leaderboard bar chart and the
checkpoint trend's curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stratbench.render.figures import RC, figure, png, short

__all__ = ["leaderboard_plot", "log_steps", "trend_plot"]


def leaderboard_plot(
    names: Sequence[str], values: Sequence[float], cis: Sequence[Sequence[float] | None], xlabel: str,
    title: str,
) -> bytes:
    """Horizontal bars with 95% CI whiskers, one per model, in the given order."""
    import matplotlib as mpl

    n = len(names)
    with mpl.rc_context(RC):
        fig = figure(6.5, max(1.8, 0.45 * n + 1.0))
        ax = fig.add_subplot()
        v = np.asarray(values, dtype=float)
        err = np.array([[x - (c[0] if c else x), (c[1] if c else x) - x] for x, c in zip(v, cis)]).T
        y = np.arange(n)[::-1]
        ax.barh(y, v, xerr=err, capsize=3, color="#1b9e77", height=0.6)
        ax.set_yticks(y, [short(s, 36) for s in names])
        ax.set_xlabel(xlabel)
        ax.axvline(0, color="#333333", lw=0.8)
        ax.set_title(short(title, 80))
        fig.tight_layout()
        return png(fig)


def log_steps(steps: Sequence[int]) -> bool:
    """Whether a trend's x axis is logarithmic: every step > 0 and the steps span more than two
    decades (a training run's checkpoints are often spaced geometrically)."""
    return bool(steps) and min(steps) > 0 and max(steps) / min(steps) > 100


def trend_plot(trend: Mapping[str, Any]) -> bytes:
    """One panel per suite: the normalised score against the training step with its 95% CI band,
    chance (0) and optimal (100) as dashed lines (and, for a suite whose points carry a chance
    reference — CHBench — that reference dash-dotted: its "above chance" line), the emergence step as a
    vertical line and each regression as a red triangle at the later step. Failed cells are gaps (no
    value is drawn)."""
    import matplotlib as mpl

    suites = list(trend["suites"])
    n = max(1, len(suites))
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    with mpl.rc_context(RC):
        fig = figure(5.2 * cols, 3.0 * rows + 0.4)
        for k, s in enumerate(suites):
            ax = fig.add_subplot(rows, cols, k + 1)
            pts = s["points"]
            x = np.asarray([p["step"] for p in pts], dtype=float)
            y = np.asarray([p["score"] if p["score"] is not None else np.nan for p in pts], dtype=float)
            lo = np.asarray([p["ci95"][0] if p["ci95"] else np.nan for p in pts], dtype=float)
            hi = np.asarray([p["ci95"][1] if p["ci95"] else np.nan for p in pts], dtype=float)
            ax.fill_between(x, lo, hi, color="#1b9e77", alpha=0.25, lw=0, label="95% CI")
            ax.plot(x, y, marker="o", color="#1b9e77", lw=1.5, ms=4, label="score")
            ax.axhline(0, color="#999999", lw=1, ls="--")
            ax.axhline(100, color="#333333", lw=1, ls="--")
            refs = np.asarray([p["chance"] if p.get("chance") is not None else np.nan for p in pts], dtype=float)
            if np.isfinite(refs).any():  # (a fitted level: above chance means above this line, not above 0)
                ax.plot(x, refs, color="#777777", lw=1, ls="-.")
                ax.text(1.0, float(refs[np.isfinite(refs)][-1]), " above chance", transform=ax.get_yaxis_transform(),
                        fontsize=7, color="#555555", va="bottom", ha="left")
            if log_steps([p["step"] for p in pts]):  # (limits set: a panel of failed cells has no data)
                ax.set_xscale("log")
                ax.set_xlim(x.min() / 1.6, x.max() * 1.6)
            elif len(x):
                pad = max(1.0, 0.05 * float(x.max() - x.min()))
                ax.set_xlim(x.min() - pad, x.max() + pad)
            if 0 < len(x) <= 8:  # the checkpoints' own steps as ticks, in plain numbers (no mathtext)
                from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

                ax.xaxis.set_major_locator(FixedLocator([float(v) for v in x]))
                ax.set_xticks(x, [f"{int(v):,}" for v in x], fontsize=7)
                ax.xaxis.set_minor_locator(NullLocator())
                ax.xaxis.set_minor_formatter(NullFormatter())
            finite = np.concatenate([y, lo, hi])
            finite = finite[np.isfinite(finite)]
            ax.set_ylim(min(-10.0, float(finite.min(initial=0.0)) - 5), max(110.0, float(finite.max(initial=0.0)) + 5))
            em = s["emergence"]
            if em["decision"] == "emerged":
                ax.axvline(em["step"], color="#7570b3", lw=1, ls=":")
                ax.annotate(f"emerges at {em['step']}", (em["step"], 100), fontsize=7, color="#7570b3",
                            va="top", ha="left")
            bad = [p for p in pts if p["step"] in set(s["regressions"])]
            if bad:
                ax.plot([p["step"] for p in bad], [p["score"] for p in bad], "v", color="#d62728", ms=8,
                        label="regression")
            undetermined = [p for p in pts if p["score"] is None]
            for p in undetermined:
                ax.annotate("failed", (p["step"], 0), fontsize=7, color="#a40000", ha="center", va="bottom")
            ax.set_title(short(f"{s['title']}", 40))
            ax.set_xlabel("training step")
            ax.set_ylabel("normalised score")
            ax.text(1.0, 0.0, " chance", transform=ax.get_yaxis_transform(), fontsize=7, color="#777777",
                    va="bottom", ha="left")
            ax.text(1.0, 100.0, " optimal", transform=ax.get_yaxis_transform(), fontsize=7, color="#333333",
                    va="bottom", ha="left")
            if k == 0:
                ax.legend(fontsize=7, loc="center left", frameon=False)
        fig.suptitle(f"checkpoint trend — budget {trend.get('budget')}, seed {trend.get('seed')} "
                     "(0 = chance, 100 = optimal; band: 95% CI)", fontsize=9)
        fig.tight_layout()
        return png(fig)
