"""A lab's link map — which NIC of which node is on which link or segment, with its
interface name and address — from a running lab's record or from a topology file.

`lab_map(state)` reads what the lab recorded at provisioning (`LabState.links`, the
addresses it really got); `topology_map(topo)` plans a topology without leasing anything:
networks whose subnet is leased per run show their addresses as `(leased)`. Both give
`(network, node, interface, address)` rows and a `testbed.render.netgraph.NetGraph`.
"""

from __future__ import annotations

from collections.abc import Mapping

from testbed.hypervisor.addressing import leased_networks, plan_addresses
from testbed.hypervisor.labstate import LabState
from testbed.model.images import ImageDef
from testbed.model.topology import Topology
from testbed.render.netgraph import Attachment, NetGraph

Row = tuple[str, str, str, str]
LEASED = "(leased)"
PLACEHOLDER_POOL = "198.18.0.0/15"  # benchmarking range (RFC 2544): never a lab's real subnet


def topology_map(topo: Topology) -> list[Row]:
    leased = leased_networks(topo)
    fake = {name: f"198.18.{i}.0/24" for i, name in enumerate(leased)}
    plan = plan_addresses(topo, "198.19.0.0/24", fake)
    return [
        (net, node, ifname, LEASED if net in fake and addr != "-" else addr)
        for net, node, ifname, addr in plan.link_map()
    ]


def lab_map(state: LabState) -> list[Row]:
    return [(r[0], r[1], r[2], r[3]) for r in state.links]


def graph(name: str, nodes: Mapping[str, str], rows: list[Row], catalog: Mapping[str, ImageDef]) -> NetGraph:
    """`nodes`: node name -> image name (a network-OS image draws a router)."""
    kinds = [
        (node, "router" if (img := catalog.get(image)) is not None and img.kind == "network-os" else "host")
        for node, image in nodes.items()
    ]
    return NetGraph(name, kinds, [Attachment(*row) for row in rows])
