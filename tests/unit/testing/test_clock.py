"""`VirtualClockLoop`: timers fire in order on simulated time; real I/O still works."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta

from testbed.testing.clock import EPOCH, VirtualClockLoop, run_simulated


def test_sleeps_advance_virtual_time_in_timer_order() -> None:
    async def main(loop: VirtualClockLoop) -> tuple[list[tuple[str, float]], float]:
        order: list[tuple[str, float]] = []

        async def after(name: str, seconds: float) -> None:
            await asyncio.sleep(seconds)
            order.append((name, loop.time()))

        await asyncio.gather(after("day", 86400), after("hour", 3600), after("now", 0))
        return order, loop.time()

    order, end = run_simulated(main)
    assert order == [("now", 0.0), ("hour", 3600.0), ("day", 86400.0)]
    assert end == 86400.0


def test_wall_clock_follows_virtual_time() -> None:
    async def main(loop: VirtualClockLoop) -> tuple[object, object]:
        start = loop.wall_clock()
        await asyncio.sleep(90)
        return start, loop.wall_clock()

    start, later = run_simulated(main)
    assert start == EPOCH
    assert later == EPOCH + timedelta(seconds=90)


def test_ready_sockets_are_served_before_time_jumps() -> None:
    left, right = socket.socketpair()
    left.setblocking(False)
    right.setblocking(False)

    async def main(loop: VirtualClockLoop) -> tuple[bytes, float]:
        right.send(b"ping")
        data = await loop.sock_recv(left, 4)
        return data, loop.time()

    try:
        data, at = run_simulated(main)
    finally:
        left.close()
        right.close()
    assert (data, at) == (b"ping", 0.0)


def test_run_simulated_closes_its_loop() -> None:
    loops: list[VirtualClockLoop] = []

    async def main(loop: VirtualClockLoop) -> None:
        loops.append(loop)

    run_simulated(main)
    assert loops[0].is_closed()
