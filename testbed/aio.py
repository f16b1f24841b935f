"""Small asyncio helpers shared across packages."""

from __future__ import annotations

import asyncio
import fcntl
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
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


@asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive `flock` on `path` (created if missing) for the block: processes that
    lock the same path take turns. The wait runs in a thread, so the event loop goes on; the
    lock is released when the block ends, however it ends (and by the kernel if the process
    dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        await asyncio.to_thread(fcntl.flock, fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
