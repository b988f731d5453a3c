"""CHBench play cost with the embedded model: fresh evaluation vs prefix reuse under memory.

Plays the embedded model against the scripted level-1 player on games 1 and 11 (2×2 and 3×3) for
30 rounds under the `memory` mechanism, once with every prompt evaluated fresh (no response
cache) and once with `--prefix-reuse`, and prints seconds and prompt tokens evaluated. Also one
baseline run with the cache, to show what a re-run costs.
Run: .venv/bin/python benchmarks/bench_chbench_run.py
"""

from __future__ import annotations

import tempfile
import time

from stratbench.suites.chbench.run import ChbenchConfig, run_chbench


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for label, kw in (("memory, fresh evaluation", {"prefix_reuse": False, "no_cache": True}),
                          ("memory, prefix reuse", {"prefix_reuse": True})):
            cfg = ChbenchConfig(models=["embedded"], opponents=["level-k:1"], self_play=False,
                                mechanisms=["memory"], rounds=30, games="1,11", bootstrap=0, restarts=3,
                                output_dir=tmp, **kw)
            t = time.perf_counter()
            folder = run_chbench(cfg).folder
            dt = time.perf_counter() - t
            import json

            tot = json.loads((folder / "run.json").read_text())["totals"]
            print(f"{label:<28} {dt:6.1f} s  {tot['model_tokens_in']:>8} prompt tokens evaluated "
                  f"for {tot['records']} rounds")
        for rep in (1, 2):
            cfg = ChbenchConfig(models=["embedded"], opponents=["level-k:1"], self_play=False,
                                mechanisms=["baseline"], rounds=30, games="1,11", bootstrap=0, restarts=3,
                                output_dir=tmp)
            t = time.perf_counter()
            folder = run_chbench(cfg).folder
            tot = json.loads((folder / "run.json").read_text())["totals"]
            print(f"baseline, cache, run {rep}      {time.perf_counter() - t:6.1f} s  "
                  f"{tot['model_calls']} model calls, {tot['model_cache_hits']} cache hits")


if __name__ == "__main__":
    main()
