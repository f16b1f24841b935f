"""Reaching guests of a remote lab host: the SSH target from a libvirt URI, and a guest
session tunnelled through the lab host's SSH, against two real asyncssh servers on loopback
(a "lab host" that only forwards, and a "guest" that runs commands in a local shell)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncssh
import pytest

from testbed.errors import InputError
from testbed.guest.ssh import GuestConnectionError, GuestSession, generate_key, public_key_line
from testbed.hypervisor.hostlink import HostLink, SshTarget, ssh_config_paths


def test_target_from_uri() -> None:
    assert SshTarget.from_uri("qemu:///system") is None
    assert SshTarget.from_uri("qemu+ssh://root@lab2:2222/system?keyfile=/k/id&no_tty=1") == SshTarget(
        "lab2", 2222, "root", "/k/id"
    )
    assert SshTarget.from_uri("qemu+ssh://lab2/system") == SshTarget("lab2")
    # for tcp/tls the URI's port is libvirtd's, so sshd's comes from the ssh config
    assert SshTarget.from_uri("qemu+tcp://lab3:16509/system") == SshTarget("lab3")
    assert str(SshTarget("lab2", 2222, "root")) == "root@lab2:2222"


def test_ssh_config_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TESTBED_SSH_CONFIG", str(tmp_path / "missing"))
    with pytest.raises(InputError, match=r"TESTBED_SSH_CONFIG: .*no such file"):
        ssh_config_paths()
    config = tmp_path / "config"
    config.write_text("Host *\n  BatchMode yes\n")
    monkeypatch.setenv("TESTBED_SSH_CONFIG", str(config))
    assert ssh_config_paths() == [str(config)]


class _LabHostServer(asyncssh.SSHServer):
    """Allows direct-tcpip to anywhere (like sshd's default) and records where to."""

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> bool:
        self.forwarded.append((dest_host, dest_port))
        return True

    forwarded: list[tuple[str, int]] = []


async def _guest_shell(process: asyncssh.SSHServerProcess[bytes]) -> None:
    stdin = await process.stdin.read()
    proc = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        process.command or "",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    process.stdout.write(out)
    process.stderr.write(err)
    process.exit(proc.returncode or 0)


class Servers:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.client_key = generate_key()
        self.lab_key = generate_key()
        self.guest_key = generate_key()
        self.servers: list[asyncssh.SSHAcceptor] = []

    async def start(self) -> tuple[int, int]:
        authorized = asyncssh.import_authorized_keys(public_key_line(self.client_key))
        lab = await asyncssh.listen(
            "127.0.0.1",
            0,
            server_host_keys=[self.lab_key],
            authorized_client_keys=authorized,
            server_factory=_LabHostServer,
            process_factory=_guest_shell,
            encoding=None,
        )
        guest = await asyncssh.listen(
            "127.0.0.1",
            0,
            server_host_keys=[self.guest_key],
            authorized_client_keys=authorized,
            process_factory=_guest_shell,
            encoding=None,
        )
        self.servers = [lab, guest]
        return lab.sockets[0].getsockname()[1], guest.sockets[0].getsockname()[1]

    def config(self, lab_port: int, *, known: bool = True) -> Path:
        key = self.tmp / "id_ed25519"
        key.write_bytes(self.client_key.export_private_key("openssh"))
        key.chmod(0o600)
        known_hosts = self.tmp / "known_hosts"
        line = public_key_line(self.lab_key) if known else public_key_line(generate_key())
        known_hosts.write_text(f"[127.0.0.1]:{lab_port} {line}\n")
        config = self.tmp / "ssh_config"
        config.write_text(
            f"Host 127.0.0.1\n  User tester\n  IdentityFile {key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known_hosts}\n  StrictHostKeyChecking yes\n"
        )
        return config

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()


def test_guest_session_is_tunnelled_through_the_lab_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        s = Servers(tmp_path)
        lab_port, guest_port = await s.start()
        monkeypatch.setenv("TESTBED_SSH_CONFIG", str(s.config(lab_port)))
        link = HostLink(SshTarget.from_uri(f"qemu+ssh://127.0.0.1:{lab_port}/system") or SshTarget("x"))
        session = GuestSession(
            "127.0.0.1",
            port=guest_port,
            client_key=s.client_key,
            host_key=public_key_line(s.guest_key),
            tunnel=link,
        )
        try:
            result = await session.exec("echo through; echo oops >&2; exit 3", stdin=b"")
            assert (result.stdout, result.stderr, result.exit_code) == ("through\n", "oops\n", 3)
            assert _LabHostServer.forwarded[-1] == ("127.0.0.1", guest_port)
            assert await link.run("cat; exit 4", stdin=b"ruleset") == (4, "ruleset", "")  # host guard's path
            # a dropped guest connection reconnects through the same (still open) link
            await session.close()
            assert (await session.exec("echo again")).stdout == "again\n"
            assert len([f for f in _LabHostServer.forwarded if f[1] == guest_port]) >= 2
        finally:
            await session.close()
            await link.close()
            await s.close()

    asyncio.run(go())


def test_unknown_lab_host_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        s = Servers(tmp_path)
        lab_port, guest_port = await s.start()
        monkeypatch.setenv("TESTBED_SSH_CONFIG", str(s.config(lab_port, known=False)))
        link = HostLink(SshTarget("127.0.0.1", lab_port))
        session = GuestSession(
            "127.0.0.1",
            port=guest_port,
            client_key=s.client_key,
            host_key=public_key_line(s.guest_key),
            tunnel=link,
        )
        try:
            with pytest.raises(GuestConnectionError, match="known_hosts"):
                await session.exec("echo never")
        finally:
            await link.close()
            await s.close()

    asyncio.run(go())
