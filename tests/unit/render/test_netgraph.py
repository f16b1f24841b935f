"""The link map as Graphviz dot and SVG, and `testbed lab graph` on topologies."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from typer.testing import CliRunner

from testbed.cli import app
from testbed.errors import InputError
from testbed.render.netgraph import Attachment, NetGraph, to_dot, to_svg

ROOT = Path(__file__).resolve().parents[3]
SVG = "{http://www.w3.org/2000/svg}"
GRAPH = NetGraph(
    "lab",
    [("r1", "router"), ("r2", "router"), ("h1", "host"), ("h2", "host")],
    [
        Attachment("core", "r1", "eth1", "10.0.12.1/30"),
        Attachment("core", "r2", "eth1", "10.0.12.2/30"),
        Attachment("lan", "r1", "eth2", "10.0.1.1/24"),
        Attachment("lan", "h1", "eth1", "10.0.1.2/24"),
        Attachment("lan", "h2", "eth1", "-"),
    ],
)


def test_dot_draws_point_to_point_links_as_edges_and_lans_as_their_own_node() -> None:
    dot = to_dot(GRAPH)
    assert '"r1" [shape=box];' in dot and '"h1" [shape=ellipse];' in dot
    assert '"r1" -- "r2" [label="core", taillabel="eth1 10.0.12.1/30", headlabel="eth1 10.0.12.2/30"];' in dot
    assert '"net:lan" [shape=note, label="lan"];' in dot
    assert '"h2" -- "net:lan" [taillabel="eth1"];' in dot  # unaddressed: the interface alone
    assert to_dot(NetGraph('a"b', [("x", "host")])).startswith('graph "a\\"b" {')


def test_svg_is_one_well_formed_picture_with_every_node_link_and_label() -> None:
    root = ET.fromstring(str(to_svg(GRAPH)))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"r1", "r2", "h1", "h2", "core", "lan", "eth1 10.0.12.1/30", "eth2 10.0.1.1/24"} <= set(texts)
    assert len(root.findall(f"{SVG}path")) == 4  # one edge for core, three to the lan box
    routers = [r for r in root.findall(f"{SVG}rect") if r.get("height") == "32"]
    assert len(routers) == 2


def test_svg_escapes_labels() -> None:
    svg = str(to_svg(NetGraph("<x>", [("a", "host")], [Attachment("n", "a", "e<1>", "-")])))
    assert "<x>" not in svg and "&lt;x&gt;" in svg and "e&lt;1&gt;" in svg
    ET.fromstring(svg)


def test_lab_graph_of_a_topology(tmp_path: Path, testbed_home: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["lab", "graph", str(ROOT / "topologies" / "routers.yaml"), "--format", "dot"])
    assert done.exit_code == 0, done.output
    assert '"r1" -- "r2" [label="core", taillabel="eth1 10.0.12.1/30"' in done.output
    out = tmp_path / "routers.svg"
    done = runner.invoke(app, ["lab", "graph", str(ROOT / "topologies" / "routers.yaml"), "--out", str(out)])
    assert done.exit_code == 0 and ET.fromstring(out.read_text()).tag == f"{SVG}svg"
    topo = tmp_path / "t.yaml"
    topo.write_text("name: t\nnodes: [{name: a}, {name: b}]\nlinks: [{endpoints: [a, b]}]\n")
    done = runner.invoke(app, ["lab", "graph", str(topo), "--format", "dot"])
    assert '[label="link1", taillabel="eth1 (leased)", headlabel="eth1 (leased)"]' in done.output
    done = runner.invoke(app, ["lab", "graph", str(topo), "--format", "png"])
    assert isinstance(done.exception, InputError) and done.exception.field == "--format"  # exit 2 from main()
