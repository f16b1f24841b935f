"""One persistent asyncssh connection per node, with reconnect and a channel cap.

Contracts:
- The host key is pinned: the connection is refused unless the guest presents exactly the
  key the harness generated for it (no trust on first use).
- At most `max_channels` commands run at once on a node (OpenSSH's default `MaxSessions 10`
  refuses an 11th channel); further `exec` calls wait for a free channel.
- A dropped connection is re-established once per call before the command starts; a
  connection lost while a command runs raises `GuestConnectionError` (the command's effect
  on the guest is unknown, so it is not retried).
- `exec` never raises for the command's own failure: a non-zero status, a timeout and
  truncated output are all in the `ExecResult`.
- With a `tunnel` (a guest on a remote lab host), the connection is opened through the lab
  host's SSH connection (`testbed.hypervisor.hostlink.HostLink`) instead of directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from datetime import UTC, datetime
from typing import Any, Protocol

import asyncssh

from testbed.errors import HarnessError
from testbed.guest.capture import BoundedCapture
from testbed.guest.dialects import PID_MARK, TIMEOUT_STATUSES, Dialect, dialect_for, kill_group_command
from testbed.guest.result import ExecResult

DEFAULT_MAX_OUTPUT = 64 * 1024
CONNECT_TIMEOUT_S = 10.0


class GuestConnectionError(HarnessError):
    """SSH to a guest failed or dropped."""


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
        max_channels: int = 6,
        tunnel: TunnelSource | None = None,
    ) -> None:
        self.host = host
        self.tunnel = tunnel
        self.port = port
        self.username = username
        self.client_key = client_key
        self.host_key = asyncssh.import_public_key(host_key)
        self.dialect = dialect if isinstance(dialect, Dialect) else dialect_for(dialect)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._channels = asyncio.Semaphore(max_channels)

    async def connect(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """(Re)connect if there is no open connection."""
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
                        keepalive_interval=15,
                        keepalive_count_max=4,
                    ),
                    timeout,
                )
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                raise GuestConnectionError(
                    f"ssh {self.username}@{self.host}:{self.port}: {exc or type(exc).__name__}"
                ) from exc

    async def close(self) -> None:
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
    ) -> ExecResult:
        """Run `command` through the node's shell, bounded in time and output."""
        async with self._channels:
            await self.connect()
            assert self._conn is not None
            wrapped = self.dialect.wrap(command, timeout)
            started_at = datetime.now(UTC)
            t0 = time.monotonic()
            out, err = BoundedCapture(max_output), BoundedCapture(max_output)
            timed_out = False
            try:
                process = await self._open_process(wrapped)
                if stdin is not None:
                    process.stdin.write(stdin)
                process.stdin.write_eof()
                marker = _PidMarker(err) if self.dialect.session_marker else None
                readers = asyncio.gather(_pump(process.stdout, out), _pump(process.stderr, marker or err))
                host_deadline = None if timeout is None else (timeout if marker else timeout + 15)
                try:
                    await asyncio.wait_for(asyncio.shield(readers), host_deadline)
                    completed = await process.wait()
                    exit_code = completed.exit_status
                except TimeoutError:
                    timed_out = True
                    exit_code = None
                    await self._end_command(process, readers, marker.pid if marker else None)
                # sshd counts a session until its close completes: wait for it before the
                # channel slot is given to the next command.
                process.close()
                await process.wait_closed()
            except (OSError, asyncssh.Error) as exc:
                await self.close()
                raise GuestConnectionError(f"ssh {self.host}: connection lost running a command: {exc}") from exc
            duration = time.monotonic() - t0
            if (
                not self.dialect.session_marker
                and timeout is not None
                and exit_code in TIMEOUT_STATUSES
                and duration >= timeout - 0.5
            ):
                timed_out = True
            return ExecResult(
                command=command,
                exit_code=exit_code,
                stdout=out.text(),
                stderr=err.text(),
                started_at=started_at,
                duration_ms=int(duration * 1000),
                timed_out=timed_out,
                stdout_truncated=out.truncated,
                stderr_truncated=err.truncated,
            )

    async def _end_command(
        self, process: asyncssh.SSHClientProcess[bytes], readers: asyncio.Future[Any], pid: int | None
    ) -> None:
        """At the deadline: kill the command's process group (over a second channel), give
        its output a moment to drain, then drop the channel."""
        assert self._conn is not None
        if pid is not None:
            with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
                await asyncio.wait_for(self._conn.run(kill_group_command(pid)), 15)
        try:
            await asyncio.wait_for(asyncio.shield(readers), 5)
        except TimeoutError:
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers

    async def _open_process(self, command: str) -> asyncssh.SSHClientProcess[bytes]:
        """Open a channel; a refusal (sshd's session limit racing a closing channel) is
        retried briefly, since the command has not started."""
        assert self._conn is not None
        for attempt in range(4):
            try:
                return await self._conn.create_process(command, encoding=None)
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


class _PidMarker:
    """Feeds stderr through to `sink`, taking the session shell's pid off its first line."""

    def __init__(self, sink: BoundedCapture) -> None:
        self.sink = sink
        self.pid: int | None = None
        self._head = b""
        self._done = False

    def feed(self, chunk: bytes) -> None:
        if self._done:
            self.sink.feed(chunk)
            return
        self._head += chunk
        if b"\n" not in self._head and len(self._head) < 64:
            return
        self._done = True
        line, sep, rest = self._head.partition(b"\n")
        if line.startswith(PID_MARK) and sep:
            with contextlib.suppress(ValueError):
                self.pid = int(line[len(PID_MARK) :])
            self.sink.feed(rest)
        else:
            self.sink.feed(self._head)


async def _pump(stream: asyncssh.SSHReader[bytes], sink: BoundedCapture | _PidMarker) -> None:
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink.feed(chunk)
