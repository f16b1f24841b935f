"""A node's seed, written among the lab's files: what the guest configures itself from on
first boot.

- `login.provision == "seed"`: testbed's tar (`testbed.hypervisor.seed`), handed to the
  guest as the fw_cfg entry `FWCFG_NAME`: hostname, keys, interfaces, hosts, forwarding and
  the extra files of `testbed.hypervisor.nodeprep.seed_extras`.
- `"cloud-init"`: a NoCloud ISO (`testbed.images.cloudinit`) attached as a CD-ROM, with
  the same hostname, keys, interfaces (netplan v2), /etc/hosts, extra files and forwarding
  files; forwarding is also switched on by a `bootcmd` on the first boot (cloud-init writes
  its files after systemd-sysctl and networkd have read theirs), and the `seed_extras`
  firstboot lines run as its `runcmd`.
- anything else (a console-managed image): no seed (`None`).

`seed_file` names the file (and its kind) so the lab can record it before it exists;
`write_node_seed` writes it locally (blocking: call it in a thread); the lab uploads it to
a remote lab host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import asyncssh

from testbed.guest.ssh import public_key_line
from testbed.hypervisor.addressing import AddressPlan
from testbed.hypervisor.nodeprep import cloud_init_ethernets, seed_extras
from testbed.hypervisor.seed import (
    FORWARD_NOW,
    InterfaceConfig,
    SeedSpec,
    forward_files,
    hosts_file,
    write_seed,
)
from testbed.model.images import ImageDef
from testbed.model.topology import Topology


@dataclass(frozen=True)
class NodeSeed:
    """A seed file written for a node: `fwcfg` (testbed's tar) or `iso` (cloud-init)."""

    path: Path
    kind: Literal["fwcfg", "iso"]


@dataclass(frozen=True)
class SeedInputs:
    """What every kind of seed is made of."""

    lab_id: str
    node: str
    interfaces: list[InterfaceConfig]
    host_key: asyncssh.SSHKey
    client_pub: str


def seed_file(lab_dir: Path, node: str, image: ImageDef) -> NodeSeed | None:
    """The seed file `image` is provisioned from, under `lab_dir`; None when it takes none."""
    if image.login.provision == "seed":
        return NodeSeed(lab_dir / f"{node}.seed.tar", "fwcfg")
    if image.login.provision == "cloud-init":
        return NodeSeed(lab_dir / f"{node}.seed.iso", "iso")
    return None


def write_node_seed(seed: NodeSeed, topology: Topology, plan: AddressPlan, image: ImageDef, inputs: SeedInputs) -> None:
    """Write `seed` (from `seed_file`) for node `inputs.node`."""
    if seed.kind == "fwcfg":
        _fwcfg_seed(seed.path, topology, plan, image, inputs)
    else:
        _cloud_init_seed(seed.path, topology, plan, image, inputs)


def _fwcfg_seed(seed_path: Path, topology: Topology, plan: AddressPlan, image: ImageDef, inputs: SeedInputs) -> None:
    node, host_key = inputs.node, inputs.host_key
    files, firstboot = seed_extras(topology, plan, node, image, inputs.client_pub)
    write_seed(
        SeedSpec(
            hostname=node,
            authorized_keys=[inputs.client_pub],
            host_key_private=host_key.export_private_key("openssh").decode(),
            host_key_public=public_key_line(host_key, f"{node}@testbed") + "\n",
            interfaces=inputs.interfaces,
            hosts=plan.hosts_for(node),
            forward=topology.node(node).forward,
            files=files,
            firstboot=firstboot,
        ),
        seed_path,
    )


def _cloud_init_seed(
    iso_path: Path, topology: Topology, plan: AddressPlan, image: ImageDef, inputs: SeedInputs
) -> None:
    from testbed.images.cloudinit import NoCloudExtras, make_nocloud_seed

    node, host_key = inputs.node, inputs.host_key
    host_priv = host_key.export_private_key("openssh").decode()
    files, firstboot = seed_extras(topology, plan, node, image, inputs.client_pub)
    forward = topology.node(node).forward
    if forward:
        files = {**forward_files(), **files}
    extras = NoCloudExtras(
        etc_hosts=hosts_file(node, plan.hosts_for(node)),
        files=files,
        bootcmd=[FORWARD_NOW] if forward else [],
        runcmd=firstboot,
    )
    make_nocloud_seed(
        iso_path,
        hostname=node,
        instance_id=f"{inputs.lab_id}-{node}",
        authorized_keys=[inputs.client_pub],
        host_keys={"ed25519": (host_priv, public_key_line(host_key))},
        network_config={"version": 2, "ethernets": cloud_init_ethernets(inputs.interfaces)},
        user=image.login.user,
        extras=extras,
    )
