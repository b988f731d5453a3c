"""Uncertainty for every headline number: the one percentile bootstrap of the project, over the
units (games, grids, episodes) a mean is taken over. Vectorised, and seeded so the same data
always gives the same interval. Core: every suite and the workflows use it.

* :func:`bootstrap_ci` — the mean of one sample;
* :func:`stratified_bootstrap_ci` — the mean over strata (seeds) of per-stratum means, resampling
  within each stratum;
* :func:`bootstrap_diff` — B − A, paired over shared units or from two independent samples;
* :func:`bootstrap_statistic` — any statistic of resampled units (e.g. a refitted model);
* :func:`bootstrap_range` — the same for a statistic the data may fix only as an interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

N_BOOT = 2000
U = TypeVar("U")


def resampled_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The means of `n_boot` resamples (with replacement) of `x`, drawn from `rng`."""
    return np.asarray(x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1))


# The tails of a 95% interval as the comparisons and fits have always cut them. (Means' intervals
# compute them as (1 − level) / 2, which differs from 0.025 in the 17th digit; both conventions are
# kept so that no published number moves.)
TAILS_95 = (0.025, 0.975)


def percentile_interval(samples: Sequence[float] | np.ndarray, level: float = 0.95,
                        tails: tuple[float, float] | None = None) -> list[float]:
    """[low, high]: the central `level` share of bootstrap samples (or the given quantiles)."""
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(samples, dtype=float), list(tails or (alpha, 1.0 - alpha)))
    return [float(lo), float(hi)]


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, seed: int = 0, n_boot: int = N_BOOT, level: float = 0.95
) -> list[float] | None:
    """[low, high] percentile-bootstrap interval of the mean; None when there is no data."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    if x.size == 1 or np.all(x == x[0]):
        return [float(x[0]), float(x[0])]
    return percentile_interval(resampled_means(x, n_boot, np.random.default_rng(seed)), level)


def stratified_bootstrap_ci(groups: Sequence[Sequence[float]], seed: int = 0,
                            n_boot: int = N_BOOT, level: float = 0.95) -> list[float] | None:
    """CI of the mean over strata of per-stratum means, units resampled within each stratum (the
    interval of an across-seed mean, seeds fixed)."""
    xs = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not xs:
        return None
    if all(np.all(x == x[0]) for x in xs):
        v = float(np.mean([x[0] for x in xs]))
        return [v, v]
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for x in xs:
        total += resampled_means(x, n_boot, rng)
    return percentile_interval(total / len(xs), level)


def bootstrap_diff(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, paired: bool,
                   rng: np.random.Generator, n_boot: int = N_BOOT) -> tuple[float, list[float]]:
    """(B − A, its 95% CI): paired, the mean of unit-wise differences (a[i] and b[i] are one unit);
    unpaired, the difference of the two means, each sample resampled on its own."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if paired:
        d = xb - xa
        return float(d.mean()), percentile_interval(resampled_means(d, n_boot, rng), tails=TAILS_95)
    boots = resampled_means(xb, n_boot, rng) - resampled_means(xa, n_boot, rng)
    return float(xb.mean() - xa.mean()), percentile_interval(boots, tails=TAILS_95)


def bootstrap_statistic(units: Sequence[U], statistic: Callable[[list[U], int], Any], n_boot: int,
                        rng: np.random.Generator) -> list[float] | None:
    """95% CI of any statistic of the units (e.g. a model refitted to resampled games): `statistic`
    gets a resample and its index and returns a number, or None to leave the resample out."""
    values = []
    for b in range(n_boot):
        pick = [units[i] for i in rng.integers(0, len(units), len(units))]
        v = statistic(pick, b)
        if v is not None:
            values.append(float(v))
    return percentile_interval(values, tails=TAILS_95) if values else None


def bootstrap_range(units: Sequence[U], statistic: Callable[[list[U], int], tuple[float, float] | None],
                    n_boot: int, rng: np.random.Generator) -> list[float] | None:
    """95% CI of a statistic that the data may determine only as an interval (a refitted model
    whose maximisers span several values): the low quantile of the resamples' low ends and the high
    quantile of their high ends, so the interval covers every value a resample could not rule out.
    Equal to `bootstrap_statistic` where every interval is a point."""
    lows, highs = [], []
    for b in range(n_boot):
        pick = [units[i] for i in rng.integers(0, len(units), len(units))]
        v = statistic(pick, b)
        if v is not None:
            lows.append(float(v[0]))
            highs.append(float(v[1]))
    if not lows:
        return None
    return [percentile_interval(lows, tails=TAILS_95)[0], percentile_interval(highs, tails=TAILS_95)[1]]


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
