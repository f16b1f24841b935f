"""Per-lab address plan: management addresses, data-segment addresses, routes, /etc/hosts.

Pure: takes the topology and the leased subnets, returns who gets which address. The host
takes `.1` of the management subnet; nodes get `.10`, `.11`, ... in topology order. On a
data segment, addresses fixed by the topology are kept and the rest are handed out from
`.10` upwards in member order, skipping fixed ones.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from testbed.model.topology import Topology

FIRST_HOST = 10


@dataclass(frozen=True)
class AddressPlan:
    mgmt_subnet: ipaddress.IPv4Network
    host_ip: str
    mgmt: dict[str, str]
    data_subnets: dict[str, ipaddress.IPv4Network]
    data: dict[str, dict[str, str]]  # network -> node -> address
    routes: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    # node -> [(via network, destination CIDR, gateway)]

    def node_data_ips(self, node: str) -> dict[str, str]:
        return {net: members[node] for net, members in self.data.items() if node in members}

    def hosts_for(self, node: str) -> dict[str, str]:
        """Name -> address for /etc/hosts on `node`: a shared segment's address first,
        else the other node's first data address (reachable through routes, if any)."""
        mine = set(self.node_data_ips(node))
        entries: dict[str, str] = {}
        for other in self.mgmt:
            if other == node:
                continue
            theirs = self.node_data_ips(other)
            shared = [net for net in theirs if net in mine]
            if shared:
                entries[other] = theirs[shared[0]]
            elif theirs:
                entries[other] = next(iter(theirs.values()))
        return entries


def plan_addresses(topology: Topology, mgmt_subnet: str, leased_data: dict[str, str]) -> AddressPlan:
    """`leased_data` gives the subnet of every data network without a fixed one."""
    mgmt_net = ipaddress.IPv4Network(mgmt_subnet)
    hosts = list(mgmt_net.hosts())
    mgmt = {node.name: str(hosts[FIRST_HOST - 1 + i]) for i, node in enumerate(topology.nodes)}
    data_subnets: dict[str, ipaddress.IPv4Network] = {}
    data: dict[str, dict[str, str]] = {}
    for net in topology.networks:
        subnet = ipaddress.IPv4Network(net.subnet or leased_data[net.name])
        data_subnets[net.name] = subnet
        fixed = dict(net.addresses)
        taken = {ipaddress.IPv4Address(a) for a in fixed.values()}
        free = (h for h in list(subnet.hosts())[FIRST_HOST - 1 :] if h not in taken)
        assigned: dict[str, str] = {}
        for member in net.members:
            assigned[member] = fixed.get(member) or str(next(free))
        data[net.name] = assigned
    routes: dict[str, list[tuple[str, str, str]]] = {}
    for node in topology.nodes:
        for route in node.routes:
            via_net = next(n.name for n in topology.networks if node.name in n.members and route.via in n.members)
            gateway = data[via_net][route.via]
            routes.setdefault(node.name, []).append((via_net, str(data_subnets[route.to]), gateway))
    return AddressPlan(
        mgmt_subnet=mgmt_net,
        host_ip=str(hosts[0]),
        mgmt=mgmt,
        data_subnets=data_subnets,
        data=data,
        routes=routes,
    )
