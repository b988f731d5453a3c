"""Seed derivation: every random choice draws from a generator keyed by *what* it is for.

A decision's randomness is a function of (seed, game, trial, mode), never of a shared global
generator, so results do not depend on thread scheduling or on how many workers run.
"""

from __future__ import annotations

import secrets

import numpy as np


def derive_seed(*keys: int) -> int:
    """A 63-bit seed determined by the integer keys (order matters)."""
    ss = np.random.SeedSequence([int(k) for k in keys])
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def fresh_seed() -> int:
    """A new random seed, for runs started without one (it is recorded so they can be repeated)."""
    return secrets.randbits(31)
