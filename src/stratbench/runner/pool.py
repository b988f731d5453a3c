"""A bounded pool of async workers. Each result is handed to `on_result` the moment it is ready
(to be written to disk), so nothing waits for the slowest unit and nothing is held in memory only."""

from __future__ import annotations

import asyncio
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
            # a yield point between units: workers that never suspend (scripted players) still let
            # a Ctrl-C (task cancellation) stop the run after the unit in hand
            await asyncio.sleep(0)

    n = max(1, min(concurrency, queue.qsize()))
    tasks = [asyncio.ensure_future(loop()) for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    finally:
        # stopped (Ctrl-C, a failed write): every worker has ended before the caller closes what
        # on_result writes to — none hands in a result afterwards ("write after close")
        while not queue.empty():  # no worker starts another unit
            queue.get_nowait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
