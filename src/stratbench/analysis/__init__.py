"""Metrics and statistics: per-decision metrics, per-game aggregation, bootstrap CIs."""

from stratbench.analysis.stats import bootstrap_ci, describe
from stratbench.analysis.zerosum_metrics import ZeroSumMetrics, zero_sum_metrics

__all__ = ["bootstrap_ci", "describe", "ZeroSumMetrics", "zero_sum_metrics"]
