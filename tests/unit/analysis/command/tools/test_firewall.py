"""Packet filter grammars: rule changes, flushes, open policies, ufw, firewalld, ipset."""

from __future__ import annotations

import pytest

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import FirewallOp


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


@pytest.mark.parametrize(
    ("text", "write"),
    [
        ("iptables -A INPUT -p tcp --dport 9000 -j DROP", True),
        ("iptables -nvL", False),
        ("iptables -C INPUT -j DROP", False),
        ("ip6tables-legacy -I INPUT -j DROP", True),
        ("iptables-restore < /etc/iptables/rules.v4", True),
        ("nft add rule inet filter input tcp dport 9000 drop", True),
        ("nft -f /etc/nftables.conf", True),
        ("nft list ruleset", False),
        ("ufw allow 22/tcp", True),
        ("ufw status verbose", False),
        ("firewall-cmd --permanent --add-port=9000/tcp", True),
        ("firewall-cmd --list-all", False),
    ],
)
def test_rule_writes(text: str, write: bool) -> None:
    assert step(text).firewall_write is write


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("iptables -F", [FirewallOp("iptables-flush", "flush")]),
        ("iptables -t nat -F PREROUTING", [FirewallOp("iptables-flush", "flush", ("nat", "PREROUTING"))]),
        ("iptables -wF", [FirewallOp("iptables-flush", "flush")]),
        (
            "iptables -P INPUT ACCEPT -F",
            [
                FirewallOp("iptables-policy-accept", "policy-accept", ("INPUT",)),
                FirewallOp("iptables-flush", "flush", ("INPUT", "ACCEPT")),
            ],
        ),
        ("nft flush ruleset", [FirewallOp("nft-flush-ruleset", "flush")]),
        ("nft 'delete table inet filter'", [FirewallOp("nft-delete-table", "flush", ("inet", "filter"))]),
        ("nft flush set inet f bl", [FirewallOp("nft-flush-set", "set-flush", ("inet", "f", "bl"))]),
        ("ufw --force reset", [FirewallOp("ufw-reset", "reset")]),
        ("ufw disable", [FirewallOp("ufw-disable", "disable")]),
        ("ufw --dry-run disable", []),
        (
            "firewall-cmd --set-default-zone=trusted",
            [FirewallOp("firewalld-trusted-default", "trusted-default", ("trusted",))],
        ),
        ("ipset flush blocklist", [FirewallOp("ipset-flush", "set-flush", ("blocklist",))]),
        ("ipset list", []),
    ],
)
def test_operations(text: str, ops: list[FirewallOp]) -> None:
    assert step(text).firewall == ops
