"""The coordinator's own SSH connection to a remote lab host.

libvirt reaches a `qemu+ssh://` host through the `ssh` binary; testbed needs a second,
asyncssh connection to the same host for two things libvirt cannot do:

- reaching the guests: a lab's management network is isolated on the lab host, so guest SSH
  sessions are tunnelled through this connection (`direct-tcpip`, i.e. `ssh -J`), one
  tunnel per guest session, all multiplexed on one connection per host;
- running the host guard's `nft` on that host.

Contract:
- The target is taken from the libvirt URI: its host, port, user and `keyfile` parameter.
  Everything else (identity files, `User`, `Port`, `UserKnownHostsFile`, ...) comes from
  the OpenSSH client configuration: `TESTBED_SSH_CONFIG` (a path) when set, else
  `~/.ssh/config`; keys also from ssh-agent and `~/.ssh/id_*`.
- The host key is always verified against known_hosts (the config's `UserKnownHostsFile`
  or `~/.ssh/known_hosts`); an unknown host is refused, never trusted on first use.
- One connection per `HostLink`, opened on first use and re-opened when it drops; closing
  a tunnelled guest session leaves it open.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import asyncssh

from testbed.config import ssh_config_file
from testbed.errors import HarnessError

CONNECT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class SshTarget:
    host: str
    port: int | None = None
    user: str | None = None
    keyfile: str | None = None

    @classmethod
    def from_uri(cls, uri: str) -> SshTarget | None:
        """The lab host named by a libvirt URI, or None when the URI is local."""
        parts = urlsplit(uri)
        if not parts.hostname:
            return None
        keyfile = parse_qs(parts.query).get("keyfile", [None])[0]
        transport = parts.scheme.partition("+")[2]
        # for tcp/tls transports the URI's port is libvirtd's, not sshd's
        port = parts.port if transport in ("ssh", "libssh", "libssh2") else None
        return cls(parts.hostname, port, parts.username, keyfile)

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def ssh_config_paths() -> list[str]:
    """The client configuration files used for lab hosts (see module docstring)."""
    configured = ssh_config_file()
    if configured is not None:
        return [str(configured)]
    default = Path.home() / ".ssh" / "config"
    return [str(default)] if default.is_file() else []


class HostLink:
    """See module docstring."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection, (re)connecting when needed; HarnessError when the host
        cannot be reached or refuses us."""
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            target = self.target
            options: dict[str, object] = {"config": ssh_config_paths(), "keepalive_interval": 15}
            if target.port:
                options["port"] = target.port
            if target.user:
                options["username"] = target.user
            if target.keyfile:
                options["client_keys"] = [target.keyfile]
            try:
                self._conn = await asyncio.wait_for(asyncssh.connect(target.host, **options), CONNECT_TIMEOUT_S)
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                raise HarnessError(
                    f"cannot open SSH to lab host {target}: {exc or type(exc).__name__}. testbed reaches guests on "
                    "a remote host through SSH to that host: the host must be in known_hosts and accept your "
                    "key (set TESTBED_SSH_CONFIG to use another OpenSSH client config)"
                ) from exc
            return self._conn

    async def run(self, command: str, *, stdin: bytes | None = None, timeout: float = 60) -> tuple[int, str, str]:
        """Run `command` on the lab host; returns (exit status, stdout, stderr)."""
        conn = await self.connection()
        try:
            result = await asyncio.wait_for(conn.run(command, input=stdin, encoding=None), timeout)
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise HarnessError(f"lab host {self.target}: `{command}` failed: {exc or type(exc).__name__}") from exc
        out = result.stdout if isinstance(result.stdout, bytes) else b""
        err = result.stderr if isinstance(result.stderr, bytes) else b""
        return (
            (result.exit_status if result.exit_status is not None else -1),
            out.decode(errors="replace"),
            err.decode(errors="replace"),
        )

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
                await asyncio.wait_for(conn.wait_closed(), 5)
