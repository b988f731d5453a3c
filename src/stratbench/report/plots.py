"""Figures the report draws itself (suites' own PNGs are embedded as they are).

Every function returns PNG bytes drawn on an Agg canvas (no display, no pyplot state). Labels can
hold model names, so mathtext is switched off: a ``$`` in a name is drawn, not parsed.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "bucket_distributions",
    "curves_plot",
    "leaderboard_plot",
    "level_distributions",
    "position_bias_plot",
]

_RC = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "text.parse_math": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _figure(w: float, h: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _short(s: str, n: int = 40) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def bucket_distributions(
    per_bucket: Mapping[str, Mapping[str, Sequence[float]]], metrics: Sequence[tuple[str, str]],
    title: str,
) -> bytes:
    """One panel per metric: per-game values as box plots (with the points) for each bucket.

    ``per_bucket[bucket][metric]`` are per-game means; ``metrics`` are (key, axis label).
    """
    import matplotlib as mpl

    buckets = list(per_bucket)
    with mpl.rc_context(_RC):
        fig = _figure(max(5.0, 3.2 * len(metrics) + 0.6 * len(buckets)), 3.6)
        axes = fig.subplots(1, len(metrics), squeeze=False)[0]
        rng = np.random.default_rng(0)  # jitter only; fixed so the image is reproducible
        for ax, (key, label) in zip(axes, metrics):
            data = [np.asarray(per_bucket[b].get(key, []), dtype=float) for b in buckets]
            keep = [i for i, d in enumerate(data) if d.size]
            if keep:
                ax.boxplot([data[i] for i in keep], positions=[i + 1 for i in keep], widths=0.5,
                           showfliers=False, medianprops={"color": "#d95f02"})
                for i in keep:
                    x = i + 1 + rng.uniform(-0.12, 0.12, data[i].size)
                    ax.scatter(x, data[i], s=9, alpha=0.55, color="#1b9e77", zorder=3)
                    ax.plot([i + 1], [data[i].mean()], marker="D", color="#333333", ms=5, zorder=4)
            ax.set_xticks(range(1, len(buckets) + 1), [_short(b, 22) for b in buckets],
                          rotation=20 if len(buckets) > 2 else 0, ha="right" if len(buckets) > 2 else "center")
            ax.set_xlim(0.4, len(buckets) + 0.6)
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(_short(title, 90) + "  (per-game means; ◆ = mean)")
        fig.tight_layout()
        return _png(fig)


def position_bias_plot(
    positions: Sequence[int], player: Sequence[float], player_ci: Sequence[Sequence[float] | None],
    nash: Sequence[float], title: str,
) -> bytes:
    """Mean probability the player puts on the row shown at each position, with 95% CIs, next to
    the Nash equilibrium's mean probability at the same positions and the uniform 1/m line."""
    import matplotlib as mpl

    m = len(positions)
    x = np.arange(m)
    with mpl.rc_context(_RC):
        fig = _figure(max(4.5, 1.1 * m + 2.5), 3.4)
        ax = fig.add_subplot()
        p = np.asarray(player, dtype=float)
        err = np.array([[v - (c[0] if c else v), (c[1] if c else v) - v] for v, c in zip(p, player_ci)]).T
        ax.bar(x - 0.2, p, 0.4, yerr=err, capsize=3, label="player", color="#7570b3")
        ax.bar(x + 0.2, np.asarray(nash, dtype=float), 0.4, label="Nash equilibrium", color="#bbbbbb")
        ax.axhline(1 / m, color="#d95f02", ls="--", lw=1, label=f"uniform 1/{m}")
        ax.set_xticks(x, [f"shown {k}" for k in positions])
        ax.set_ylabel("mean probability")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, frameon=False)
        ax.set_title(_short(title, 80))
        fig.tight_layout()
        return _png(fig)


def level_distributions(fits: Mapping[str, Mapping[str, Any]], title: str) -> bytes:
    """Fitted cognitive-hierarchy level distributions: one panel per CH model, bars per player."""
    import matplotlib as mpl

    players = list(fits)
    models = sorted({m for f in fits.values() if isinstance(f, Mapping) for m in f})
    with mpl.rc_context(_RC):
        fig = _figure(max(5.0, 4.0 * len(models)), 3.4)
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
                       label=_short(player, 30))
            ax.set_xticks(range(k_max), [f"L{k}" for k in range(k_max)])
            ax.set_ylim(0, 1)
            ax.set_title(model)
            ax.set_ylabel("share of play")
            ax.legend(fontsize=7, frameon=False)
        fig.suptitle(_short(title, 90))
        fig.tight_layout()
        return _png(fig)


def curves_plot(curves: Mapping[str, Sequence[float]], title: str, ylabel: str) -> bytes:
    """Line per named curve (used for ToM regret curves when a folder has no PNG of its own)."""
    import matplotlib as mpl

    with mpl.rc_context(_RC):
        fig = _figure(6.5, 3.6)
        ax = fig.add_subplot()
        for name, ys in curves.items():
            y = np.asarray(ys, dtype=float)
            ax.plot(np.arange(1, y.size + 1), y, label=_short(name, 40))
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, frameon=False)
        ax.set_title(_short(title, 80))
        fig.tight_layout()
        return _png(fig)


def leaderboard_plot(
    names: Sequence[str], values: Sequence[float], cis: Sequence[Sequence[float] | None], xlabel: str,
    title: str,
) -> bytes:
    """Horizontal bars with 95% CI whiskers, one per model, in the given order."""
    import matplotlib as mpl

    n = len(names)
    with mpl.rc_context(_RC):
        fig = _figure(6.5, max(1.8, 0.45 * n + 1.0))
        ax = fig.add_subplot()
        v = np.asarray(values, dtype=float)
        err = np.array([[x - (c[0] if c else x), (c[1] if c else x) - x] for x, c in zip(v, cis)]).T
        y = np.arange(n)[::-1]
        ax.barh(y, v, xerr=err, capsize=3, color="#1b9e77", height=0.6)
        ax.set_yticks(y, [_short(s, 36) for s in names])
        ax.set_xlabel(xlabel)
        ax.axvline(0, color="#333333", lw=0.8)
        ax.set_title(_short(title, 80))
        fig.tight_layout()
        return _png(fig)
