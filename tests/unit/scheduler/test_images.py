"""Base images on lab hosts: the copy-and-verify logic on an in-memory storage pool (the
libvirt pool itself is not exercised here), and the local cache's checksum check."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.errors import HarnessError
from testbed.images.store import ImageManifest, ImageStore
from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.images import LocalImages, RemoteImages, VolumeInfo, sync_volume, volume_name
from testbed.scheduler.resources import Budget, HostSlot


class MemoryPool:
    def __init__(self, corrupt: bool = False) -> None:
        self.volumes: dict[str, bytearray] = {}
        self.corrupt = corrupt
        self.uploads = 0
        self.downloads = 0

    def lookup(self, name: str) -> VolumeInfo | None:
        data = self.volumes.get(name)
        return None if data is None else VolumeInfo(name, f"/pool/{name}", len(data))

    def create(self, name: str, size: int) -> VolumeInfo:
        self.volumes[name] = bytearray()
        return VolumeInfo(name, f"/pool/{name}", size)

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None:
        self.uploads += 1
        for chunk in chunks:
            self.volumes[name] += chunk
        if self.corrupt:
            self.volumes[name][0] ^= 0xFF

    def download(self, name: str) -> Iterator[bytes]:
        self.downloads += 1
        yield bytes(self.volumes[name])

    def delete(self, name: str) -> None:
        self.volumes.pop(name, None)


def _image(tmp_path: Path, content: bytes = b"qcow2-bytes" * 1000) -> ImageStore:
    store = ImageStore(tmp_path / "images")
    staging = store.staging_dir("debian-12", "k" * 16)
    (staging / "disk.qcow2").write_bytes(content)
    store.commit(staging, ImageManifest("debian-12", "k" * 16, "test", hashlib.sha256(content).hexdigest(),
                                        len(content)))
    return store


def _host(name: str = "far") -> HostSlot:
    return HostSlot(name, "qemu+ssh://far/system", Budget(4), BootGate(1), image_cache="/pool", local=False)


def test_copy_is_verified_and_reused(tmp_path: Path) -> None:
    store = _image(tmp_path)
    stored = store.get("debian-12")
    assert stored is not None
    pool = MemoryPool()
    info, uploaded = sync_volume(pool, stored)
    assert uploaded and info.name == volume_name(stored) == "debian-12-kkkkkkkkkkkkkkkk.qcow2"
    assert pool.volumes[info.name] == stored.disk.read_bytes()
    _, again = sync_volume(pool, stored)  # present: verified by read-back, not copied again
    assert not again and pool.uploads == 1
    pool.volumes[info.name][5] ^= 1  # corrupted on the host: replaced
    _, replaced = sync_volume(pool, stored)
    assert replaced and pool.uploads == 2 and pool.volumes[info.name] == stored.disk.read_bytes()


def test_corrupt_copy_is_deleted_and_fails(tmp_path: Path) -> None:
    stored = _image(tmp_path).get("debian-12")
    assert stored is not None
    pool = MemoryPool(corrupt=True)
    with pytest.raises(HarnessError, match="sha256"):
        sync_volume(pool, stored)
    assert pool.volumes == {}


def test_remote_images_copy_once_per_host_even_when_asked_concurrently(tmp_path: Path) -> None:
    store = _image(tmp_path)
    pools = {"far": MemoryPool(), "farther": MemoryPool()}
    images = RemoteImages(store, pools)  # type: ignore[arg-type]

    async def go() -> None:
        paths = await asyncio.gather(*(images.ensure(_host(h), ["debian-12"]) for h in ["far", "far", "farther"]))
        assert paths[0] == {"debian-12": "/pool/debian-12-kkkkkkkkkkkkkkkk.qcow2"}
        with pytest.raises(HarnessError, match="not in the local image cache"):
            await images.ensure(_host(), ["alpine"])

    asyncio.run(go())
    assert pools["far"].uploads == 1 and pools["farther"].uploads == 1
    assert pools["far"].downloads == 1  # the second ensure trusted this process's verification


def test_local_cache_is_checked_against_its_manifest(tmp_path: Path) -> None:
    store = _image(tmp_path)
    local = LocalImages(store)
    host = HostSlot("local", "qemu:///system", Budget(2), BootGate(1))
    assert asyncio.run(local.ensure(host, ["debian-12"]))["debian-12"].endswith("disk.qcow2")
    stored = store.get("debian-12")
    assert stored is not None
    stored.disk.write_bytes(b"tampered")
    with pytest.raises(HarnessError, match="sha256"):
        asyncio.run(local.ensure(host, ["debian-12"]))
