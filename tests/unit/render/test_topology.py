"""`testbed.render.topology`: the lab as a picture from a recorded topology."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from testbed.model.task_record import task_record
from testbed.model.taskload import load_task
from testbed.render.topology import topology_svg
from tests.conftest import ROOT

NS = {"s": "http://www.w3.org/2000/svg"}


def test_nodes_segments_and_members() -> None:
    topo = {
        "name": "routed",
        "nodes": [{"name": "client", "image": "debian-12", "vcpus": 1, "memory": 512},
                  {"name": "router", "image": "debian-12", "vcpus": 1, "memory": 512, "forward": True},
                  {"name": "a-server-with-a-rather-long-name", "image": "ubuntu-24.04", "vcpus": 2, "memory": 1024}],
        "networks": [{"name": "left", "members": ["client", "router"], "subnet": "10.1.0.0/24"},
                     {"name": "right", "members": ["router", "a-server-with-a-rather-long-name"], "subnet": None}],
    }  # fmt: skip
    root = ET.fromstring(str(topology_svg(topo)))
    nodes = root.findall("s:g[@class='node']", NS)
    segments = root.findall("s:g[@class='segment']", NS)
    assert len(nodes) == 3 and len(segments) == 2
    texts = ["".join(t.itertext()) for t in root.iterfind(".//s:text", NS)]
    assert "a-server-with-a-rather-long-name" in texts and "1 vCPU · 512 MiB · routes" in texts
    assert "left 10.1.0.0/24" in texts and "right" in texts and "management (harness SSH)" in texts
    assert [len(s.findall("s:circle", NS)) for s in segments] == [2, 2]  # a dot per member
    box = float(nodes[2].find("s:rect", NS).get("width"))  # type: ignore[union-attr]
    assert box >= len("a-server-with-a-rather-long-name") * 7  # the box grows with its text


def test_recorded_task_topology_and_odd_input() -> None:
    record = task_record(load_task(ROOT / "tasks" / "reverse-proxy", root=ROOT))
    root = ET.fromstring(str(topology_svg(record["topology"])))
    assert len(root.findall("s:g[@class='node']", NS)) == len(record["topology"]["nodes"])
    assert "no topology" in str(topology_svg(None)) and "no topology" in str(topology_svg({"nodes": []}))
    odd = str(topology_svg({"nodes": [{"name": "<x>"}], "networks": [{"name": "n", "members": ["ghost"]}]}))
    assert "&lt;x&gt;" in odd and ET.fromstring(odd) is not None
