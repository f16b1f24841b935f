"""A lab's link map as a picture: Graphviz dot text, or a self-contained SVG.

Input is a `NetGraph`: the nodes (a router or a host), and one `Attachment` per NIC — the
network (a link or a segment) it is on, its interface name and its address. A network with
two attachments is drawn as a line between its nodes, labelled with the network's name and
each end with its interface and address; a network with more (a LAN, a segment) is drawn
as its own small box the nodes hang from. The SVG puts routers in a top row, LAN boxes in
the middle and hosts at the bottom (each under what it hangs from; links within a row are
arcs over it), needs no script or external resource, and escapes every label; colours come
from `testbed.render.palette`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from testbed.render import palette


@dataclass(frozen=True)
class Attachment:
    network: str
    node: str
    ifname: str
    address: str


@dataclass(frozen=True)
class NetGraph:
    name: str
    nodes: list[tuple[str, str]]  # (name, "router" | "host")
    attachments: list[Attachment] = field(default_factory=list)

    def networks(self) -> dict[str, list[Attachment]]:
        out: dict[str, list[Attachment]] = {}
        for a in self.attachments:
            out.setdefault(a.network, []).append(a)
        return out


def _end(a: Attachment) -> str:
    return a.ifname if a.address == "-" else f"{a.ifname} {a.address}"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: NetGraph) -> str:
    """Graphviz text: routers as boxes, hosts as ellipses, LANs as points with a label."""
    lines = [f"graph {_q(graph.name)} {{", "  node [fontname=Helvetica]; edge [fontname=Helvetica, fontsize=10];"]
    for name, kind in graph.nodes:
        lines.append(f"  {_q(name)} [shape={'box' if kind == 'router' else 'ellipse'}];")
    for network, ends in graph.networks().items():
        if len(ends) == 2:
            a, b = ends
            labels = f"label={_q(network)}, taillabel={_q(_end(a))}, headlabel={_q(_end(b))}"
            lines.append(f"  {_q(a.node)} -- {_q(b.node)} [{labels}];")
            continue
        hub = f"net:{network}"
        lines.append(f"  {_q(hub)} [shape=note, label={_q(network)}];")
        lines += [f"  {_q(a.node)} -- {_q(hub)} [taillabel={_q(_end(a))}];" for a in ends]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _row(names: Sequence[str], y: float, width: float) -> dict[str, tuple[float, float]]:
    step = width / (len(names) + 1)
    return {name: (step * (i + 1), y) for i, name in enumerate(names)}


def _text(x: float, y: float, text: str, size: int = 11, colour: str = "#222") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="middle" fill="{colour}" '
        f'stroke="#fff" stroke-width="3" paint-order="stroke" '
        f'font-family="Helvetica,Arial,sans-serif">{escape(text)}</text>'
    )


Point = tuple[float, float]


def _bezier(p: Point, c: Point, q: Point, t: float) -> Point:
    u = 1 - t
    return (u * u * p[0] + 2 * u * t * c[0] + t * t * q[0], u * u * p[1] + 2 * u * t * c[1] + t * t * q[1])


def _layout(graph: NetGraph, nets: dict[str, list[Attachment]], width: float, height: float) -> dict[str, Point]:
    """Routers in the top row, LANs (networks of more than two NICs) in the middle, hosts
    at the bottom; LANs and hosts ordered under the routers they hang from."""
    routers = [n for n, k in graph.nodes if k == "router"]
    at = _row(routers, height * 0.2, width)
    hubs = [n for n, ends in nets.items() if len(ends) != 2]

    def under(members: list[str]) -> float:
        xs = [at[m][0] for m in members if m in at]
        return sum(xs) / len(xs) if xs else width

    at.update(_row(sorted(hubs, key=lambda h: under([a.node for a in nets[h]])), height * 0.5, width))
    neighbours: dict[str, list[str]] = {}
    for ends in nets.values():
        for a in ends:
            neighbours.setdefault(a.node, []).extend(b.node for b in ends if b.node != a.node)
            if len(ends) != 2:
                neighbours[a.node].append(a.network)
    hosts = [n for n, k in graph.nodes if k != "router"]
    at.update(_row(sorted(hosts, key=lambda h: under(neighbours.get(h, []))), height * 0.82, width))
    return at


def to_svg(graph: NetGraph) -> Markup:
    """The SVG picture (see module docstring)."""
    nets = graph.networks()
    per_row = max(
        len([n for n, k in graph.nodes if k == "router"]),
        len([n for n, k in graph.nodes if k != "router"]),
        len([n for n, e in nets.items() if len(e) != 2]),
        1,
    )
    width, height = max(640.0, 170.0 * per_row), 520.0
    at = _layout(graph, nets, width, height)
    body: list[str] = []
    for network, ends in nets.items():
        if len(ends) == 2:
            body += _edge(at[ends[0].node], at[ends[1].node], ends, network)
            continue
        h = at[network]
        for a in ends:
            body += _edge(at[a.node], h, [a], None)
        body.append(
            f'<rect x="{h[0] - 40:.1f}" y="{h[1] - 12:.1f}" width="80" height="24" rx="4" '
            f'fill="{palette.TRACK}" stroke="{palette.NEUTRAL}"/>'
        )
        body.append(_text(h[0], h[1] + 4, network, 11, colour=palette.NEUTRAL))
    kinds = dict(graph.nodes)
    for name, kind in kinds.items():
        x, y = at[name]
        if kind == "router":
            body.append(
                f'<rect x="{x - 32:.1f}" y="{y - 16:.1f}" width="64" height="32" rx="3" fill="{palette.NEUTRAL}"/>'
            )
        else:
            body.append(f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="34" ry="17" fill="{palette.OUTCOME["passed"]}"/>')
        body.append(
            f'<text x="{x:.1f}" y="{y + 4:.1f}" font-size="12" text-anchor="middle" fill="#fff" '
            f'font-family="Helvetica,Arial,sans-serif">{escape(name)}</text>'
        )
    label = f"link map of {graph.name}"
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
        f"{''.join(body)}</svg>\n"
    )


def _edge(p: Point, q: Point, ends: list[Attachment], network: str | None) -> list[str]:
    """A line from p to q (an arc over the row when both are in one row), the network's
    name at its middle, each attachment's interface and address near its own end."""
    if abs(p[1] - q[1]) < 1:
        c = ((p[0] + q[0]) / 2, p[1] - 0.35 * abs(q[0] - p[0]) - 20)
    else:
        c = ((p[0] + q[0]) / 2, (p[1] + q[1]) / 2)
    out = [
        f'<path d="M {p[0]:.1f} {p[1]:.1f} Q {c[0]:.1f} {c[1]:.1f} {q[0]:.1f} {q[1]:.1f}" fill="none" '
        f'stroke="{palette.MUTED}" stroke-width="2"/>'
    ]
    if network is not None:
        mid = _bezier(p, c, q, 0.5)
        out.append(_text(mid[0], mid[1] - 6, network, 11, colour=palette.NEUTRAL))
    for a, t in zip(ends, (0.25, 0.75), strict=False):
        x, y = _bezier(p, c, q, t)
        out.append(_text(x, y + 14, _end(a), 10, colour=palette.MUTED))
    return out
