"""Uncertainty for every headline number: percentile bootstrap over the units (games) a mean is
taken over. Vectorised, and seeded so the same data always gives the same interval. Core: every
suite and the workflows use it."""

from __future__ import annotations

from typing import Sequence

import numpy as np

N_BOOT = 2000


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, seed: int = 0, n_boot: int = N_BOOT, level: float = 0.95
) -> list[float] | None:
    """[low, high] percentile-bootstrap interval of the mean; None when there is no data."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    if x.size == 1 or np.all(x == x[0]):
        return [float(x[0]), float(x[0])]
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return [float(lo), float(hi)]


def describe(values: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    """mean, median, std (population, as numpy), min, max; None for empty input."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return {k: None for k in ("mean", "median", "std", "min", "max")}
    return {
        "mean": float(x.mean()),
        "median": float(np.median(x)),
        "std": float(x.std()),
        "min": float(x.min()),
        "max": float(x.max()),
    }
