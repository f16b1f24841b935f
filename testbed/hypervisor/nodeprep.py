"""What a node's seed and NICs are made of, from the address plan and the node's image.

Pure functions used by `testbed.hypervisor.lab` when it prepares a node:

- `node_macs`: one leased MAC for the management NIC and for each data NIC (by network).
- `interfaces_for`: the seed's per-NIC configuration, in NIC order (management first).
  Link NICs carry their name (`ifname`); a node whose image keeps its own configuration
  file (`device.config_file`: a router) gets its link addresses there instead (the NIC is
  only brought up), and so do links the task leaves unaddressed (`addresses: none`).
- `seed_extras`: further seed files — the router's starting configuration
  (`testbed.hypervisor.frrconf`) at `device.config_file`, owned as `device.config_owner`
  says, and the agent login's key in `/etc/ssh/authorized_keys/USER` (the directory the
  image's sshd reads as `AuthorizedKeysFile`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from testbed.hypervisor.addressing import AddressPlan
from testbed.hypervisor.frrconf import frr_config
from testbed.hypervisor.seed import InterfaceConfig
from testbed.model.images import ImageDef
from testbed.model.topology import Topology

CONFIG_MODE = 0o640


def node_macs(topology: Topology, plan: AddressPlan, macs: Iterator[str]) -> dict[str, dict[str, str]]:
    """node -> {"mgmt" | network: MAC}, in topology order then NIC order."""
    return {
        node.name: {"mgmt": next(macs), **{i.network: next(macs) for i in plan.ifaces.get(node.name, [])}}
        for node in topology.nodes
    }


def keeps_own_config(image: ImageDef) -> bool:
    return image.device is not None and image.device.config_file is not None


def interfaces_for(
    topology: Topology, plan: AddressPlan, node: str, image: ImageDef, macs: dict[str, str]
) -> list[InterfaceConfig]:
    spec = topology.node(node)
    mgmt = InterfaceConfig(mac=macs["mgmt"], address=f"{plan.mgmt[node]}/{plan.mgmt_subnet.prefixlen}", name="mgmt")
    routes = plan.routes.get(node, [])
    own = keeps_own_config(image)
    out = [mgmt]
    for iface in plan.ifaces.get(node, []):
        by_kernel = iface.link and own
        out.append(
            InterfaceConfig(
                mac=macs[iface.network],
                address=None if by_kernel else iface.cidr,
                routes=[] if own else [(dest, gw) for via, dest, gw in routes if via == iface.network],
                forward=spec.forward,
                name=iface.network,
                ifname=iface.name,
                dhcp=False,
            )
        )
    return out


def seed_extras(
    topology: Topology, plan: AddressPlan, node: str, image: ImageDef, client_pub: str
) -> tuple[dict[str, tuple[bytes, int]], list[str]]:
    """(files, firstboot lines) a node's seed adds (see module docstring)."""
    files: dict[str, tuple[bytes, int]] = {}
    firstboot: list[str] = []
    device = image.device
    if device is not None and device.config_file is not None:
        path = device.config_file.lstrip("/")
        files[path] = (frr_config(topology, plan, topology.node(node)).encode(), CONFIG_MODE)
        if device.config_owner:
            firstboot.append(f"chown {device.config_owner} /{path}")
    if image.login.agent is not None:
        files[f"etc/ssh/authorized_keys/{image.login.agent.user}"] = (f"{client_pub}\n".encode(), 0o644)
    return files, firstboot


def cloud_init_ethernets(interfaces: list[InterfaceConfig]) -> dict[str, Any]:
    """netplan `ethernets` of a cloud-init seed: matched by MAC, named `ifname` or `ethN`."""
    ethernets: dict[str, Any] = {}
    for i, iface in enumerate(interfaces):
        name = iface.ifname or f"eth{i}"
        entry: dict[str, Any] = {"match": {"macaddress": iface.mac}, "set-name": name}
        if iface.address:
            entry["addresses"] = [iface.address]
        elif iface.dhcp:
            entry["dhcp4"] = True
        if iface.routes:
            entry["routes"] = [{"to": d, "via": g} for d, g in iface.routes]
        ethernets[name] = entry
    return ethernets
