"""One persistent asyncssh connection per node, with reconnect and a channel cap.

Contracts:
- The host key is pinned: the connection is refused unless the guest presents exactly the
  key the harness generated for it (no trust on first use).
- At most `max_channels` commands run at once on a node (OpenSSH's default `MaxSessions 10`
  refuses an 11th channel); further `exec` calls wait for a free channel. Beside them the
  connection holds at most `AUX_CHANNELS` short harness channels (listing a command's
  background children, killing a timed-out command's group) and `MAX_LINGERING` channels
  kept open for background children: 5 + 1 + 3 stays under sshd's 10.
- A dropped connection is re-established once per call before the command starts; a
  connection lost while a command runs raises `GuestConnectionError` (the command's effect
  on the guest is unknown, so it is not retried).
- `exec` never raises for the command's own failure: a non-zero status, a timeout and
  truncated output are all in the `ExecResult`.
- With a `tunnel` (a guest on a remote lab host), the connection is opened through the lab
  host's SSH connection (`testbed.hypervisor.hostlink.HostLink`) instead of directly.
- With a `bind_device` (a lab restored from a saved state, whose management subnet other
  labs share), the TCP connection is bound to that bridge (`testbed.hypervisor.mgmtroute`).
- A CLI dialect (a login whose shell is a network CLI, `testbed.guest.dialects`) sends the
  command as it is with an environment token; at the deadline `reaper(token)` (another
  login's channel on the same guest) ends it.
- `defer(ready)` hands the session a task that makes it ready in the background (a restored
  guest's reconnect and clock set, `testbed.hypervisor.savedstate.reconnect`): every later
  `connect` (so every `exec`, `upload`, `download`) waits for it first and raises its
  failure as `SessionNotReady`, except the calls the task itself makes. `close` waits for
  it; `close(abandon=True)` (teardown) cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import shlex
import socket
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Protocol

import asyncssh

from testbed.errors import HarnessError
from testbed.guest.channel import ChannelLost, CommandChannel, parse_members, session_members_command
from testbed.guest.dialects import ENV_MARK, TIMEOUT_STATUSES, Dialect, dialect_for, kill_group_command
from testbed.guest.result import ExecResult

DEFAULT_MAX_OUTPUT = 64 * 1024
CONNECT_TIMEOUT_S = 10.0
MAX_LINGERING = 3
AUX_CHANNELS = 1
"""Harness channels beside the commands' (see the module contract)."""
REAP_TIMEOUT_S = 15.0

Reaper = Callable[[str], Awaitable[object]]
"""Ends the processes whose environment carries a CLI command's token (`ENV_MARK`)."""


class GuestConnectionError(HarnessError):
    """SSH to a guest failed or dropped."""


class SessionNotReady(HarnessError):
    """A deferred preparation (`GuestSession.defer`) failed: no command of the agent ran
    before it, so this is never the agent's doing."""


_PREPARING: ContextVar[bool] = ContextVar("testbed_guest_session_preparing", default=False)
"""True inside a task handed to `GuestSession.defer` (its own calls do not wait for it)."""


def generate_key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


def public_key_line(key: asyncssh.SSHKey, comment: str = "") -> str:
    line = key.export_public_key("openssh").decode().strip()
    return f"{line} {comment}".strip() if comment else line


class TunnelSource(Protocol):
    """Something that hands out an open SSH connection to tunnel through."""

    async def connection(self) -> asyncssh.SSHClientConnection: ...


class GuestSession:
    def __init__(
        self,
        host: str,
        *,
        client_key: asyncssh.SSHKey,
        host_key: str,
        username: str = "root",
        port: int = 22,
        dialect: str | Dialect = "debian",
        max_channels: int = 5,
        tunnel: TunnelSource | None = None,
        reaper: Reaper | None = None,
        bind_device: str | None = None,
    ) -> None:
        self.host = host
        self.bind_device = bind_device
        self.reaper = reaper
        self.tunnel = tunnel
        self.port = port
        self.username = username
        self.client_key = client_key
        self.host_key = asyncssh.import_public_key(host_key)
        self.dialect = dialect if isinstance(dialect, Dialect) else dialect_for(dialect)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._channels = asyncio.Semaphore(max_channels)
        self._aux = asyncio.Semaphore(AUX_CHANNELS)
        self._lingering: list[CommandChannel] = []
        self._pending: asyncio.Task[None] | None = None
        self._owns_pending = False

    def defer(self, ready: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run `ready()` in a task now; every later `connect` waits for it (see the module
        contract). Returns the task (another session may `wait_for` it too)."""

        async def preparing() -> None:
            _PREPARING.set(True)  # this task's own context: its calls pass the gate
            await ready()

        self._pending = task = asyncio.create_task(preparing(), name=f"ready {self.username}@{self.host}")
        self._owns_pending = True
        return task

    def wait_for(self, task: asyncio.Task[None]) -> None:
        """Make every later `connect` wait for `task` (a sibling session's `defer`; its owner
        cancels it)."""
        self._pending, self._owns_pending = task, False

    async def _ready(self) -> None:
        pending = self._pending
        if pending is None or _PREPARING.get():
            return
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.cancelled():
                raise  # our caller was cancelled, not the preparation
            raise SessionNotReady(f"ssh {self.host}: the session's preparation was cancelled") from None
        except HarnessError as exc:
            raise SessionNotReady(f"ssh {self.host}: the session never became ready: {exc}") from exc
        self._pending, self._owns_pending = None, False

    def pin_host_key(self, line: str) -> None:
        """Pin another host key (one read over a trusted channel, e.g. the serial console)."""
        self.host_key = asyncssh.import_public_key(line)

    async def connect(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """(Re)connect if there is no open connection (after a deferred preparation)."""
        await self._ready()
        async with self._connect_lock:
            if self._conn is not None and not self._conn.is_closed():
                return
            via: dict[str, Any] = {}
            if self.tunnel is not None:
                try:
                    via["tunnel"] = await self.tunnel.connection()
                except HarnessError as exc:
                    raise GuestConnectionError(f"ssh {self.host}: {exc}") from exc
            try:
                if self.bind_device is not None:
                    via["sock"] = await asyncio.wait_for(self._bound_socket(), timeout)
                self._conn = await asyncio.wait_for(
                    asyncssh.connect(
                        self.host,
                        self.port,
                        **via,
                        username=self.username,
                        client_keys=[self.client_key],
                        known_hosts=([self.host_key], [], []),
                        agent_path=None,
                        config=None,
                        keepalive_interval=10,
                        keepalive_count_max=3,
                    ),
                    timeout,
                )
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                raise GuestConnectionError(
                    f"ssh {self.username}@{self.host}:{self.port}: {exc or type(exc).__name__}"
                ) from exc

    async def _drop_pending(self) -> None:
        pending, owned = self._pending, self._owns_pending
        self._pending, self._owns_pending = None, False
        if pending is None or not owned:
            return
        if not pending.done():
            pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, HarnessError):
            await pending  # retrieved: a failure nobody waited for is not logged as lost

    async def _bound_socket(self) -> socket.socket:
        """A TCP connection to the guest bound to `bind_device` (`SO_BINDTODEVICE`): the
        route to the guest is the bridge's own (`testbed.hypervisor.mgmtroute`)."""
        assert self.bind_device is not None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, self.bind_device.encode())
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, (self.host, self.port))
        except BaseException:
            sock.close()
            raise
        return sock

    async def close(self, *, abandon: bool = False) -> None:
        """Drop the connection. A deferred preparation still running is waited for first
        (its work, e.g. a restored guest's clock, is not lost; its failure surfaces at the
        next `connect`), or cancelled with `abandon` (tearing the lab down)."""
        if not _PREPARING.get():  # the preparation's own retries close and connect again
            if abandon:
                await self._drop_pending()
            elif self._pending is not None:
                with contextlib.suppress(SessionNotReady):
                    await self._ready()
        self._lingering.clear()  # their channels go with the connection
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
                await asyncio.wait_for(conn.wait_closed(), 5)

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = DEFAULT_MAX_OUTPUT,
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        """Run `command` through the node's shell, bounded in time, silence and output.
        Returns as soon as the command's shell exits; background children that still hold
        its output are left running and listed in `background` (see `testbed.guest.channel`)."""
        async with self._channels:
            await self.connect()
            assert self._conn is not None
            wrapped = self.dialect.wrap(command, timeout)
            started_at = datetime.now(UTC)
            t0 = time.monotonic()
            marker, cli = self.dialect.session_marker, self.dialect.cli
            token = secrets.token_hex(8) if cli else None
            host_deadline = None if timeout is None else (timeout if marker or cli else timeout + 15)
            try:
                chan = await self._open_channel(wrapped, max_output, marker, token)
                assert chan.chan is not None
                if stdin is not None:
                    chan.chan.write(stdin)
                chan.chan.write_eof()
                how = await chan.wait(host_deadline, idle_timeout)
                background: tuple[dict[str, Any], ...] = ()
                if how != "exited":
                    await self._end_command(chan, token)
                else:
                    background = await self._settle(chan)
            except (OSError, asyncssh.Error, ChannelLost) as exc:
                await self.close()
                raise GuestConnectionError(f"ssh {self.host}: connection lost running a command: {exc}") from exc
            duration = time.monotonic() - t0
            exit_code = chan.exit_status if how == "exited" else None
            timed_out = how != "exited"
            if not (marker or cli) and _guest_timeout(exit_code, timeout, duration):
                timed_out, exit_code = True, None
            return ExecResult(
                command=command,
                exit_code=exit_code,
                stdout=chan.out.text(),
                stderr=chan.err.text(),
                started_at=started_at,
                duration_ms=int(duration * 1000),
                timed_out=timed_out,
                stdout_truncated=chan.out.truncated,
                stderr_truncated=chan.err.truncated,
                background=background,
                idle_timed_out=how == "idle",
            )

    async def _end_command(self, chan: CommandChannel, token: str | None) -> None:
        """At the deadline: kill the command's process group (over a second channel) or, for
        a CLI login, have the reaper kill what carries its token; give its output a moment
        to drain, then drop the channel. sshd counts a session until its close completes:
        wait for it before the channel slot goes to the next command."""
        assert self._conn is not None
        if chan.pid is not None:
            with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
                await self._aux_run(kill_group_command(chan.pid))
        elif token is not None and self.reaper is not None:
            with contextlib.suppress(HarnessError, TimeoutError):
                await asyncio.wait_for(self.reaper(token), REAP_TIMEOUT_S)
        await chan.drain(5)
        chan.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(chan.closed(), 5)

    async def _settle(self, chan: CommandChannel) -> tuple[dict[str, Any], ...]:
        """The shell exited. When its background children hold the channel, keep it open
        (drained) so they live on, and list them. The listing starts only then: a listing
        cancelled half-way would leave its own channel open on the guest (sshd's session
        limit). At most `MAX_LINGERING` such channels stay open per connection: the oldest is
        closed beyond."""
        if not await chan.settle():
            chan.close()
            await chan.closed()
            return ()
        self._lingering.append(chan)
        while len(self._lingering) > MAX_LINGERING:
            self._lingering.pop(0).close()
        return await self._members(chan.pid) if chan.pid is not None else ()

    async def _members(self, sid: int) -> tuple[dict[str, Any], ...]:
        """The processes still in session `sid` (the command's shell's, now exited)."""
        try:
            out = await self._aux_run(session_members_command(sid))
        except (OSError, asyncssh.Error, TimeoutError):
            return ()
        return tuple(parse_members(out))

    async def _aux_run(self, command: str, timeout: float = 15) -> str:
        """A short harness command on the auxiliary channel; its stdout. The channel is
        closed on every path (a timeout or a cancellation included), so it never keeps one
        of sshd's sessions."""
        assert self._conn is not None
        async with self._aux:
            process = await self._conn.create_process(command, encoding="utf-8", errors="replace")
            try:
                stdout, _ = await asyncio.wait_for(process.communicate(), timeout)
            finally:
                process.close()
                with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
                    await asyncio.wait_for(process.wait_closed(), 5)
        return stdout if isinstance(stdout, str) else ""

    async def _open_channel(self, command: str, max_output: int, marker: bool, token: str | None) -> CommandChannel:
        """Open a channel (with the CLI token in its environment, when given); a refusal
        (sshd's session limit racing a closing channel) is retried briefly, since the
        command has not started."""
        assert self._conn is not None
        env: dict[str | bytes, str | bytes] = {ENV_MARK: token} if token is not None else {}
        for attempt in range(4):
            try:
                session = CommandChannel(max_output, marker)
                await self._conn.create_session(functools.partial(_same, session), command, env=env, encoding=None)
                return session
            except asyncssh.ChannelOpenError:
                if attempt == 3:
                    raise
                await asyncio.sleep(0.25 * (attempt + 1))
        raise AssertionError("unreachable")

    async def upload(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        """Write `data` to `path` on the guest (through `cat`, so no SFTP server is needed)."""
        quoted = shlex.quote(path)
        result = await self.exec(f"umask 077; cat > {quoted} && chmod {mode:o} {quoted}", stdin=data, timeout=120)
        if result.exit_code != 0:
            raise HarnessError(f"upload to {self.host}:{path} failed: {result.stderr.strip()}")

    async def download(self, path: str, *, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        """Read `path` from the guest (bounded; binary-safe through base64)."""
        import base64

        result = await self.exec(f"base64 -w0 {shlex.quote(path)}", timeout=120, max_output=max_bytes * 4 // 3 + 8)
        if result.exit_code != 0:
            raise HarnessError(f"download of {self.host}:{path} failed: {result.stderr.strip()}")
        if result.stdout_truncated:
            raise HarnessError(f"download of {self.host}:{path}: file larger than {max_bytes} bytes")
        return base64.b64decode(result.stdout)


def _guest_timeout(exit_code: int | None, timeout: float | None, duration: float) -> bool:
    """The guest's `timeout` ended the command (its statuses, at the deadline)."""
    return timeout is not None and exit_code in TIMEOUT_STATUSES and duration >= timeout - 0.5


def _same(session: CommandChannel) -> CommandChannel:
    return session
