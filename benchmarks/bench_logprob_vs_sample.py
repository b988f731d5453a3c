"""Exact log-prob policies vs sampled trials on the embedded model (Nash-gap games).

For each game the log-prob policy costs one scoring call and gives the model's exact distribution
over the legal actions. The original benchmark instead samples 100 answers per game. To compare
like with like, both use the same completion prompt, and a "sample" is one generated token at
temperature 1 (an illegal token is a failed trial, as a parse failure would be). Prints calls,
wall time, and how far the sampled estimate of each game's exploitability is from the exact one.

Run: .venv/bin/python benchmarks/bench_logprob_vs_sample.py [--games 5 --samples 100]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

from stratbench.models.base import GenerateRequest, ScoreRequest
from stratbench.models.llama import load_embedded
from stratbench.solvers import solve_zero_sum
from stratbench.suites.nashgap.games import generate_games
from stratbench.suites.nashgap.metrics import zero_sum_metrics
from stratbench.suites.nashgap.prompts import nashgap_prompt


async def main_async(n_games: int, n_samples: int) -> None:
    model = load_embedded()
    await model.score([ScoreRequest("warm-up", ("0",))])
    games = generate_games(7, n_games)
    labels = ("0", "1", "2")
    exact, sampled, fails = [], [], 0
    t0 = time.perf_counter()
    policies = []
    for g in games:
        (r,) = await model.score([ScoreRequest(nashgap_prompt(g, "pure", style="completion"), labels)])
        p = np.exp(np.array(r.logprobs))
        policies.append(p / p.sum())
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    counts = []
    for gi, g in enumerate(games):
        prompt = nashgap_prompt(g, "pure", style="completion")
        reqs = [GenerateRequest(prompt, max_tokens=1, temperature=1.0, seed=gi, sample_index=k)
                for k in range(n_samples)]
        c = np.zeros(3)
        for res in await model.generate(reqs):
            t = (res.text or "").strip()
            if t in labels:
                c[labels.index(t)] += 1
            else:
                fails += 1
        counts.append(c)
    t_sample = time.perf_counter() - t0
    for g, p, c in zip(games, policies, counts):
        sol = solve_zero_sum(g.payoff_row)
        exact.append(zero_sum_metrics(g.payoff_row, p, sol.col_strategy, sol.value).exploitability)
        q = c / c.sum() if c.sum() else np.ones(3) / 3
        sampled.append(zero_sum_metrics(g.payoff_row, q, sol.col_strategy, sol.value).exploitability)
    err = np.array(sampled) - np.array(exact)
    await model.aclose()
    print(f"games: {n_games}; samples per game: {n_samples}")
    print(f"{'':10}{'calls':>8}{'seconds':>10}{'calls/game':>12}")
    print(f"{'logprob':10}{n_games:>8}{t_exact:>10.2f}{1:>12}")
    print(f"{'sample':10}{n_games * n_samples:>8}{t_sample:>10.2f}{n_samples:>12}")
    print(f"ratio: {n_samples:.0f}x fewer calls, {t_sample / t_exact:.1f}x less time")
    print(f"sampled exploitability error vs exact: RMS {np.sqrt(np.mean(err ** 2)):.4f}, "
          f"max {np.abs(err).max():.4f} (logprob: 0 by construction); illegal samples: {fails}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=5)
    ap.add_argument("--samples", type=int, default=100)
    args = ap.parse_args()
    asyncio.run(main_async(args.games, args.samples))


if __name__ == "__main__":
    main()
