"""A node's seed of either kind: the cloud-init ISO says what testbed's tar says
(hostname, /etc/hosts, forwarding), read back from the ISO."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import asyncssh
import yaml

from testbed.config import project_root
from testbed.hypervisor.addressing import plan_addresses
from testbed.hypervisor.nodeprep import interfaces_for, node_macs
from testbed.hypervisor.nodeseed import SeedInputs, seed_file, write_node_seed
from testbed.hypervisor.seed import FORWARD_NOW, forward_files
from testbed.model.images import load_catalog
from testbed.model.topology import NetworkSpec, NodeSpec, Topology
from tests.unit.images.test_cloudinit import read_iso

CATALOG = load_catalog(project_root() / "images")
MACS = iter(f"52:54:00:00:01:{i:02x}" for i in range(1, 60))


def _cloud_seed(tmp_path: Path, node: str) -> dict[str, Any]:
    topo = Topology(
        name="cloudgw",
        nodes=[
            NodeSpec(name="gw", image="debian-13-cloud", forward=True),
            NodeSpec(name="web", image="debian-13-cloud"),
        ],
        networks=[NetworkSpec(name="lan", members=["gw", "web"])],
    )
    plan = plan_addresses(topo, "10.214.0.0/24", {"lan": "10.214.1.0/24"})
    macs = node_macs(topo, plan, MACS)
    image = CATALOG["debian-13-cloud"]
    seed = seed_file(tmp_path, node, image)
    assert seed is not None and seed.kind == "iso"
    inputs = SeedInputs(
        lab_id="lab1",
        node=node,
        interfaces=interfaces_for(topo, plan, node, image, macs[node]),
        host_key=asyncssh.generate_private_key("ssh-ed25519"),
        client_pub="ssh-ed25519 AAAAC3Nz testbed-harness",
    )
    write_node_seed(seed, topo, plan, image, inputs)
    _, files = read_iso(seed.path)
    data: dict[str, Any] = yaml.safe_load(files["user-data"])
    return data


def _written(user: dict[str, Any]) -> dict[str, tuple[bytes, str]]:
    return {f["path"]: (base64.b64decode(f["content"]), f["permissions"]) for f in user.get("write_files", [])}


def test_a_forwarding_cloud_node_forwards_now_and_after_a_reboot(tmp_path: Path) -> None:
    user = _cloud_seed(tmp_path, "gw")
    written = _written(user)
    for path, (content, mode) in forward_files().items():
        assert written["/" + path] == (content, f"0{mode:03o}")
    assert user["bootcmd"] == [FORWARD_NOW]
    hosts = written["/etc/hosts"][0].decode()
    assert "127.0.1.1\tgw\n" in hosts and "\tweb\n" in hosts
    assert user["manage_etc_hosts"] is False


def test_a_cloud_host_gets_the_lab_hosts_and_no_forwarding(tmp_path: Path) -> None:
    user = _cloud_seed(tmp_path, "web")
    written = _written(user)
    assert set(written) == {"/etc/hosts"}
    assert "\tgw\n" in written["/etc/hosts"][0].decode()
    assert "bootcmd" not in user and "runcmd" not in user
