"""ToM's figure: per-step regret curves (PNG bytes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from stratbench.render.figures import RC, figure, png, short


def curves_plot(curves: Mapping[str, Sequence[float]], title: str, ylabel: str) -> bytes:
    """Line per named curve (used for ToM regret curves when a folder has no PNG of its own)."""
    import matplotlib as mpl

    with mpl.rc_context(RC):
        fig = figure(6.5, 3.6)
        ax = fig.add_subplot()
        for name, ys in curves.items():
            y = np.asarray(ys, dtype=float)
            ax.plot(np.arange(1, y.size + 1), y, label=short(name, 40))
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, frameon=False)
        ax.set_title(short(title, 80))
        fig.tight_layout()
        return png(fig)
