"""Readiness: a node is ready when SSH answers with its pinned host key (Linux images), or
when its serial console shows the image's prompt (network OS images).

Both waits poll once a second until the deadline and ask `alive()` every round, so a guest
that died or was destroyed fails fast with `GuestLost` instead of waiting out the timeout
(lago's users hit SSH retried until timeout on paused VMs).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from testbed.errors import GuestLost, HarnessError
from testbed.guest.ssh import GuestConnectionError, GuestSession

AliveFn = Callable[[], Awaitable[bool]]


async def wait_for_ssh(
    session: GuestSession,
    *,
    timeout: float,
    alive: AliveFn,
    name: str,
    probe: Callable[[], str] = lambda: "true",
) -> float:
    """Connect `session` and run `probe()` (a command made at each attempt, `true` by
    default) until it exits 0; returns the seconds waited."""
    t0 = time.monotonic()
    last_error = "no attempt"
    while True:
        if not await alive():
            raise GuestLost(f"{name}: guest stopped while waiting for SSH (last error: {last_error})")
        try:
            await session.connect(timeout=5)
            command = probe()
            result = await session.exec(command, timeout=30)
            if result.exit_code == 0:
                return time.monotonic() - t0
            last_error = f"`{command.split()[0]}` exited {result.exit_code}"
        except GuestConnectionError as exc:
            last_error = str(exc)
            await session.close()
        if time.monotonic() - t0 > timeout:
            raise HarnessError(f"{name}: SSH not ready after {timeout:.0f} s (last error: {last_error})")
        await asyncio.sleep(1.0)


async def wait_for_serial(console_log: Path, prompt: str, *, timeout: float, alive: AliveFn, name: str) -> float:
    """Wait until the serial console log matches `prompt` (a regex); returns seconds waited."""
    pattern = re.compile(prompt.encode())
    t0 = time.monotonic()
    while True:
        try:
            data = console_log.read_bytes()
        except FileNotFoundError:
            data = b""
        if pattern.search(data):
            return time.monotonic() - t0
        if not await alive():
            raise GuestLost(f"{name}: guest stopped before its console showed /{prompt}/")
        if time.monotonic() - t0 > timeout:
            raise HarnessError(f"{name}: console prompt /{prompt}/ not seen after {timeout:.0f} s; see {console_log}")
        await asyncio.sleep(1.0)
