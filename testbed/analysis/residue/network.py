"""Handlers of the network probes: ``firewall`` (rules grouped per table/chain) and
``network`` (addresses and routes); everything they queue is category ``system_config``.

Also `_rule_tokens`, the significant tokens (ports, addresses, interfaces) attribution
looks for in commands.
"""

from __future__ import annotations

import itertools
import re

from testbed.analysis.attribution import Target
from testbed.analysis.residue.context import _Ctx, _d
from testbed.analysis.residue.model import REBOOT_POINT
from testbed.probes.diff import ItemChange, ProbeDiff

_TOKEN_RE = re.compile(r"[0-9a-fA-F:.]*\d[0-9a-fA-F:./]*|[A-Za-z][\w.-]*\d[\w.-]*")


def _rule_tokens(rule: str) -> tuple[str, ...]:
    """Significant tokens of a rule/route: numbers of 2+ digits, addresses, interface names."""
    out = []
    for tok in _TOKEN_RE.findall(rule):
        tok = tok.strip(".:/")
        if len(tok) >= 2 and tok not in ("ip6", "ipv4", "ipv6", "inet6"):
            out.append(tok)
    return tuple(dict.fromkeys(out))


def _rule_group(rule: str) -> str:
    """`nft table inet filter > chain input` / `iptables filter INPUT` of a normalised rule."""
    if rule.startswith("nft "):
        return rule.split(":", 1)[0]
    parts = rule.split()
    chain = next((parts[i + 1] for i, p in enumerate(parts[:-1]) if p in ("-A", "-I", "-N")), None)
    if chain is None and len(parts) > 2 and parts[2].startswith(":"):
        chain = parts[2][1:]
    return " ".join(parts[:2] + ([chain] if chain else []))


_PORT_OPTS = re.compile(r"(?:dport|sport|--dports?|--sports?|port)\s+\{?\s*([\d,\s-]+)\}?")


_CHAIN_HEADER = re.compile(r"\btype\s+\w+\s+hook\s+\w+.*\bpolicy\s+accept\b")


def _is_accept_chain_header(rule: str) -> bool:
    """An nft base-chain declaration with policy accept: it filters nothing by itself."""
    return rule.startswith("nft ") and bool(_CHAIN_HEADER.search(rule.split(": ", 1)[-1]))


def _h_firewall(ctx: _Ctx, d: ProbeDiff) -> None:
    """Firewall rules added, removed or changed. Rules in an expected group (`firewall`
    globs) and rules whose ports are all expected are excluded; so is the accept-policy
    base-chain declaration holding them when every other changed rule of its chain was
    excluded (writing an expected rule needs its chain)."""
    changes = [c for c in d.items() if not (c.change == "removed" and ctx.point == REBOOT_POINT)]
    reported_groups: set[str] = set()
    expected_groups: set[str] = set()
    headers: list[ItemChange] = []
    for c in changes:
        rule = c.key
        if _is_accept_chain_header(rule):
            headers.append(c)
            continue
        group = _rule_group(rule)
        if ctx.expect.firewall_group(group):
            ctx.exclude("firewall", rule, "rule in an expected firewall group")
            expected_groups.add(group)
            continue
        ports = {p for m in _PORT_OPTS.findall(rule) for p in re.split(r"[,\s-]+", m) if p}
        if ports and ctx.expect.ports and ports <= ctx.expect.ports:
            ctx.exclude("firewall", rule, "rule for expected ports only")
            expected_groups.add(group)
            continue
        reported_groups.add(group)
        _add_firewall(ctx, c)
    for c in headers:
        group = _rule_group(c.key)
        if group in expected_groups and group not in reported_groups:
            ctx.exclude("firewall", c.key, "accept-policy chain holding only expected rules")
            continue
        _add_firewall(ctx, c)


def _add_firewall(ctx: _Ctx, c: ItemChange) -> None:
    rule = c.key
    verb = {"added": "added", "removed": "removed"}.get(c.change, "count changed")
    group = _rule_group(rule)
    shown = rule.split(": ", 1)[1] if rule.startswith("nft ") and ": " in rule else rule
    ctx.add(
        "firewall",
        c,
        "system_config",
        "firewall:" + group,
        f"firewall rule {verb} in {group}: {shown}",
        Target("firewall", rule, tokens=_rule_tokens(rule.split(":", 1)[-1] if rule.startswith("nft") else rule)),
    )


FRR_PROTOCOLS = frozenset(
    {"zebra", "bgp", "isis", "ospf", "rip", "ripng", "nhrp", "eigrp", "ldp", "sharp", "pbr", "static", "openfabric"}
    | {"babel"}
)
"""Route protocols FRR installs kernel routes with (iproute2's names, /etc/iproute2/rt_protos.d/frr.conf)."""


def _frr_route(key: str) -> bool:
    words = key.split()
    return any(w == "proto" and nxt in FRR_PROTOCOLS for w, nxt in itertools.pairwise(words))


def _h_network(ctx: _Ctx, d: ProbeDiff) -> None:
    router = "router" in ctx.compared
    for c in d.items():
        if c.change == "removed" and ctx.point == REBOOT_POINT:
            continue
        if router and c.collection in ("routes", "routes6") and _frr_route(c.key):
            ctx.exclude("network", c.key, "installed by FRR: the router probe's configuration and RIB carry it")
            continue
        if c.collection == "addresses" and (_d(c.after or c.before).get("scope") == "link" or "fe80::" in c.key):
            ctx.exclude("network", c.key, "noise (link-local address)")
            continue
        if c.collection == "routes6" and (
            "fe80::" in c.key or c.key.startswith(("ff00::", "multicast")) or " proto ra " in f" {c.key} "
        ):
            ctx.exclude("network", c.key, "noise (link-local/RA route)")
            continue
        if c.collection == "addresses" and ctx.expect.address(c.key):
            ctx.exclude("network", c.key, "expected address")
            continue
        if c.collection in ("routes", "routes6") and ctx.expect.route(c.key):
            ctx.exclude("network", c.key, "expected route")
            continue
        what = {"addresses": "address", "routes": "route", "routes6": "IPv6 route"}.get(c.collection, c.collection)
        verb = {"added": "added", "removed": "removed"}.get(c.change, "changed")
        ctx.add(
            "network",
            c,
            "system_config",
            f"network:{c.collection}:{c.key}",
            f"{what} {verb}: {c.key}",
            Target(
                "network",
                c.key,
                tokens=_rule_tokens(c.key.replace(":", " ", 1) if c.collection == "addresses" else c.key),
            ),
        )
