"""`testbed.hypervisor.restorefirst`: background reconnects of restored guests wait while
other restores are in flight (bounded), and not at all when disabled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from testbed.guest.result import ExecResult
from testbed.hypervisor.restorefirst import RestoreTraffic
from testbed.hypervisor.savedstate import reconnect


def test_quiet_waits_for_the_restores_in_flight() -> None:
    async def main() -> tuple[float, float]:
        traffic = RestoreTraffic()

        async def restore() -> None:
            with traffic.restoring():
                await asyncio.sleep(0.3)

        running = asyncio.create_task(restore())
        await asyncio.sleep(0)
        waited = await traffic.quiet(limit_s=5)
        await running
        return waited, await traffic.quiet(limit_s=5)

    waited, idle = asyncio.run(main())
    assert 0.2 <= waited < 2, waited
    assert idle < 0.05, idle


def test_quiet_is_bounded_and_off_when_disabled() -> None:
    async def main() -> tuple[float, float]:
        traffic = RestoreTraffic()
        with traffic.restoring():
            bounded = await traffic.quiet(limit_s=0.2)
            traffic.enabled = False
            off = await traffic.quiet(limit_s=5)
        return bounded, off

    bounded, off = asyncio.run(main())
    assert 0.15 <= bounded < 1, bounded
    assert off < 0.05, off


class OrderedSession:
    """Records connects and commands into a shared log; `defer` runs the preparation as a task."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def defer(self, prepare: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        return asyncio.ensure_future(prepare())

    async def connect(self, timeout: float = 10) -> None:
        self.log.append("connect")

    async def exec(self, command: str, **_: Any) -> ExecResult:
        self.log.append("clock" if command.startswith("date -u -s") else command)
        return ExecResult(command, 0, "", "", datetime.now(UTC), 1)


def test_a_background_reconnect_starts_only_after_the_restores_in_flight() -> None:
    async def main() -> list[str]:
        log: list[str] = []
        traffic = RestoreTraffic()

        async def alive() -> bool:
            return True

        node = SimpleNamespace(
            name="web",
            image=SimpleNamespace(readiness=SimpleNamespace(method="ssh")),
            session=OrderedSession(log),
            is_running=alive,
            agent_session=None,
        )

        async def other_restore() -> None:
            with traffic.restoring():
                await asyncio.sleep(0.2)
                log.append("other restore done")

        other = asyncio.create_task(other_restore())
        await asyncio.sleep(0)
        tasks = await reconnect({"web": node}, background=True, first=traffic.quiet)  # type: ignore[dict-item]
        log.append("ready")
        await asyncio.gather(other, *tasks)
        return log

    assert asyncio.run(main()) == ["ready", "other restore done", "connect", "clock"]
