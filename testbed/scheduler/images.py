"""Base images on lab hosts: present, complete and verified by checksum before a run uses them.

- The local host uses the image cache (`$TESTBED_HOME/images`) directly: `LocalImages`
  checks that every image a run needs is cached and that its disk's sha256 equals the
  manifest's (once per process and file version: path, size, mtime).
- A remote host (`qemu+ssh://...`) gets copies as libvirt storage volumes in a directory
  pool at the host's `image_cache` path: `RemoteImages` creates the volume
  (`virStorageVolCreateXML`), streams the base disk into it (`virStorageVolUpload`), then
  streams it back (`virStorageVolDownload`) and compares sha256 with the manifest. A volume
  already present is verified the same way before its first use by this process; a
  mismatch deletes it and raises `HarnessError` (the run ends as `error` and is retried).
  Volume names carry the content key (`<image>-<key>.qcow2`), so a rebuilt image never
  reuses a stale copy. One copy per (host, volume) at a time (an asyncio lock).

The libvirt side is behind `VolumePool`, so the copy-and-verify logic is unit-tested with an
in-memory pool. UNTESTED here: `LibvirtVolumePool` against a real remote libvirtd, and the
`Lab` itself, which still creates overlays from local paths (a remote host needs `Lab` to
create its overlays as volumes in that pool — see the scheduler report).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from testbed.errors import HarnessError
from testbed.images.store import ImageStore, StoredImage
from testbed.scheduler.resources import HostSlot

CHUNK = 1 << 20
POOL_NAME = "testbed-images"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def volume_name(image: StoredImage) -> str:
    """`<image>-<key>.qcow2`: the content key makes stale copies impossible to pick."""
    return f"{image.manifest.name}-{image.manifest.key[:16]}.qcow2"


class ImageDistributor(Protocol):
    async def ensure(self, host: HostSlot, images: list[str]) -> dict[str, str]:
        """Make `images` usable on `host`; return each image's disk path there."""
        ...


class LocalImages:
    """The local image cache, verified once per file version (see module docstring)."""

    def __init__(self, store: ImageStore) -> None:
        self.store = store
        self._verified: dict[Path, tuple[int, int]] = {}
        self._locks: dict[Path, asyncio.Lock] = {}

    async def ensure(self, host: HostSlot, images: list[str]) -> dict[str, str]:
        paths: dict[str, str] = {}
        for name in images:
            stored = self.store.get(name)
            if stored is None:
                raise HarnessError(f"image '{name}' is not in the image cache {self.store.root}")
            await self._verify(stored)
            paths[name] = str(stored.disk)
        return paths

    async def _verify(self, stored: StoredImage) -> None:
        disk = stored.disk
        lock = self._locks.setdefault(disk, asyncio.Lock())
        async with lock:
            stat = disk.stat()
            version = (stat.st_size, stat.st_mtime_ns)
            if self._verified.get(disk) == version:
                return
            actual = await asyncio.to_thread(file_sha256, disk)
            if actual != stored.manifest.disk_sha256:
                raise HarnessError(
                    f"image {stored.manifest.name}: {disk} has sha256 {actual[:16]}…, the manifest says "
                    f"{stored.manifest.disk_sha256[:16]}… (rebuild it with `testbed image build`)"
                )
            self._verified[disk] = version


@dataclass(frozen=True)
class VolumeInfo:
    name: str
    path: str
    size: int


class VolumePool(Protocol):
    """The storage-pool operations the copy needs (blocking; called in a thread)."""

    def lookup(self, name: str) -> VolumeInfo | None: ...

    def create(self, name: str, size: int) -> VolumeInfo: ...

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None: ...

    def download(self, name: str) -> Iterator[bytes]: ...

    def delete(self, name: str) -> None: ...


def _read_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def sync_volume(pool: VolumePool, stored: StoredImage, *, verified: bool = False) -> tuple[VolumeInfo, bool]:
    """Copy `stored`'s disk into `pool` unless a verified copy is there; verify by sha256.

    Returns the volume and whether it was uploaded now. `verified`: this process already
    checked the existing volume (skip the read-back)."""
    name = volume_name(stored)
    want = stored.manifest.disk_sha256
    size = stored.disk.stat().st_size
    existing = pool.lookup(name)
    if existing is not None:
        if verified and existing.size == size:
            return existing, False
        if existing.size == size and _sha256_of(pool.download(name)) == want:
            return existing, False
        pool.delete(name)  # partial or corrupt copy
    info = pool.create(name, size)
    try:
        pool.upload(name, _read_chunks(stored.disk), size)
        got = _sha256_of(pool.download(name))
    except BaseException:
        pool.delete(name)
        raise
    if got != want:
        pool.delete(name)
        raise HarnessError(
            f"copy of image {stored.manifest.name} to {name} has sha256 {got[:16]}…, expected {want[:16]}…"
        )
    return info, True


def _sha256_of(chunks: Iterator[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


class LibvirtVolumePool:
    """`VolumePool` over a libvirt directory pool at `path` on the host of `conn` (the pool is
    created as a transient pool named `testbed-images` when missing). UNTESTED remotely."""

    def __init__(self, conn: object, path: str) -> None:
        import libvirt

        self._libvirt = libvirt
        self.conn = conn
        self.path = path
        self._pool: object | None = None

    def _get_pool(self) -> object:
        libvirt = self._libvirt
        if self._pool is not None:
            return self._pool
        conn = self.conn
        try:
            pool = conn.storagePoolLookupByName(POOL_NAME)  # type: ignore[attr-defined]
        except libvirt.libvirtError:
            xml = f"<pool type='dir'><name>{POOL_NAME}</name><target><path>{self.path}</path></target></pool>"
            pool = conn.storagePoolCreateXML(xml, libvirt.VIR_STORAGE_POOL_CREATE_WITH_BUILD)  # type: ignore[attr-defined]
        pool.refresh(0)
        self._pool = pool
        return pool

    def lookup(self, name: str) -> VolumeInfo | None:
        try:
            vol = self._get_pool().storageVolLookupByName(name)  # type: ignore[attr-defined]
        except self._libvirt.libvirtError:
            return None
        _kind, capacity, allocation = vol.info()
        return VolumeInfo(name, vol.path(), int(allocation if allocation else capacity))

    def create(self, name: str, size: int) -> VolumeInfo:
        xml = (
            f"<volume><name>{name}</name><capacity unit='bytes'>{size}</capacity>"
            f"<allocation unit='bytes'>{size}</allocation><target><format type='raw'/>"
            "<permissions><mode>0644</mode></permissions></target></volume>"
        )
        vol = self._get_pool().createXML(xml, 0)  # type: ignore[attr-defined]
        return VolumeInfo(name, vol.path(), size)

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None:
        vol = self._get_pool().storageVolLookupByName(name)  # type: ignore[attr-defined]
        stream = self.conn.newStream(0)  # type: ignore[attr-defined]
        vol.upload(stream, 0, size, 0)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    sent = stream.send(bytes(view))
                    view = view[sent:]
            stream.finish()
        except BaseException:
            stream.abort()
            raise

    def download(self, name: str) -> Iterator[bytes]:
        vol = self._get_pool().storageVolLookupByName(name)  # type: ignore[attr-defined]
        stream = self.conn.newStream(0)  # type: ignore[attr-defined]
        vol.download(stream, 0, 0, 0)
        try:
            while True:
                data = stream.recv(CHUNK)
                if data in (-2, None) or data == b"":
                    break
                if isinstance(data, int):
                    raise HarnessError(f"download of volume {name} failed")
                yield data
            stream.finish()
        except BaseException:
            stream.abort()
            raise

    def delete(self, name: str) -> None:
        with contextlib.suppress(self._libvirt.libvirtError):
            self._get_pool().storageVolLookupByName(name).delete(0)  # type: ignore[attr-defined]


class RemoteImages:
    """Copies images to remote hosts as storage volumes (see module docstring)."""

    def __init__(self, store: ImageStore, pools: dict[str, VolumePool]) -> None:
        self.store = store
        self.pools = pools  # host name -> pool
        self._verified: set[tuple[str, str]] = set()
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.uploads: list[tuple[str, str]] = []

    async def ensure(self, host: HostSlot, images: list[str]) -> dict[str, str]:
        pool = self.pools.get(host.name)
        if pool is None:
            raise HarnessError(f"host {host.name} has no image pool (set image_cache in the job's hosts)")
        paths: dict[str, str] = {}
        for name in images:
            stored = self.store.get(name)
            if stored is None:
                raise HarnessError(f"image '{name}' is not in the local image cache {self.store.root}")
            key = (host.name, volume_name(stored))
            lock = self._locks.setdefault(key, asyncio.Lock())
            async with lock:
                info, uploaded = await asyncio.to_thread(sync_volume, pool, stored, verified=key in self._verified)
                self._verified.add(key)
                if uploaded:
                    self.uploads.append(key)
            paths[name] = info.path
        return paths
