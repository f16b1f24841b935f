"""Router residue: configuration a task did not ask for (debug settings, static test routes,
an extra neighbour) found on a router's snapshots, attributed to the vtysh command that
wrote it; the configuration the task asked for, FRR's kernel routes and `write memory`'s
files are not residue."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue import find_residue
from testbed.analysis.residue.router import classify, config_tokens
from testbed.model.task import Expected
from testbed.probes import parse_snapshot
from testbed.probes.parsers.router import config_lines
from testbed.testing.snapshots import snapshot_from_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BASE_CONFIG = """frr defaults traditional
hostname r1
!
interface eth1
 ip address 10.0.12.1/30
exit
!
router bgp 65001
 neighbor 10.0.12.2 remote-as 65002
exit
!
"""


@pytest.fixture(scope="module")
def debian() -> dict[str, Any]:
    return parse_snapshot(snapshot_from_dir(FIXTURES / "probes" / "debian"))


def router_snapshot(debian: dict[str, Any], config: str, saved: str | None = None) -> dict[str, Any]:
    snap = copy.deepcopy(debian)
    running = config_lines(config.splitlines())
    stored = config_lines((saved if saved is not None else config).splitlines())
    snap["router"] = {"running": running, "saved": stored, "unsaved": [x for x in running if x not in stored]}
    return snap


def command(seq: int, text: str, node: str = "r1") -> CommandView:
    return CommandView(id=100 + seq, seq=seq, node=node, phase="agent", source="agent", command=text, exit_code=0)


def run(debian: dict[str, Any], after: dict[str, Any], commands: list[CommandView], expected: Expected | None = None):
    base = router_snapshot(debian, BASE_CONFIG)
    return find_residue({"r1": {"after_setup": base, "after_agent": after}}, commands, expected)


AGENT_CONFIG = BASE_CONFIG.replace(
    "!\nrouter bgp",
    "!\ndebug ospf event\n!\nip route 192.0.2.0/24 10.0.12.2\n!\n"
    "router ospf\n network 10.0.12.0/30 area 0\nexit\n!\nrouter bgp",
).replace(
    " neighbor 10.0.12.2 remote-as 65002\n", " neighbor 10.0.12.2 remote-as 65002\n neighbor 10.9.9.9 remote-as 65009\n"
)

COMMANDS = [
    command(1, "configure terminal\nrouter ospf\n network 10.0.12.0/30 area 0\nend"),
    command(2, "configure terminal\ndebug ospf event\nend"),
    command(3, "configure terminal\nip route 192.0.2.0/24 10.0.12.2\nend"),
    command(4, "configure terminal\nrouter bgp 65001\nneighbor 10.9.9.9 remote-as 65009\nend"),
    command(5, "show running-config"),
]


def test_debug_settings_static_routes_and_an_extra_neighbour_are_residue(debian: dict[str, Any]) -> None:
    after = router_snapshot(debian, AGENT_CONFIG)
    result = run(debian, after, COMMANDS, Expected(router=["router ospf*"]))
    found = {f.evidence["subject"]: f for f in result.findings}
    assert set(found) == {"router:debug", "router:static:192.0.2.0/24", "router:router bgp 65001:neighbor:10.9.9.9"}
    assert result.verdict == "yes"
    assert all(f.category == "system_config" and f.node == "r1" for f in result.findings)
    assert found["router:debug"].command_id == 102
    assert found["router:static:192.0.2.0/24"].command_id == 103
    assert found["router:router bgp 65001:neighbor:10.9.9.9"].command_id == 104
    assert "BGP neighbour 10.9.9.9 added" in found["router:router bgp 65001:neighbor:10.9.9.9"].summary
    excluded = {(e["key"], e["reason"]) for e in result.excluded}
    assert ("router ospf > network 10.0.12.0/30 area 0", "expected router configuration") in excluded


def test_without_an_expectation_the_asked_for_ospf_is_residue_too(debian: dict[str, Any]) -> None:
    after = router_snapshot(debian, AGENT_CONFIG)
    subjects = {f.evidence["subject"] for f in run(debian, after, COMMANDS).findings}
    assert "router:router ospf" in subjects


def test_saving_is_not_residue_nor_are_frr_routes_or_write_memory_files(debian: dict[str, Any]) -> None:
    config = BASE_CONFIG.replace("!\nrouter bgp", "!\nrouter ospf\n network 10.0.12.0/30 area 0\nexit\n!\nrouter bgp")
    after = router_snapshot(debian, config)
    after["network"]["routes"] = [
        *after["network"]["routes"],
        "10.0.2.0/24 nhid 19 via 10.0.12.2 dev eth1 proto ospf metric 20",
    ]
    files = after["etc_files"]["files"]
    files["/etc/frr/frr.conf"] = {
        "type": "file",
        "mode": "0640",
        "owner": "frr",
        "group": "frr",
        "size": 300,
        "sha256": "c" * 64,
    }
    files["/etc/frr/frr.conf.sav"] = dict(files["/etc/frr/frr.conf"], sha256="d" * 64)
    result = run(debian, after, [COMMANDS[0], command(6, "write memory")], Expected(router=["router ospf*"]))
    assert result.findings == [] and result.verdict == "no"
    reasons = {e["reason"] for e in result.excluded}
    assert "installed by FRR: the router probe's configuration and RIB carry it" in reasons
    assert "represented by the router probe (saved configuration)" in reasons


def test_a_kernel_route_the_agent_added_by_hand_on_a_router_is_still_residue(debian: dict[str, Any]) -> None:
    after = router_snapshot(debian, BASE_CONFIG)
    after["network"]["routes"] = [*after["network"]["routes"], "198.51.100.0/24 via 10.0.12.2 dev eth1"]
    result = run(debian, after, [command(1, "ip route add 198.51.100.0/24 via 10.0.12.2")])
    assert [f.evidence["subject"] for f in result.findings] == ["network:routes:198.51.100.0/24 via 10.0.12.2 dev eth1"]


def test_a_line_only_in_the_saved_file_is_reported_as_saved_not_running(debian: dict[str, Any]) -> None:
    saved = BASE_CONFIG + "ip route 203.0.113.0/24 10.0.12.2\n"
    after = router_snapshot(debian, BASE_CONFIG, saved=saved)
    result = run(debian, after, [command(1, "echo 'ip route 203.0.113.0/24 10.0.12.2' >> /etc/frr/frr.conf")])
    assert [f.summary for f in result.findings] == [
        "static route added (saved, not running): ip route 203.0.113.0/24 10.0.12.2"
    ]


def test_configuration_lost_at_reboot_is_not_residue(debian: dict[str, Any]) -> None:
    base = router_snapshot(debian, BASE_CONFIG)
    agent = router_snapshot(debian, AGENT_CONFIG, saved=BASE_CONFIG)
    reboot = router_snapshot(debian, BASE_CONFIG)  # the unsaved lines are gone
    result = find_residue(
        {"r1": {"after_setup": base, "after_agent": agent, "after_reboot": reboot}},
        COMMANDS,
        Expected(router=["router ospf*"]),
    )
    assert all(f.evidence["changes"][0]["point"] == "after_agent" for f in result.findings)


@pytest.mark.parametrize(
    ("path", "subject"),
    [
        ("debug bgp updates", "router:debug"),
        ("log syslog debugging", "router:debug"),
        ("ip route 0.0.0.0/0 10.0.0.1", "router:static:0.0.0.0/0"),
        ("router ospf > neighbor 10.0.0.9", "router:router ospf:neighbor:10.0.0.9"),
        ("bfd > peer 10.0.12.2 interface eth1", "router:bfd:peer:10.0.12.2"),
        ("interface eth1 > ip ospf cost 50", "router:interface eth1"),
    ],
)
def test_classification(path: str, subject: str) -> None:
    assert classify(path)[0] == subject


def test_tokens_are_the_leaf_words() -> None:
    assert config_tokens("router bgp 65001 > neighbor 10.9.9.9 remote-as 65009") == (
        "neighbor",
        "10.9.9.9",
        "remote-as",
        "65009",
    )
    assert config_tokens("no ip forwarding") == ("forwarding",)
