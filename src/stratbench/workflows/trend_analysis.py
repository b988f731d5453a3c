"""The analysis of a checkpoint trend: pure functions from the checkpoints' scorecard cells and the
paired comparisons of consecutive checkpoints to what `trend.json` says per suite.

Per suite and step: the normalised score with its 95% CI (the scorecard's cell for the model,
never recomputed here). Per consecutive pair of steps: the paired difference B − A with its CI over
the shared units — the row :func:`stratbench.workflows.scorecard.compare_scorecards` gives for the
two scorecards (the caller passes it; nothing is re-derived here).

Decisions, and why they are made so:

* **Above chance** at a step: the lower bound of the score's 95% CI is > 0. A point estimate above
  0 is not enough on a few units; the CI is what the scorecard already reports.
* **Emergence**: the first step (in step order) that is above chance — the question a training
  run asks is "from when on", so the earliest step counts. It is only decided when every earlier
  step was decided (a failed cell before it could have been the first). Whether every later step
  stays above chance is reported too: a capability that comes and goes did not emerge for good.
* **Regressions**: consecutive pairs whose paired difference is significantly negative. The
  paired bootstrap gives a 95% percentile CI, not a p-value; the p-value is a stated normal
  approximation of that bootstrap: standard error = CI width / (2 × 1.959964), z = diff / se,
  two-sided p = 2 × (1 − Φ(|z|)). Testing every pair of a long run at 5% would flag some pair
  by chance alone, so the p-values of a suite's pairs (increases included: the family is every
  pair tested) are adjusted by Holm's step-down method, which controls the family-wise error
  rate at 5% without assuming the tests independent; a regression is an adjusted p < 0.05 with a
  negative difference.
* Where the data cannot decide (a failed cell: nothing scored; a cell without a CI; fewer than
  2 shared units), the answer is the string ``"undetermined"`` — never a number that looks like a
  measurement.
* **CHBench is never paired**, for two reasons. Its score is one Poisson-CH fit over all of a
  model's play, not a mean over units (its scorecard part has no ``units``, so
  ``compare_scorecards`` gives ``paired: False`` and no difference CI). And two checkpoints do not
  play the same matches even at one seed: a match's seed is derived from its id
  ``mechanism|game|row|col``, whose seats are the players' model specs
  (``suites/chbench/run.py``, ``Match.id``/``Match.seed``), and it drives the scripted
  opponents' draws and the model's sampled moves — so checkpoint B's rounds of a game are not a
  replay of checkpoint A's with another player. Its consecutive differences are therefore
  **unpaired**: B − A of the two fits, with the two fits' own bootstrap CIs combined as independent
  estimates (se = CI width / (2 × 1.96) each, se of the difference = √(se_A² + se_B²), the CI
  diff ± 1.96 se and the p-value from the same normal approximation). The matches are independent
  draws; the games they share can only correlate the fits positively, which makes this CI wider
  than the truth, never narrower. The other suites pair: Nash gap's games and decision seeds,
  TMGBench's sample seeds and ToM's episode seeds come from the scorecard seed and the
  game/trial/episode alone, never from the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from scipy.stats import norm

__all__ = ["ALPHA", "P_VALUE_METHOD", "UNDETERMINED", "Decision", "Emergence", "StepDiff", "StepScore",
           "above_chance", "difference", "emergence", "holm", "p_value_from_ci", "regressions", "suite_trend", "unpaired_ci"]

ALPHA = 0.05
Z95 = float(norm.ppf(0.975))  # 1.959964...
UNDETERMINED: Final = "undetermined"
P_VALUE_METHOD = ("normal approximation of the paired bootstrap: se = (CI high - CI low) / (2 x 1.959964), "
                  "two-sided p = 2 (1 - Phi(|diff| / se)); unpaired suites (CHBench: one fit per checkpoint) "
                  "combine the two fits' CIs as independent, se = sqrt(se_A^2 + se_B^2); Holm's step-down "
                  "adjustment over the consecutive pairs of each suite; regression = adjusted p < 0.05 and diff < 0")
Decision = Literal["yes", "no", "undetermined"]


@dataclass(frozen=True)
class StepScore:
    """One checkpoint on one suite: the scorecard cell of its model."""

    step: int
    tokens: int | None
    label: str
    status: str  # the cell's: ok, errors, failed
    score: float | None  # the normalised score (0 = chance, 100 = optimal); None: nothing scored
    ci95: list[float] | None
    n_units: int
    #: the suite's chance reference where "CI above 0" is no valid test (CHBench: the 95th
    #: percentile of the level fitted to uniform play, normalised); None: the CI rule
    chance: float | None = None

    @property
    def above(self) -> Decision:
        return above_chance(self.score, self.ci95, self.status, self.chance)


@dataclass(frozen=True)
class StepDiff:
    """Checkpoint B − checkpoint A (consecutive steps) on one suite."""

    step_a: int
    step_b: int
    diff: float | None
    ci95: list[float] | None  # over the shared units (paired), or of two independent fits (unpaired)
    n_units: int
    paired: bool
    p_value: float | None  # two-sided, normal approximation of the bootstrap CI (module doc)
    p_holm: float | None = None  # Holm-adjusted over the suite's pairs
    regression: Decision = "undetermined"


@dataclass(frozen=True)
class Emergence:
    """decision: "emerged" (at ``step``), "never" (every step decided, none above chance) or
    "undetermined"; ``stays_above``: whether every later step is above chance too (None without
    an emergence)."""

    decision: Literal["emerged", "never", "undetermined"]
    step: int | None
    stays_above: Decision | None


def above_chance(score: float | None, ci95: Sequence[float] | None, status: str,
                 chance: float | None = None) -> Decision:
    """"yes" when the score's 95% CI lies above 0 (chance), "no" when it does not, "undetermined"
    without a score or a CI (a failed cell). With a ``chance`` reference (a fitted parameter bounded
    at chance, whose CI is no test: StepScore.chance), "yes" when the score is above it."""
    if status == "failed" or score is None:
        return UNDETERMINED
    if chance is not None:
        return "yes" if score > chance else "no"
    if not ci95 or len(ci95) != 2:
        return UNDETERMINED
    return "yes" if ci95[0] > 0 else "no"


def p_value_from_ci(diff: float | None, ci95: Sequence[float] | None, n_units: int) -> float | None:
    """Two-sided p-value of diff ≠ 0 from its 95% bootstrap CI (normal approximation: the module
    docstring says why). None (undetermined) without a CI or with fewer than 2 shared units. A CI
    of zero width is a bootstrap whose every resample gave one difference: p = 1 when it is 0,
    else 0."""
    if diff is None or not ci95 or len(ci95) != 2 or n_units < 2:
        return None
    se = (float(ci95[1]) - float(ci95[0])) / (2.0 * Z95)
    if se <= 0.0:
        return 1.0 if diff == 0 else 0.0
    return float(min(1.0, 2.0 * norm.sf(abs(diff) / se)))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (family-wise error control, any dependence) over the
    p-values given; None (undetermined) entries are not part of the family and stay None."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(known)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def unpaired_ci(diff: float, a_ci95: Sequence[float], b_ci95: Sequence[float]) -> list[float]:
    """The 95% CI of B − A from two independent estimates' own 95% CIs (module docstring)."""
    se = math.hypot(float(a_ci95[1]) - float(a_ci95[0]), float(b_ci95[1]) - float(b_ci95[0])) / (2.0 * Z95)
    return [diff - Z95 * se, diff + Z95 * se]


def _ci_pair(value: Any) -> list[float] | None:
    ok = isinstance(value, (list, tuple)) and len(value) == 2
    return [float(x) for x in value] if ok and all(isinstance(x, (int, float)) for x in value) else None


def difference(step_a: int, step_b: int, row: Mapping[str, Any]) -> StepDiff:
    """A pair's difference from one row of compare_scorecards (B − A): paired over the shared units,
    or — a suite with no units (CHBench) — unpaired, from the two cells' own CIs."""
    raw = row.get("diff")
    diff = float(raw) if isinstance(raw, (int, float)) else None
    n = int(row.get("n_units") or 0)
    if row.get("paired"):
        ci = _ci_pair(row.get("diff_ci95"))
    else:
        a_ci, b_ci = _ci_pair(row.get("a_ci95")), _ci_pair(row.get("b_ci95"))
        scored = row.get("a_status") != "failed" and row.get("b_status") != "failed"
        ci = unpaired_ci(diff, a_ci, b_ci) if diff is not None and a_ci and b_ci and scored else None
    return StepDiff(step_a, step_b, diff, ci, n, bool(row.get("paired")), p_value_from_ci(diff, ci, n))


def regressions(diffs: Sequence[StepDiff], alpha: float = ALPHA) -> list[StepDiff]:
    """The pairs with their Holm-adjusted p-values and regression decisions."""
    adjusted = holm([d.p_value for d in diffs])
    out = []
    for d, p in zip(diffs, adjusted):
        if p is None or d.diff is None:
            decision: Decision = UNDETERMINED
        else:
            decision = "yes" if p < alpha and d.diff < 0 else "no"
        out.append(StepDiff(**{**asdict(d), "p_holm": p, "regression": decision}))
    return out


def emergence(points: Sequence[StepScore]) -> Emergence:
    """The first step above chance, in step order (module docstring), and whether every later
    step stays above."""
    ordered = sorted(points, key=lambda p: p.step)
    for i, p in enumerate(ordered):
        if p.above == "yes":
            if any(q.above == UNDETERMINED for q in ordered[:i]):
                return Emergence(UNDETERMINED, None, None)
            later = [q.above for q in ordered[i + 1:]]
            stays: Decision = "no" if "no" in later else UNDETERMINED if UNDETERMINED in later else "yes"
            return Emergence("emerged", p.step, stays)
    if any(p.above == UNDETERMINED for p in ordered) or not ordered:
        return Emergence(UNDETERMINED, None, None)
    return Emergence("never", None, None)


def suite_trend(suite: Mapping[str, Any], points: Sequence[StepScore],
                rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One suite's part of trend.json: its points, the consecutive differences (``rows``: the
    compare_scorecards row of each consecutive pair, in step order), emergence and regressions."""
    ordered = sorted(points, key=lambda p: p.step)
    if len(rows) != max(0, len(ordered) - 1):
        raise ValueError("one comparison row per consecutive pair of steps")
    diffs = regressions([difference(a.step, b.step, r) for a, b, r in zip(ordered, ordered[1:], rows)])
    em = emergence(ordered)
    return {
        "suite": suite["suite"], "title": suite["title"], "metric_label": suite.get("metric_label", ""),
        "points": [{**asdict(p), "above_chance": p.above} for p in ordered],
        "differences": [asdict(d) for d in diffs],
        "emergence": asdict(em),
        "regressions": [d.step_b for d in diffs if d.regression == "yes"],
        # pairs the data cannot decide (a failed cell, no paired CI): neither a regression nor not one
        "undetermined_pairs": [d.step_b for d in diffs if d.regression == UNDETERMINED],
    }
