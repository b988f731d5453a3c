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
