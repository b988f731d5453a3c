"""CHBench's figure: fitted cognitive-hierarchy level distributions (PNG bytes), drawn by one
function for a run's ``level_distribution.png`` and for the report of a ``chbench fit`` folder.

A figure is a grid of panels; a panel is a title and, per player, the fitted distribution over
levels 0..k̂-1 (bars side by side). :func:`run_panels` lays out a run's summary (a row per CH model,
a column per mechanism), :func:`fit_panels` a fit's ``fit.json`` (a panel per CH model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from stratbench.render.figures import RC, figure, png, short

Panel = tuple[str, Mapping[str, Sequence[float]]]
"""A panel's title and, per player, its level distribution."""

CH_TITLES = {"level_k": "Level-K CH", "poisson": "Poisson CH"}


def level_distributions(rows: Sequence[Sequence[Panel]], title: str) -> bytes:
    """Fitted cognitive-hierarchy level distributions: a grid of panels, bars per player."""
    import matplotlib as mpl

    n_rows = max(1, len(rows))
    n_cols = max([1] + [len(r) for r in rows])
    with mpl.rc_context(cast(Any, RC)):
        fig = figure(max(5.0, 4.0 * n_cols), 3.2 * n_rows + 0.4)
        axes = fig.subplots(n_rows, n_cols, squeeze=False)
        for i, row in enumerate(rows):
            for j, (panel_title, dists) in enumerate(row):
                ax = axes[i][j]
                players = list(dists)
                width = 0.8 / max(1, len(players))
                k_max = 0
                for p, player in enumerate(players):
                    d = np.asarray(dists[player], dtype=float)
                    k_max = max(k_max, d.size)
                    ax.bar(np.arange(d.size) + (p - (len(players) - 1) / 2) * width, d, width,
                           label=short(player, 30))
                ax.set_xticks(range(k_max), [f"L{k}" for k in range(k_max)])
                ax.set_ylim(0, 1)
                ax.set_title(short(panel_title, 60))
                ax.set_ylabel("share of play")
                if players:
                    ax.legend(fontsize=7, frameon=False)
            for j in range(len(row), n_cols):
                axes[i][j].set_axis_off()
        fig.suptitle(short(title, 90))
        fig.tight_layout()
        return png(fig)


def run_panels(summary: Mapping[str, Any]) -> list[list[Panel]]:
    """A run's pooled level distributions (summary.json): a row per CH model, a column per
    mechanism; no panels when no mechanism was played."""
    mechs: Mapping[str, Mapping[str, Any]] = summary.get("mechanisms") or {}
    if not mechs:
        return []
    return [[(f"{title} — {m}", {p: s[f"{cm}_level_distribution"] for p, s in players.items()
                                   if s.get(f"{cm}_level_distribution")})
             for m, players in mechs.items()]
            for cm, title in CH_TITLES.items()]


def fit_panels(fits: Mapping[str, Mapping[str, Any]]) -> list[list[Panel]]:
    """A fit's level distributions (fit.json: player → CH model → fit): a panel per CH model."""
    models = sorted({m for f in fits.values() if isinstance(f, Mapping) for m in f})
    panels: list[Panel] = []
    for model in models:
        dists = {}
        for player, f in fits.items():
            dist = (f.get(model) or {}).get("level_distribution")
            if isinstance(dist, list) and dist:
                dists[player] = dist
        panels.append((model, dists))
    return [panels]


__all__ = ["Panel", "fit_panels", "level_distributions", "run_panels"]
