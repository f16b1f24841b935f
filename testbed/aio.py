"""Small asyncio helpers shared across packages."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def run_to_completion(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end even if the caller is cancelled meanwhile (teardown must not be
    cut short); the caller's cancellation is re-raised once it is done, its errors as is."""
    task = asyncio.ensure_future(coro)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    result = task.result()
    if cancelled:
        raise asyncio.CancelledError
    return result
