"""Players behind one policy interface: scripted reference agents now, model backends later."""

from stratbench.agents.base import Agent, Decision, DecisionRequest, Mode, Status
from stratbench.agents.registry import SCRIPTED_AGENTS, make_agent

__all__ = ["Agent", "Decision", "DecisionRequest", "Mode", "Status", "SCRIPTED_AGENTS", "make_agent"]
