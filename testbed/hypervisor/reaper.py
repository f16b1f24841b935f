"""Find and remove what dead owners left behind, from metadata alone.

Orphans are libvirt domains and networks whose `<tb:lab>` metadata names an owner process
that no longer exists on this host (and whose lab is not detached), lab directories whose
state file names such an owner, and leases of such owners. Topology files are never read.
Objects owned by another host are left alone. On a remote lab host (`lab_host` given), the
files of each reaped lab of that host (volumes named by its lab id) are deleted too.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from testbed.config import Settings
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.labhost import LabHost
from testbed.hypervisor.labstate import all_lab_states
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.xml import LabMetadata


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


def _orphaned(meta: LabMetadata, detached_labs: set[str]) -> bool:
    return meta.lab_id not in detached_labs and not meta.owner.is_alive()


async def reap(
    hv: Hypervisor, settings: Settings, *, dry_run: bool = False, lab_host: LabHost | None = None
) -> ReapReport:
    """Remove (or with `dry_run`, only list) everything whose owner is gone."""
    report = ReapReport()
    host_labs: list[str] = []
    states = all_lab_states(settings.labs_dir)
    detached = {s.lab_id for s in states if s.owner.detached}
    objects = await hv.owned_objects()
    for obj in objects:
        if not _orphaned(obj.metadata, detached):
            continue
        target = report.domains if obj.kind == "domain" else report.networks
        target.append(obj.name)
    for state in states:
        if not state.owner.detached and not state.owner.is_alive():
            report.lab_dirs.append(state.directory)
            if state.uri == hv.uri:
                host_labs.append(state.lab_id)
    leases = LeaseStore(settings.leases_dir, settings.subnet_pool)
    for lab_id, lease in (await asyncio.to_thread(leases.all)).items():
        if lab_id not in detached and not lease.owner.is_alive():
            report.leases.append(lab_id)
    report.lab_dirs += _stray_lab_dirs(
        settings.labs_dir, {s.lab_id for s in states}, report.leases, await asyncio.to_thread(leases.all)
    )
    if dry_run:
        return report
    results = await asyncio.gather(*(hv.destroy_domain(d) for d in report.domains), return_exceptions=True)
    report.errors += [str(r) for r in results if isinstance(r, BaseException)]
    for net in report.networks:
        try:
            await hv.destroy_network(net)
        except Exception as exc:  # noqa: BLE001 - reported, the reaper goes on with the rest
            report.errors.append(str(exc))
    if lab_host is not None and lab_host.files.remote:
        for lab_id in host_labs:
            report.errors += await lab_host.files.remove(lab_id)
    for directory in report.lab_dirs:
        shutil.rmtree(directory, ignore_errors=True)
    await asyncio.to_thread(leases.reclaim_dead)
    return report


def _stray_lab_dirs(
    labs_dir: Path, with_state: set[str], dead_leases: list[str], leases: Mapping[str, object]
) -> list[str]:
    """Lab directories with no readable state file and no live lease (a crash before the
    first state write)."""
    if not labs_dir.exists():
        return []
    stray = []
    for directory in labs_dir.iterdir():
        if not directory.is_dir() or directory.name in with_state:
            continue
        if directory.name in leases and directory.name not in dead_leases:
            continue
        stray.append(str(directory))
    return stray
