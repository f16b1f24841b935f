"""Links as people write them: endpoints, interface names, addresses, NIC order, and every
kind of bad input named by file and field with nothing created."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.config import project_root
from testbed.errors import InputError
from testbed.hypervisor.addressing import Iface, leased_networks, nic_order, plan_addresses
from testbed.model.images import load_catalog
from testbed.model.topology import load_topology

ROOT = project_root()
CATALOG = load_catalog(ROOT / "images")
NAMES = set(CATALOG)


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def routers() -> dict[str, Any]:
    return {
        "name": "t",
        "nodes": [
            {"name": "r1", "image": "frr-router"},
            {"name": "r2", "image": "frr-router"},
            {"name": "h1"},
            {"name": "h2"},
        ],
        "links": [
            {"endpoints": ["r1:eth1", "r2:eth1"], "subnet": "10.0.12.0/30"},
            {"endpoints": ["r1:eth2", "h1:eth1", "h2"], "subnet": "10.0.1.0/24"},
        ],
    }


def load(tmp_path: Path, data: dict[str, Any], images: Any = NAMES):
    return load_topology(write(tmp_path, data), images=images, default_image="debian-12")


def test_point_to_point_and_multi_access_links_get_names_and_addresses(tmp_path: Path) -> None:
    topo = load(tmp_path, routers())
    assert [lk.name for lk in topo.links] == ["link1", "link2"]
    plan = plan_addresses(topo, "10.213.0.0/24", {})
    assert plan.data["link1"] == {"r1": "10.0.12.1", "r2": "10.0.12.2"}
    assert plan.data["link2"] == {"r1": "10.0.1.1", "h1": "10.0.1.2", "h2": "10.0.1.3"}
    assert [(i.network, i.name, i.cidr) for i in plan.ifaces["r1"]] == [
        ("link1", "eth1", "10.0.12.1/30"),
        ("link2", "eth2", "10.0.1.1/24"),
    ]
    assert plan.ifaces["h2"] == [Iface("link2", "eth1", "10.0.1.3", 24, link=True)]  # bare node: next free ethN
    assert ("link2", "h1", "eth1", "10.0.1.2/24") in plan.link_map()


def test_unaddressed_links_fixed_addresses_and_leases(tmp_path: Path) -> None:
    data = routers()
    data["links"][0] = {"endpoints": ["r1:eth1", "r2:eth1"], "addresses": "none"}
    data["links"][1]["addresses"] = {"h1:eth1": "10.0.1.50", "r1": "10.0.1.254"}
    data["links"].append({"name": "wan", "endpoints": ["r2:eth2", "h2:eth2"]})
    topo = load(tmp_path, data)
    assert leased_networks(topo) == ["wan"]  # the unaddressed link leases nothing
    plan = plan_addresses(topo, "10.213.0.0/24", {"wan": "10.213.9.0/24"})
    assert "link1" not in plan.data and "link1" not in plan.data_subnets
    assert plan.ifaces["r1"][0] == Iface("link1", "eth1", None, None, link=True)
    assert plan.data["link2"] == {"r1": "10.0.1.254", "h1": "10.0.1.50", "h2": "10.0.1.1"}
    assert plan.data["wan"] == {"r2": "10.213.9.1", "h2": "10.213.9.2"}


def test_routes_over_links_go_through_the_router_on_the_shared_link(tmp_path: Path) -> None:
    topo = load_topology(ROOT / "topologies" / "routers.yaml", images=CATALOG, default_image="debian-12")
    plan = plan_addresses(topo, "10.213.0.0/24", {})
    assert plan.routes["h1"] == [("lan1", "10.0.2.0/24", "10.0.1.1"), ("lan1", "10.0.12.0/30", "10.0.1.1")]
    assert plan.hosts_for("h1")["r1"] == "10.0.1.1"


def test_shipped_router_topologies_load_against_the_catalog() -> None:
    for name in ("routers", "routers-brownfield"):
        topo = load_topology(ROOT / "topologies" / f"{name}.yaml", images=CATALOG, default_image="debian-12")
        assert topo.links


@pytest.mark.parametrize(
    ("mutate", "field", "needle"),
    [
        (lambda d: d["links"][0]["endpoints"].__setitem__(1, "r9:eth1"), "links[0].endpoints[1]", "names no node"),
        (lambda d: d["links"][0]["endpoints"].__setitem__(0, "r1:eth 1"), "links[0].endpoints[0]", "not an interface"),
        (lambda d: d["links"][0]["endpoints"].__setitem__(0, "r1:eth0"), "links[0].endpoints[0]", "reserved"),
        (
            lambda d: d["links"][1]["endpoints"].__setitem__(0, "r1:eth1"),
            "links[1].endpoints[0]",
            "already an endpoint",
        ),
        (lambda d: d["links"][1]["endpoints"].append("h1:eth7"), "links[1].endpoints[3]", "on this link twice"),
        (lambda d: d["links"][1].update(subnet="10.0.12.0/29"), "links[1].subnet", "overlaps"),
        (
            lambda d: d.update(networks=[{"name": "lan", "members": ["h1"], "subnet": "10.0.1.128/25"}]),
            "links[1].subnet",
            "overlaps",
        ),
        (lambda d: d["links"][1].update(subnet="10.0.1.0/30"), "links[1].subnet", "2 host address(es) for 3"),
        (lambda d: d["links"][1].update(addresses={"h1": "10.9.9.9"}), "links[1].addresses.h1", "not a host address"),
        (lambda d: d["links"][1].update(addresses={"r2": "10.0.1.9"}), "links[1].addresses.r2", "not an endpoint"),
        (
            lambda d: d["links"][1].update(addresses={"h1": "10.0.1.9", "h2": "10.0.1.9"}),
            "links[1].addresses.h2",
            "also given",
        ),
        (
            lambda d: d["links"][0].update(subnet=None, addresses={"r1": "10.0.12.1"}),
            "links[0].addresses",
            "need the link's subnet",
        ),
        (
            lambda d: (
                d["links"][1].update(addresses="none")
                or d["nodes"][0].update(forward=True)
                or d["nodes"][2].update(routes=[{"to": "link1", "via": "r1"}])
            ),
            "nodes[h1].routes[0].via",
            "no address on a network",
        ),
        (lambda d: d["links"][0].update(name="Bad"), "links[Bad].name", "not a valid network name"),
        (lambda d: d["links"][0].update(subnet="10.0.12.1/32"), "links[0].subnet", "at most /31"),
        (lambda d: d["links"][0].update(endpoints=["r1:eth1"]), "links[0].endpoints", "at least 2"),
        (lambda d: d["nodes"][2].update(router={"ospf": {}}), "nodes[h1].router", "takes no starting router"),
        (
            lambda d: d["nodes"][0].update(router={"ospf": {"interfaces": ["eth9"]}}),
            "nodes[r1].router.ospf.interfaces",
            "no link interface 'eth9'",
        ),
        (
            lambda d: d["nodes"][0].update(router={"bgp": {"asn": 65001, "neighbors": [{"peer": "r2"}]}}),
            "nodes[r1].router.bgp.neighbors[0].remote_as",
            "no bgp.asn of its own",
        ),
        (
            lambda d: d["nodes"][0].update(router={"bgp": {"asn": 65001, "neighbors": [{"peer": "h9"}]}}),
            "nodes[r1].router.bgp.neighbors[0].peer",
            "neither a node nor an IPv4",
        ),
    ],
)
def test_bad_links_name_the_file_and_field(tmp_path: Path, mutate, field: str, needle: str) -> None:
    data = routers()
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(InputError) as info:
        load_topology(path, images=CATALOG, default_image="debian-12")
    assert info.value.file == str(path)
    assert info.value.field == field, info.value
    assert needle in info.value.problem


def test_a_link_named_like_a_segment_is_refused(tmp_path: Path) -> None:
    data = routers()
    data["networks"] = [{"name": "link1", "members": ["h1"]}]
    data["links"][0]["name"] = "link1"
    with pytest.raises(InputError, match="duplicate network name 'link1'"):
        load(tmp_path, data)


def test_more_nics_than_the_image_allows(tmp_path: Path) -> None:
    data = routers()
    limit = CATALOG["frr-router"].max_nics
    data["links"] = [{"endpoints": [f"r1:eth{i}", f"r2:eth{i}"], "subnet": f"10.1.{i}.0/30"} for i in range(1, limit)]
    data["links"].append({"endpoints": [f"r1:eth{limit}", "h1"], "subnet": "10.2.0.0/30"})
    with pytest.raises(InputError) as info:
        load(tmp_path, data, images=CATALOG)
    assert info.value.field == f"links[{limit - 1}].endpoints[0]"
    assert f"would have {limit + 1} NICs" in info.value.problem
    data["links"].pop()
    load(tmp_path, data, images=CATALOG)  # exactly the limit is fine


def test_lab_up_with_a_bad_link_exits_2_and_creates_nothing(tmp_path: Path, testbed_home: Path) -> None:
    data = routers()
    data["links"][1]["endpoints"][0] = "r1:eth1"
    path = write(tmp_path, data)
    proc = subprocess.run(
        [sys.executable, "-m", "testbed.cli", "lab", "up", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "TESTBED_HOME": str(testbed_home)},
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and "links[1].endpoints[0]" in proc.stderr
    assert not (testbed_home / "labs").exists() or not any((testbed_home / "labs").iterdir())
    assert not (testbed_home / "leases").exists()


def _renames_collide(order: list[Iface]) -> bool:
    """Kernel names by position (eth1.. after eth0), then every rename in every order: does
    a rename ever target a name another NIC holds at that moment?"""
    current = {i: f"eth{pos}" for pos, i in enumerate(order, start=1)}
    wanted = {i: i.name for i in order if i.name}
    for sequence in itertools.permutations(wanted):
        names = dict(current)
        for iface in sequence:
            if wanted[iface] in (n for other, n in names.items() if other is not iface):
                return True
            names[iface] = wanted[iface]
    return False


@pytest.mark.parametrize("seed", range(40))
def test_nic_order_makes_every_rename_collision_free(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(1, 5)
    pool = [f"eth{n}" for n in range(1, 8)] + ["swp1", "ge0", "wan", "lan"]
    names = rng.sample(pool, count)
    declared = [
        Iface(f"n{k}", None if rng.random() < 0.25 else name, None, None, link=True) for k, name in enumerate(names)
    ]
    order = nic_order(declared)
    assert sorted(map(id, order)) == sorted(map(id, declared))
    assert not _renames_collide(order)
    for pos, iface in enumerate(order, start=1):  # ethQ sits at Q when there are Q NICs
        if iface.name and iface.name.startswith("eth") and int(iface.name[3:]) <= len(order):
            assert iface.name == f"eth{pos}"
