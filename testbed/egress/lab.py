"""Egress for a running lab: its hub spec, its guests' configuration, both at once.

Contracts:
- `lab_egress_spec(lab, policy)` describes a lab that is up (`testbed.hypervisor.lab.Lab`:
  its lease, address plan and nodes) to the hub.
- `lab_no_proxy(lab)`: what the guests must reach directly: loopback, node names, every
  node's management and data address, then the lab's subnets. The addresses are listed one
  by one because older clients ignore a CIDR entry in `no_proxy` (curl before 7.86, as on
  bullseye, wget, Python's urllib): with only the subnets, bullseye's curl sent a request
  for a site address to the proxy. An address no node holds (a VIP) is covered by its
  subnet for the newer clients only.
- `configure_guests(lab, egress)` runs `guest_proxy_commands` on every node, unrecorded
  (`testbed lab up`, VM tests); a run records them itself (see the README's wiring).
  A command that fails is a `HarnessError`.
- `start_egress(lab, policy, hub)` attaches the lab to `hub` and configures its guests for
  the duration of the block (yields the `LabEgress`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator, Mapping
from typing import Protocol

from testbed.egress.guestconf import guest_proxy_commands, no_proxy_for
from testbed.egress.hub import EgressHub, LabEgress, LabEgressSpec
from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.model.egress import EgressSpec


class _Image(Protocol):
    @property
    def dialect(self) -> str: ...


class EgressNode(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def mgmt_ip(self) -> str: ...
    @property
    def image(self) -> _Image: ...
    async def exec(self, command: str, *, timeout: float | None = 120.0) -> ExecResult: ...


class _Plan(Protocol):
    @property
    def mgmt_subnet(self) -> ipaddress.IPv4Network: ...
    @property
    def host_ip(self) -> str: ...
    @property
    def data_subnets(self) -> Mapping[str, ipaddress.IPv4Network]: ...
    @property
    def data(self) -> Mapping[str, Mapping[str, str]]: ...


class EgressLab(Protocol):
    @property
    def lab_id(self) -> str: ...
    @property
    def plan(self) -> _Plan | None: ...
    @property
    def nodes(self) -> Mapping[str, EgressNode]: ...


def _plan(lab: EgressLab) -> _Plan:
    if lab.plan is None:
        raise HarnessError("egress: the lab is not up (it has no address plan)")
    return lab.plan


def lab_egress_spec(lab: EgressLab, policy: EgressSpec) -> LabEgressSpec:
    """The hub's view of `lab` (see the module contract)."""
    plan = _plan(lab)
    return LabEgressSpec(
        key=lab.lab_id,
        subnet=plan.mgmt_subnet,
        host_ip=plan.host_ip,
        policy=policy,
        nodes_by_ip={node.mgmt_ip: name for name, node in lab.nodes.items()},
    )


def lab_no_proxy(lab: EgressLab) -> list[str]:
    """See the module contract."""
    plan = _plan(lab)
    addresses = [node.mgmt_ip for node in lab.nodes.values()]
    addresses += [address for members in plan.data.values() for address in members.values()]
    subnets = [str(plan.mgmt_subnet), *(str(s) for s in plan.data_subnets.values())]
    return no_proxy_for([*lab.nodes, *addresses], subnets)


async def configure_guests(lab: EgressLab, egress: LabEgress) -> None:
    """Point every node of `lab` at `egress` (unrecorded commands)."""
    no_proxy = lab_no_proxy(lab)

    async def one(node: EgressNode) -> None:
        for command in guest_proxy_commands(egress.proxy_url, node.image.dialect, no_proxy):
            result = await node.exec(command, timeout=60)
            if not result.ok:
                raise HarnessError(f"egress: configuring {node.name} failed ({command!r}): {result.stderr.strip()}")

    await asyncio.gather(*(one(node) for node in lab.nodes.values()))


@contextlib.asynccontextmanager
async def start_egress(lab: EgressLab, policy: EgressSpec, hub: EgressHub) -> AsyncIterator[LabEgress]:
    """Attach `lab` to `hub` and configure its guests for the duration of the block."""
    async with hub.lab(lab_egress_spec(lab, policy)) as egress:
        await configure_guests(lab, egress)
        yield egress
