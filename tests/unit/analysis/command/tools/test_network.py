"""Network grammars: configuration changes, flushes, connectivity taken away."""

from __future__ import annotations

import pytest

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import Fact
from testbed.analysis.command.tools.network import ip_object


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


def test_ip_objects_may_be_abbreviated() -> None:
    assert [ip_object(w) for w in ("a", "addr", "r", "ro", "ru", "l", "n", "neigh", "m", "tun", "xyz")] == [
        "address", "address", "route", "route", "rule", "link", "neighbour", "neighbour", "maddress", "tunnel", None
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "facts", "write"),
    [
        ("ip addr add 10.0.0.5/24 dev eth0", [], True),
        ("ip -br a", [], False),
        ("ip r fl cache", [Fact("ip-route-flush", ("cache",), "flush")], False),
        ("ip -4 address flush dev eth0", [Fact("ip-address-flush", ("dev", "eth0"), "flush")], True),
        ("ip -s -s neigh flush all", [Fact("ip-neighbour-flush", ("all",), "flush")], True),
        ("ip link set dev eth0 down", [Fact("ip-link-down", ("eth0",), "down")], True),
        ("ip link delete br0", [Fact("ip-link-delete", ("br0",), "down")], True),
        ("ip route del default", [Fact("ip-route-del-default", ("default",), "down")], True),
        ("ifdown eth0", [Fact("ifdown", ("eth0",), "down")], True),
        ("ifconfig eth0 down", [Fact("ifconfig-down", ("eth0",), "down")], True),
        ("ifconfig", [], False),
        (
            "route del default gw 10.0.0.1",
            [Fact("route-del-default", ("del", "default", "gw", "10.0.0.1"), "down")],
            True,
        ),
        ("route -n", [], False),
        ("nmcli con down id eth0", [Fact("nmcli-connection-down", ("id", "eth0"), "down")], True),
        ("nmcli networking off", [Fact("nmcli-networking-off", (), "down")], False),
        ("dhclient -r eth0", [Fact("dhclient-release", ("eth0",), "down")], True),
        ("netplan apply", [], True),
        ("conntrack -F", [Fact("conntrack-flush", (), "flush")], False),
        ("conntrack -L", [], False),
    ],
)
def test_network(text: str, facts: list[Fact], write: bool) -> None:
    eff = step(text)
    assert (eff.network, eff.network_write) == (facts, write)
