"""Links as people write them (netlab / containerlab style), next to a topology's segments.

    links:
      - endpoints: ["r1:eth1", "r2:eth1"]      # point-to-point
        subnet: 10.0.12.0/30
      - endpoints: ["r1:eth2", "h1:eth1", h2]  # multi-access; `h2` alone: the next free ethN
        subnet: 10.0.1.0/24
        addresses: {"h1:eth1": 10.0.1.10}      # fixed ones; the others from the subnet
      - endpoints: ["r2:eth2", "h3:eth1"]
        addresses: none                        # the agent addresses this link

Contracts:
- An endpoint is `node:ifname` or `node`; the guest's interface gets exactly `ifname` (set
  by MAC, `testbed.hypervisor.seed`). `eth0` is the management interface and is reserved.
  A bare `node` gets the lowest `ethN` (N >= 1) not named on that node, in link order.
- A link is a libvirt network of its own, named `name` (default `link1`, `link2`, … in
  order, skipping names already taken); its bridge is `tb<lab-id>-<name>`.
- Addresses: `auto` (default) hands out the subnet's hosts in endpoint order (/30 and /31
  point-to-point links get both of theirs), skipping fixed ones; a mapping fixes some (by
  endpoint or node name) and hands out the rest; `none` assigns nothing (the subnet, if
  given, is for the graph and the task). Without a subnet, `auto` leases one (/24) per run.
- `check_links` is run after the schema: every cross-reference problem is an `InputError`
  naming the file and the field (`links[1].endpoints[0]`, `links[0].subnet`, …).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from testbed.errors import InputError

NETWORK_NAME_RE = re.compile(r"^[a-z][a-z0-9]*$")
LAB_ID_LEN = 5
BRIDGE_PREFIX_LEN = len("tb") + LAB_ID_LEN + len("-")
MAX_NETWORK_NAME = 15 - BRIDGE_PREFIX_LEN
RESERVED_NETWORK_NAMES = frozenset({"mgmt"})
IFNAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")
MGMT_IFNAME = "eth0"
RESERVED_IFNAMES = frozenset({MGMT_IFNAME, "lo"})
LINK_PREFIX = "link"
_AUTO_IF = re.compile(r"^eth(\d+)$")


def network_name(value: str) -> str:
    """`value` if it can name a segment or link (it becomes part of a bridge name)."""
    if not NETWORK_NAME_RE.match(value):
        raise ValueError(f"'{value}' is not a valid network name (lowercase letters and digits)")
    if len(value) > MAX_NETWORK_NAME:
        raise ValueError(
            f"'{value}' is too long for a bridge: bridge names are "
            f"tb<lab-id>-<network> and Linux allows 15 characters, so a network name "
            f"may have at most {MAX_NETWORK_NAME} characters"
        )
    if value in RESERVED_NETWORK_NAMES:
        raise ValueError(f"'{value}' is reserved for the management network")
    return value


def ipv4_subnet(value: str | None, max_prefix: int, why: str) -> str | None:
    """`value` as a canonical IPv4 subnet no longer than /`max_prefix` (None stays None)."""
    if value is None:
        return None
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"'{value}' is not an IPv4 subnet: {exc}") from exc
    if net.prefixlen > max_prefix:
        raise ValueError(f"'{value}' {why} (at most /{max_prefix})")
    return str(net)


class NodeShape(Protocol):
    """What the checks read of a topology's node (`testbed.model.topology.NodeSpec`)."""

    @property
    def name(self) -> str: ...

    @property
    def image(self) -> str | None: ...


class SegmentShape(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def members(self) -> list[str]: ...

    @property
    def subnet(self) -> str | None: ...


class RouteShape(Protocol):
    @property
    def to(self) -> str: ...

    @property
    def via(self) -> str: ...


class RoutedNodeShape(NodeShape, Protocol):
    @property
    def routes(self) -> Sequence[RouteShape]: ...


class TopologyShape(Protocol):
    """What `check_links` reads of a `testbed.model.topology.Topology`."""

    @property
    def nodes(self) -> Sequence[RoutedNodeShape]: ...

    @property
    def networks(self) -> Sequence[SegmentShape]: ...

    @property
    def links(self) -> Sequence[LinkSpec]: ...


class LinkSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    endpoints: list[str] = Field(min_length=2)
    name: str | None = None
    subnet: str | None = None
    addresses: Literal["auto", "none"] | dict[str, str] = "auto"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else network_name(value)

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, value: str | None) -> str | None:
        return ipv4_subnet(value, 31, "holds no two hosts")

    @property
    def fixed(self) -> dict[str, str]:
        return self.addresses if isinstance(self.addresses, dict) else {}

    @property
    def addressed(self) -> bool:
        return self.addresses != "none"


@dataclass(frozen=True)
class Endpoint:
    """One end of a link on one node, its interface name resolved."""

    link: str
    index: int  # of the link in `links`
    node: str
    ifname: str
    text: str  # as written


def split_endpoint(text: str) -> tuple[str, str | None]:
    node, sep, ifname = text.partition(":")
    return node, (ifname if sep else None)


def default_link_names(links: list[dict[str, object]], taken: set[str]) -> None:
    """Give every raw link mapping without a name the next free `linkN` (in place)."""
    used = set(taken) | {str(item["name"]) for item in links if isinstance(item, dict) and item.get("name")}
    n = 0
    for item in links:
        if not isinstance(item, dict) or item.get("name"):
            continue
        n += 1
        while f"{LINK_PREFIX}{n}" in used:
            n += 1
        name = f"{LINK_PREFIX}{n}"
        item["name"] = name
        used.add(name)


def resolve_endpoints(links: Sequence[LinkSpec]) -> list[list[Endpoint]]:
    """Every link's endpoints with interface names, bare nodes given the next free ethN.
    Assumes `check_links` syntax (it is called from there too, on valid syntax only)."""
    named: dict[str, set[str]] = {}
    for link in links:
        for text in link.endpoints:
            node, ifname = split_endpoint(text)
            if ifname:
                named.setdefault(node, set()).add(ifname)
    out: list[list[Endpoint]] = []
    for i, link in enumerate(links):
        ends: list[Endpoint] = []
        for text in link.endpoints:
            node, ifname = split_endpoint(text)
            if not ifname:
                taken = named.setdefault(node, set())
                n = 1
                while f"eth{n}" in taken:
                    n += 1
                ifname = f"eth{n}"
                taken.add(ifname)
            ends.append(Endpoint(str(link.name), i, node, ifname, text))
        out.append(ends)
    return out


def link_hosts(link: LinkSpec, ends: list[Endpoint], subnet: str) -> dict[str, str]:
    """node -> address on the link (see module docstring: fixed first, then the subnet's
    hosts in endpoint order); empty when the link is not addressed."""
    if not link.addressed:
        return {}
    net = ipaddress.IPv4Network(subnet)
    fixed = {_fixed_node(key, ends): addr for key, addr in link.fixed.items()}
    taken = {ipaddress.IPv4Address(a) for a in fixed.values()}
    free = (h for h in net.hosts() if h not in taken)
    return {e.node: fixed.get(e.node) or str(next(free)) for e in ends}


def _fixed_node(key: str, ends: list[Endpoint]) -> str:
    for e in ends:
        if key in (e.text, e.node, f"{e.node}:{e.ifname}"):
            return e.node
    raise KeyError(key)


def nic_limit(image: str, limits: Mapping[str, int] | None, default: int) -> int:
    return limits.get(image, default) if limits is not None else default


def check_links(topo: TopologyShape, path: Path, nic_limits: Mapping[str, int] | None, default_limit: int) -> None:
    """Cross-check `topo.links` (see module docstring); raises `InputError`."""
    nodes = {n.name for n in topo.nodes}
    for i, link in enumerate(topo.links):
        _check_endpoint_syntax(link, i, nodes, path)
    ends = resolve_endpoints(topo.links)
    seen: dict[tuple[str, str], str] = {}
    nics = {n.name: 1 + sum(1 for net in topo.networks if n.name in net.members) for n in topo.nodes}
    images = {n.name: n.image or "" for n in topo.nodes}
    for i, (link, link_ends) in enumerate(zip(topo.links, ends, strict=True)):
        on_link: set[str] = set()
        for j, e in enumerate(link_ends):
            field = f"links[{i}].endpoints[{j}]"
            if e.node in on_link:
                raise InputError(path, field, f"node '{e.node}' is on this link twice")
            on_link.add(e.node)
            if (e.node, e.ifname) in seen:
                raise InputError(path, field, f"{e.node}:{e.ifname} is already an endpoint of {seen[e.node, e.ifname]}")
            seen[e.node, e.ifname] = f"links[{i}]"
            nics[e.node] += 1
            limit = nic_limit(images[e.node], nic_limits, default_limit)
            if nics[e.node] > limit:
                raise InputError(
                    path,
                    field,
                    f"node '{e.node}' would have {nics[e.node]} NICs (management included); "
                    f"a node of image '{images[e.node]}' can have {limit}",
                )
        _check_addresses(link, link_ends, i, path)
    _check_subnets(topo, path)
    _check_routes(topo, ends, path)


def _check_routes(topo: TopologyShape, ends: list[list[Endpoint]], path: Path) -> None:
    """A route to a link needs the link's subnet; a route via a node over links needs a link
    where that node has an address."""
    links = {str(lk.name): lk for lk in topo.links}
    addressed = {
        (str(lk.name), e.node)
        for lk, link_ends in zip(topo.links, ends, strict=True)
        if lk.addressed
        for e in link_ends
    }
    segments = {net.name: set(net.members) for net in topo.networks}
    for node in topo.nodes:
        for k, route in enumerate(node.routes):
            field = f"nodes[{node.name}].routes[{k}]"
            link = links.get(route.to)
            if link is not None and link.subnet is None and not link.addressed:
                raise InputError(path, f"{field}.to", f"link '{route.to}' has no subnet to route to")
            via_segment = any(node.name in ms and route.via in ms for ms in segments.values())
            via_link = any((name, route.via) in addressed and (name, node.name) in addressed for name in links)
            if not via_segment and not via_link:
                raise InputError(
                    path, f"{field}.via", f"'{route.via}' has no address on a network it shares with {node.name}"
                )


def _check_endpoint_syntax(link: LinkSpec, i: int, nodes: set[str], path: Path) -> None:
    for j, text in enumerate(link.endpoints):
        field = f"links[{i}].endpoints[{j}]"
        node, ifname = split_endpoint(text)
        if node not in nodes:
            raise InputError(
                path, field, f"'{text}' names no node of this topology (nodes: {', '.join(sorted(nodes))})"
            )
        if ifname is None:
            continue
        if not IFNAME_RE.match(ifname):
            raise InputError(
                path,
                field,
                f"'{ifname}' is not an interface name (a letter, then letters, digits, '_', '.' "
                "or '-'; at most 15 characters)",
            )
        if ifname in RESERVED_IFNAMES:
            raise InputError(path, field, f"'{ifname}' is reserved ({MGMT_IFNAME} is the management interface)")


def _check_addresses(link: LinkSpec, ends: list[Endpoint], i: int, path: Path) -> None:
    field = f"links[{i}].addresses"
    if link.subnet is not None and link.addressed:
        hosts = ipaddress.IPv4Network(link.subnet).num_addresses - (0 if link.subnet.endswith("/31") else 2)
        if hosts < len(ends):
            raise InputError(
                path, f"links[{i}].subnet", f"{link.subnet} has {hosts} host address(es) for {len(ends)} endpoints"
            )
    if not link.fixed:
        return
    if link.subnet is None:
        raise InputError(path, field, "fixed addresses need the link's subnet")
    net = ipaddress.IPv4Network(link.subnet)
    used: dict[str, str] = {}
    for key, addr in link.fixed.items():
        try:
            node = _fixed_node(key, ends)
        except KeyError:
            raise InputError(path, f"{field}.{key}", f"'{key}' is not an endpoint of this link") from None
        try:
            ip = ipaddress.IPv4Address(addr)
        except ValueError:
            raise InputError(path, f"{field}.{key}", f"'{addr}' is not an IPv4 address") from None
        if ip not in net or (net.prefixlen < 31 and ip in (net.network_address, net.broadcast_address)):
            raise InputError(path, f"{field}.{key}", f"{addr} is not a host address in {net}")
        if str(ip) in used:
            raise InputError(path, f"{field}.{key}", f"{addr} is also given to {used[str(ip)]}")
        used[str(ip)] = node


def _check_subnets(topo: TopologyShape, path: Path) -> None:
    """No subnet of a link overlaps another link's or a segment's."""
    given: list[tuple[str, ipaddress.IPv4Network]] = [
        (f"networks[{n.name}].subnet", ipaddress.IPv4Network(n.subnet)) for n in topo.networks if n.subnet
    ]
    for i, link in enumerate(topo.links):
        if link.subnet is None:
            continue
        mine = ipaddress.IPv4Network(link.subnet)
        for where, other in given:
            if mine.overlaps(other):
                raise InputError(path, f"links[{i}].subnet", f"{mine} overlaps {other} ({where})")
        given.append((f"links[{i}].subnet", mine))
