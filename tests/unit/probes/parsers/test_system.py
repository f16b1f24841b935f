"""boot, os and sysctl on Debian/RHEL output; the sysctl filter and the /proc/sys fallback."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.probes import parse_snapshot
from testbed.probes.parsers.system import sysctl_ignored
from testbed.testing.snapshots import render_snapshot


def test_debian_boot_and_os(debian: dict[str, Any]) -> None:
    assert debian["boot"]["uptime_s"] == pytest.approx(312.48)
    assert debian["boot"]["clock"] == 1709633521
    os_ = debian["os"]
    assert (os_["id"], os_["version_id"]) == ("debian", "12")
    assert os_["os_release"]["VERSION_CODENAME"] == "bookworm"
    assert os_["kernel"]["release"] == "6.1.0-18-amd64"
    assert os_["kernel"]["machine"] == "x86_64"
    assert os_["hostname"] == "web1"


def test_rhel_os(rhel: dict[str, Any]) -> None:
    assert rhel["os"]["id"] == "almalinux"
    assert rhel["os"]["id_like"] == ["rhel", "centos", "fedora"]
    assert rhel["os"]["version_id"] == "9.3"


def test_debian_sysctl_drops_volatile_keys(debian: dict[str, Any]) -> None:
    values = debian["sysctl"]["values"]
    assert values["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert values["net.ipv4.ip_forward"] == "0"
    for key in (
        "kernel.random.boot_id",
        "kernel.random.entropy_avail",
        "kernel.ns_last_pid",
        "net.ipv4.tcp_fastopen_key",
        "kernel.perf_event_max_sample_rate",
        "net.netfilter.nf_conntrack_count",
    ):
        assert key not in values
    assert debian["sysctl"]["ignored"] == 6


def test_sysctl_filter_rules() -> None:
    assert sysctl_ignored("fs.file-nr")
    assert sysctl_ignored("net.ipv6.conf.eth0.stable_secret")
    assert not sysctl_ignored("net.ipv6.conf.eth0.forwarding")
    assert not sysctl_ignored("vm.swappiness")


def test_sysctl_proc_fallback_format() -> None:
    text = render_snapshot(
        {
            "sysctl": [
                (
                    "sysctl",
                    0,
                    "\n".join(
                        [
                            "/proc/sys/net/ipv4/ip_forward:1",
                            "/proc/sys/net/ipv4/conf/eth0.100/forwarding:1",
                            "/proc/sys/kernel/random/uuid:abc",
                            "/proc/sys/fs/file-max:100",
                        ]
                    ),
                )
            ]
        }
    )
    values = parse_snapshot(text)["sysctl"]["values"]
    assert values == {"net.ipv4.ip_forward": "1", "net.ipv4.conf.eth0/100.forwarding": "1"}
