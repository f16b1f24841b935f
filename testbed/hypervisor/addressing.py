"""Per-lab address plan: management addresses, data NICs and their addresses, routes, /etc/hosts.

Pure: takes the topology and the leased subnets, returns who gets which NIC and address.
The host takes `.1` of the management subnet; nodes get `.10`, `.11`, ... in topology order.
On a segment, addresses fixed by the topology are kept and the rest are handed out from
`.10` upwards in member order, skipping fixed ones. On a link, addresses follow
`testbed.model.links` (the subnet's hosts in endpoint order, fixed ones kept; none at all
for `addresses: none`).

NIC order (`ifaces`, the order of the domain's NICs and so of the kernel's `ethN` names):
the management NIC is first (`eth0`); a link interface named `ethQ` sits at position Q when
the node has that many NICs, every other data NIC (segments in topology order, then link
interfaces in link order) fills the free positions. Renaming a NIC to its link name (by MAC,
`testbed.hypervisor.seed`) then never meets a kernel name another NIC still holds: a NIC
either keeps its kernel name or takes one outside `eth0..ethK`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from testbed.model.links import link_hosts, resolve_endpoints
from testbed.model.topology import Topology

FIRST_HOST = 10
_ETH = re.compile(r"^eth(\d+)$")


@dataclass(frozen=True)
class Iface:
    """One data NIC of a node: the network (segment or link) it is on, the name the guest
    gives it (None: the kernel's, for segments) and its address (None: unaddressed)."""

    network: str
    name: str | None
    address: str | None
    prefixlen: int | None
    link: bool

    @property
    def cidr(self) -> str | None:
        return f"{self.address}/{self.prefixlen}" if self.address is not None else None


@dataclass(frozen=True)
class AddressPlan:
    mgmt_subnet: ipaddress.IPv4Network
    host_ip: str
    mgmt: dict[str, str]
    data_subnets: dict[str, ipaddress.IPv4Network]
    data: dict[str, dict[str, str]]  # network -> node -> address
    routes: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    # node -> [(via network, destination CIDR, gateway)]
    ifaces: dict[str, list[Iface]] = field(default_factory=dict)  # node -> data NICs in NIC order

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

    def link_map(self) -> list[tuple[str, str, str, str]]:
        """(network, node, interface, address) of every data NIC, by network then node
        (interface `-` for a segment's kernel-named NIC, address `-` when unaddressed)."""
        rows = [(i.network, node, i.name or "-", i.cidr or "-") for node, ifaces in self.ifaces.items() for i in ifaces]
        return sorted(rows)


def leased_networks(topology: Topology) -> list[str]:
    """Segments and addressed links without a subnet of their own: they lease one per run."""
    segs = [n.name for n in topology.networks if n.subnet is None]
    return segs + [str(lk.name) for lk in topology.links if lk.subnet is None and lk.addressed]


def plan_addresses(topology: Topology, mgmt_subnet: str, leased_data: dict[str, str]) -> AddressPlan:
    """`leased_data` gives the subnet of every network in `leased_networks(topology)`."""
    mgmt_net = ipaddress.IPv4Network(mgmt_subnet)
    hosts = list(mgmt_net.hosts())
    mgmt = {node.name: str(hosts[FIRST_HOST - 1 + i]) for i, node in enumerate(topology.nodes)}
    data_subnets: dict[str, ipaddress.IPv4Network] = {}
    data: dict[str, dict[str, str]] = {}
    declared: dict[str, list[Iface]] = {n.name: [] for n in topology.nodes}
    for net in topology.networks:
        subnet = ipaddress.IPv4Network(net.subnet or leased_data[net.name])
        data_subnets[net.name] = subnet
        fixed = dict(net.addresses)
        taken = {ipaddress.IPv4Address(a) for a in fixed.values()}
        free = (h for h in list(subnet.hosts())[FIRST_HOST - 1 :] if h not in taken)
        data[net.name] = {m: fixed.get(m) or str(next(free)) for m in net.members}
        for m in net.members:
            declared[m].append(Iface(net.name, None, data[net.name][m], subnet.prefixlen, link=False))
    for link, ends in zip(topology.links, resolve_endpoints(topology.links), strict=True):
        name = str(link.name)
        given = link.subnet or leased_data.get(name)
        link_net = ipaddress.IPv4Network(given) if given else None
        if link_net is not None:
            data_subnets[name] = link_net
        addresses = link_hosts(link, ends, str(link_net)) if link_net is not None else {}
        if addresses:
            data[name] = addresses
        for e in ends:
            prefix = link_net.prefixlen if link_net is not None and e.node in addresses else None
            declared[e.node].append(Iface(name, e.ifname, addresses.get(e.node), prefix, link=True))
    return AddressPlan(
        mgmt_subnet=mgmt_net,
        host_ip=str(hosts[0]),
        mgmt=mgmt,
        data_subnets=data_subnets,
        data=data,
        routes=_routes(topology, data, data_subnets),
        ifaces={node: nic_order(ifaces) for node, ifaces in declared.items()},
    )


def nic_order(declared: list[Iface]) -> list[Iface]:
    """Data NICs in domain order (see module docstring); position 0 is the management NIC."""
    total = len(declared)
    slots: list[Iface | None] = [None] * total
    rest: list[Iface] = []
    for iface in declared:
        m = _ETH.match(iface.name or "")
        q = int(m.group(1)) if m else 0
        if 1 <= q <= total and slots[q - 1] is None:
            slots[q - 1] = iface
        else:
            rest.append(iface)
    fill = iter(rest)
    return [slot if slot is not None else next(fill) for slot in slots]


def _routes(
    topology: Topology, data: dict[str, dict[str, str]], subnets: dict[str, ipaddress.IPv4Network]
) -> dict[str, list[tuple[str, str, str]]]:
    members = topology.members()
    routes: dict[str, list[tuple[str, str, str]]] = {}
    for node in topology.nodes:
        for route in node.routes:
            via_net = next(
                n for n, ms in members.items() if node.name in ms and route.via in ms and route.via in data.get(n, {})
            )
            gateway = data[via_net][route.via]
            routes.setdefault(node.name, []).append((via_net, str(subnets[route.to]), gateway))
    return routes
