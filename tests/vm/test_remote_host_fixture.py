"""The simulated remote lab host (tests/vm/remote_host.py) is really remote: its libvirtd,
networks and image cache are not the local ones, libvirt reaches it over qemu+ssh with a
verified host key, and asyncssh (with TCP forwarding) works against it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import libvirt
import pytest

from .remote_host import RemoteHost, remote_lab_host

pytestmark = pytest.mark.vm


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return int(worker) % 200 if worker.isdigit() else 0


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteHost]:
    with remote_lab_host(tmp_path_factory.mktemp("remote-host"), index=_worker_index()) as host:
        yield host
    assert not Path(f"/sys/class/net/rh{_worker_index()}").exists()


def test_requires_netns(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TESTBED_IN_NETNS")
    with pytest.raises(RuntimeError, match="netns-run"), remote_lab_host(tmp_path):
        pass


def test_networks_are_remote(remote: RemoteHost) -> None:
    local = libvirt.open("qemu:///system")
    conn = libvirt.open(remote.uri)
    try:
        assert conn.getHostname()
        net = conn.networkCreateXML(
            "<network><name>rhtest</name><bridge name='rhtest0'/>"
            "<ip address='10.99.0.1' netmask='255.255.255.0'/></network>"
        )
        try:
            assert "rhtest" in conn.listNetworks()
            assert "rhtest" not in local.listNetworks()
            assert not Path("/sys/class/net/rhtest0").exists()
        finally:
            net.destroy()
        assert "rhtest" not in conn.listNetworks()
    finally:
        conn.close()
        local.close()


def test_storage_upload_download_stays_remote(remote: RemoteHost) -> None:
    conn = libvirt.open(remote.uri)
    try:
        pool = conn.storagePoolCreateXML(
            f"<pool type='dir'><name>rhpool</name><target><path>{remote.image_cache}/x</path></target></pool>",
            libvirt.VIR_STORAGE_POOL_CREATE_WITH_BUILD,
        )
        try:
            data = os.urandom(256 * 1024)
            vol = pool.createXML(
                f"<volume><name>v.raw</name><capacity unit='bytes'>{len(data)}</capacity>"
                "<target><format type='raw'/></target></volume>",
                0,
            )
            stream = conn.newStream(0)
            vol.upload(stream, 0, len(data), 0)
            sent = 0
            while sent < len(data):
                sent += stream.send(data[sent : sent + 65536])
            stream.finish()

            stream = conn.newStream(0)
            vol.download(stream, 0, len(data), 0)
            chunks: list[bytes] = []
            while chunk := stream.recv(65536):
                assert isinstance(chunk, bytes)
                chunks.append(chunk)
            stream.finish()
            assert b"".join(chunks) == data

            path = vol.path()
            assert path == f"{remote.image_cache}/x/v.raw"
            assert not Path(path).exists()  # on the remote's private tmpfs only
            vol.delete(0)
        finally:
            pool.destroy()
    finally:
        conn.close()


def test_host_key_is_verified(remote: RemoteHost) -> None:
    wrapper = remote.ssh_config.with_name("ssh-wrapper")
    ok = subprocess.run([str(wrapper), remote.address, "id -u"], capture_output=True, text=True, timeout=30)
    assert ok.stdout.strip() == "0", ok.stderr
    other = remote.ssh_config.with_name("other_known_hosts")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other.with_suffix(".key"))], check=True)
    keytype, keydata = other.with_suffix(".key.pub").read_text().split()[:2]
    other.write_text(f"{remote.address} {keytype} {keydata}\n")
    bad = subprocess.run(
        [str(wrapper), "-o", f"UserKnownHostsFile={other}", remote.address, "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in bad.stderr


async def test_asyncssh_and_forwarding(remote: RemoteHost) -> None:
    conn = libvirt.open(remote.uri)
    net = conn.networkCreateXML(
        "<network><name>rhfwd</name><bridge name='rhfwd0'/><ip address='10.99.1.1' netmask='255.255.255.0'/></network>"
    )
    try:
        async with asyncssh.connect(remote.address, config=[str(remote.ssh_config)]) as ssh:
            result = await ssh.run("id -u && nft list tables >/dev/null", check=True, timeout=30)
            assert str(result.stdout).strip() == "0"
            listener = await ssh.create_process(
                "exec python3 -c \"import socket; s = socket.create_server(('10.99.1.1', 7777)); s.settimeout(20); "
                "print('listening', flush=True); c, _ = s.accept(); c.sendall(b'hello-from-remote'); c.close()\""
            )
            assert (await listener.stdout.readline()).strip() == "listening"
            reader, writer = await ssh.open_connection("10.99.1.1", 7777)
            assert await reader.read() == b"hello-from-remote"
            writer.close()
            await listener.wait(check=True, timeout=20)
    finally:
        net.destroy()
        conn.close()
