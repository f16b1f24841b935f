"""Capping and staggering guest boots on one host (netlab's batch_size / batch_interval).

`BootGate(capacity, interval_s)` counts guests *booting* on a host: from the creation of
their domain until their lab is provisioned (SSH or console ready). `gate.for_run(nodes)`
gives the `asyncio.Semaphore` a `Lab` takes as `boot_gate`:

- the first node of the run to boot acquires `min(nodes, capacity)` permits at once
  (first come, first served), so two labs can never each hold part of the permits and wait
  for the rest (no deadlock, whatever the lab sizes);
- every boot start, of any run, waits until `interval_s` has passed since the previous one;
- the Lab's own release after creating the domain is a no-op: the permits are held until
  `RunBootGate.finish()` (the executor calls it when provisioning ends, and again, harmlessly,
  when the run ends).

All methods must be called from the event loop that owns the gate.
"""

from __future__ import annotations

import asyncio
import collections


class BootGate:
    """See module docstring."""

    def __init__(self, capacity: int, interval_s: float = 0.0) -> None:
        if capacity < 1:
            raise ValueError("boot capacity must be >= 1")
        self.capacity = capacity
        self.interval_s = interval_s
        self.free = capacity
        self.peak = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()
        self._next_start = float("-inf")

    @property
    def booting(self) -> int:
        """Permits held now (guests booting)."""
        return self.capacity - self.free

    async def acquire(self, count: int) -> int:
        """Take `min(count, capacity)` permits, first come first served; returns how many."""
        count = max(1, min(count, self.capacity))
        if not self._waiters and self.free >= count:
            self._take(count)
            return count
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (count, fut)
        self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(count)  # granted just as we were cancelled: hand it back
            else:
                self._waiters.remove(entry)
                self._wake()
            raise
        return count

    def _take(self, count: int) -> None:
        self.free -= count
        self.peak = max(self.peak, self.booting)

    def release(self, count: int) -> None:
        """Return `count` permits."""
        self.free += count
        assert self.free <= self.capacity, "boot gate released more than it granted"
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._waiters[0][0] <= self.free:
            count, fut = self._waiters.popleft()
            if fut.done():
                continue
            self._take(count)
            fut.set_result(None)

    async def stagger(self) -> None:
        """Wait for this boot start's turn: starts are at least `interval_s` apart."""
        if self.interval_s <= 0:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self._next_start)
        self._next_start = start + self.interval_s
        if start > now:
            await asyncio.sleep(start - now)

    def for_run(self, nodes: int) -> RunBootGate:
        """The semaphore to hand to one run's `Lab` (see module docstring)."""
        return RunBootGate(self, nodes)


class RunBootGate(asyncio.Semaphore):
    """One run's view of its host's `BootGate`; an `asyncio.Semaphore` for `Lab`."""

    def __init__(self, gate: BootGate, nodes: int) -> None:
        super().__init__(1)
        self.gate = gate
        self.nodes = nodes
        self.held = 0
        self.finished = False
        self._lock = asyncio.Lock()

    async def acquire(self) -> bool:  # type: ignore[override]
        async with self._lock:
            if not self.held and not self.finished:
                self.held = await self.gate.acquire(self.nodes)
                if self.finished:  # finished while we waited: do not keep the permits
                    self.gate.release(self.held)
                    self.held = 0
        await self.gate.stagger()
        return True

    def release(self) -> None:
        """No-op: permits are held until `finish()` (the guest is still booting)."""

    def locked(self) -> bool:
        return not self.held and self.gate.free < min(self.nodes, self.gate.capacity)

    def finish(self) -> None:
        """Provisioning is over: give every permit back (idempotent)."""
        self.finished = True
        if self.held:
            held, self.held = self.held, 0
            self.gate.release(held)
