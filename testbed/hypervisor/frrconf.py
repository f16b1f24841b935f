"""A router node's starting configuration in FRR's syntax (`/etc/frr/frr.conf`).

Made from the topology (`testbed.model.router.RouterSpec`) and the lab's address plan:
hostname; the node's static `routes`; one `interface` stanza per link interface (a
description naming the far ends, the link's address when the link is addressed, the OSPF
area of OSPF interfaces) unless `router.interfaces` is false; `router ospf` (router id,
passive interfaces); `router bgp` (router id, neighbours by the peer's address on the link
they share, the AS of the peer node unless given, announced networks). Written the way
`write memory` writes it (one-space indentation, `exit` closing blocks), so the saved and
the running configuration of a fresh node read alike. Without a `router` block, a node of
a configurable image still gets its hostname and interface stanzas.
"""

from __future__ import annotations

from testbed.hypervisor.addressing import AddressPlan, Iface
from testbed.model.router import BgpSpec, OspfSpec, RouterSpec
from testbed.model.topology import NodeSpec, Topology

HEADER = ("frr defaults traditional", "log syslog informational", "service integrated-vtysh-config")


def frr_config(topology: Topology, plan: AddressPlan, node: NodeSpec) -> str:
    """The text of `node`'s frr.conf (see module docstring)."""
    spec = node.router or RouterSpec()
    lines = [*HEADER[:1], f"hostname {node.name}", *HEADER[1:], "!"]
    routes = [f"ip route {dest} {gateway}" for _via, dest, gateway in plan.routes.get(node.name, [])]
    if routes:
        lines += [*routes, "!"]
    links = [i for i in plan.ifaces.get(node.name, []) if i.link and i.name]
    if spec.interfaces:
        for iface in links:
            lines += _interface(topology, plan, node.name, iface, spec.ospf)
    if spec.ospf is not None:
        lines += _ospf(spec.ospf)
    if spec.bgp is not None:
        lines += _bgp(topology, plan, node.name, spec.bgp)
    return "\n".join(lines) + "\n"


def _far_ends(plan: AddressPlan, node: str, network: str) -> list[str]:
    return [
        f"{other}:{i.name}"
        for other, ifaces in sorted(plan.ifaces.items())
        for i in ifaces
        if other != node and i.network == network and i.name
    ]


def _ospf_member(ospf: OspfSpec | None, iface: Iface) -> bool:
    if ospf is None or iface.address is None:
        return False
    return ospf.interfaces is None or iface.name in ospf.interfaces


def _interface(topology: Topology, plan: AddressPlan, node: str, iface: Iface, ospf: OspfSpec | None) -> list[str]:
    far = _far_ends(plan, node, iface.network)
    out = [f"interface {iface.name}", f" description {iface.network} to {', '.join(far) or 'nothing'}"]
    if iface.cidr is not None:
        out.append(f" ip address {iface.cidr}")
    if _ospf_member(ospf, iface):
        assert ospf is not None
        out.append(f" ip ospf area {ospf.area}")
    return [*out, "exit", "!"]


def _ospf(ospf: OspfSpec) -> list[str]:
    out = ["router ospf"]
    if ospf.router_id:
        out.append(f" ospf router-id {ospf.router_id}")
    out += [f" passive-interface {name}" for name in ospf.passive]
    return [*out, "exit", "!"]


def _bgp(topology: Topology, plan: AddressPlan, node: str, bgp: BgpSpec) -> list[str]:
    out = [f"router bgp {bgp.asn}"]
    if bgp.router_id:
        out.append(f" bgp router-id {bgp.router_id}")
    out.append(" no bgp ebgp-requires-policy")
    peers = {n.name: n for n in topology.nodes}
    for nb in bgp.neighbors:
        address, remote_as = nb.peer, nb.remote_as
        if nb.peer in peers:
            address = _peer_address(plan, node, nb.peer)
            peer_router = peers[nb.peer].router
            if remote_as is None and peer_router is not None and peer_router.bgp is not None:
                remote_as = peer_router.bgp.asn
        out.append(f" neighbor {address} remote-as {remote_as}")
    if bgp.networks:
        subnets = {name: str(net) for name, net in plan.data_subnets.items()}
        out += [" !", " address-family ipv4 unicast"]
        out += [f"  network {subnets.get(net, net)}" for net in bgp.networks]
        out.append(" exit-address-family")
    return [*out, "exit", "!"]


def _peer_address(plan: AddressPlan, node: str, peer: str) -> str:
    """`peer`'s address on the first addressed network both nodes are on."""
    for members in plan.data.values():
        if node in members and peer in members:
            return members[peer]
    raise KeyError(f"{node} and {peer} share no addressed network")
