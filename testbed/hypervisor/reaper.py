"""Find and remove what dead owners left behind, from metadata alone.

Orphans are libvirt domains and networks whose `<tb:lab>` metadata names an owner that no
longer exists on this host (and whose lab is not detached), lab directories whose state
file names such an owner, and leases of such owners. Topology files are never read.
Objects owned by another host are left alone, and so are objects whose lab directory lives
under another TESTBED_HOME that still exists: several homes (users, CI workers) may share one
libvirtd, and only a lab's own home knows whether it was detached on purpose (`lab up`
updates its domains' owner but a network's metadata keeps the creating process). An object
whose lab directory is gone altogether has no home left to reap it, so any home may.

Each dead lab is removed through the one teardown (`testbed.hypervisor.removal.remove_lab`):
its directory and lease go only once its domains and networks are known to be gone. On a
remote lab host the lab's files there (volumes named by its lab id) are deleted too, in the
image cache its state file recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from testbed.config import Settings
from testbed.hypervisor.connection import Hypervisor, OwnedObject
from testbed.hypervisor.labhost import LabFiles
from testbed.hypervisor.labstate import LabState, all_lab_states
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import remove_dead_locks
from testbed.hypervisor.removal import LabRemains, remove_lab

FilesFor = Callable[[LabState | None], LabFiles | None]
"""The lab files of a dead lab on the reaper's host (None: nothing but the lab directory)."""


@dataclass
class ReapReport:
    domains: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    lab_dirs: list[str] = field(default_factory=list)
    leases: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.domains or self.networks or self.lab_dirs or self.leases)


@dataclass
class _DeadLab:
    lab_id: str
    state: LabState | None = None
    directory: str | None = None
    domains: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    leased: bool = False

    def remains(self) -> LabRemains:
        return LabRemains(self.lab_id, self.directory, tuple(self.domains), tuple(self.networks))


def belongs_elsewhere(lab_dir: str, labs_dir: Path) -> bool:
    """True when `lab_dir` (from an object's metadata) is an existing directory outside
    `labs_dir`: the lab is another home's to reap."""
    if not lab_dir:
        return False
    path = Path(lab_dir)
    return path.parent.resolve() != labs_dir.resolve() and path.exists()


def _dead_labs(
    objects: list[OwnedObject],
    states: list[LabState],
    leases: Mapping[str, object],
    uri: str,
    labs_dir: Path,
) -> dict[str, _DeadLab]:
    detached = {s.lab_id for s in states if s.owner.detached}
    dead: dict[str, _DeadLab] = {}
    for obj in objects:
        meta = obj.metadata
        if meta.lab_id in detached or meta.owner.is_alive() or belongs_elsewhere(meta.lab_dir, labs_dir):
            continue
        lab = dead.setdefault(meta.lab_id, _DeadLab(meta.lab_id, directory=meta.lab_dir or None))
        (lab.domains if obj.kind == "domain" else lab.networks).append(obj.name)
    for state in states:
        if state.owner.detached or state.owner.is_alive() or state.uri != uri:
            continue
        lab = dead.setdefault(state.lab_id, _DeadLab(state.lab_id))
        lab.state, lab.directory = state, state.directory
    for lab_id, lease in leases.items():
        owner = getattr(lease, "owner", None)
        if lab_id in detached or owner is None or owner.is_alive():
            continue
        dead.setdefault(lab_id, _DeadLab(lab_id)).leased = True
    return dead


async def reap(
    hv: Hypervisor, settings: Settings, *, dry_run: bool = False, files_for: FilesFor | None = None
) -> ReapReport:
    """Remove (or with `dry_run`, only list) everything whose owner is gone."""
    report = ReapReport()
    states = all_lab_states(settings.labs_dir)
    lease_store = LeaseStore(settings.leases_dir, settings.subnet_pool)
    leases = await asyncio.to_thread(lease_store.all)
    dead = _dead_labs(await hv.owned_objects(), states, leases, hv.uri, settings.labs_dir)
    for lab in dead.values():
        if lab.directory is None and (settings.labs_dir / lab.lab_id).is_dir():
            lab.directory = str(settings.labs_dir / lab.lab_id)  # a crash before the first state write
        report.domains += lab.domains
        report.networks += lab.networks
        if lab.directory and Path(lab.directory).exists():
            report.lab_dirs.append(lab.directory)
        if lab.leased:
            report.leases.append(lab.lab_id)
    stray = _stray_lab_dirs(settings.labs_dir, {s.lab_id for s in states}, set(dead), leases)
    report.lab_dirs += stray
    if dry_run:
        return report
    results = await asyncio.gather(
        *(
            remove_lab(hv, files_for(lab.state) if files_for else None, lab.remains(), lease_store)
            for lab in dead.values()
        )
    )
    for errors in results:
        report.errors += errors
    for directory in stray:
        await remove_lab(hv, None, LabRemains(Path(directory).name, directory), None)
    await asyncio.to_thread(remove_dead_locks)
    return report


def _stray_lab_dirs(labs_dir: Path, with_state: set[str], dead: set[str], leases: Mapping[str, object]) -> list[str]:
    """Lab directories with no readable state file and no live lease (a crash before the
    first state write)."""
    if not labs_dir.exists():
        return []
    stray = []
    for directory in labs_dir.iterdir():
        if not directory.is_dir() or directory.name in with_state or directory.name in dead:
            continue
        if directory.name in leases:
            continue
        stray.append(str(directory))
    return stray
