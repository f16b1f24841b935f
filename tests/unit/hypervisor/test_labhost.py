"""A lab's files on its host: local files in the lab directory, or volumes on a remote host
(libvirt's test driver stands in for the remote libvirtd's storage API; the real one is
exercised by tests/vm/test_remote_host.py), and base-image copies with kernel and initrd."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.errors import HarnessError
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.labhost import LocalLabFiles, PoolLabFiles, lab_host_for
from testbed.hypervisor.volumes import BaseCopies, LibvirtVolumePool, VolumeInfo, volume_name
from testbed.images.store import ImageManifest, ImageStore, StoredImage


class MemoryPool:
    def __init__(self) -> None:
        self.volumes: dict[str, bytearray] = {}
        self.uploads: list[str] = []

    def lookup(self, name: str) -> VolumeInfo | None:
        data = self.volumes.get(name)
        return None if data is None else VolumeInfo(name, f"/far/{name}", len(data))

    def create(self, name: str, size: int) -> VolumeInfo:
        self.volumes[name] = bytearray()
        return VolumeInfo(name, f"/far/{name}", size)

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None:
        self.uploads.append(name)
        for chunk in chunks:
            self.volumes[name] += chunk

    def download(self, name: str) -> Iterator[bytes]:
        yield bytes(self.volumes[name])

    def delete(self, name: str) -> None:
        self.volumes.pop(name, None)


def _stored(tmp_path: Path) -> StoredImage:
    store = ImageStore(tmp_path / "images")
    staging = store.staging_dir("debian-12", "k" * 16)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(staging / "disk.qcow2"), "3G"], check=True)
    (staging / "vmlinuz").write_bytes(b"kernel" * 100)
    (staging / "initrd.img").write_bytes(b"initrd" * 100)
    disk = (staging / "disk.qcow2").read_bytes()
    store.commit(
        staging,
        ImageManifest("debian-12", "k" * 16, "test", hashlib.sha256(disk).hexdigest(), len(disk),
                      kernel="vmlinuz", initrd="initrd.img"),
    )
    stored = store.get("debian-12")
    assert stored is not None
    return stored


def test_base_copies_include_kernel_and_initrd_and_are_verified_once(tmp_path: Path) -> None:
    stored = _stored(tmp_path)
    pool = MemoryPool()
    copies = BaseCopies(pool)
    paths = asyncio.run(copies.ensure(stored))
    assert paths.disk == f"/far/{volume_name(stored)}"
    assert paths.kernel == "/far/debian-12-kkkkkkkkkkkkkkkk.kernel"
    assert paths.initrd == "/far/debian-12-kkkkkkkkkkkkkkkk.initrd"
    assert bytes(pool.volumes["debian-12-kkkkkkkkkkkkkkkk.kernel"]) == b"kernel" * 100
    asyncio.run(copies.ensure(stored))
    assert len(pool.uploads) == 3  # once each
    # another process finds the kernel copy damaged: it is verified, replaced, not trusted
    pool.volumes["debian-12-kkkkkkkkkkkkkkkk.kernel"][0] ^= 1
    fresh = BaseCopies(pool)
    asyncio.run(fresh.ensure(stored))
    assert fresh.uploads == ["debian-12-kkkkkkkkkkkkkkkk.kernel"]
    assert bytes(pool.volumes["debian-12-kkkkkkkkkkkkkkkk.kernel"]) == b"kernel" * 100


def test_local_files_live_in_the_lab_directory(tmp_path: Path) -> None:
    stored = _stored(tmp_path)
    files = LocalLabFiles()
    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()

    async def go() -> None:
        base = await files.base(stored)
        assert base.disk == str(stored.disk) and base.kernel == str(stored.kernel)
        overlay = await files.overlay(lab_dir, "ab12", "n1", base, stored)
        assert overlay == str(lab_dir / "n1.qcow2")
        assert await files.put(lab_dir, "ab12", "n1.seed.tar", b"seed") == str(lab_dir / "n1.seed.tar")
        assert files.console_log(lab_dir, "ab12", "n1") == str(lab_dir / "n1.console.log")
        assert await files.remove("ab12") == [] and await files.lab_ids() == set()

    asyncio.run(go())
    info = subprocess.run(["qemu-img", "info", str(lab_dir / "n1.qcow2")], capture_output=True, text=True).stdout
    assert str(stored.disk) in info  # a linked clone of the base


@pytest.fixture
def test_hv() -> Iterator[Hypervisor]:
    hv = Hypervisor("test:///default")
    asyncio.run(hv.open())
    yield hv
    asyncio.run(hv.close())


def test_pool_files_are_volumes_named_by_lab(tmp_path: Path, test_hv: Hypervisor) -> None:
    """The test driver's pool `default-pool` plays the remote host's `testbed-labs` pool."""
    stored = _stored(tmp_path)
    labs = LibvirtVolumePool(test_hv.conn, "/default-pool", "default-pool")
    files = PoolLabFiles(test_hv, BaseCopies(MemoryPool()), labs)

    async def go() -> None:
        base = await files.base(stored)
        overlay = await files.overlay(tmp_path, "ab12", "n1", base, stored)
        assert overlay == "/default-pool/ab12-n1.qcow2"
        await files.overlay(tmp_path, "cd34", "n1", base, stored)
        with pytest.raises(HarnessError):  # never overwritten
            await files.overlay(tmp_path, "ab12", "n1", base, stored)
        with pytest.raises(HarnessError):  # the test driver cannot upload: the half-made volume goes
            await files.put(tmp_path, "ab12", "n1.seed.tar", b"seed")
        assert files.console_log(tmp_path, "ab12", "n1") == "/default-pool/ab12-n1.console.log"
        assert await files.lab_ids() == {"ab12", "cd34"}
        assert await files.remove("ab12") == []
        assert await test_hv.call(labs.names) == ["cd34-n1.qcow2"]
        assert await files.remove("cd34") == []

    asyncio.run(go())
    vol = test_hv.conn.storagePoolLookupByName("default-pool")
    assert vol.listVolumes() == []


def test_lab_host_for_local_and_remote_uris(test_hv: Hypervisor, monkeypatch: pytest.MonkeyPatch) -> None:
    local = lab_host_for(test_hv)
    assert not local.remote and local.link is None and isinstance(local.files, LocalLabFiles)
    monkeypatch.setattr(test_hv, "uri", "qemu+ssh://root@lab2/system")
    monkeypatch.setenv("TESTBED_REMOTE_CACHE", "/srv/tb/")
    remote = lab_host_for(test_hv)
    assert remote.remote and remote.cache == "/srv/tb" and remote.link is not None
    assert str(remote.link.target) == "root@lab2"
    assert isinstance(remote.files, PoolLabFiles) and remote.files.labs.path == "/srv/tb/labs"
    assert lab_host_for(test_hv, cache="/var/cache/x").cache == "/var/cache/x"


def test_a_failing_pool_is_a_harness_error(tmp_path: Path) -> None:
    import libvirt

    class BrokenPool(MemoryPool):
        def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None:
            raise libvirt.libvirtError("stream aborted")

    pool = BrokenPool()
    with pytest.raises(HarnessError, match="stream aborted"):
        asyncio.run(BaseCopies(pool).ensure(_stored(tmp_path)))
    assert pool.volumes == {}  # the half-made copy is gone
