"""ToM's one figure: per-step regret curves (mean over episodes), drawn for a run's
``regret_curve.png`` (`tom run`, `tom baseline`, their merges) and by the report for folders that
kept only ``curves.json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stratbench.render.figures import RC, figure, png, short

REGRET_LABEL = "regret (vs optimal T-step response)"


def regret_curves_plot(curves: Mapping[str, Sequence[float]], title: str, ylabel: str = REGRET_LABEL) -> bytes:
    """One line per named curve (step 1..T on x), as PNG bytes; an empty mapping draws empty axes."""
    import matplotlib as mpl

    rc: Any = RC
    with mpl.rc_context(rc):
        fig = figure(6.5, 3.6)
        ax = fig.add_subplot()
        for name, ys in curves.items():
            y = np.asarray(ys, dtype=float)
            ax.plot(np.arange(1, y.size + 1), y, label=short(name, 40))
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        if curves:
            ax.legend(fontsize=8, frameon=False)
        ax.set_title(short(title, 80))
        fig.tight_layout()
        return png(fig)
