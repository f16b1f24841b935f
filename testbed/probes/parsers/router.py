"""The ``router`` probe: FRR's running and saved configuration, its RIB, OSPF/BGP/BFD
neighbours and the interfaces' link state (``vtysh`` and ``ip -o link`` output).

Configuration is flattened like nftables rules: every line becomes ``block > line`` by its
indentation (``router bgp 65001 > address-family ipv4 unicast > network 10.0.1.0/24``),
block openers are lines of their own, and what only frames the text is dropped (the
``Building configuration...`` header, ``frr version``, ``!``, ``exit``,
``exit-address-family``, ``end``). ``unsaved`` lists running lines the saved file lacks;
``unsaved_removals`` saved lines no longer running: the configuration a reboot would lose
or bring back. Volatile fields (uptimes, counters, timers) are left out of every record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from testbed.probes.parsers.formats import to_int
from testbed.probes.parsers.framing import ParseContext, Section

_FRAMING = re.compile(r"^(Building configuration\.\.\.|Current configuration:|frr version .*|end|!+)$")
_EXITS = frozenset({"exit", "exit-address-family", "exit-vrf", "exit-vni", "quit", "end"})
_LINK_RE = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>\s+(.*)$")


def config_lines(lines: Iterable[str]) -> list[str]:
    """`block > line` paths of an FRR configuration, in order (see module docstring)."""
    stack: list[tuple[int, str]] = []
    out: list[str] = []
    for raw in lines:
        text = raw.rstrip()
        body = text.strip()
        if not body or _FRAMING.match(body):
            continue
        indent = len(text) - len(text.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if body in _EXITS:
            continue
        out.append(" > ".join([*(t for _, t in stack), body]))
        stack.append((indent, body))
    return out


def _json(part: list[str], name: str, unparsed: list[str]) -> Any:
    text = "\n".join(part).strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        unparsed.extend(f"{name}: {ln}" for ln in part[:20])
        return None


def _nexthop(hop: dict[str, Any]) -> str:
    where = hop.get("ip") or ("directly connected" if hop.get("directlyConnected") else "")
    via = hop.get("interfaceName") or ""
    flags = "" if hop.get("active", True) else " inactive"
    return " ".join(p for p in (str(where), str(via)) if p) + flags


def parse_rib(data: Any) -> dict[str, list[dict[str, Any]]]:
    """``show ip route json`` → ``{prefix: [{protocol, selected, installed, distance,
    metric, nexthops: ["10.0.12.2 eth1", ...]}]}``."""
    rib: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(data, dict):
        return rib
    for prefix, routes in data.items():
        for route in routes if isinstance(routes, list) else []:
            if not isinstance(route, dict):
                continue
            hops = [h for h in route.get("nexthops", []) if isinstance(h, dict)]
            rib.setdefault(str(prefix), []).append(
                {
                    "protocol": route.get("protocol"),
                    "selected": bool(route.get("selected")),
                    "installed": bool(route.get("installed")),
                    "distance": route.get("distance"),
                    "metric": route.get("metric"),
                    "nexthops": sorted(_nexthop(h) for h in hops),
                }
            )
    return rib


def parse_ospf_neighbors(data: Any) -> dict[str, dict[str, Any]]:
    """``show ip ospf neighbor json`` → ``{"ROUTER-ID IFNAME": {router_id, state, address,
    interface}}`` (FRR keys neighbours by router id, one entry per interface)."""
    out: dict[str, dict[str, Any]] = {}
    neighbors = data.get("neighbors") if isinstance(data, dict) else None
    for rid, entries in (neighbors or {}).items():
        for entry in entries if isinstance(entries, list) else [entries]:
            if not isinstance(entry, dict):
                continue
            iface = str(entry.get("ifaceName") or "").split(":", 1)[0]
            out[f"{rid} {iface}".strip()] = {
                "router_id": rid,
                "state": entry.get("nbrState") or entry.get("state"),
                "address": entry.get("ifaceAddress") or entry.get("address"),
                "interface": iface,
            }
    return out


def parse_bgp_peers(data: Any) -> dict[str, dict[str, Any]]:
    """``show bgp summary json`` → ``{"AFI PEER": {afi, peer, remote_as, local_as, state,
    prefixes_received}}`` for every address family FRR lists."""
    out: dict[str, dict[str, Any]] = {}
    for afi, summary in (data or {}).items() if isinstance(data, dict) else []:
        peers = summary.get("peers") if isinstance(summary, dict) else None
        for peer, info in (peers or {}).items():
            if isinstance(info, dict):
                out[f"{afi} {peer}"] = {
                    "afi": afi,
                    "peer": peer,
                    "remote_as": info.get("remoteAs"),
                    "local_as": info.get("localAs"),
                    "state": info.get("state"),
                    "prefixes_received": info.get("pfxRcd"),
                }
    return out


def parse_bfd_peers(data: Any) -> dict[str, dict[str, Any]]:
    """``show bfd peers json`` → ``{"PEER[ IFNAME]": {peer, interface, status, multihop}}``."""
    out: dict[str, dict[str, Any]] = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("peer"):
            iface = entry.get("interface") or ""
            out[f"{entry['peer']} {iface}".strip()] = {
                "peer": entry["peer"],
                "interface": iface or None,
                "status": entry.get("status"),
                "multihop": bool(entry.get("multihop")),
            }
    return out


def parse_links(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """``ip -o link show`` → ``{ifname: {state, admin_up, lower_up, mtu, mac}}``."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        m = _LINK_RE.match(line.replace("\\", " ").strip())
        if not m:
            unparsed.append(line)
            continue
        flags = m.group(2).split(",")
        rest = m.group(3)
        state = re.search(r"\bstate (\S+)", rest)
        mtu = re.search(r"\bmtu (\d+)", rest)
        mac = re.search(r"link/\S+ ([0-9a-f:]{17})", rest)
        out[m.group(1)] = {
            "state": state.group(1) if state else None,
            "admin_up": "UP" in flags,
            "lower_up": "LOWER_UP" in flags,
            "mtu": to_int(mtu.group(1)) if mtu else None,
            "mac": mac.group(1) if mac else None,
        }
    return out


def parse_router(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"running": [path], "saved": [path], "unsaved": [path], "unsaved_removals":
    [path], "rib": {...}, "ospf_neighbors": {...}, "bgp_peers": {...}, "bfd_peers":
    {...}, "links": {...}}``; a part that did not run or printed no JSON is absent (its
    exit status is in ``part_rc``, its text in ``unparsed``)."""
    out: dict[str, Any] = {}
    if sec.has("running") and sec.parts["running"].rc == 0:
        out["running"] = config_lines(sec.lines("running"))
    if sec.has("saved"):
        out["saved"] = config_lines(sec.lines("saved"))
    if "running" in out and "saved" in out:
        saved, running = set(out["saved"]), set(out["running"])
        out["unsaved"] = [ln for ln in out["running"] if ln not in saved]
        out["unsaved_removals"] = [ln for ln in out["saved"] if ln not in running]
    parsers = {
        "rib": ("rib", parse_rib),
        "ospf": ("ospf_neighbors", parse_ospf_neighbors),
        "bgp": ("bgp_peers", parse_bgp_peers),
        "bfd": ("bfd_peers", parse_bfd_peers),
    }
    for part, (key, parse) in parsers.items():
        if sec.has(part):
            data = _json(sec.lines(part), part, unparsed)
            if data is not None:
                out[key] = parse(data)
    if sec.has("links"):
        out["links"] = parse_links(sec.lines("links"), unparsed)
    return out
