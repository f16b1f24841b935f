"""Restores first: a restored guest's SSH reconnect waits while other restores are in flight.

A group of episodes restored at once (a GRPO group of G) is CPU-bound: each restore is
libvirtd preparing a QEMU and QEMU loading the memory image, and the host has few cores.
A guest restored early starts its background reconnect at once (`savedstate.reconnect`):
an SSH key exchange in the guest, under TCG, and on the host, plus the clock command. That
work competes with the restores still loading, so the last episode of the group is ready
later. The reconnect is not needed until the node's first command, which an agent sends only
after it has read its first observation; so it can wait.

`RestoreTraffic` (one per `Hypervisor`, so per event loop) counts the restores in flight.
`RestoredLab` counts each of its restores (`restoring()`), and each background reconnect
first waits until none is in flight (`quiet()`), at most `QUIET_LIMIT_S` seconds, so a
steady stream of restores cannot starve a reconnect. A node's first command waits for its
reconnect as before; only the order of the work changes, not what is done. Foreground
reconnects (a saved state's build, restored in place) do not wait.

`enabled = False` turns the wait off; `benchmarks/group_reset.py` measures a group both
ways in one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

QUIET_LIMIT_S = 10.0
_POLL_S = 0.05


class RestoreTraffic:
    """The restores in flight on one hypervisor connection (see module docstring)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.enabled = True

    @contextlib.contextmanager
    def restoring(self) -> Iterator[None]:
        """Count one restore for the length of the block."""
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def quiet(self, limit_s: float = QUIET_LIMIT_S) -> float:
        """Wait until no restore is in flight (at once when disabled), at most `limit_s`;
        returns the seconds waited."""
        t0 = time.monotonic()
        while self.enabled and self.in_flight and time.monotonic() - t0 < limit_s:
            await asyncio.sleep(_POLL_S)
        return time.monotonic() - t0
