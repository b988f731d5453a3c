"""Prefix reuse on a repeated-game prompt that grows one round at a time (embedded model).

Each round appends the round's outcome to the history and asks for the next action, as the
repeated-game suites do. Without prefix reuse every round re-encodes the whole history (quadratic
in rounds); with it only the new tokens are evaluated. Prints tokens evaluated and wall time of
both, measured in the same run, and their ratios (goal ≥ 20×).

Run: .venv/bin/python benchmarks/bench_prefix_reuse.py [--rounds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

from stratbench.models.base import ScoreRequest
from stratbench.models.llama import load_embedded

HEADER = (
    "You are playing rock-paper-scissors repeatedly against the same opponent. A win scores 1, a "
    "tie 0, a loss -1. Options: R, P, S.\n"
)


def prompts(rounds: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    out, hist = [], HEADER
    for t in range(rounds):
        out.append(hist + f"Round {t + 1}: I play ")
        me, opp = rng.choice(list("RPS"), 2)
        hist += f"Round {t + 1}: I play {me}, opponent plays {opp}.\n"
    return out


async def run(prefix_reuse: bool, ps: list[str]) -> tuple[int, float, list[list[float]]]:
    model = load_embedded(prefix_reuse=prefix_reuse)
    await model.score([ScoreRequest("warm-up", ("R",))])
    tokens, t0, lps = 0, time.perf_counter(), []
    for p in ps:
        (r,) = await model.score([ScoreRequest(p, ("R", "P", "S"))])
        assert r.ok, r.error
        tokens += r.tokens_in
        lps.append(r.logprobs)
    dt = time.perf_counter() - t0
    await model.aclose()
    return tokens, dt, lps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()
    ps = prompts(args.rounds)
    tok_full, t_full, lp_full = asyncio.run(run(False, ps))
    tok_reuse, t_reuse, lp_reuse = asyncio.run(run(True, ps))
    diff = np.abs(np.array(lp_full) - np.array(lp_reuse)).max()
    print(f"rounds: {args.rounds}, final prompt tokens ≈ {tok_reuse}")
    print(f"{'':18}{'tokens evaluated':>18}{'seconds':>10}")
    print(f"{'re-encode':18}{tok_full:>18}{t_full:>10.2f}")
    print(f"{'prefix reuse':18}{tok_reuse:>18}{t_reuse:>10.2f}")
    print(f"ratio: tokens {tok_full / tok_reuse:.1f}x, time {t_full / t_reuse:.1f}x")
    print(f"max |Δ log-prob| between the two (llama.cpp batch-split numerics): {diff:.3g}")


if __name__ == "__main__":
    main()
