"""Where a lab's guests run: the lab host behind a libvirt URI, its files and its route to guests.

- A local host (`qemu:///system`) keeps a lab's overlays, seeds and console logs in the lab
  directory (`$TESTBED_HOME/labs/<lab-id>/`), boots from the image cache's own files and
  reaches guests directly on the management bridge.
- A remote host (`qemu+ssh://user@host/system`) shares no filesystem with the coordinator.
  Its base images are verified copies in a libvirt `dir` pool at the host's image cache path
  (`testbed.hypervisor.volumes.BaseCopies`); a lab's overlays (backed by those copies),
  seeds, console logs and UEFI variable stores are volumes named `<lab-id>-<node>.<kind>` in a second pool,
  `testbed-labs`, at `<image cache>/labs`. Guests are reached through SSH tunnels over the
  coordinator's connection to the host (`HostLink`). Teardown and the reaper delete every
  volume of a lab by its `<lab-id>-` prefix, so nothing has to be recorded per file.
  Serial-console readiness needs the console log locally and is refused on a remote host.

The local state file and the harness's SSH key stay in the local lab directory either way.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from testbed.config import remote_cache_dir
from testbed.errors import HarnessError
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.hostlink import HostLink, SshTarget
from testbed.hypervisor.overlays import create_overlay
from testbed.hypervisor.volumes import LABS_POOL, BaseCopies, BasePaths, LibvirtVolumePool
from testbed.images.store import StoredImage

DEFAULT_REMOTE_CACHE = "/var/lib/testbed/images"


class LabFiles(Protocol):
    """A lab's files on its host (see module docstring)."""

    remote: bool

    async def base(self, stored: StoredImage) -> BasePaths:
        """The base image's files on the host, copied and verified first if needed."""
        ...

    async def overlay(self, lab_dir: Path, lab_id: str, node: str, base: BasePaths, stored: StoredImage) -> str:
        """A new qcow2 overlay over `base.disk` for `node`; returns its path on the host."""
        ...

    async def put(self, lab_dir: Path, lab_id: str, name: str, data: bytes) -> str:
        """A new file `name` of the lab holding `data`; returns its path on the host."""
        ...

    def console_log(self, lab_dir: Path, lab_id: str, node: str) -> str:
        """Where the node's serial console is logged on the host."""
        ...

    def nvram(self, lab_dir: Path, lab_id: str, node: str) -> str:
        """Where a UEFI node's variable store lives on the host (libvirt creates it)."""
        ...

    async def remove(self, lab_id: str) -> list[str]:
        """Delete the lab's files on the host; returns errors instead of raising."""
        ...

    async def lab_ids(self) -> set[str]:
        """Ids of labs with files on the host (so a new lab never reuses one)."""
        ...


class LocalLabFiles:
    """Files in the local lab directory (removed with it)."""

    remote = False

    async def base(self, stored: StoredImage) -> BasePaths:
        return BasePaths(
            str(stored.disk),
            str(stored.kernel) if stored.kernel else None,
            str(stored.initrd) if stored.initrd else None,
        )

    async def overlay(self, lab_dir: Path, lab_id: str, node: str, base: BasePaths, stored: StoredImage) -> str:
        return str(await create_overlay(Path(base.disk), lab_dir / f"{node}.qcow2"))

    async def put(self, lab_dir: Path, lab_id: str, name: str, data: bytes) -> str:
        path = lab_dir / name
        await asyncio.to_thread(path.write_bytes, data)
        return str(path)

    def console_log(self, lab_dir: Path, lab_id: str, node: str) -> str:
        return str(lab_dir / f"{node}.console.log")

    def nvram(self, lab_dir: Path, lab_id: str, node: str) -> str:
        return str(lab_dir / f"{node}.VARS.fd")

    async def remove(self, lab_id: str) -> list[str]:
        return []

    async def lab_ids(self) -> set[str]:
        return set()


class PoolLabFiles:
    """Files as volumes on a (remote) host; see module docstring."""

    remote = True

    def __init__(self, hv: Hypervisor, copies: BaseCopies, labs: LibvirtVolumePool) -> None:
        self.hv = hv
        self.copies = copies
        self.labs = labs
        self._sizes: dict[Path, int] = {}

    async def base(self, stored: StoredImage) -> BasePaths:
        try:
            return await self.copies.ensure(stored)
        except (OSError, HarnessError) as exc:
            raise HarnessError(f"image {stored.manifest.name} on {self.hv.uri}: {exc}") from exc

    async def overlay(self, lab_dir: Path, lab_id: str, node: str, base: BasePaths, stored: StoredImage) -> str:
        capacity = await self._virtual_size(stored.disk)
        return await self.hv.call(self.labs.create_overlay, f"{lab_id}-{node}.qcow2", base.disk, capacity)

    async def put(self, lab_dir: Path, lab_id: str, name: str, data: bytes) -> str:
        return await self.hv.call(self.labs.put, f"{lab_id}-{name}", data)

    def console_log(self, lab_dir: Path, lab_id: str, node: str) -> str:
        return self.labs.file_path(f"{lab_id}-{node}.console.log")

    def nvram(self, lab_dir: Path, lab_id: str, node: str) -> str:
        return self.labs.file_path(f"{lab_id}-{node}.VARS.fd")

    async def remove(self, lab_id: str) -> list[str]:
        errors: list[str] = []
        try:
            names = await self.hv.call(self.labs.names, f"{lab_id}-")
        except HarnessError as exc:
            return [f"cannot list the files of lab {lab_id} on {self.hv.uri}: {exc}"]
        for name in names:
            try:
                await self.hv.call(self.labs.delete, name)
            except HarnessError as exc:
                errors.append(f"cannot delete {name} on {self.hv.uri}: {exc}")
        return errors

    async def lab_ids(self) -> set[str]:
        return {name.split("-", 1)[0] for name in await self.hv.call(self.labs.names, "") if "-" in name}

    async def _virtual_size(self, disk: Path) -> int:
        """The base image's virtual size (the overlay's capacity), from `qemu-img info`."""
        if disk not in self._sizes:
            proc = await asyncio.create_subprocess_exec(
                "qemu-img",
                "info",
                "--output=json",
                str(disk),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
            if proc.returncode != 0:
                raise HarnessError(f"qemu-img info {disk}: {err.decode(errors='replace').strip()}")
            self._sizes[disk] = int(json.loads(out)["virtual-size"])
        return self._sizes[disk]


@dataclass
class LabHost:
    """The host behind `uri`: its lab files and, when remote, the SSH link to it."""

    uri: str
    files: LabFiles = field(default_factory=LocalLabFiles)
    link: HostLink | None = None
    cache: str | None = None  # the image cache path on a remote host

    @property
    def remote(self) -> bool:
        return self.link is not None

    async def close(self) -> None:
        if self.link is not None:
            await self.link.close()


def remote_cache(explicit: str | None = None) -> str:
    """A remote host's image cache path: `explicit`, else `TESTBED_REMOTE_CACHE`, else
    /var/lib/testbed/images."""
    return explicit or remote_cache_dir() or DEFAULT_REMOTE_CACHE


def lab_host_for(hv: Hypervisor, *, cache: str | None = None, copies: BaseCopies | None = None) -> LabHost:
    """The `LabHost` of an open hypervisor connection. For a remote URI, `cache` is the image
    cache path on that host (see `remote_cache`) and `copies` may share the scheduler's
    verified copies; the SSH link opens on first use."""
    target = SshTarget.from_uri(hv.uri)
    if target is None:
        return LabHost(hv.uri)
    path = remote_cache(cache).rstrip("/")
    copies = copies or BaseCopies(LibvirtVolumePool(hv.conn, path))
    labs = LibvirtVolumePool(hv.conn, f"{path}/labs", LABS_POOL)
    return LabHost(hv.uri, PoolLabFiles(hv, copies, labs), HostLink(target), path)


def files_of_lab(hv: Hypervisor, host: LabHost, recorded_cache: str | None) -> LabFiles:
    """The files of a lab on `host`, in the image cache its state recorded (a remote host's
    cache path may differ between jobs); `host`'s own files otherwise."""
    if not host.remote or not recorded_cache or recorded_cache == host.cache:
        return host.files
    return lab_host_for(hv, cache=recorded_cache).files
