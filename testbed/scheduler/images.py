"""Base images on lab hosts: present, complete and verified by checksum before a run uses them.

- The local host uses the image cache (`$TESTBED_HOME/images`) directly: `LocalImages`
  checks that every image a run needs is cached and that its disk's sha256 equals the
  manifest's (once per process and file version: path, size, mtime).
- A remote host (`qemu+ssh://...`) gets copies as libvirt storage volumes in a directory
  pool at the host's `image_cache` path: `RemoteImages` keeps one
  `testbed.hypervisor.volumes.BaseCopies` per host (copy, read back, compare sha256; see
  there). The same `BaseCopies` is handed to the host's `LabHost`, so a lab's overlays are
  backed by exactly the volumes verified here, and each volume is verified once per process.
  A mismatch deletes the volume and raises `HarnessError` (the run ends as `error` and is
  retried).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from testbed.errors import HarnessError
from testbed.hypervisor.volumes import (
    BaseCopies,
    LibvirtVolumePool,
    VolumeInfo,
    VolumePool,
    file_sha256,
    sync_volume,
    volume_name,
)
from testbed.images.store import ImageStore, StoredImage
from testbed.scheduler.resources import HostSlot

__all__ = [
    "BaseCopies",
    "ImageDistributor",
    "LibvirtVolumePool",
    "LocalImages",
    "RemoteImages",
    "VolumeInfo",
    "VolumePool",
    "file_sha256",
    "sync_volume",
    "volume_name",
]


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


class RemoteImages:
    """Copies images to remote hosts as storage volumes (see module docstring)."""

    def __init__(self, store: ImageStore, pools: dict[str, VolumePool]) -> None:
        self.store = store
        self.copies = {host: BaseCopies(pool) for host, pool in pools.items()}

    @property
    def uploads(self) -> list[tuple[str, str]]:
        return [(host, name) for host, copies in self.copies.items() for name in copies.uploads]

    async def ensure(self, host: HostSlot, images: list[str]) -> dict[str, str]:
        copies = self.copies.get(host.name)
        if copies is None:
            raise HarnessError(f"host {host.name} has no image pool (set image_cache in the job's hosts)")
        paths: dict[str, str] = {}
        for name in images:
            stored = self.store.get(name)
            if stored is None:
                raise HarnessError(f"image '{name}' is not in the local image cache {self.store.root}")
            paths[name] = (await copies.ensure(stored)).disk
        return paths
