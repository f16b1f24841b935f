"""Lab core through the real CLI: two-node lab, name resolution, isolation, clean teardown."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import libvirt
import pytest

from testbed.config import Settings
from testbed.hypervisor.labstate import find_lab

from .conftest import assert_clean, leftovers, run_cli

pytestmark = pytest.mark.vm


def test_two_node_lab_name_resolution_isolation_and_down(vm_home: Path) -> None:
    up = run_cli("lab", "up", "two-node", "--name", "t2")
    assert "web" in up.stdout and "client" in up.stdout
    try:
        listed = run_cli("lab", "list").stdout
        assert "t2" in listed and "detached" in listed

        # client resolves web by name to web's address on the LAN, and reaches its nginx.
        state = find_lab(Settings.from_env().labs_dir, "t2")
        assert state is not None
        web_lan = state.nodes["web"].data_ips["lan"]
        got = run_cli("lab", "exec", "t2", "client", "--", "getent", "hosts", "web").stdout
        assert got.split()[0] == web_lan
        curl = run_cli("lab", "exec", "t2", "client", "--", "curl -sS -o /dev/null -w '%{http_code}' http://web/")
        assert curl.stdout.strip() == "200"

        # exit status of the command is the CLI's exit status
        failing = run_cli("lab", "exec", "t2", "web", "--", "exit 7", check=False)
        assert failing.returncode == 7

        _check_isolation_from_second_lab(state.nodes["web"].mgmt_ip, web_lan)
    finally:
        run_cli("lab", "down", "t2")
    assert_clean(vm_home)


def _check_isolation_from_second_lab(web_mgmt: str, web_lan: str) -> None:
    run_cli("lab", "up", "single", "--name", "iso")
    try:
        other = find_lab(Settings.from_env().labs_dir, "iso")
        assert other is not None
        host_ip = str(next(ipaddress.IPv4Network(f"{other.nodes['node'].mgmt_ip}/24", strict=False).hosts()))
        # positive control: the node has link to its own host side (ARP resolves the host's
        # address; the host guard drops the ping itself, see test_guest_exec)
        neigh = run_cli(
            "lab", "exec", "iso", "node", "--", f"ping -c1 -W2 {host_ip} >/dev/null; ip neigh show {host_ip}"
        )
        assert "lladdr" in neigh.stdout, neigh.stdout
        # even with routes through its host, it reaches nothing of the other lab
        for target in (web_mgmt, web_lan):
            run_cli("lab", "exec", "iso", "node", "--", f"ip route replace {target}/32 via {host_ip}")
            probe = run_cli("lab", "exec", "iso", "node", "--", f"ping -c2 -W2 {target}", check=False)
            assert probe.returncode != 0, f"lab iso reached {target} of lab t2:\n{probe.stdout}"
        names = leftovers(Path(Settings.from_env().home))
        assert len(names["domains"]) == 3
        assert "ready (1/1 running)" in run_cli("lab", "list").stdout

        # a detached lab whose domain died (libvirtd restart, host reboot) is shown as dead
        conn = libvirt.open(Settings.from_env().libvirt_uri)
        try:
            conn.lookupByName(other.domains[0]).destroy()
        finally:
            conn.close()
        listed = run_cli("lab", "list").stdout
        assert "dead" in listed and "0/1" in listed, listed
    finally:
        run_cli("lab", "down", "iso")
