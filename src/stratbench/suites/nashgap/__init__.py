"""The Nash-gap suite: random zero-sum matrix games, the player as the row player against a Nash-equilibrium opponent; and the tiered multi-model research suite built on it."""
