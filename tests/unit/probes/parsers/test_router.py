"""The router probe: recorded FRR 8.4 output (tests/unit/fixtures/router/README.md) parsed,
the real snapshot.sh run with a vtysh that answers from those recordings, and the diff
between two points."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from testbed.probes import diff_probe, parse_snapshot
from testbed.probes.parsers.framing import Part, Section
from testbed.probes.parsers.router import config_lines, parse_router
from testbed.probes.script import SCRIPT_PATH

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "router"


def lines(name: str) -> list[str]:
    return (FIX / name).read_text().splitlines()


def section(**parts: list[str] | tuple[list[str], int]) -> Section:
    sec = Section(name="router")
    for name, value in parts.items():
        body, rc = value if isinstance(value, tuple) else (value, 0)
        sec.parts[name] = Part(name=name, lines=body, rc=rc)
    return sec


def test_configuration_is_flattened_by_indentation() -> None:
    paths = config_lines(lines("running-config.txt"))
    assert paths[:3] == ["frr defaults traditional", "hostname vm", "log syslog informational"]
    assert "debug ospf event" in paths and "ip route 198.51.100.0/24 203.0.113.254" in paths
    assert "router bgp 65001 > neighbor 127.0.0.2 remote-as 65002" in paths
    assert "interface lo > ip ospf area 0" in paths
    assert "bfd > peer 127.0.0.2" in paths and "bfd" in paths
    assert not [p for p in paths if p.endswith(("exit", "!", "end")) or "Building" in p or "frr version" in p]
    nested = config_lines(
        ["router bgp 1", " address-family ipv4 unicast", "  network 10.0.1.0/24", " exit-address-family", "exit"]
    )
    assert nested[-1] == "router bgp 1 > address-family ipv4 unicast > network 10.0.1.0/24"


def test_saved_and_running_agree_until_a_line_is_not_saved() -> None:
    saved = lines("saved-frr.conf")
    parsed = parse_router(section(running=lines("running-config.txt"), saved=saved), None, [])  # type: ignore[arg-type]
    assert parsed["unsaved"] == [] and parsed["unsaved_removals"] == []
    running = lines("running-config.txt")
    running.insert(running.index("router ospf") + 1, " network 10.0.12.0/30 area 0")
    parsed = parse_router(section(running=running, saved=saved), None, [])  # type: ignore[arg-type]
    assert parsed["unsaved"] == ["router ospf > network 10.0.12.0/30 area 0"]


def test_rib_neighbours_and_links_from_recorded_json() -> None:
    unparsed: list[str] = []
    parsed = parse_router(
        section(
            rib=lines("rib-static.json"),
            ospf=lines("ospf-neighbors-full.json"),
            bgp=lines("bgp-summary-established.json"),
            bfd=lines("bfd-peers-up.json"),
            links=lines("ip-link.txt"),
        ),
        None,  # type: ignore[arg-type]
        unparsed,
    )
    assert unparsed == []
    static = parsed["rib"]["198.51.100.0/24"][0]
    assert static == {
        "protocol": "static",
        "selected": True,
        "installed": True,
        "distance": 1,
        "metric": 0,
        "nexthops": ["192.0.2.1 eth0"],
    }
    assert parsed["rib"]["192.0.2.0/24"][0]["nexthops"] == ["directly connected eth0"]
    assert parsed["ospf_neighbors"] == {
        "10.255.0.2 eth1": {"router_id": "10.255.0.2", "state": "Full/DR", "address": "10.0.12.2", "interface": "eth1"}
    }
    assert parsed["bgp_peers"]["ipv4Unicast 10.0.12.2"]["state"] == "Established"
    assert parsed["bfd_peers"]["10.0.12.2 eth1"]["status"] == "up"
    assert parsed["links"]["eth2"] == {
        "state": "DOWN",
        "admin_up": False,
        "lower_up": False,
        "mtu": 1500,
        "mac": "52:54:00:5e:00:12",
    }
    assert parsed["links"]["eth1"]["admin_up"] and parsed["links"]["eth1"]["lower_up"]


def test_down_sessions_and_errors_are_read_not_raised() -> None:
    unparsed: list[str] = []
    parsed = parse_router(
        section(
            running=(lines("unknown-command.txt")[:1], 1),
            ospf=lines("ospf-neighbors-none.json"),
            bgp=lines("bgp-summary-active.json"),
            bfd=lines("bfd-peers-down.json"),
            rib=["Exiting: failed to connect to any daemons."],
        ),
        None,  # type: ignore[arg-type]
        unparsed,
    )
    assert "running" not in parsed and "rib" not in parsed
    assert parsed["ospf_neighbors"] == {}
    assert parsed["bgp_peers"]["ipv4Unicast 127.0.0.2"] == {
        "afi": "ipv4Unicast",
        "peer": "127.0.0.2",
        "remote_as": 65002,
        "local_as": 65001,
        "state": "Active",
        "prefixes_received": 0,
    }
    assert parsed["bfd_peers"]["127.0.0.2"]["status"] == "down"
    assert unparsed == ["rib: Exiting: failed to connect to any daemons."]


FAKE_VTYSH = """#!/bin/sh
# answers `vtysh -c CMD` from the recorded fixtures
[ "$1" = -c ] || exit 2
case "$2" in
  "show running-config") cat "$FIX/running-config.txt" ;;
  "show ip route json") cat "$FIX/rib-static.json" ;;
  "show ip ospf neighbor json") cat "$FIX/ospf-neighbors-$STAGE.json" ;;
  "show bgp summary json") cat "$FIX/bgp-summary-active.json" ;;
  "show bfd peers json") cat "$FIX/bfd-peers-down.json" ;;
  *) echo "% Unknown command: $2"; exit 1 ;;
esac
"""


def _snapshot(tmp_path: Path, stage: str) -> dict:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "vtysh").write_text(FAKE_VTYSH)
    (bindir / "vtysh").chmod(0o755)
    env = {
        **os.environ,
        "FIX": str(FIX),
        "STAGE": stage,
        "TESTBED_PROBE_PATH": f"{bindir}:/usr/sbin:/usr/bin:/sbin:/bin",
        "TESTBED_PROBE_FRR_CONF": str(FIX / "saved-frr.conf"),
    }
    out = subprocess.run(["sh", str(SCRIPT_PATH), "router"], capture_output=True, env=env, check=True, timeout=60)
    return parse_snapshot(out.stdout.decode())


def test_the_script_runs_the_router_probe_and_diffs_show_the_adjacency(tmp_path: Path) -> None:
    before, after = _snapshot(tmp_path, "none"), _snapshot(tmp_path, "full")
    router = after["router"]
    assert router["part_rc"] == {"running": 0, "saved": 0, "rib": 0, "ospf": 0, "bgp": 0, "bfd": 0, "links": 0}
    assert router["unsaved"] == [] and "198.51.100.0/24" in router["rib"]
    change = diff_probe("router", before["router"], after["router"])
    assert change.keys("added") == ["10.255.0.2 eth1"]
    assert change.added[0].collection == "ospf_neighbors" and change.added[0].after == {
        "state": "Full",
        "address": "10.0.12.2",
    }
    assert not change.removed and not change.changed


def test_without_vtysh_the_probe_says_so(tmp_path: Path) -> None:
    for tool in ("awk", "mkdir", "rm", "cat", "od", "tr", "date", "timeout", "ip"):
        found = shutil.which(tool)
        if found:
            (tmp_path / tool).symlink_to(found)
    env = {**os.environ, "TESTBED_PROBE_PATH": str(tmp_path)}
    out = subprocess.run(["/bin/sh", str(SCRIPT_PATH), "router"], capture_output=True, env=env, check=True, timeout=60)
    assert parse_snapshot(out.stdout.decode())["router"] == {"unavailable": "vtysh not found"}


def test_diff_ignores_role_flaps_and_down_session_state_churn() -> None:
    def snap(state: str, bgp: str) -> dict:
        return {
            "ospf_neighbors": {"10.255.0.2 eth1": {"state": state, "address": "10.0.12.2"}},
            "bgp_peers": {"ipv4Unicast 10.0.12.2": {"remote_as": 65002, "state": bgp}},
        }

    assert diff_probe("router", snap("Full/DR", "Active"), snap("Full/Backup", "Connect")).empty
    assert diff_probe("router", snap("Full/DR", "Active"), snap("Full/DR", "Established")).keys("changed") == [
        "ipv4Unicast 10.0.12.2"
    ]
