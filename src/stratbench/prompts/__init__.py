"""Prompt templates and the helpers that render games into them, kept in one place so every suite
phrases games the same way."""

from stratbench.prompts.render import format_payoff, join_choices, payoff_table
from stratbench.prompts.nashgap import nashgap_prompt

__all__ = ["format_payoff", "join_choices", "payoff_table", "nashgap_prompt"]
