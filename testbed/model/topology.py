"""Topology definitions (`topologies/NAME.yaml`).

A topology lists nodes (image, vcpus, memory, optional IP forwarding and static routes) and
L2 data segments (member nodes, optional subnet and addresses). Every node also gets a NIC on
the run's implicit management network, which is not declared here.

Bridge names are `tb<labid5>-<network>` and must fit Linux's 15 characters, so a network
name is at most `MAX_NETWORK_NAME` characters. Subnets not given are leased per run from the
host-wide pool; addresses not given are allocated in member order (.10, .11, ...).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from testbed.errors import InputError
from testbed.model.egress import EgressSpec
from testbed.model.fields import Int
from testbed.model.loading import read_yaml, validate

NODE_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
NETWORK_NAME_RE = re.compile(r"^[a-z][a-z0-9]*$")
LAB_ID_LEN = 5
BRIDGE_PREFIX_LEN = len("tb") + LAB_ID_LEN + len("-")
MAX_NETWORK_NAME = 15 - BRIDGE_PREFIX_LEN
RESERVED_NETWORK_NAMES = frozenset({"mgmt"})
MAX_NODE_MEMORY_MB = 2**20
"""Most memory one node may ask for (1 TiB)."""


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

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            net = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"'{value}' is not an IPv4 subnet: {exc}") from exc
        if net.prefixlen > 29:
            raise ValueError(f"'{value}' is too small (at most /29)")
        return str(net)

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
    egress: EgressSpec | None = None  # see testbed.model.egress; a task's or job's overrides it

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
        dup = _first_duplicate([n.name for n in self.networks])
        if dup:
            raise ValueError(f"duplicate network name '{dup}'")
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
        net_by_name = {n.name: n for n in self.networks}
        for node in self.nodes:
            for route in node.routes:
                if route.to not in net_by_name:
                    raise ValueError(f"node '{node.name}': route to undefined network '{route.to}'")
                if route.via not in node_set:
                    raise ValueError(f"node '{node.name}': route via undefined node '{route.via}'")
                shared = [n.name for n in self.networks if node.name in n.members and route.via in n.members]
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


def load_topology(
    path: Path,
    *,
    images: set[str] | None = None,
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
    images: set[str] | None = None,
    default_image: str | None = None,
    memory_budget_mb: int | None = None,
    prefix: str = "",
) -> Topology:
    """Validate an already-parsed topology (for example one inlined in a task, whose fields
    are then named after `prefix`, `topology.nodes[web].memory`)."""
    data = dict(data)
    data.setdefault("name", path.stem)
    context = {"images": images, "default_image": default_image, "memory_budget_mb": memory_budget_mb}
    topo = validate(Topology, data, path, context=context, prefix=prefix)
    if default_image:
        topo = topo.model_copy(
            update={"nodes": [n.model_copy(update={"image": n.image or default_image}) for n in topo.nodes]}
        )
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
