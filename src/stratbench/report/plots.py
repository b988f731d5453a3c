"""Figures the report draws itself (suites draw their own): the leaderboard bar chart."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stratbench.render.figures import RC, figure, png, short

__all__ = ["leaderboard_plot"]


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
