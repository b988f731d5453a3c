"""Figures drawn on an Agg canvas (no display, no pyplot state), as PNG bytes: the helpers every
plot uses, so all figures share one look. Labels can hold model names, so mathtext is switched off:
a ``$`` in a name is drawn, not parsed."""

from __future__ import annotations

import io
from typing import Any

__all__ = ["RC", "figure", "png", "short"]

RC: Any = {  # matplotlib rcParams (typed Any: rc_context's stub wants literal keys)
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "text.parse_math": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def figure(w: float, h: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def short(s: str, n: int = 40) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


