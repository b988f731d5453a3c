"""Calling a model backend once from a synchronous test: the requests, then the model closed."""

from __future__ import annotations

import asyncio
from typing import Any


def run(model: Any, method: str, requests: Any) -> Any:
    """`await model.<method>(requests)` in a fresh event loop, closing the model afterwards (its
    HTTP client belongs to that loop)."""
    async def go() -> Any:
        try:
            return await getattr(model, method)(requests)
        finally:
            await model.aclose()
    return asyncio.run(go())


def trickled_reply(spec: str, server: Any, timeout_s: float = 1.0, byte_every_s: float = 0.3) -> tuple[Any, float]:
    """(the result, seconds taken) of one generation by ``spec`` from ``server`` writing its body a
    byte every ``byte_every_s``: what a deadline test of a hosted backend asks (no retry)."""
    import time

    from stratbench.models import ModelOptions, open_model
    from stratbench.models.base import GenerateRequest

    model = open_model(spec, ModelOptions(base_url=server.base_url, max_retries=0, timeout_s=timeout_s), no_cache=True)
    server.trickle_s = byte_every_s
    start = time.monotonic()
    (result,) = run(model, "generate", [GenerateRequest("Q", max_tokens=20, chat=True)])
    return result, time.monotonic() - start
