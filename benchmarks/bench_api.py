"""API backend throughput: OpenAICompatibleModel.generate against the fake OpenAI server
(tests/helpers/fake_openai_server.py) with a fixed injected latency per request.

Run: .venv/bin/python benchmarks/bench_api.py [--requests 320] [--concurrency 32] [--latency-ms 200]
                                             [--repeats 3] [--in-process] [--fault-rate 0]

With latency L and concurrency C the ideal throughput is C / L requests/s; the benchmark prints,
per round, the measured throughput and its ratio to that ideal (goal: >= 0.8 on warm rounds).
The first round is "cold" (it opens the connections). By default the server runs in its own
process, as a real server would, so its CPU does not share the client's interpreter lock;
--in-process runs it in a thread of this process instead.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402

from stratbench.models.base import GenerateRequest  # noqa: E402
from stratbench.models.openai_api import OpenAICompatibleModel  # noqa: E402


def start_server(args: argparse.Namespace):
    """(base_url, stop) for a fake server with the requested latency."""
    if args.in_process:
        server = FakeOpenAIServer(latency_ms=args.latency_ms, canned_text="Action: 2",
                                  fault_rate=args.fault_rate, fault_kinds=("500", "503", "drop"), fault_seed=0)
        server.start()
        return server.base_url, server.stop
    cmd = [sys.executable, str(ROOT / "tests" / "helpers" / "fake_openai_server.py"), "--latency-ms", str(args.latency_ms),
           "--canned-text", "Action: 2", "--fault-rate", str(args.fault_rate)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise SystemExit(f"fake server did not start: {url!r}")

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=10)

    return url, stop


async def bench(args: argparse.Namespace, base_url: str) -> list[dict]:
    model = OpenAICompatibleModel("openai-compatible", "fake-model", base_url=base_url,
                                  max_concurrency=args.concurrency, timeout_s=30,
                                  retry_base_delay_s=0.05)
    ideal = args.concurrency / (args.latency_ms / 1000.0)
    rounds = []
    try:
        for r in range(args.repeats + 1):
            reqs = [GenerateRequest(f"Round {r}, game {i}. Your action?", max_tokens=16) for i in range(args.requests)]
            errors_before = model.usage.errors
            t0 = time.perf_counter()
            results = await model.generate(reqs)
            dt = time.perf_counter() - t0
            assert len(results) == len(reqs)
            ok = sum(res.ok for res in results)
            assert model.usage.errors - errors_before == len(reqs) - ok
            lat = sorted(res.latency_s for res in results)
            rounds.append({"round": "cold" if r == 0 else f"warm {r}", "seconds": dt, "rps": len(reqs) / dt,
                           "ratio": len(reqs) / dt / ideal, "ok": ok, "errors": len(reqs) - ok,
                           "p50_ms": 1000 * lat[len(lat) // 2], "p99_ms": 1000 * lat[int(0.99 * (len(lat) - 1))]})
    finally:
        await model.aclose()
    return rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=320)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--repeats", type=int, default=3, help="warm rounds after the cold one")
    ap.add_argument("--in-process", action="store_true", help="run the server in a thread of this process")
    ap.add_argument("--fault-rate", type=float, default=0.0, help="fraction of requests given a fault")
    args = ap.parse_args()

    base_url, stop = start_server(args)
    try:
        rounds = asyncio.run(bench(args, base_url))
    finally:
        stop()
    ideal = args.concurrency / (args.latency_ms / 1000.0)
    print(f"{args.requests} generate calls, concurrency {args.concurrency}, latency {args.latency_ms:g} ms, "
          f"server {'in-process' if args.in_process else 'in a separate process'}, "
          f"fault rate {args.fault_rate:g}; ideal {ideal:.1f} req/s")
    print(f"{'round':>8} {'seconds':>8} {'req/s':>8} {'ratio':>6} {'ok':>5} {'err':>4} {'p50 ms':>7} {'p99 ms':>7}")
    for r in rounds:
        print(f"{r['round']:>8} {r['seconds']:8.3f} {r['rps']:8.1f} {r['ratio']:6.3f} {r['ok']:5d} {r['errors']:4d} "
              f"{r['p50_ms']:7.1f} {r['p99_ms']:7.1f}")
    warm = [r["ratio"] for r in rounds[1:]] or [rounds[0]["ratio"]]
    med = statistics.median(warm)
    print(f"median warm ratio to ideal: {med:.3f} (goal >= 0.8: {'met' if med >= 0.8 else 'NOT met'})")


if __name__ == "__main__":
    main()
