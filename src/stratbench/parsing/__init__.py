"""Robust, non-executing parsers for model answers: a final action, or a mixed strategy."""

from stratbench.parsing.actions import ActionParse, parse_action
from stratbench.parsing.distributions import DistributionParse, parse_distribution

__all__ = ["ActionParse", "parse_action", "DistributionParse", "parse_distribution"]
