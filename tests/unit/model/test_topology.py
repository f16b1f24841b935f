"""Topology schema: the shipped files load; every kind of bad input names file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed.errors import InputError
from testbed.hypervisor.addressing import plan_addresses
from testbed.model.topology import load_topology

ROOT = Path(__file__).resolve().parents[3]
IMAGES = {"debian-12", "ubuntu-24.04"}


def write(tmp_path: Path, data: dict, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name", ["single", "two-node", "routed"])
def test_shipped_topologies_load(name: str) -> None:
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml", images=IMAGES, default_image="debian-12")
    assert all(n.image == "debian-12" for n in topo.nodes)


def base() -> dict:
    return {
        "name": "t",
        "nodes": [{"name": "a", "memory": 512}, {"name": "b", "memory": 512}],
        "networks": [{"name": "lan", "members": ["a", "b"]}],
    }


@pytest.mark.parametrize(
    ("mutate", "field", "needle"),
    [
        (lambda d: d["nodes"][0].update(image="nope"), None, "unknown image 'nope'"),
        (lambda d: d["networks"][0]["members"].append("ghost"), None, "undefined node 'ghost'"),
        (lambda d: d["nodes"].append({"name": "a"}), None, "duplicate node name 'a'"),
        (lambda d: d["networks"].append({"name": "lan", "members": ["a"]}), None, "duplicate network name"),
        (lambda d: d["networks"][0].update(name="backbone1"), "networks[backbone1].name", "too long for a bridge"),
        (lambda d: d["nodes"][0].update(memory=10**6), None, "beyond the host budget"),
        (lambda d: d["nodes"][0].update(memroy=5), "nodes[a].memroy", "unknown field"),
        (lambda d: d["nodes"][0].update(name="Bad_Name"), "nodes[Bad_Name].name", "not a valid node name"),
        (lambda d: d["networks"][0].update(subnet="10.0.0.0/33"), "networks[lan].subnet", "not an IPv4 subnet"),
        (
            lambda d: (
                d["networks"].append({"name": "lan2", "members": ["a"], "subnet": "10.1.0.0/24"})
                or d["networks"][0].update(subnet="10.1.0.0/16")
            ),
            None,
            "overlap",
        ),
        (lambda d: d["nodes"][0].update(routes=[{"to": "lan", "via": "b"}]), None, "does not set forward"),
        (
            lambda d: d["networks"][0].update(subnet="10.9.0.0/24", addresses={"a": "10.8.0.1"}),
            "networks[lan]",
            "not a host address",
        ),
    ],
)
def test_bad_topologies_name_the_field(tmp_path: Path, mutate, field: str | None, needle: str) -> None:
    data = base()
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(InputError) as info:
        load_topology(path, images=IMAGES, default_image="debian-12", memory_budget_mb=4096)
    err = info.value
    assert err.file == str(path)
    assert needle in err.problem
    if field:
        assert err.field == field


def test_duplicate_yaml_keys_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("name: x\nname: y\nnodes: [{name: a}]\n")
    with pytest.raises(InputError, match="duplicate key 'name'"):
        load_topology(path, images=IMAGES, default_image="debian-12")


def test_lab_up_with_bad_topology_exits_2_and_creates_nothing(tmp_path: Path, testbed_home: Path) -> None:
    import subprocess
    import sys

    from testbed.cli import main  # noqa: F401 - import check

    data = base()
    data["networks"][0]["members"].append("ghost")
    path = write(tmp_path, data)
    proc = subprocess.run(
        [sys.executable, "-m", "testbed.cli", "lab", "up", str(path)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "TESTBED_HOME": str(testbed_home)},
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and "ghost" in proc.stderr
    assert not (testbed_home / "labs").exists() or not any((testbed_home / "labs").iterdir())
    assert not (testbed_home / "leases").exists()


def test_address_plan_routed() -> None:
    topo = load_topology(ROOT / "topologies" / "routed.yaml", images=IMAGES, default_image="debian-12")
    plan = plan_addresses(topo, "10.213.7.0/24", {"front": "10.213.8.0/24", "back": "10.213.9.0/24"})
    assert plan.host_ip == "10.213.7.1"
    assert plan.mgmt == {"client": "10.213.7.10", "router": "10.213.7.11", "server": "10.213.7.12"}
    assert plan.data["front"] == {"client": "10.213.8.10", "router": "10.213.8.11"}
    assert plan.routes["client"] == [("front", "10.213.9.0/24", "10.213.8.11")]
    assert plan.routes["server"] == [("back", "10.213.8.0/24", "10.213.9.10")]
    # client resolves server by its address on the far segment, router by the shared one
    assert plan.hosts_for("client") == {"router": "10.213.8.11", "server": "10.213.9.11"}


def test_fixed_addresses_are_kept_and_skipped(tmp_path: Path) -> None:
    data = base()
    data["networks"][0].update(subnet="192.0.2.0/24", addresses={"b": "192.0.2.10"})
    topo = load_topology(write(tmp_path, data), images=IMAGES, default_image="debian-12")
    plan = plan_addresses(topo, "10.213.0.0/24", {})
    assert plan.data["lan"] == {"a": "192.0.2.11", "b": "192.0.2.10"}
