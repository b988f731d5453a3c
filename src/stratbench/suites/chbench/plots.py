"""CHBench's figure: fitted cognitive-hierarchy level distributions (PNG bytes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from stratbench.render.figures import RC, figure, png, short


def level_distributions(fits: Mapping[str, Mapping[str, Any]], title: str) -> bytes:
    """Fitted cognitive-hierarchy level distributions: one panel per CH model, bars per player."""
    import matplotlib as mpl

    players = list(fits)
    models = sorted({m for f in fits.values() if isinstance(f, Mapping) for m in f})
    with mpl.rc_context(RC):
        fig = figure(max(5.0, 4.0 * len(models)), 3.4)
        axes = fig.subplots(1, max(1, len(models)), squeeze=False)[0]
        width = 0.8 / max(1, len(players))
        for ax, model in zip(axes, models):
            k_max = 0
            for i, player in enumerate(players):
                dist = (fits[player].get(model) or {}).get("level_distribution")
                if not isinstance(dist, list) or not dist:
                    continue
                d = np.asarray(dist, dtype=float)
                k_max = max(k_max, d.size)
                ax.bar(np.arange(d.size) + (i - (len(players) - 1) / 2) * width, d, width,
                       label=short(player, 30))
            ax.set_xticks(range(k_max), [f"L{k}" for k in range(k_max)])
            ax.set_ylim(0, 1)
            ax.set_title(model)
            ax.set_ylabel("share of play")
            ax.legend(fontsize=7, frameon=False)
        fig.suptitle(short(title, 90))
        fig.tight_layout()
        return png(fig)
