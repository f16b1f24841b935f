"""The simulated remote lab host (tests/vm/remote_host.py) is really remote: its libvirtd,
networks and image cache are not the local ones, libvirt reaches it over qemu+ssh with a
verified host key, and asyncssh (with TCP forwarding) works against it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import suppress
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


def test_testbed_volume_pool_on_the_remote(remote: RemoteHost, tmp_path: Path) -> None:
    """testbed's `LibvirtVolumePool` against the remote libvirtd: a copy of odd length is
    verified and never sent twice (its size is the file's length, not its block count), an
    overlay backs onto it without copying, and lab files are listed and deleted by prefix."""
    import hashlib

    from testbed.hypervisor.volumes import LibvirtVolumePool, sync_file

    conn = libvirt.open(remote.uri)
    pool = LibvirtVolumePool(conn, f"{remote.image_cache}/odd", "rhodd")
    try:
        base = tmp_path / "base.qcow2"
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(base), "1G"], check=True)
        with base.open("ab") as fh:  # an odd length, as kernels and initrds have
            fh.write(b"\0" * 1001)
        want = hashlib.sha256(base.read_bytes()).hexdigest()
        info, uploaded = sync_file(pool, base, "base.qcow2", want)
        assert uploaded and info.size == base.stat().st_size
        lookup = pool.lookup("base.qcow2")
        assert lookup is not None and lookup.size == base.stat().st_size
        assert sync_file(pool, base, "base.qcow2", want, verified=True)[1] is False
        assert sync_file(pool, base, "base.qcow2", want)[1] is False  # read back and compared, not re-sent
        overlay = pool.create_overlay("ab12-n1.qcow2", info.path, 1 << 30)
        seed = pool.put("ab12-n1.seed.tar", b"seed")
        assert overlay.endswith("/odd/ab12-n1.qcow2") and seed.endswith("/odd/ab12-n1.seed.tar")
        vol_xml = conn.storageVolLookupByPath(overlay).XMLDesc(0)
        assert f"<path>{info.path}</path>" in vol_xml and "qcow2" in vol_xml
        assert pool.names("ab12-") == ["ab12-n1.qcow2", "ab12-n1.seed.tar"]
        for name in pool.names():
            pool.delete(name)
        assert pool.names() == []
    finally:
        with suppress(libvirt.libvirtError):
            conn.storagePoolLookupByName("rhodd").destroy()
        conn.close()
