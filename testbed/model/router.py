"""A router node's starting configuration, written in its topology (a brownfield network).

    nodes:
      - name: r1
        image: frr-router
        router:
          interfaces: true            # interface stanzas with the links' addresses (default)
          ospf: {router_id: 10.255.0.1, area: 0, interfaces: [eth1, eth2], passive: [eth2]}
          bgp:
            asn: 65001
            neighbors: [{peer: r2}]   # a node (its address on a link both share) or an IPv4
            networks: [lan1]          # prefixes, or link names (their subnets)

Contracts: the configuration is rendered in the device's syntax by the lab (for FRR:
`testbed.hypervisor.frrconf`) into the image's `device.config_file`, so the device starts
from it and `show running-config` shows it. `check_router` runs after `check_links`:
every reference (an interface the node does not have, a peer that shares no addressed link,
a missing remote AS) is an `InputError` naming the file and the field.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from testbed.errors import InputError
from testbed.model.links import Endpoint, LinkSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _ipv4(value: str) -> str:
    try:
        ipaddress.IPv4Address(value)
    except ValueError as exc:
        raise ValueError(f"'{value}' is not an IPv4 address") from exc
    return value


RouterId = Annotated[str, AfterValidator(_ipv4)]


class OspfSpec(_Strict):
    router_id: RouterId | None = None
    area: str = "0"
    interfaces: list[str] | None = None  # None: every link interface of the node
    passive: list[str] = []

    @field_validator("area", mode="before")
    @classmethod
    def _area(cls, value: object) -> str:
        text = str(value)
        if text.isdigit() and int(text) < 2**32:
            return text
        try:
            ipaddress.IPv4Address(text)
        except ValueError as exc:
            raise ValueError(f"'{value}' is not an OSPF area (a number or dotted quad)") from exc
        return text


class BgpNeighborSpec(_Strict):
    peer: str
    remote_as: int | None = Field(default=None, ge=1, le=4294967295)


class BgpSpec(_Strict):
    asn: int = Field(ge=1, le=4294967295)
    router_id: RouterId | None = None
    neighbors: list[BgpNeighborSpec] = []
    networks: list[str] = []


class RouterSpec(_Strict):
    interfaces: bool = True
    ospf: OspfSpec | None = None
    bgp: BgpSpec | None = None


class RouterNodeShape(Protocol):
    """What `check_router` reads of a topology's node."""

    @property
    def name(self) -> str: ...

    @property
    def image(self) -> str | None: ...

    @property
    def router(self) -> RouterSpec | None: ...


class RouterTopologyShape(Protocol):
    @property
    def nodes(self) -> Sequence[RouterNodeShape]: ...

    @property
    def links(self) -> Sequence[LinkSpec]: ...


def check_router(
    topo: RouterTopologyShape, path: Path, ends: list[list[Endpoint]], configurable: Mapping[str, bool] | None
) -> None:
    """Cross-check every node's `router` block (see module docstring)."""
    by_node: dict[str, list[Endpoint]] = {}
    for link_ends in ends:
        for e in link_ends:
            by_node.setdefault(e.node, []).append(e)
    for node in topo.nodes:
        if node.router is None:
            continue
        where = f"nodes[{node.name}].router"
        if configurable is not None and not configurable.get(node.image or "", False):
            raise InputError(path, where, f"image '{node.image}' takes no starting router configuration")
        ifnames = [e.ifname for e in by_node.get(node.name, [])]
        ospf = node.router.ospf
        if ospf is not None:
            for key, names in (("interfaces", ospf.interfaces or []), ("passive", ospf.passive)):
                for name in names:
                    if name not in ifnames:
                        raise InputError(
                            path,
                            f"{where}.ospf.{key}",
                            f"{node.name} has no link interface '{name}' (it has: {', '.join(ifnames) or 'none'})",
                        )
        if node.router.bgp is not None:
            _check_bgp(topo, node, node.router.bgp, f"{where}.bgp", ends, path)


def _check_bgp(
    topo: RouterTopologyShape, node: RouterNodeShape, bgp: BgpSpec, where: str, ends: list[list[Endpoint]], path: Path
) -> None:
    links = {link.name for link in topo.links}
    for k, net in enumerate(bgp.networks):
        if net in links:
            link = next(lk for lk in topo.links if lk.name == net)
            if link.subnet is None:
                raise InputError(path, f"{where}.networks[{k}]", f"link '{net}' has no subnet to announce")
            continue
        try:
            ipaddress.IPv4Network(net, strict=True)
        except ValueError:
            raise InputError(path, f"{where}.networks[{k}]", f"'{net}' is neither a prefix nor a link name") from None
    nodes = {n.name: n for n in topo.nodes}
    for k, nb in enumerate(bgp.neighbors):
        field = f"{where}.neighbors[{k}]"
        if nb.peer in nodes:
            if not shared_addressed_link(topo, ends, node.name, nb.peer):
                raise InputError(path, f"{field}.peer", f"{node.name} shares no addressed link with '{nb.peer}'")
            peer_router = nodes[nb.peer].router
            peer_bgp = peer_router.bgp if peer_router is not None else None
            if nb.remote_as is None and peer_bgp is None:
                raise InputError(path, f"{field}.remote_as", f"'{nb.peer}' has no bgp.asn of its own: give remote_as")
            continue
        try:
            ipaddress.IPv4Address(nb.peer)
        except ValueError:
            raise InputError(path, f"{field}.peer", f"'{nb.peer}' is neither a node nor an IPv4 address") from None
        if nb.remote_as is None:
            raise InputError(path, f"{field}.remote_as", "a neighbor given by address needs remote_as")


def shared_addressed_link(topo: RouterTopologyShape, ends: list[list[Endpoint]], a: str, b: str) -> str | None:
    """The first addressed link both nodes are on, or None."""
    for link, link_ends in zip(topo.links, ends, strict=True):
        names = {e.node for e in link_ends}
        if a in names and b in names and link.addressed:
            return str(link.name)
    return None
