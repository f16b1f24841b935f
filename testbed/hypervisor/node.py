"""One running guest of a lab (`LabNode`) and how commands reach it.

A node has the harness's login (`session`: root's shell, for setup, probes and checks) and,
on images whose agent logs in differently (a router's `admin` whose shell is vtysh), the
agent's login beside it (`agent_session`). Which one carries a command is chosen by the
command's source: `node.as_source(Source.AGENT)` is the node as the agent reaches it (the
same node with the agent's session; `self` when the image has no login of its own for
the agent). The agent's session ends its timed-out CLI commands through the harness's
session (`reaper`, `testbed.guest.dialects.kill_by_env_command`).

`access` is how `exec` reaches the guest: `ssh` (normally), `oob` (the guest agent, after
the agent cut SSH: `testbed.runner.lockout`), `console` (a device whose SSH cannot be
enabled: its serial console, `testbed.guest.consolexec`), or `none` (nothing answers;
`exec` raises `GuestUnreachable`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from testbed.errors import GuestLost, HarnessError
from testbed.guest.consolexec import ConsoleChannel
from testbed.guest.dialects import kill_by_env_command
from testbed.guest.result import ExecResult
from testbed.guest.ssh import GuestSession, TunnelSource
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.model.images import ImageDef
from testbed.model.vocab import Source


class GuestUnreachable(HarnessError):
    """The node has no working channel left (the agent cut SSH and the guest agent is gone)."""


STOPPED_STATES = frozenset({"shutoff", "crashed", "missing"})
"""Domain states (`Hypervisor.domain_state`) of a guest that is no longer up."""


@dataclass
class LabNode:
    """One running guest of a lab; `exec` is Harbor's environment interface (see module
    docstring for the logins and `access`)."""

    name: str
    image: ImageDef
    domain: str
    mgmt_ip: str
    data_ips: dict[str, str]
    console_log: Path
    session: GuestSession
    hypervisor: Hypervisor | None = None
    oob: GuestAgentChannel | None = None
    access: str = "ssh"
    agent_session: GuestSession | None = None
    console: ConsoleChannel | None = None

    def as_source(self, source: Source | str) -> LabNode:
        """The node as a command of `source` reaches it (see module docstring)."""
        if source != Source.AGENT or self.agent_session is None or self.access != "ssh":
            return self
        return dataclasses.replace(self, session=self.agent_session, agent_session=None)

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = 64 * 1024,
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        """Run `command` on the guest. While it runs, the domain is watched: a guest that
        stops (destroyed, crashed, powered off) raises `GuestLost` within seconds instead of
        waiting for SSH keepalives to notice. `idle_timeout` ends it after that long
        without output (SSH and console)."""
        if self.access == "oob" and self.oob is not None:
            return await self.oob.exec(command, timeout=timeout, max_output=max_output, stdin=stdin)
        if self.access == "console" and self.console is not None:
            channel = self.console.exec(
                command, timeout=timeout, max_output=max_output, stdin=stdin, idle_timeout=idle_timeout
            )
            return await self._watched(asyncio.ensure_future(channel))
        if self.access != "ssh":
            raise GuestUnreachable(f"{self.name}: unreachable (neither SSH nor the guest agent answers)")
        work = asyncio.ensure_future(
            self.session.exec(command, timeout=timeout, max_output=max_output, stdin=stdin, idle_timeout=idle_timeout)
        )
        return await self._watched(work)

    async def _watched(self, work: asyncio.Future[ExecResult]) -> ExecResult:
        if self.hypervisor is None:
            return await work
        watch = asyncio.ensure_future(self._watch_domain())
        racing: set[asyncio.Future[Any]] = {work, watch}
        try:
            done, _ = await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
        if work in done:
            return work.result()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, HarnessError):
            await work
        await self.session.close()
        fault = watch.exception()
        if fault is not None and not isinstance(fault, GuestLost):
            raise fault  # libvirt itself failed (not the guest): the harness's error as it is
        raise GuestLost(f"{self.name}: guest {self.domain} stopped while running a command") from fault

    async def _watch_domain(self, interval: float = 2.0) -> None:
        """Returns (by raising `GuestLost`) only when the domain is no longer running."""
        while True:
            await asyncio.sleep(interval)
            if not await self.is_running():
                raise GuestLost(f"{self.name}: domain {self.domain} is not running")

    async def upload(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        if self.access != "console":
            await self.session.upload(data, path, mode=mode)
            return
        quoted = shlex.quote(path)
        done = await self.exec(f"umask 077; cat > {quoted} && chmod {mode:o} {quoted}", stdin=data, timeout=300)
        if done.exit_code != 0:
            raise HarnessError(f"upload to {self.name}:{path} failed: {done.stderr.strip()}")

    async def download(self, path: str) -> bytes:
        if self.access != "console":
            return await self.session.download(path)
        done = await self.exec(f"base64 {shlex.quote(path)}", timeout=300, max_output=64 * 1024 * 1024)
        if done.exit_code != 0:
            raise HarnessError(f"download of {self.name}:{path} failed: {done.stderr.strip()}")
        return base64.b64decode("".join(done.stdout.split()))

    async def is_running(self) -> bool:
        """Whether the domain is still up: not shut off, crashed or gone. Paused and
        "being shut down" count as up — libvirt passes through both for a moment while it
        resets a rebooting guest — and a stopped reading is confirmed a second later."""
        if self.hypervisor is None:
            return True
        for attempt in (1, 2):
            if await self.hypervisor.domain_state(self.domain) not in STOPPED_STATES:
                return True
            if attempt == 1:
                await asyncio.sleep(1)
        return False

    async def close(self) -> None:
        """Close every channel of the node (SSH logins, the console)."""
        sessions = [self.session] + ([self.agent_session] if self.agent_session is not None else [])
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        if self.console is not None:
            with contextlib.suppress(HarnessError, OSError):
                await self.console.session.close()


def agent_session(
    image: ImageDef,
    host: str,
    *,
    client_key: asyncssh.SSHKey,
    host_key: str,
    harness: GuestSession,
    tunnel: TunnelSource | None = None,
    bind_device: str | None = None,
) -> GuestSession | None:
    """The agent's own login on a node of `image` (None when it has none), its timed-out
    CLI commands ended through `harness`."""
    login = image.login.agent
    if login is None:
        return None

    async def reap(token: str) -> ExecResult:
        return await harness.exec(kill_by_env_command(token), timeout=15)

    return GuestSession(
        host,
        client_key=client_key,
        host_key=host_key,
        username=login.user,
        dialect=login.dialect,
        tunnel=tunnel,
        reaper=reap,
        bind_device=bind_device,
    )
