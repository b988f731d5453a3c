"""Robust, non-executing parsers shared by suites: the final action named in an answer. Core:
imports nothing else from stratbench. Suite-specific answer formats (mixed strategies, answer
sets, templates) are parsed in their suites."""

from stratbench.parsing.actions import ActionParse, parse_action

__all__ = ["ActionParse", "parse_action"]
