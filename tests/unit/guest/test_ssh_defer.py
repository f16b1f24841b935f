"""`GuestSession.defer`: a preparation in the background (a restored guest's reconnect and
clock) that every later command waits for, against a real OpenSSH sshd on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

from testbed.errors import HarnessError
from testbed.guest.ssh import GuestSession, SessionNotReady
from tests.unit.guest.sshd import needs_sshd

pytestmark = needs_sshd


def _session(server: tuple[int, object, str, Path]) -> GuestSession:
    port, client_key, host_key, _ = server
    return GuestSession("127.0.0.1", port=port, client_key=client_key, host_key=host_key)  # type: ignore[arg-type]


def test_a_command_waits_for_the_preparation_whose_own_commands_pass(
    sshd_server: tuple[int, object, str, Path], tmp_path: Path
) -> None:
    mark = tmp_path / "prepared"

    async def main() -> tuple[str, str]:
        session = _session(sshd_server)

        async def prepare() -> None:
            await asyncio.sleep(0.5)  # the first command is issued meanwhile
            result = await session.exec(f"echo ready > {mark}")  # its own command: no deadlock
            assert result.exit_code == 0

        sibling = _session(sshd_server)
        sibling.wait_for(session.defer(prepare))
        try:
            first, other = await asyncio.wait_for(
                asyncio.gather(session.exec(f"cat {mark}"), sibling.exec(f"cat {mark}")), 30
            )
            return first.stdout, other.stdout
        finally:
            await session.close()
            await sibling.close()

    assert asyncio.run(main()) == ("ready\n", "ready\n")


def test_a_failed_preparation_fails_every_later_command_as_not_ready(
    sshd_server: tuple[int, object, str, Path],
) -> None:
    async def main() -> tuple[object, ...]:
        session = _session(sshd_server)

        async def prepare() -> None:
            raise HarnessError("box: SSH not ready after 120 s")

        sibling = _session(sshd_server)
        sibling.wait_for(session.defer(prepare))
        try:
            return await asyncio.gather(
                session.exec("true"), session.exec("true"), sibling.exec("true"), return_exceptions=True
            )
        finally:
            await session.close()
            await sibling.close()

    outcomes = asyncio.run(main())
    assert all(isinstance(o, SessionNotReady) for o in outcomes), outcomes
    assert "SSH not ready after 120 s" in str(outcomes[0])


def test_close_waits_for_the_preparation_and_abandon_cancels_it(
    sshd_server: tuple[int, object, str, Path], tmp_path: Path
) -> None:
    """A harness that closes and reconnects (the access check after a do-nothing agent) must
    not lose a restored guest's clock set: `close` waits for it."""
    mark = tmp_path / "clock-set"

    async def main() -> bool:
        session = _session(sshd_server)

        async def prepare() -> None:
            await asyncio.sleep(0.5)
            await session.exec(f"touch {mark}")

        session.defer(prepare)
        await session.close()
        done = mark.exists()
        await session.close(abandon=True)
        return done

    assert asyncio.run(main())


def test_abandon_cancels_a_preparation_still_running(sshd_server: tuple[int, object, str, Path]) -> None:
    async def main() -> tuple[bool, bool]:
        session = _session(sshd_server)
        started = asyncio.Event()

        async def prepare() -> None:
            started.set()
            await asyncio.sleep(3600)

        task = session.defer(prepare)
        await started.wait()
        await session.close(abandon=True)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return task.cancelled(), bool(others)

    cancelled, tasks_left = asyncio.run(main())
    assert cancelled and not tasks_left


def test_a_successful_preparation_is_waited_for_once(sshd_server: tuple[int, object, str, Path]) -> None:
    async def main() -> list[int | None]:
        session = _session(sshd_server)
        calls: list[int] = []

        async def prepare() -> None:
            calls.append(1)
            await session.connect()

        session.defer(prepare)
        try:
            codes = [(await session.exec("true")).exit_code for _ in range(3)]
        finally:
            await session.close()
        assert calls == [1]
        return codes

    assert asyncio.run(main()) == [0, 0, 0]
