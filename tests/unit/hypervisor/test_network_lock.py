"""The host-wide network lock (`testbed.hypervisor.labnetworks.network_lock`): many labs
starting at once each take it in turn, and waiting never occupies a worker thread the
holder needs for its own libvirt calls (a group of 8 restored episodes deadlocked so)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from pathlib import Path

from testbed.hypervisor.labnetworks import network_lock


def test_waiters_take_turns_without_starving_the_holder_of_threads(tmp_path: Path) -> None:
    lock_path = tmp_path / "networks.lock"
    inside: list[int] = []
    order: list[int] = []

    async def lab(n: int) -> None:
        async with network_lock(lock_path):
            inside.append(n)
            assert len(inside) == 1  # one holder at a time
            await asyncio.to_thread(time.sleep, 0.01)  # the holder's libvirt call needs a worker
            order.append(n)
            inside.remove(n)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=2))
        await asyncio.wait_for(asyncio.gather(*(lab(n) for n in range(12))), 20)

    asyncio.run(main())
    assert sorted(order) == list(range(12))
