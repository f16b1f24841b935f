"""A real OpenSSH sshd on loopback for the guest tests (the same server guests run)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from testbed.guest.ssh import generate_key, public_key_line

SSHD = "/usr/sbin/sshd"
needs_sshd = pytest.mark.skipif(
    not os.path.exists(SSHD) or os.geteuid() != 0, reason="needs OpenSSH's sshd (setup-host installs it) and root"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_sshd(
    work: Path, client_key: asyncssh.SSHKey | None = None, extra: str = ""
) -> Iterator[tuple[int, asyncssh.SSHKey, str]]:
    """sshd for root on a free loopback port: (port, client key, host key line); `extra`
    is appended to its configuration."""
    work.mkdir(parents=True, exist_ok=True)
    host_key, client_key = generate_key(), client_key or generate_key()
    (work / "host_key").write_bytes(host_key.export_private_key("openssh"))
    (work / "host_key").chmod(0o600)
    (work / "authorized_keys").write_text(public_key_line(client_key) + "\n")
    (work / "authorized_keys").chmod(0o600)
    port = free_port()
    (work / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        f"PasswordAuthentication no\nUsePAM no\nPidFile {work / 'sshd.pid'}\nStrictModes no\n{extra}"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(work / "sshd_config")], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    try:
        yield port, client_key, public_key_line(host_key)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
