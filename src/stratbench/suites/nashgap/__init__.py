"""The Nash-gap suite: random two-player zero-sum matrix games, the model as the row player against
a Nash-equilibrium opponent; the gap to the best response and exploitability, difficulty buckets,
and the tiered multi-model research suite built on it.

Modules: ``config``, ``games`` (generators, buckets, solved games), ``prompts``, ``players``
(scripted reference players and the policy interface; ``model_player`` for language models),
``answers`` (mixed-strategy parsing), ``metrics``, ``records``, ``run`` (the run plan),
``report`` and ``plots`` (its report view), ``tiered`` / ``tiered_config`` / ``tiered_merge``
(the tiered suite), ``suite`` (the registered objects). It imports only the core.
"""
