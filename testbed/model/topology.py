"""Topology definitions (`topologies/NAME.yaml`).

A topology lists nodes (image, vcpus, memory, optional IP forwarding and static routes, a
router's starting configuration), L2 data segments (member nodes, optional subnet and
addresses) and links as people write them (`links`: endpoints `node:ifname`, a subnet;
`testbed.model.links`). Every node also gets a NIC on the run's implicit management
network, which is not declared here. A route's `to` names a segment or a link.

Bridge names are `tb<labid5>-<network>` and must fit Linux's 15 characters, so a network
name is at most `MAX_NETWORK_NAME` characters. Subnets not given are leased per run from the
host-wide pool; addresses not given are allocated in member order (.10, .11, ...).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from testbed.errors import InputError
from testbed.model.egress import EgressSpec
from testbed.model.fields import Int
from testbed.model.images import MAX_NICS, ImageDef
from testbed.model.links import (
    BRIDGE_PREFIX_LEN,
    LAB_ID_LEN,
    MAX_NETWORK_NAME,
    NETWORK_NAME_RE,
    RESERVED_NETWORK_NAMES,
    LinkSpec,
    check_links,
    default_link_names,
    ipv4_subnet,
    network_name,
    resolve_endpoints,
    split_endpoint,
)
from testbed.model.loading import read_yaml, validate
from testbed.model.router import RouterSpec, check_router

NODE_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
MAX_NODE_MEMORY_MB = 2**20
"""Most memory one node may ask for (1 TiB)."""
__all__ = [
    "BRIDGE_PREFIX_LEN",
    "LAB_ID_LEN",
    "MAX_NETWORK_NAME",
    "MAX_NODE_MEMORY_MB",
    "NETWORK_NAME_RE",
    "RESERVED_NETWORK_NAMES",
    "LinkSpec",
    "NetworkSpec",
    "NodeSpec",
    "Route",
    "Topology",
    "load_topology",
    "resolve_topology_path",
    "topology_from_data",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Route(_Strict):
    """Reach network `to` (a segment name of this topology) through node `via`."""

    to: str
    via: str


class NodeSpec(_Strict):
    name: str
    image: str | None = None
    vcpus: Int = Field(default=1, ge=1, le=64)
    memory: Int = Field(default=640, ge=128, le=MAX_NODE_MEMORY_MB, description="MiB")
    forward: bool = False
    routes: list[Route] = []
    router: RouterSpec | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NODE_NAME_RE.match(value):
            raise ValueError(
                f"'{value}' is not a valid node name (lowercase letter first, then letters, "
                "digits or '-', at most 31 characters)"
            )
        return value


class NetworkSpec(_Strict):
    name: str
    members: list[str] = Field(min_length=1)
    subnet: str | None = None
    addresses: dict[str, str] = {}

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return network_name(value)

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, value: str | None) -> str | None:
        return ipv4_subnet(value, 29, "is too small")

    @model_validator(mode="after")
    def _members_and_addresses(self) -> NetworkSpec:
        seen: set[str] = set()
        for member in self.members:
            if member in seen:
                raise ValueError(f"node '{member}' is listed twice in members")
            seen.add(member)
        for node, addr in self.addresses.items():
            if node not in seen:
                raise ValueError(f"addresses: '{node}' is not a member of network '{self.name}'")
            if self.subnet is None:
                raise ValueError("addresses need an explicit subnet")
            try:
                ip = ipaddress.IPv4Address(addr)
            except ValueError as exc:
                raise ValueError(f"addresses.{node}: '{addr}' is not an IPv4 address") from exc
            net = ipaddress.IPv4Network(self.subnet)
            if ip not in net or ip in (net.network_address, net.broadcast_address):
                raise ValueError(f"addresses.{node}: {addr} is not a host address in {net}")
        return self


class Topology(_Strict):
    name: str
    description: str = ""
    nodes: list[NodeSpec] = Field(min_length=1)
    networks: list[NetworkSpec] = []
    links: list[LinkSpec] = []
    egress: EgressSpec | None = None  # see testbed.model.egress; a task's or job's overrides it

    @model_validator(mode="before")
    @classmethod
    def _link_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("links"), list):
            data = dict(data)
            data["links"] = [dict(x) if isinstance(x, dict) else x for x in data["links"]]
            nets = data.get("networks")
            taken = {str(n.get("name")) for n in nets if isinstance(n, dict)} if isinstance(nets, list) else set()
            default_link_names(data["links"], taken)
        return data

    def members(self) -> dict[str, list[str]]:
        """Segment or link name -> its nodes (link endpoints' nodes, in endpoint order)."""
        out = {n.name: list(n.members) for n in self.networks}
        for link in self.links:
            out[str(link.name)] = [split_endpoint(e)[0] for e in link.endpoints]
        return out

    def node(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def total_memory_mb(self) -> int:
        return sum(n.memory for n in self.nodes)

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> Topology:
        ctx: dict[str, Any] = info.context or {}
        names = [n.name for n in self.nodes]
        dup = _first_duplicate(names)
        if dup:
            raise ValueError(f"duplicate node name '{dup}'")
        dup = _first_duplicate([n.name for n in self.networks] + [str(link.name) for link in self.links])
        if dup:
            raise ValueError(f"duplicate network name '{dup}' (segments and links share one namespace)")
        known_images: set[str] | None = ctx.get("images")
        default_image: str | None = ctx.get("default_image")
        for node in self.nodes:
            image = node.image or default_image
            if image is None:
                raise ValueError(f"node '{node.name}' has no image and no default image was given")
            if known_images is not None and image not in known_images:
                raise ValueError(
                    f"node '{node.name}': unknown image '{image}' (known: {', '.join(sorted(known_images)) or 'none'})"
                )
        node_set = set(names)
        for net in self.networks:
            for member in net.members:
                if member not in node_set:
                    raise ValueError(f"network '{net.name}': undefined node '{member}'")
        subnets = [(net.name, ipaddress.IPv4Network(net.subnet)) for net in self.networks if net.subnet]
        for i, (name_a, a) in enumerate(subnets):
            for name_b, b in subnets[i + 1 :]:
                if a.overlaps(b):
                    raise ValueError(f"subnets of networks '{name_a}' ({a}) and '{name_b}' ({b}) overlap")
        members = self.members()
        for node in self.nodes:
            for route in node.routes:
                if route.to not in members:
                    raise ValueError(f"node '{node.name}': route to undefined network '{route.to}'")
                if route.via not in node_set:
                    raise ValueError(f"node '{node.name}': route via undefined node '{route.via}'")
                shared = [n for n, ms in members.items() if node.name in ms and route.via in ms]
                if not shared:
                    raise ValueError(f"node '{node.name}': route via '{route.via}', which shares no network with it")
                if not self.node(route.via).forward:
                    raise ValueError(f"node '{node.name}': route via '{route.via}', which does not set forward: true")
        budget: int | None = ctx.get("memory_budget_mb")
        if budget is not None and self.total_memory_mb > budget:
            raise ValueError(
                f"nodes need {self.total_memory_mb} MiB of memory in all, beyond the host "
                f"budget of {budget} MiB (set TESTBED_MEMORY_BUDGET_MB or shrink the nodes)"
            )
        return self


def _first_duplicate(items: list[str]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


ImageSet = set[str] | Mapping[str, ImageDef]
"""Known images: names, or the catalog itself (then each image's NIC limit and whether it
takes a starting router configuration are checked too)."""


def load_topology(
    path: Path,
    *,
    images: ImageSet | None = None,
    default_image: str | None = None,
    memory_budget_mb: int | None = None,
) -> Topology:
    """Load and validate a topology file; every problem is an `InputError` naming the field."""
    return topology_from_data(
        read_yaml(path),
        path,
        images=images,
        default_image=default_image,
        memory_budget_mb=memory_budget_mb,
    )


def topology_from_data(
    data: dict[str, Any],
    path: Path,
    *,
    images: ImageSet | None = None,
    default_image: str | None = None,
    memory_budget_mb: int | None = None,
    prefix: str = "",
) -> Topology:
    """Validate an already-parsed topology (for example one inlined in a task, whose fields
    are then named after `prefix`, `topology.nodes[web].memory`)."""
    data = dict(data)
    data.setdefault("name", path.stem)
    names = set(images) if images is not None else None
    context = {"images": names, "default_image": default_image, "memory_budget_mb": memory_budget_mb}
    topo = validate(Topology, data, path, context=context, prefix=prefix)
    if default_image:
        topo = topo.model_copy(
            update={"nodes": [n.model_copy(update={"image": n.image or default_image}) for n in topo.nodes]}
        )
    catalog = images if isinstance(images, Mapping) else None
    limits = {name: image.max_nics for name, image in catalog.items()} if catalog is not None else None
    check_links(topo, path, limits, MAX_NICS)
    configurable = (
        {name: bool(image.device and image.device.config_file) for name, image in catalog.items()}
        if catalog is not None
        else None
    )
    check_router(topo, path, resolve_endpoints(topo.links), configurable)
    return topo


def resolve_topology_path(spec: str, root: Path) -> Path:
    """Accept a path, or a bare name looked up as `topologies/NAME.yaml` under `root`."""
    candidate = Path(spec)
    if candidate.exists():
        return candidate
    named = root / "topologies" / f"{spec}.yaml"
    if named.exists():
        return named
    raise InputError(spec, None, f"no such topology file (nor {named})")
