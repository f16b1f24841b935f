"""Shared management subnets (`testbed.hypervisor.mgmtroute`): the XML parse, and the
routing in a network namespace this test creates (two bridges with one host address)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from testbed.hypervisor.mgmtroute import HostAddress, host_address


def test_host_address_of_network_xml() -> None:
    mgmt = "<network><name>n</name><bridge name='tbab12c-mgmt'/><ip address='10.213.4.1' prefix='24'/></network>"
    assert host_address(mgmt) == HostAddress("tbab12c-mgmt", "10.213.4.1", 24)
    assert host_address(mgmt).subnet == "10.213.4.0/24"  # type: ignore[union-attr]
    masked = "<network><bridge name='b'/><ip address='10.1.2.1' netmask='255.255.255.0'/></network>"
    assert host_address(masked) == HostAddress("b", "10.1.2.1", 24)
    assert host_address("<network><bridge name='tbab12c-lan'/></network>") is None


NETNS_SCRIPT = textwrap.dedent(
    """
    import json, socket, subprocess
    from testbed.hypervisor.mgmtroute import HostAddress, isolate, release_stale, TABLE_BASE

    def sh(cmd):
        return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True).stdout

    sh("ip link set lo up")
    for br in ("tbaaaa1-mgmt", "tbbbbb2-mgmt"):
        sh(f"ip link add {br} type bridge && ip addr add 10.77.0.1/24 dev {br} && ip link set {br} up")
        # what libvirt's collision check reads: no second network while the main table routes the subnet
        isolate(HostAddress(br, "10.77.0.1", 24))
        assert "10.77.0.0" not in sh("ip route show table main"), sh("ip route show table main")
    again = isolate(HostAddress("tbaaaa1-mgmt", "10.77.0.1", 24))  # idempotent
    rules = [r for r in json.loads(sh("ip -j rule show")) if str(r.get("table")).startswith("19")]
    assert len(rules) == 4, rules
    for br in ("tbaaaa1-mgmt", "tbbbbb2-mgmt"):
        got = sh(f"ip route get 10.77.0.10 oif {br}")
        assert f"dev {br}" in got and "src 10.77.0.1" in got, got
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, br.encode())
        s.connect(("10.77.0.10", 22))  # a route exists for a socket bound to the bridge
        s.close()
    assert release_stale() == []  # both bridges exist: nothing to delete
    sh("ip link del tbaaaa1-mgmt")
    removed = release_stale()
    assert removed == [f"oif tbaaaa1-mgmt table {again}", f"iif tbaaaa1-mgmt table {again}"], removed
    left = [r for r in json.loads(sh("ip -j rule show")) if str(r.get("table")).startswith("19")]
    assert {r.get("oif") or r.get("iif") for r in left} == {"tbbbbb2-mgmt"}, left
    print("ok")
    """
)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1)")
def test_two_bridges_with_one_host_address_route_by_bound_device() -> None:
    result = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", NETNS_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
