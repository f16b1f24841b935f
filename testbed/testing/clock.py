"""A virtual-clock event loop: simulated hours of scheduling in milliseconds.

`VirtualClockLoop` is an event loop whose clock jumps to the next timer whenever no
callback is ready; `run_simulated(coro)` runs a coroutine on one. Blocking work (threads)
must not be mixed with it: use stores with `blocking = False`.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

T = TypeVar("T")
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)
"""What `VirtualClockLoop.wall_clock` reads at virtual time 0."""


class _VirtualSelector:
    """Wraps the loop's selector: never blocks while a timer is pending, advancing the
    virtual clock to it instead."""

    def __init__(self, real: selectors.BaseSelector, loop: VirtualClockLoop) -> None:
        self._real = real
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._real.select(0)
        if events:
            return events
        if timeout is None:
            return self._real.select(None)
        if timeout > 0:
            self._loop.virtual_time += timeout
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """See module docstring; `virtual_time` starts at 0."""

    def __init__(self) -> None:
        super().__init__()
        self.virtual_time = 0.0
        real: Any = self._selector  # type: ignore[has-type]
        self._selector = _VirtualSelector(real, self)

    def time(self) -> float:
        return self.virtual_time

    def wall_clock(self) -> datetime:
        """A UTC datetime that follows the virtual clock (for stores' `clock`)."""
        return EPOCH + timedelta(seconds=self.virtual_time)


def run_simulated(factory: Callable[[VirtualClockLoop], Coroutine[Any, Any, T]]) -> T:
    """Run `factory(loop)` to completion on a fresh `VirtualClockLoop`."""
    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(factory(loop))
    finally:
        loop.close()
