"""A lab's networks: their specs and their creation on the hypervisor.

Every lab has a management network (`NAME-mgmt`, the host at `plan.host_ip`; with DHCP for
the nodes' management MACs when an image is provisioned by cloud-init) and one isolated
network per topology segment and per link. Their bridges are `tb<lab id>-<network>`
(`bridge_name`, at most 15 characters; the host guard matches `tb*`). Networks are created
one at a time under a host-wide lock (`networks.lock` in the leases directory): libvirt can
hand one bridge to networks defined in parallel. Each network is recorded (`record`) before
it is created, so teardown and the reaper find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from testbed.errors import HarnessError
from testbed.hypervisor.addressing import AddressPlan
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.xml import DhcpHost, NetworkSpec, render_network
from testbed.model.topology import Topology


def bridge_name(lab_id: str, network: str) -> str:
    """The bridge of network `network` of lab `lab_id` (`HarnessError` over 15 characters)."""
    name = f"tb{lab_id}-{network}"
    if len(name) > 15:
        raise HarnessError(f"bridge name {name} exceeds 15 characters")
    return name


def lab_network_specs(
    topology: Topology,
    plan: AddressPlan,
    node_macs: dict[str, dict[str, str]],
    *,
    prefix: str,
    lab_id: str,
    metadata_xml: str,
    dhcp: bool,
) -> list[NetworkSpec]:
    """The management network first, then one per segment and per link, named `PREFIX-NET`."""
    hosts = list(plan.mgmt_subnet.hosts())
    mgmt = NetworkSpec(
        name=f"{prefix}-mgmt",
        bridge=bridge_name(lab_id, "mgmt"),
        metadata_xml=metadata_xml,
        host_ip=plan.host_ip,
        prefix=plan.mgmt_subnet.prefixlen,
        dhcp_hosts=[DhcpHost(node_macs[n]["mgmt"], n, ip) for n, ip in plan.mgmt.items()] if dhcp else [],
        dhcp_start=str(hosts[199]) if dhcp else None,
        dhcp_end=str(hosts[-2]) if dhcp else None,
    )
    names = [*(n.name for n in topology.networks), *(str(lk.name) for lk in topology.links)]
    return [mgmt] + [
        NetworkSpec(name=f"{prefix}-{net}", bridge=bridge_name(lab_id, net), metadata_xml=metadata_xml) for net in names
    ]


LOCK_POLL_S = 0.02


def network_lock_path(leases_dir: Path) -> Path:
    """The host-wide network lock's file (beside the lease store)."""
    return leases_dir / "networks.lock"


@contextlib.asynccontextmanager
async def network_lock(lock_path: Path) -> AsyncIterator[None]:
    """Hold the host-wide network lock (`networks.lock` in the leases directory).

    Waiting polls a non-blocking flock on the event loop instead of blocking a worker thread:
    with many labs starting at once (a group of restored episodes), waiters blocked in the
    default thread pool would leave the holder no thread for its own libvirt calls, and
    every one of them would wait forever."""
    with lock_path.open("a+") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def create_networks(
    hv: Hypervisor, specs: list[NetworkSpec], lock_path: Path, record: Callable[[str], None]
) -> None:
    """Record, then create, each network in turn under the host-wide lock at `lock_path`."""
    for spec in specs:
        record(spec.name)
        async with network_lock(lock_path):
            await hv.create_network(render_network(spec))
