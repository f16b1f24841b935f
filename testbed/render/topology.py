"""A lab's topology as a picture: nodes as boxes, L2 segments as buses joined to their
members, the harness's management network as a dashed bus every node is on.

Contract: `topology_svg(topology)` takes the recorded topology (`{"name", "nodes": [{"name",
"image", "vcpus", "memory", "forward"}], "networks": [{"name", "members", "subnet"}]}`,
as `testbed.model.task_record` stores it) and returns one `<svg>` (`markupsafe.Markup`):
one `g.node` per node (name, image, vCPUs and memory, `routes` when it forwards), one
`g.segment` per network with a dot where each member joins it; every text is XML-escaped;
the width grows with the number of nodes and the box width with the longest text, so no
text is cut. Missing or odd values are shown as `?`; no node gives a short "no topology".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from testbed.render import palette

CHAR_W = 7.0
NODE_H = 56
GAP = 36
PAD = 16
MGMT_Y = 22
NODE_Y = 44
BUS_GAP = 34


def _node_lines(node: Mapping[str, Any]) -> list[str]:
    cpu, mem = node.get("vcpus", "?"), node.get("memory", "?")
    lines = [str(node.get("name", "?")), str(node.get("image") or "default image"), f"{cpu} vCPU · {mem} MiB"]
    if node.get("forward"):
        lines[2] += " · routes"
    return lines


def _box_width(nodes: Sequence[Mapping[str, Any]]) -> float:
    longest = max((len(line) for n in nodes for line in _node_lines(n)), default=8)
    return max(110.0, longest * CHAR_W + 20)


def _node(x: float, width: float, node: Mapping[str, Any]) -> str:
    name, image, size = _node_lines(node)
    cx = x + width / 2
    return (
        f'<g class="node"><rect x="{x:.1f}" y="{NODE_Y}" width="{width:.1f}" height="{NODE_H}" rx="8" '
        f'fill="#f6f8fa" stroke="{palette.NEUTRAL}" stroke-width="1.5"/>'
        f'<text x="{cx:.1f}" y="{NODE_Y + 19}" text-anchor="middle" font-weight="600">{escape(name)}</text>'
        f'<text x="{cx:.1f}" y="{NODE_Y + 35}" text-anchor="middle" fill="{palette.MUTED}">{escape(image)}</text>'
        f'<text x="{cx:.1f}" y="{NODE_Y + 49}" text-anchor="middle" fill="{palette.MUTED}" font-size="11">'
        f"{escape(size)}</text></g>"
    )


def _segment(y: float, net: Mapping[str, Any], centres: dict[str, float], width: float) -> str:
    members = [m for m in net.get("members") or [] if m in centres]
    xs = [centres[m] for m in members] or [PAD]
    left, right = min(xs) - 30, max(xs) + 30
    label = f"{net.get('name', '?')}" + (f" {net['subnet']}" if net.get("subnet") else "")
    parts = [f'<g class="segment"><line x1="{left:.1f}" y1="{y}" x2="{right:.1f}" y2="{y}" '
             f'stroke="{palette.OUTCOME["unfinished"]}" stroke-width="3"/>']  # fmt: skip
    for m in members:
        x = centres[m]
        parts.append(
            f'<line x1="{x:.1f}" y1="{NODE_Y + NODE_H}" x2="{x:.1f}" y2="{y}" stroke="{palette.OUTCOME["unfinished"]}" '
            f'stroke-width="1.5"/><circle cx="{x:.1f}" cy="{y}" r="4" fill="{palette.OUTCOME["unfinished"]}"/>'
        )
    parts.append(f'<text x="{min(right + 8, width - PAD):.1f}" y="{y + 4}" font-size="12">{escape(label)}</text></g>')
    return "".join(parts)


def topology_svg(topology: Mapping[str, Any] | None) -> Markup:
    """The picture of `topology` (see the module contract)."""
    nodes = [n for n in (topology or {}).get("nodes") or [] if isinstance(n, Mapping)]
    if not nodes:
        return Markup('<p class="muted">no topology recorded</p>')
    networks = [n for n in (topology or {}).get("networks") or [] if isinstance(n, Mapping)]
    box = _box_width(nodes)
    labels = max((len(str(n.get("name", ""))) + len(str(n.get("subnet") or "")) + 1 for n in networks), default=0)
    width = PAD * 2 + len(nodes) * box + (len(nodes) - 1) * GAP + max(140.0, labels * CHAR_W + 50)
    height = NODE_Y + NODE_H + BUS_GAP * len(networks) + 24
    centres: dict[str, float] = {}
    body: list[str] = []
    for i, node in enumerate(nodes):
        x = PAD + i * (box + GAP)
        centres[str(node.get("name"))] = x + box / 2
        body.append(_node(x, box, node))
    last = max(centres.values())
    drops = "".join(
        f'<line x1="{x:.1f}" y1="{MGMT_Y}" x2="{x:.1f}" y2="{NODE_Y}" stroke="#999" stroke-dasharray="3 3"/>'
        for x in centres.values()
    )
    mgmt = (
        f'<g class="mgmt"><line x1="{PAD:.1f}" y1="{MGMT_Y}" x2="{last + 30:.1f}" y2="{MGMT_Y}" stroke="#999" '
        f'stroke-dasharray="5 4"/>{drops}<text x="{last + 38:.1f}" y="{MGMT_Y + 4}" font-size="11" '
        f'fill="{palette.MUTED}">management (harness SSH)</text></g>'
    )
    for j, net in enumerate(networks):
        body.append(_segment(NODE_Y + NODE_H + BUS_GAP * (j + 1) - 6, net, centres, width))
    w, h = int(width + 0.5), int(height + 0.5)
    title = escape(str((topology or {}).get("name") or "topology"))
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topology" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'role="img" font-family="sans-serif" font-size="12"><title>topology {title}</title>'
        + mgmt + "".join(body) + "</svg>"
    )  # fmt: skip
