"""The Nash-gap suite's figures: per-bucket distributions and position bias (PNG bytes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from stratbench.render.figures import RC, figure, png, short


def bucket_distributions(
    per_bucket: Mapping[str, Mapping[str, Sequence[float]]], metrics: Sequence[tuple[str, str]],
    title: str,
) -> bytes:
    """One panel per metric: per-game values as box plots (with the points) for each bucket.

    ``per_bucket[bucket][metric]`` are per-game means; ``metrics`` are (key, axis label).
    """
    import matplotlib as mpl

    buckets = list(per_bucket)
    with mpl.rc_context(RC):
        fig = figure(max(5.0, 3.2 * len(metrics) + 0.6 * len(buckets)), 3.6)
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
            ax.set_xticks(range(1, len(buckets) + 1), [short(b, 22) for b in buckets],
                          rotation=20 if len(buckets) > 2 else 0, ha="right" if len(buckets) > 2 else "center")
            ax.set_xlim(0.4, len(buckets) + 0.6)
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(short(title, 90) + "  (per-game means; ◆ = mean)")
        fig.tight_layout()
        return png(fig)


def position_bias_plot(
    positions: Sequence[int], player: Sequence[float], player_ci: Sequence[Sequence[float] | None],
    nash: Sequence[float], title: str,
) -> bytes:
    """Mean probability the player puts on the row shown at each position, with 95% CIs, next to
    the Nash equilibrium's mean probability at the same positions and the uniform 1/m line."""
    import matplotlib as mpl

    m = len(positions)
    x = np.arange(m)
    with mpl.rc_context(RC):
        fig = figure(max(4.5, 1.1 * m + 2.5), 3.4)
        ax = fig.add_subplot()
        p = np.asarray(player, dtype=float)
        err = np.array([[v - (c[0] if c else v), (c[1] if c else v) - v] for v, c in zip(p, player_ci)]).T
        # a mean equal to its CI's end differs from it in the last bit (bootstrap means are summed in
        # another order): an error bar is never negative
        err = np.clip(err, 0.0, None)
        ax.bar(x - 0.2, p, 0.4, yerr=err, capsize=3, label="player", color="#7570b3")
        ax.bar(x + 0.2, np.asarray(nash, dtype=float), 0.4, label="Nash equilibrium", color="#bbbbbb")
        ax.axhline(1 / m, color="#d95f02", ls="--", lw=1, label=f"uniform 1/{m}")
        ax.set_xticks(x, [f"shown {k}" for k in positions])
        ax.set_ylabel("mean probability")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, frameon=False)
        ax.set_title(short(title, 80))
        fig.tight_layout()
        return png(fig)
