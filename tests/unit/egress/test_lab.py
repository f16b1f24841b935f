"""`testbed.egress.lab`: what a lab's guests reach without the proxy."""

from __future__ import annotations

import ipaddress
import urllib.request
from dataclasses import dataclass, field

from testbed.egress.lab import lab_no_proxy
from testbed.guest.result import ExecResult


@dataclass
class _Image:
    dialect: str = "debian"


@dataclass
class _Node:
    name: str
    mgmt_ip: str
    image: _Image = field(default_factory=_Image)

    async def exec(self, command: str, *, timeout: float | None = 120.0) -> ExecResult:
        raise AssertionError("not used")


@dataclass
class _Plan:
    mgmt_subnet: ipaddress.IPv4Network
    host_ip: str
    data_subnets: dict[str, ipaddress.IPv4Network]
    data: dict[str, dict[str, str]]


@dataclass
class _Lab:
    lab_id: str
    plan: _Plan | None
    nodes: dict[str, _Node]


def _bypasses(host: str, proxies: dict[str, str]) -> bool:
    """urllib's own no_proxy matching (undocumented, so absent from the type stubs)."""
    return bool(urllib.request.proxy_bypass_environment(host, proxies))  # type: ignore[attr-defined]


def _wireguard_lab() -> _Lab:
    plan = _Plan(
        mgmt_subnet=ipaddress.IPv4Network("10.213.11.0/24"),
        host_ip="10.213.11.1",
        data_subnets={
            "wan": ipaddress.IPv4Network("198.51.100.0/24"),
            "site1": ipaddress.IPv4Network("172.16.1.0/24"),
            "site2": ipaddress.IPv4Network("172.16.2.0/24"),
        },
        data={
            "wan": {"gw1": "198.51.100.11", "gw2": "198.51.100.22"},
            "site1": {"gw1": "172.16.1.1"},
            "site2": {"gw2": "172.16.2.1"},
        },
    )
    nodes = {"gw1": _Node("gw1", "10.213.11.10"), "gw2": _Node("gw2", "10.213.11.11")}
    return _Lab("lab", plan, nodes)


def test_every_node_address_is_listed_before_the_subnets() -> None:
    entries = lab_no_proxy(_wireguard_lab())
    assert entries[:5] == ["localhost", "127.0.0.1", "::1", "gw1", "gw2"]
    addresses = ["10.213.11.10", "10.213.11.11", "198.51.100.11", "198.51.100.22", "172.16.1.1", "172.16.2.1"]
    assert entries[5:11] == addresses
    assert entries[11:] == ["10.213.11.0/24", "198.51.100.0/24", "172.16.1.0/24", "172.16.2.0/24"]
    assert "10.213.11.1" not in entries  # the proxy's own address is not a lab node


def test_a_client_that_ignores_cidr_entries_still_bypasses_the_proxy_for_node_addresses() -> None:
    """Python's urllib (like curl before 7.86) matches no_proxy by name, not by CIDR:
    with the subnets alone it would send a request for a site address to the proxy."""
    entries = lab_no_proxy(_wireguard_lab())
    subnets_only = ",".join(e for e in entries if "/" in e)
    proxies = {"no": subnets_only}
    assert not _bypasses("172.16.2.1", proxies)
    proxies = {"no": ",".join(entries)}
    assert _bypasses("172.16.2.1", proxies)
    assert _bypasses("10.213.11.10", proxies)
    assert not _bypasses("deb.debian.org", proxies)
