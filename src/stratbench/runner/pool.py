"""A bounded pool of async workers. Each result is handed to `on_result` the moment it is ready
(to be written to disk), so nothing waits for the slowest unit and nothing is held in memory only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Awaitable, Callable, Iterable, TypeVar

U = TypeVar("U")
R = TypeVar("R")


async def run_pool(
    units: Iterable[U],
    worker: Callable[[U], Awaitable[R]],
    concurrency: int,
    on_result: Callable[[U, R], None],
) -> None:
    queue: asyncio.Queue[U] = asyncio.Queue()
    for u in units:
        queue.put_nowait(u)

    async def loop() -> None:
        while True:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await worker(unit)
            on_result(unit, result)

    n = max(1, min(concurrency, queue.qsize()))
    await asyncio.gather(*(loop() for _ in range(n)))


async def stream_pool(
    units: Iterable[U],
    worker: Callable[[U], Awaitable[dict]],
    concurrency: int,
    path: str | Path,
    advance: Callable[[], None] | None = None,
) -> None:
    """`run_pool` whose results are appended to a JSONL file the moment each one is ready."""
    from stratbench.runner.jsonl import JsonlWriter

    with JsonlWriter(path) as writer:
        def on_result(_: U, rec: dict) -> None:
            writer.write(rec)
            if advance is not None:
                advance()

        await run_pool(units, worker, concurrency, on_result)
