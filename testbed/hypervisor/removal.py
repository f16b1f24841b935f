"""Removing a lab: the one teardown that `Lab`, the restored lab, `testbed lab down`, the
scheduler's abort and the reaper all use.

Contract of `remove_lab`: destroy the lab's domains and networks (at once), then delete its
files on the lab host (remote volumes named by the lab id), then — only if every domain
and network is known to be gone — its lab directory and its lease. When any of them could
not be removed (a lost libvirt connection is "unknown", never "gone"), the directory and
the lease are kept, so a later `testbed reap` can finish the job instead of a new lab
reusing a subnet or id whose guests may still run. Returns the error texts (empty when
everything is gone); never raises for a removal failure. On a local host it also deletes
the policy rules of management bridges that are gone (`testbed.hypervisor.mgmtroute`).

Before that, `keep_consoles` hands every node's console log to the run's `KeepConsole`
(best effort: a failure is logged), while the lab's files still exist.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.hostguard import uri_is_local
from testbed.hypervisor.labhost import LabFiles
from testbed.hypervisor.labstate import LabState
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.mgmtroute import release_stale

log = logging.getLogger(__name__)

KeepConsole = Callable[[str, Path], Awaitable[None]]
"""Called at teardown with (node, console log path) of every node that got a domain, before
the lab's files are removed (the runner keeps the logs with the run)."""


@dataclass(frozen=True)
class LabRemains:
    """What is left of a lab to remove (from its state file or libvirt's metadata)."""

    lab_id: str
    directory: str | None
    domains: tuple[str, ...] = ()
    networks: tuple[str, ...] = ()


async def teardown_objects(hv: Hypervisor, domains: list[str], networks: list[str]) -> list[str]:
    """Destroy domains and networks, all at once; returns error messages instead of raising.

    Not domains first: libvirt's domain destroy sends QEMU SIGTERM and only looks again
    200 ms later, and a network's destroy (its dnsmasq and firewall rules) takes about as
    long, so one after the other a one-node lab's teardown took 0.45 s and at once 0.22 s.
    A domain that outlives its network by those 200 ms is harmless: libvirt releases the
    port of a network that is gone without complaint, and the tap goes with QEMU (checked
    with libvirtd's log at warning level and `ip link` after each run)."""
    results = await asyncio.gather(
        *(hv.destroy_domain(d) for d in domains), *(hv.destroy_network(n) for n in networks), return_exceptions=True
    )
    return [str(r) for r in results if isinstance(r, BaseException)]


async def remove_lab(
    hv: Hypervisor, files: LabFiles | None, remains: LabRemains, leases: LeaseStore | None, *, keep_lease: bool = False
) -> list[str]:
    """See the module docstring. `keep_lease`: the lease belongs to someone else (a saved
    state's slot) and is not released."""
    errors = await teardown_objects(hv, list(remains.domains), list(remains.networks))
    if remains.networks and uri_is_local(hv.uri):
        await asyncio.to_thread(release_stale)  # policy rules of management bridges now gone
    if files is not None:
        errors += await files.remove(remains.lab_id)
    if errors:
        return [*errors, f"lab {remains.lab_id} kept (directory and lease) until `testbed reap` can finish"]
    if remains.directory:
        await asyncio.to_thread(shutil.rmtree, Path(remains.directory), True)
    if leases is not None and not keep_lease:
        await asyncio.to_thread(leases.release, remains.lab_id)
    return []


async def keep_consoles(state: LabState, keep: KeepConsole | None) -> None:
    """Hand every node's console log to `keep` (best effort: a failure is logged)."""
    if keep is None:
        return
    for node in state.nodes.values():
        if not node.console_log:
            continue
        try:
            await keep(node.name, Path(node.console_log))
        except Exception:
            log.exception("could not keep the console log of %s", node.name)
