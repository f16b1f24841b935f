"""`GuestSession.exec` against a real OpenSSH sshd on loopback (the same server guests run):
background children do not hold a command, time and silence limits end what they should,
output stays bounded."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from testbed.guest.ssh import GuestConnectionError, GuestSession
from tests.unit.guest.sshd import needs_sshd

pytestmark = needs_sshd


@pytest.fixture
def sshd(sshd_server: tuple[int, object, str, Path]) -> tuple[GuestSession, Path]:
    """A fresh session (its locks belong to the test's event loop) to the module's sshd."""
    port, client_key, host_key, work = sshd_server
    session = GuestSession("127.0.0.1", port=port, client_key=client_key, host_key=host_key, dialect="debian")  # type: ignore[arg-type]
    return session, work


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_background_child_holding_output_returns_at_once_and_lives_on(sshd: tuple[GuestSession, Path]) -> None:
    session, work = sshd
    marker = work / "served"

    async def go() -> None:
        await session.connect()
        t0 = time.monotonic()
        server = await session.exec(
            f"cd {work} && nohup python3 -m http.server 0 --bind 127.0.0.1 & echo started", timeout=60
        )
        took = time.monotonic() - t0
        assert server.exit_code == 0 and not server.timed_out and "started" in server.stdout
        assert took < 20, took  # returned when the shell exited, not at the 60 s limit
        [pid] = [p["pid"] for p in server.background if "python3" in p["args"].split()[0]]
        sleeper = await session.exec(f"sleep 300 & touch {marker}", timeout=20)
        assert sleeper.exit_code == 0 and marker.exists()
        await asyncio.sleep(1.0)
        assert _alive(pid)  # the daemon the agent meant to leave running is still there
        for p in (pid, *(b["pid"] for b in sleeper.background)):
            os.kill(p, 15)
        await session.close()

    asyncio.run(go())


def test_timeout_kills_the_whole_command_and_nothing_is_left(sshd: tuple[GuestSession, Path]) -> None:
    session, _ = sshd
    tag = f"tb-timeout-{os.getpid()}"

    async def go() -> None:
        t0 = time.monotonic()
        result = await session.exec(f"sh -c 'sleep 30; echo {tag}'", timeout=3)
        assert result.timed_out and result.exit_code is None
        assert time.monotonic() - t0 < 12
        await session.close()

    asyncio.run(go())
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"sleep 30; echo {tag}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_no_output_timeout_is_separate_from_the_time_limit(sshd: tuple[GuestSession, Path]) -> None:
    session, _ = sshd

    async def go() -> None:
        chatty = await session.exec("for i in 1 2 3 4; do echo $i; sleep 0.5; done", timeout=30, idle_timeout=2)
        assert chatty.exit_code == 0 and chatty.stdout.split() == ["1", "2", "3", "4"]
        silent = await session.exec("echo start; sleep 90", timeout=120, idle_timeout=1.5)
        assert silent.timed_out and silent.idle_timed_out and silent.stdout == "start\n"
        assert silent.duration_ms < 60_000  # ended long before the command or its time limit would
        await session.close()

    asyncio.run(go())


def test_exit_status_stdin_and_bounded_output(sshd: tuple[GuestSession, Path]) -> None:
    session, _ = sshd

    async def go() -> None:
        status = await session.exec("exit 7", timeout=10)
        assert status.exit_code == 7 and not status.background
        echoed = await session.exec("cat", timeout=10, stdin=b"from stdin\n")
        assert echoed.stdout == "from stdin\n"
        big = await session.exec("head -c 200000 /dev/zero | tr '\\0' x", timeout=10, max_output=1000)
        assert big.stdout_truncated and len(big.stdout) < 1200
        err = await session.exec("echo oops >&2; exit 1", timeout=10)
        assert err.stderr == "oops\n" and err.exit_code == 1
        await session.close()

    asyncio.run(go())


def test_many_commands_and_more_at_once_than_sshd_sessions_never_exhaust_them(sshd: tuple[GuestSession, Path]) -> None:
    """sshd (MaxSessions 10) refuses an 11th session: neither a long series of commands (each
    settled, some leaving background children) nor more concurrent commands than that may
    leave sessions open or open too many."""
    session, _work = sshd

    async def go() -> None:
        await session.connect()
        for i in range(25):
            done = await session.exec(f"echo {i}" if i % 5 else f"sleep 30 >/dev/null 2>&1 & echo {i}", timeout=20)
            assert (done.exit_code, done.stdout) == (0, f"{i}\n"), done
        many = await asyncio.gather(*(session.exec(f"sleep 0.5; echo {i}", timeout=30) for i in range(14)))
        assert [r.stdout for r in many] == [f"{i}\n" for i in range(14)]
        await session.close()

    asyncio.run(go())


def test_a_session_bound_to_a_device_connects_through_it_only(sshd_server: tuple[int, object, str, Path]) -> None:
    """`bind_device` (a restored lab's management bridge): the TCP connection is bound to
    that device; bound to a device with no route to the guest, it fails as a connection
    error (never through another interface)."""
    port, client_key, host_key, _ = sshd_server

    async def run(device: str) -> str:
        session = GuestSession("127.0.0.1", port=port, client_key=client_key, host_key=host_key,  # type: ignore[arg-type]
                               dialect="debian", bind_device=device)  # fmt: skip
        try:
            return (await session.exec("echo bound", timeout=30)).stdout.strip()
        finally:
            await session.close()

    assert asyncio.run(run("lo")) == "bound"
    with pytest.raises(GuestConnectionError):
        asyncio.run(run("tbnosuchdev0"))
