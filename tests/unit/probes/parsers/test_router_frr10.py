"""The router probe, the saved-configuration comparison and the `neighbor` judgement on
FRRouting 10.3 output recorded on frr-router-13 (tests/unit/fixtures/router/frr10/README.md):
the harness reads FRR 10 as it reads 8.4."""

from __future__ import annotations

from pathlib import Path

from testbed.hypervisor.deviceconfig import missing_lines
from testbed.model.checknet import judge_neighbor
from testbed.model.checks import NeighborCheck
from testbed.probes.parsers.framing import Part, Section
from testbed.probes.parsers.router import config_lines, parse_router

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "router" / "frr10"


def text(name: str) -> str:
    return (FIX / name).read_text()


def lines(name: str) -> list[str]:
    return text(name).splitlines()


def section(**parts: list[str]) -> Section:
    sec = Section(name="router")
    for name, body in parts.items():
        sec.parts[name] = Part(name=name, lines=body, rc=0)
    return sec


def parse(**parts: list[str]) -> tuple[dict, list[str]]:
    unparsed: list[str] = []
    return parse_router(section(**parts), None, unparsed), unparsed  # type: ignore[arg-type]


def test_frr10_configuration_is_flattened_and_saved_equals_running() -> None:
    paths = config_lines(lines("running-config.txt"))
    assert paths[:2] == ["frr defaults traditional", "hostname r1"]
    assert "ip route 10.20.0.0/24 10.0.12.2 bfd profile fast" in paths
    assert "ip route 10.20.0.0/24 10.0.21.2 200" in paths
    assert "bfd > profile fast" in paths and "interface lan0 > ip address 10.10.0.1/24" in paths
    assert not [p for p in paths if p.endswith(("exit", "!", "end")) or "Building" in p or "frr version" in p]
    parsed, unparsed = parse(running=lines("running-config.txt"), saved=lines("saved-frr.conf"))
    assert unparsed == [] and parsed["unsaved"] == [] and parsed["unsaved_removals"] == []


def test_frr10_saved_configuration_in_force_or_a_missing_line_named() -> None:
    running, saved = text("running-config.txt"), text("saved-frr.conf")
    assert missing_lines(saved, running) == []
    lost = running.replace("ip route 10.20.0.0/24 10.0.12.2 bfd profile fast\n", "")
    assert missing_lines(saved, lost) == ["ip route 10.20.0.0/24 10.0.12.2 bfd profile fast"]


def test_frr10_rib_with_a_bfd_tracked_static_and_its_floating_backup() -> None:
    parsed, unparsed = parse(rib=lines("rib-static.json"), bfd=lines("bfd-peers-up.json"), links=lines("ip-link.txt"))
    assert unparsed == []
    primary, backup = parsed["rib"]["10.20.0.0/24"]
    assert primary == {"protocol": "static", "selected": True, "installed": True, "distance": 1, "metric": 0,
                       "nexthops": ["10.0.12.2 eth1"]}  # fmt: skip
    assert backup["distance"] == 200 and not backup["selected"] and backup["nexthops"] == ["10.0.21.2 eth2"]
    assert parsed["bfd_peers"] == {"10.0.12.2": {"peer": "10.0.12.2", "interface": None, "status": "up",
                                                 "multihop": False}}  # fmt: skip
    assert parsed["links"]["eth1"]["admin_up"] and parsed["links"]["eth1"]["lower_up"]
    assert parsed["links"]["lan0"]["state"] == "UNKNOWN" and parsed["links"]["eth0"]["mac"] == "52:54:00:3b:95:a7"
    failover, unparsed = parse(rib=lines("rib-static-failover.json"), bfd=lines("bfd-peers-down.json"))
    assert unparsed == []
    (only,) = failover["rib"]["10.20.0.0/24"]
    assert only["selected"] and only["distance"] == 200 and only["nexthops"] == ["10.0.21.2 eth2"]
    assert failover["bfd_peers"]["10.0.12.2"]["status"] == "down"


def test_frr10_bfd_neighbor_check_is_judged_from_its_json() -> None:
    up = NeighborCheck(protocol="bfd", peer="10.0.12.2")
    assert judge_neighbor(up, 0, text("bfd-peers-up.json"))[0] == "passed"
    status, reason = judge_neighbor(up, 0, text("bfd-peers-down.json"))
    assert status == "failed" and "is down" in reason
    down = NeighborCheck(protocol="bfd", peer="10.0.12.2", state="down")
    assert judge_neighbor(down, 0, text("bfd-peers-down.json"))[0] == "passed"
