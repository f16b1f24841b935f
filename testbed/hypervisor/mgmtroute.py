"""Management networks that share one subnet: labs restored from one saved state.

Guests restored from one saved state all hold the same management address, MAC and host
address in their memory (`testbed.hypervisor.restoredlab`). Each restored lab gets its own
management bridge with that same host address; two bridges with one subnet are fine at
layer 2, but the host's main routing table can route the subnet to one bridge only, and
libvirt refuses to start a network whose subnet the main table already routes ("Network is
already in use by interface ..."). So the management route of every lab that takes part in a
saved state (the lab that builds it, and every lab restored from it) leaves the main table:

- `isolate` moves the bridge's connected route into a routing table of its own (number
  `TABLE_BASE` + the bridge's ifindex) and adds two policy rules, `oif BRIDGE` and
  `iif BRIDGE`, that look it up. Call it right after libvirt started the network, under the
  host-wide network lock, so the next network's collision check sees the main table free.
- The harness reaches such a lab's guests with sockets bound to the bridge
  (`SO_BINDTODEVICE`, `GuestSession(bind_device=...)`): the `oif` rule picks the bridge's
  table. Replies from guests arrive on the bridge and match the `iif` rule (strict
  reverse-path filtering keeps working).
- `release_stale` deletes the rules of bridges that no longer exist (the route went with
  the bridge); lab removal calls it, so a crash leaves at most rules that the next removal
  or `testbed reap` clears.

Limits: local lab hosts only (the commands run in the harness's own network namespace).
Host services a guest connects to (the egress proxy) would answer through the main table,
so labs with egress never use saved states (`testbed.runner.warm`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from testbed.errors import HarnessError

log = logging.getLogger(__name__)

TABLE_BASE = 1_900_000_000
"""Routing tables `TABLE_BASE + ifindex` are testbed's (ifindex < 2**24 keeps them apart)."""
TABLE_SPAN = 1 << 24
RULE_PREF = 9300
"""Priority of the rules (before the main table's 32766; the local table's 0 stays first)."""


@dataclass(frozen=True)
class HostAddress:
    """A network's host side: the bridge and the host's address on it."""

    bridge: str
    host_ip: str
    prefix: int

    @property
    def subnet(self) -> str:
        return str(ipaddress.IPv4Interface(f"{self.host_ip}/{self.prefix}").network)


def host_address(network_xml: str) -> HostAddress | None:
    """The bridge and host address of a libvirt network's XML; None for a network without
    a host address (data segments and links)."""
    root = ET.fromstring(network_xml)
    bridge, ip = root.find("bridge"), root.find("ip")
    if bridge is None or ip is None or ip.get("address") is None:
        return None
    prefix = ip.get("prefix")
    if prefix is None and ip.get("netmask"):
        prefix = str(ipaddress.IPv4Network(f"0.0.0.0/{ip.get('netmask')}").prefixlen)
    return HostAddress(str(bridge.get("name")), str(ip.get("address")), int(prefix or 24))


def table_of(bridge: str) -> int:
    return TABLE_BASE + socket.if_nametoindex(bridge)


def isolate(addr: HostAddress) -> int:
    """Move `addr`'s connected route from the main table into the bridge's own table and
    add the rules that use it; returns the table number. Idempotent."""
    try:
        table = table_of(addr.bridge)
    except OSError as exc:
        raise HarnessError(f"bridge {addr.bridge} does not exist: {exc}") from exc
    _ip("route", "replace", addr.subnet, "dev", addr.bridge, "src", addr.host_ip, "table", str(table))
    _ip("route", "del", addr.subnet, "dev", addr.bridge, "table", "main", missing_ok=True)
    for direction in ("oif", "iif"):
        _ip("rule", "del", "pref", str(RULE_PREF), direction, addr.bridge, "table", str(table), missing_ok=True)
        _ip("rule", "add", "pref", str(RULE_PREF), direction, addr.bridge, "table", str(table))
    return table


def release_stale() -> list[str]:
    """Delete testbed's rules whose bridge is gone; returns what was deleted (empty when
    `ip` is missing: nothing of this module can exist then)."""
    try:
        out = subprocess.run(["ip", "-j", "rule", "show"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    removed = []
    for rule in json.loads(out or "[]"):
        table = rule.get("table")
        if not (isinstance(table, str) and table.isdigit() and TABLE_BASE <= int(table) < TABLE_BASE + TABLE_SPAN):
            continue
        for direction in ("oif", "iif"):
            dev = rule.get(direction)
            if dev is None or (_exists(dev) and table_of(dev) == int(table)):
                continue
            _ip(
                "rule",
                "del",
                "pref",
                str(rule.get("priority", RULE_PREF)),
                direction,
                dev,
                "table",
                table,
                missing_ok=True,
            )
            removed.append(f"{direction} {dev} table {table}")
    return removed


def _exists(dev: str) -> bool:
    try:
        socket.if_nametoindex(dev)
    except OSError:
        return False
    return True


def _ip(*args: str, missing_ok: bool = False) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        if missing_ok:
            return
        raise HarnessError(f"`ip {' '.join(args)}` failed: {result.stderr.strip() or result.returncode}")
