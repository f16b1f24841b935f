"""Files on a lab host as libvirt storage volumes: copies verified by checksum, overlays, seeds.

A remote lab host (`qemu+ssh://…`) shares no filesystem with the coordinator, so everything
a guest needs there goes through libvirt's storage API on the same connection:

- `sync_file` copies a local file into a volume (`virStorageVolCreateXML`, then
  `virStorageVolUpload`), streams it back (`virStorageVolDownload`) and compares sha256 with
  the expected value. A volume already present is verified the same way unless the caller
  already did so in this process; a mismatch deletes it (partial or corrupt copy). Names
  carry the image's content key, so a rebuilt image never reuses a stale copy.
- `BaseCopies` does that once per (pool, volume) per process, one copy at a time (an asyncio
  lock), for a base image's disk, kernel and initrd.
- `LibvirtVolumePool` is the libvirt side: a `dir` pool at a path on the host, created as a
  transient pool when missing (it vanishes with a libvirtd restart and is re-created on next
  use; the files stay). Besides copies it creates qcow2 overlays backed by another volume's
  path and small volumes from bytes, lists volumes by prefix, and deletes them.

The copy logic only needs `VolumePool`, so it is unit-tested on an in-memory pool; the libvirt
pool is exercised by the remote-host VM test.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import libvirt

from testbed.errors import HarnessError
from testbed.images.store import StoredImage

CHUNK = 1 << 20
IMAGES_POOL = "testbed-images"
LABS_POOL = "testbed-labs"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def volume_name(image: StoredImage, part: str = "qcow2") -> str:
    """`<image>-<key>.<part>` (`qcow2`, `kernel`, `initrd`): the content key makes stale
    copies impossible to pick."""
    return f"{image.manifest.name}-{image.manifest.key[:16]}.{part}"


@dataclass(frozen=True)
class VolumeInfo:
    name: str
    path: str
    size: int  # the file's length in bytes


class VolumePool(Protocol):
    """The storage-pool operations a verified copy needs (blocking; called in a thread)."""

    def lookup(self, name: str) -> VolumeInfo | None: ...

    def create(self, name: str, size: int) -> VolumeInfo: ...

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None: ...

    def download(self, name: str) -> Iterator[bytes]: ...

    def delete(self, name: str) -> None: ...


def _read_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def _sha256_of(chunks: Iterator[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def sync_file(pool: VolumePool, path: Path, name: str, want: str, *, verified: bool = False) -> tuple[VolumeInfo, bool]:
    """Copy `path` into volume `name` unless a copy with sha256 `want` is there; verify by
    reading it back. Returns the volume and whether it was uploaded now. `verified`: this
    process already checked the existing volume (skip the read-back)."""
    size = path.stat().st_size
    existing = pool.lookup(name)
    if existing is not None:
        if verified and existing.size == size:
            return existing, False
        if existing.size == size and _sha256_of(pool.download(name)) == want:
            return existing, False
        pool.delete(name)  # partial or corrupt copy
    info = pool.create(name, size)
    try:
        pool.upload(name, _read_chunks(path), size)
        got = _sha256_of(pool.download(name))
    except BaseException:
        pool.delete(name)
        raise
    if got != want:
        pool.delete(name)
        raise HarnessError(f"copy of {path} to volume {name} has sha256 {got[:16]}…, expected {want[:16]}…")
    return info, True


def sync_volume(pool: VolumePool, stored: StoredImage, *, verified: bool = False) -> tuple[VolumeInfo, bool]:
    """`sync_file` for an image's disk, checked against its manifest's sha256."""
    return sync_file(pool, stored.disk, volume_name(stored), stored.manifest.disk_sha256, verified=verified)


@dataclass(frozen=True)
class BasePaths:
    """Where a base image's files are on the lab host."""

    disk: str
    kernel: str | None = None
    initrd: str | None = None


class BaseCopies:
    """Verified copies of base images in one pool, made once per process (see module
    docstring). `uploads` lists the volumes this object copied (for tests and reports)."""

    def __init__(self, pool: VolumePool) -> None:
        self.pool = pool
        self._verified: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._local_sums: dict[tuple[Path, int, int], str] = {}
        self.uploads: list[str] = []

    async def ensure(self, stored: StoredImage) -> BasePaths:
        disk = await self._sync(stored.disk, volume_name(stored), stored.manifest.disk_sha256)
        kernel = initrd = None
        if stored.kernel is not None:
            kernel = await self._sync(stored.kernel, volume_name(stored, "kernel"), None)
        if stored.initrd is not None:
            initrd = await self._sync(stored.initrd, volume_name(stored, "initrd"), None)
        return BasePaths(disk, kernel, initrd)

    async def _sync(self, path: Path, name: str, want: str | None) -> str:
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            if want is None:
                want = await self._local_sum(path)
            try:
                info, uploaded = await asyncio.to_thread(
                    sync_file, self.pool, path, name, want, verified=name in self._verified
                )
            except (OSError, libvirt.libvirtError) as exc:
                raise HarnessError(f"copy of {path} to volume {name}: {exc}") from exc
            self._verified.add(name)
            if uploaded:
                self.uploads.append(name)
            return info.path

    async def _local_sum(self, path: Path) -> str:
        """sha256 of a local file the manifest holds no sum for (kernel, initrd), cached per
        file version."""
        stat = path.stat()
        key = (path, stat.st_size, stat.st_mtime_ns)
        if key not in self._local_sums:
            self._local_sums[key] = await asyncio.to_thread(file_sha256, path)
        return self._local_sums[key]


class LibvirtVolumePool:
    """`VolumePool` (and more, see module docstring) over a libvirt `dir` pool named `name`
    at `path` on the host of `conn`. Blocking: call from a thread."""

    def __init__(self, conn: Any, path: str, name: str = IMAGES_POOL) -> None:
        self._libvirt = libvirt
        self.conn = conn
        self.path = path
        self.name = name
        self._pool: Any = None

    def _get_pool(self) -> Any:
        libvirt = self._libvirt
        if self._pool is not None:
            with contextlib.suppress(libvirt.libvirtError):
                if self._pool.isActive():
                    return self._pool
        try:
            pool = self.conn.storagePoolLookupByName(self.name)
        except libvirt.libvirtError:
            xml = f"<pool type='dir'><name>{self.name}</name><target><path>{self.path}</path></target></pool>"
            try:
                pool = self.conn.storagePoolCreateXML(xml, libvirt.VIR_STORAGE_POOL_CREATE_WITH_BUILD)
            except libvirt.libvirtError as exc:
                try:  # created meanwhile by another process?
                    pool = self.conn.storagePoolLookupByName(self.name)
                except libvirt.libvirtError:
                    raise HarnessError(f"cannot create storage pool {self.name} at {self.path}: {exc}") from exc
        pool.refresh(0)
        self._pool = pool
        return pool

    def _vol(self, name: str) -> Any:
        return self._get_pool().storageVolLookupByName(name)

    def lookup(self, name: str) -> VolumeInfo | None:
        try:
            vol = self._vol(name)
        except self._libvirt.libvirtError:
            return None
        # the file's length: `capacity` is a qcow2's virtual size, `allocation` counts blocks
        _kind, _capacity, physical = vol.infoFlags(self._libvirt.VIR_STORAGE_VOL_GET_PHYSICAL)
        return VolumeInfo(name, vol.path(), int(physical))

    def create(self, name: str, size: int) -> VolumeInfo:
        xml = (
            f"<volume><name>{name}</name><capacity unit='bytes'>{size}</capacity>"
            f"<allocation unit='bytes'>{size}</allocation><target><format type='raw'/>"
            "<permissions><mode>0644</mode></permissions></target></volume>"
        )
        vol = self._get_pool().createXML(xml, 0)
        return VolumeInfo(name, vol.path(), size)

    def upload(self, name: str, chunks: Iterator[bytes], size: int) -> None:
        vol = self._vol(name)
        stream = self.conn.newStream(0)
        vol.upload(stream, 0, size, 0)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    sent = stream.send(bytes(view))
                    view = view[sent:]
            stream.finish()
        except BaseException:
            with contextlib.suppress(self._libvirt.libvirtError):
                stream.abort()
            raise

    def download(self, name: str) -> Iterator[bytes]:
        vol = self._vol(name)
        stream = self.conn.newStream(0)
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
            with contextlib.suppress(self._libvirt.libvirtError):
                stream.abort()
            raise

    def delete(self, name: str) -> None:
        with contextlib.suppress(self._libvirt.libvirtError):
            self._vol(name).delete(0)

    # -- lab files ------------------------------------------------------------------------
    def put(self, name: str, data: bytes) -> str:
        """A new volume holding `data`; returns its path. Refuses to overwrite."""
        info = self.create(name, len(data))
        try:
            self.upload(name, iter([data]), len(data))
        except BaseException:
            self.delete(name)
            raise
        return info.path

    def create_overlay(self, name: str, backing: str, capacity: int) -> str:
        """A qcow2 volume backed by the qcow2 file `backing` (a path on the host); returns its
        path. Refuses to overwrite; never copies the backing file."""
        xml = (
            f"<volume><name>{name}</name><capacity unit='bytes'>{capacity}</capacity>"
            "<target><format type='qcow2'/><permissions><mode>0600</mode></permissions></target>"
            f"<backingStore><path>{backing}</path><format type='qcow2'/></backingStore></volume>"
        )
        return str(self._get_pool().createXML(xml, 0).path())

    def names(self, prefix: str = "") -> list[str]:
        """Names of the pool's volumes starting with `prefix` (after a refresh, so files
        written by others, such as console logs, are included)."""
        pool = self._get_pool()
        pool.refresh(0)
        return sorted(n for n in pool.listVolumes() if n.startswith(prefix))

    def file_path(self, name: str) -> str:
        """The path a file named `name` has in the pool's directory."""
        return f"{self.path.rstrip('/')}/{name}"
