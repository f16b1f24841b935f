"""Parsers of the snapshot script: framing, each probe on Debian/RHEL/Alpine captured-style
output, and real runs of snapshot.sh on this host (dash, bash, busybox ash)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from testbed.probes import PROBES, SCRIPT_PATH, parse_snapshot, snapshot_command, snapshot_script
from testbed.probes.parsers import (
    frame_snapshot,
    normalize_iptables,
    normalize_nft,
    parse_authorized_key,
    parse_cron_line,
    parse_sha256_lines,
    parse_stat_lines,
    sysctl_ignored,
)
from testbed.testing.snapshots import FIXTURE_NONCE, render_snapshot, snapshot_from_dir

FIXTURES = Path(__file__).parent / "fixtures" / "probes"

# Fingerprints printed by `ssh-keygen -lf` for the public keys used in the fixtures.
FP_ED25519 = "SHA256:ObKBUyVamiCT4VoshDiUOrCxXzbJVXD01uvxZoUvZDI"
FP_RSA = "SHA256:35z6sVNzpWBc+VX2cERETSNzZAIx/bkzNWqoTnDQGc0"
FP_ECDSA = "SHA256:+TEVv1fCkSNTSpFiThWH+mbxzwUhH0aU6UAhacxO9EM"


def _load(distro: str) -> dict[str, Any]:
    return parse_snapshot(snapshot_from_dir(FIXTURES / distro))


@pytest.fixture(scope="module")
def debian() -> dict[str, Any]:
    return _load("debian")


@pytest.fixture(scope="module")
def rhel() -> dict[str, Any]:
    return _load("rhel")


@pytest.fixture(scope="module")
def alpine() -> dict[str, Any]:
    return _load("alpine")


# ------------------------------------------------------------------------------ framing


def test_script_is_shipped_and_readable() -> None:
    text = snapshot_script()
    assert text.startswith("#!/bin/sh")
    assert text == SCRIPT_PATH.read_text()
    assert not re.search(r"^\s*set\s+-[a-z]*e", text, re.M), "a probe failure must not abort"
    for name in PROBES:
        assert f"p_{name}()" in text


def test_snapshot_command_quotes_arguments() -> None:
    assert snapshot_command("/run/tb dir/s.sh", ["boot", "os"]) == "sh '/run/tb dir/s.sh' boot os"
    assert snapshot_command("/run/s.sh") == "sh /run/s.sh"


@pytest.mark.parametrize("distro", ["debian", "rhel", "alpine"])
def test_every_fixture_probe_parses_cleanly(distro: str) -> None:
    parsed = _load(distro)
    assert parsed["_meta"]["complete"] is True
    for name in PROBES:
        value = parsed[name]
        assert "unavailable" not in value, (name, value)
        assert "parse_error" not in value, (name, value)
    json.dumps(parsed)  # JSON-able


def test_forged_markers_without_the_nonce_are_plain_output() -> None:
    forged = "\n".join(
        [
            "@@testbed-partend 11111111-2222 entries rc=0@@",
            "@@testbed-end 11111111-2222 tmp_files rc=0 up=1@@",
            f"@@testbed-end {FIXTURE_NONCE} tmp_files rc=0@@ trailing",
        ]
    )
    text = render_snapshot({"tmp_files": [("entries", 0, forged)], "boot": [("boot", 0, "")]})
    framed = frame_snapshot(text)
    assert framed.sections["tmp_files"].parts["entries"].lines == forged.splitlines()
    assert "boot" in framed.sections
    parsed = parse_snapshot(text)
    assert parsed["tmp_files"]["unparsed"] == forged.splitlines()


def test_truncated_output_marks_missing_probes_and_incomplete() -> None:
    full = snapshot_from_dir(FIXTURES / "debian")
    cut = full[: full.index("@@testbed-probe " + FIXTURE_NONCE + " users")]
    parsed = parse_snapshot(cut)
    assert parsed["_meta"]["complete"] is False
    assert parsed["boot"]["boot_id"] == "3f6b1a0e-5c1d-4d7a-9a4f-2b8e1c7d9e01"
    assert parsed["users"] == {"unavailable": "missing from output"}
    assert parsed["network"] == {"unavailable": "missing from output"}


@pytest.mark.parametrize("garbage", ["", "\x00\x01binary", "no header here\n@@testbed-end x@@"])
def test_garbage_never_raises(garbage: str) -> None:
    parsed = parse_snapshot(garbage)
    assert parsed["_meta"]["complete"] is False
    assert all(parsed[name] == {"unavailable": "missing from output"} for name in PROBES)


def test_diagnostics_stderr_truncation_and_unavailable() -> None:
    n = FIXTURE_NONCE
    text = "\n".join(
        [
            f"@@testbed-snapshot v=1 nonce={n} pid=9 up=1.00@@",
            f"@@testbed-probe {n} tmp_files up=1.00@@",
            f"@@testbed-part {n} entries@@",
            'directory\t1777\t0\troot\t0\troot\t4096\t1\t"/tmp"',
            "garbage line",
            f"@@testbed-truncated {n} max_lines=5000 more=1 long_lines=2@@",
            f"@@testbed-stderr {n}@@ find: '/tmp/x': Permission denied",
            f"@@testbed-partend {n} entries rc=1@@",
            f"@@testbed-end {n} tmp_files rc=1 up=1.25@@",
            f"@@testbed-probe {n} firewall up=1.25@@",
            f"@@testbed-unavailable {n} nft: nft not found@@",
            f"@@testbed-unavailable {n} iptables: iptables-save not found@@",
            f"@@testbed-end {n} firewall rc=0 up=1.25@@",
            f"@@testbed-done {n} probes=2 up=1.50@@",
        ]
    )
    parsed = parse_snapshot(text)
    tmp = parsed["tmp_files"]
    assert list(tmp["entries"]) == ["/tmp"]
    assert tmp["unparsed"] == ["garbage line"]
    assert tmp["truncated"] == {"entries": {"max_lines": 5000, "more": 1, "long_lines": 2}}
    assert tmp["stderr"] == {"entries": ["find: '/tmp/x': Permission denied"]}
    assert tmp["part_rc"] == {"entries": 1}
    assert parsed["firewall"] == {"unavailable": "nft: nft not found; iptables: iptables-save not found"}
    meta = parsed["_meta"]
    assert meta["complete"] is True and meta["script_pid"] == 9
    assert meta["probe_seconds"]["tmp_files"] == pytest.approx(0.25)
    assert meta["duration_s"] == pytest.approx(0.5)


# ------------------------------------------------------------------------ shared formats


def test_stat_lines_gnu_quoting_busybox_and_continuations() -> None:
    unparsed: list[str] = []
    lines = [
        'regular file\t644\t0\troot\t0\troot\t5\t10\t"/tmp/caf\\303\\251 \\"q\\""',
        'symbolic link\t777\t0\troot\t0\troot\t4\t10\t"/tmp/l" -> "/etc/x y"',
        "symbolic link\t777\t0\troot\t0\troot\t4\t10\t'/tmp/bb' -> '/etc'",
        "regular empty file\t600\t1000\talice\t1000\talice\t0\t10\t/tmp/first",
        "second line of the name",
        "weird line",
    ]
    out = parse_stat_lines(lines[:5], unparsed)
    assert out['/tmp/café "q"']["mode"] == "0644"
    assert out["/tmp/l"]["target"] == "/etc/x y"
    assert out["/tmp/bb"] == {**out["/tmp/bb"], "type": "symlink", "target": "/etc"}
    assert out["/tmp/first\nsecond line of the name"]["owner"] == "alice"
    assert unparsed == []
    parse_stat_lines(lines[5:], unparsed)
    assert unparsed == ["weird line"]


def test_sha256_lines_gnu_escape_and_busybox_continuation() -> None:
    h = "a" * 64
    out = parse_sha256_lines([f"\\{h}  /etc/a\\nb", f"{h}  /etc/c d", f"{h}  /etc/e", "f"], [])
    assert out == {"/etc/a\nb": h, "/etc/c d": h, "/etc/e\nf": h}


# -------------------------------------------------------------------------------- debian


def test_debian_boot_and_os(debian: dict[str, Any]) -> None:
    assert debian["boot"]["uptime_s"] == pytest.approx(312.48)
    assert debian["boot"]["clock"] == 1709633521
    os_ = debian["os"]
    assert (os_["id"], os_["version_id"]) == ("debian", "12")
    assert os_["os_release"]["VERSION_CODENAME"] == "bookworm"
    assert os_["kernel"]["release"] == "6.1.0-18-amd64"
    assert os_["kernel"]["machine"] == "x86_64"
    assert os_["hostname"] == "web1"


def test_debian_tmp_files(debian: dict[str, Any]) -> None:
    entries = debian["tmp_files"]["entries"]
    assert debian["tmp_files"]["count"] == 9
    notes = entries["/tmp/notes for agent.txt"]
    assert notes == {
        "type": "file",
        "mode": "0600",
        "uid": 1000,
        "owner": "debian",
        "gid": 1000,
        "group": "debian",
        "size": 0,
        "mtime": 1709633495,
    }
    assert entries["/tmp/odd\nname"]["size"] == 12
    assert entries["/tmp/latest"]["target"] == "/var/log/nginx"
    assert entries["/tmp"]["mode"] == "1777"


def test_debian_services(debian: dict[str, Any]) -> None:
    svc = debian["services"]
    assert svc["init"] == "systemd"
    assert svc["failed"] == ["nginx.service"]
    assert "ssh.service" in svc["enabled"] and "rsync.service" not in svc["enabled"]
    assert svc["unit_files"]["ctrl-alt-del.target"] == "masked"
    assert svc["unit_files"]["sshd.service"] == "alias"
    assert svc["units"]["nginx.service"]["active"] == "failed"
    assert svc["units"]["systemd-tmpfiles-clean.service"]["sub"] == "dead"
    assert svc["units"]["cron.service"]["description"] == "Regular background program processing daemon"


def test_debian_listening(debian: dict[str, Any]) -> None:
    socks = {s["key"]: s for s in debian["listening"]["sockets"]}
    assert set(socks) == {
        "udp:0.0.0.0:68",
        "udp:127.0.0.53%lo:53",
        "tcp:0.0.0.0:22",
        "tcp:0.0.0.0:80",
        "tcp:127.0.0.1:8000",
        "tcp:[::]:22",
        "tcp:[::]:80",
    }
    assert socks["tcp:0.0.0.0:80"]["processes"] == [{"name": "nginx", "pid": 1202}, {"name": "nginx", "pid": 1201}]
    assert socks["tcp:[::]:22"]["address"] == "::"
    assert socks["tcp:[::]:22"]["port"] == 22
    assert socks["udp:0.0.0.0:68"]["state"] == "UNCONN"


def test_debian_processes_exclude_kernel_threads_and_the_probe(debian: dict[str, Any]) -> None:
    procs = debian["processes"]
    pids = {p["pid"] for p in procs["processes"]}
    assert {2, 3, 14}.isdisjoint(pids)
    assert {4242, 4290}.isdisjoint(pids)  # the script and its ps child
    assert 4240 in pids  # its parent (the ssh session's sh -c) is not the probe's own
    assert procs["kernel_threads"] == 3 and procs["excluded_self"] == 2
    worker = next(p for p in procs["processes"] if p["pid"] == 1202)
    assert worker == {"pid": 1202, "ppid": 1201, "user": "www-data", "command": "nginx: worker process"}


def test_debian_users(debian: dict[str, Any]) -> None:
    users, groups = debian["users"]["users"], debian["users"]["groups"]
    assert users["deploy"]["password"] == "empty"
    assert users["root"]["password"] == "set"
    assert users["daemon"]["password"] == "locked"
    assert users["debian"] == {
        "uid": 1000,
        "gid": 1000,
        "gecos": "Debian,,,",
        "home": "/home/debian",
        "shell": "/bin/bash",
        "password": "set",
        "password_changed": 19787,
    }
    assert groups["sudo"] == {"gid": 27, "members": ["debian", "deploy"]}
    assert groups["users"]["members"] == []


def test_debian_sudoers(debian: dict[str, Any]) -> None:
    sud = debian["sudoers"]
    assert sud["files"]["/etc/sudoers.d/90-deploy"]["mode"] == "0440"
    assert sud["files"]["/etc/sudoers.d/90-deploy"]["sha256"].startswith("9f1e2d3c")
    assert {"file": "/etc/sudoers.d/90-deploy", "line": "deploy ALL=(ALL) NOPASSWD:ALL"} in sud["rules"]
    assert {"file": "/etc/sudoers", "line": "@includedir /etc/sudoers.d"} in sud["rules"]


def test_debian_authorized_keys_keep_no_key_material(debian: dict[str, Any]) -> None:
    ak = debian["authorized_keys"]
    keys = {k["fingerprint"]: k for k in ak["keys"]}
    assert set(keys) == {FP_RSA, FP_ED25519}
    assert keys[FP_ED25519]["file"] == "/home/deploy/.ssh/authorized_keys"
    assert keys[FP_ED25519]["comment"] == "deploy@ci"
    rsa = keys[FP_RSA]
    assert rsa["type"] == "ssh-rsa" and rsa["comment"] == "alice@laptop"
    assert rsa["options"] == 'no-port-forwarding,command="/usr/local/bin/only-backup \\"x y\\""'
    assert len(rsa["line_sha256"]) == 64
    assert ak["files"]["/root/.ssh/authorized_keys"]["mode"] == "0600"
    assert len(ak["unparsed"]) == 1 and "sha256=" in ak["unparsed"][0]
    dumped = json.dumps(ak)
    assert "AAAAC3NzaC1lZDI1NTE5" not in dumped and "AAAAB3NzaC1yc2E" not in dumped
    assert "not a key line" not in dumped


def test_authorized_key_line_forms() -> None:
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIJDlgEZKClWmoHSHdf0m143xE29lJL8IOMsbe+Jx6+WF"
    plain = parse_authorized_key(f"ssh-ed25519 {blob}")
    assert plain is not None and plain["comment"] == "" and plain["fingerprint"] == FP_ED25519
    line = f'from="10.0.0.1" ssh-ed25519 {blob} a comment with spaces'
    opt = parse_authorized_key(line)
    assert opt is not None
    assert opt["options"] == 'from="10.0.0.1"' and opt["comment"] == "a comment with spaces"
    assert opt["line_sha256"] == hashlib.sha256(line.encode()).hexdigest()
    bad_blob = parse_authorized_key("ssh-ed25519 !!!notbase64 c")
    assert bad_blob is not None and bad_blob["fingerprint"] is None
    assert parse_authorized_key("") is None
    assert parse_authorized_key("hello world") is None


def test_debian_packages(debian: dict[str, Any]) -> None:
    pk = debian["packages"]
    assert pk["manager"] == "dpkg"
    by = {(p["name"], p["arch"]): p for p in pk["packages"]}
    assert by[("openssh-server", "amd64")]["version"] == "1:9.2p1-2+deb12u2"
    assert by[("libc6", "i386")]["version"] == "2.36-9+deb12u4"
    assert by[("rsync", "amd64")]["status"] == "rc"
    assert by[("rsync", "amd64")]["installed"] is False
    assert by[("tzdata", "all")]["status"] == "iU"
    assert pk["count"] == len(pk["packages"]) - 1


def test_debian_repos(debian: dict[str, Any]) -> None:
    repos = debian["repos"]["repos"]
    assert len(repos) == 4
    sec = next(r for r in repos if r["uris"] == ["http://deb.debian.org/debian-security"])
    assert sec["format"] == "deb822" and sec["suites"] == ["bookworm-security"]
    assert sec["options"] == ["signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"]
    src = next(r for r in repos if r["types"] == ["deb-src"])
    assert src["enabled"] is False
    nginx = next(r for r in repos if r["format"] == "apt")
    assert nginx["options"] == ["arch=amd64", "signed-by=/usr/share/keyrings/nginx-archive-keyring.gpg"]
    assert (nginx["suites"], nginx["components"]) == (["bookworm"], ["nginx"])


def test_debian_pkg_health_ok(debian: dict[str, Any]) -> None:
    health = debian["pkg_health"]
    assert health["ok"] is True
    assert health["checks"]["dpkg_audit"] == {"command": "dpkg --audit", "rc": 0, "ok": True, "output": []}


def test_debian_firewall(debian: dict[str, Any]) -> None:
    fw = debian["firewall"]
    nft = fw["nft"]["rules"]
    assert "table inet filter > chain input: tcp dport { 80, 443 } counter accept" in nft
    assert "table inet filter > chain input: ct state established,related counter accept" in nft
    assert ("table inet filter > chain input: type filter hook input priority filter; policy drop;") in nft
    assert 'table ip nat > chain POSTROUTING: oifname "eth0" masquerade' in nft
    assert not any("packets" in r or "handle" in r for r in nft)
    assert "packets 1520" in fw["nft"]["raw"]
    ipt = fw["iptables"]
    assert ipt["rules"][:1] == ["nat :PREROUTING ACCEPT"]
    assert "nat -A POSTROUTING -o eth0 -j MASQUERADE" in ipt["rules"]
    assert "Generated by" not in ipt["raw"] and "*nat" in ipt["raw"]
    assert fw["ip6tables"]["rules"] == []
    assert "iptables nat -A POSTROUTING -o eth0 -j MASQUERADE" in fw["rules"]
    assert len(fw["rules"]) == len(nft) + len(ipt["rules"])


def test_debian_cron(debian: dict[str, Any]) -> None:
    cron = debian["cron"]
    hourly = next(e for e in cron["entries"] if "cron.hourly" in e["line"])
    assert hourly["kind"] == "job" and hourly["user"] == "root"
    assert hourly["schedule"] == "17 * * * *"
    assert hourly["command"] == "cd / && run-parts --report /etc/cron.hourly"
    reboot = next(e for e in cron["entries"] if e["schedule"] == "@reboot")
    assert reboot["user"] == "deploy" and reboot["command"] == "/home/deploy/bin/start-worker.sh"
    assert sum(e["kind"] == "env" for e in cron["entries"]) == 2
    assert set(cron["scripts"]) == {"/etc/cron.daily/apt-compat", "/etc/cron.daily/dpkg", "/etc/cron.daily/logrotate"}
    assert cron["timers"]["apt-daily.timer"]["active"] == "active"
    assert len(cron["timers"]) == 7


def test_debian_mounts(debian: dict[str, Any]) -> None:
    mounts = {m["mountpoint"]: m for m in debian["mounts"]["mounts"]}
    assert mounts["/"]["fstype"] == "ext4" and mounts["/"]["device"] == "/dev/vda1"
    assert "errors=remount-ro" in mounts["/"]["options"]
    assert "/srv/My Data" in mounts
    df = {d["mountpoint"]: d for d in debian["mounts"]["df"]}
    assert df["/"] == {
        "filesystem": "/dev/vda1",
        "size_kb": 2006736,
        "used_kb": 1139172,
        "avail_kb": 746340,
        "capacity_pct": 61,
        "mountpoint": "/",
    }
    assert "/srv/My Data" in df


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


def test_debian_etc_files(debian: dict[str, Any]) -> None:
    files = debian["etc_files"]["files"]
    assert files["/etc/hostname"]["sha256"].startswith("a4f1c7a5")
    assert files["/etc/shadow"]["group"] == "shadow" and files["/etc/shadow"]["mode"] == "0640"
    assert files["/etc/localtime"]["target"] == "/usr/share/zoneinfo/Etc/UTC"
    assert "sha256" not in files["/etc/big.db"]  # >= 1 MiB: not hashed
    assert "sha256" in files["/etc/nginx/sites-enabled/my site.conf"]
    assert debian["etc_files"]["count"] == 7


def test_debian_secrets(debian: dict[str, Any]) -> None:
    files = debian["secrets"]["files"]
    assert files["/root/.ssh/id_ed25519"]["kind"] == "private_key"
    assert "ssh_private_key" in files["/root/.ssh/id_ed25519"]["kinds"]
    assert files["/home/deploy/.pgpass"]["kind"] == "credentials"
    assert files["/tmp/server.key"]["kind"] == "private_key"
    assert files["/opt/app/tls/server.crt"]["kind"] == "certificate"
    assert files["/srv/backup/old"]["kind"] == "private_key"  # found by content only
    assert files["/srv/backup/old"]["headers"] == ["-----BEGIN RSA PRIVATE KEY-----"]
    assert files["/tmp/server.key"]["sha256"] == "3" * 64
    assert files["/tmp/server.key"]["mode"] == "0600"


def test_debian_network(debian: dict[str, Any]) -> None:
    net = debian["network"]
    addrs = {a["key"]: a for a in net["addresses"]}
    assert set(addrs) == {"lo:127.0.0.1/8", "lo:::1/128", "eth0:10.0.2.15/24", "eth0:fe80::5054:ff:fe12:3456/64"}
    assert addrs["eth0:10.0.2.15/24"]["prefixlen"] == 24
    assert addrs["eth0:10.0.2.15/24"]["scope"] == "global"
    assert "valid_lft" not in json.dumps(net)
    assert net["routes"] == [
        "default via 10.0.2.2 dev eth0",
        "10.0.2.0/24 dev eth0 proto kernel scope link src 10.0.2.15",
    ]
    assert net["routes6"][1] == "2001:db8::/64 dev eth0 proto ra metric 100 pref medium"


# ---------------------------------------------------------------------------------- rhel


def test_rhel_os_and_packages(rhel: dict[str, Any]) -> None:
    assert rhel["os"]["id"] == "almalinux"
    assert rhel["os"]["id_like"] == ["rhel", "centos", "fedora"]
    assert rhel["os"]["version_id"] == "9.3"
    pk = rhel["packages"]
    assert pk["manager"] == "rpm"
    kernels = sorted(p["version"] for p in pk["packages"] if p["name"] == "kernel")
    assert kernels == ["5.14.0-284.11.1.el9_2", "5.14.0-362.8.1.el9_3"]
    by = {p["name"]: p for p in pk["packages"]}
    assert by["openssl"]["version"] == "1:3.0.7-24.el9"
    assert by["gpg-pubkey"]["arch"] == "(none)"
    assert pk["count"] == 14


def test_rhel_yum_repos(rhel: dict[str, Any]) -> None:
    repos = {r["id"]: r for r in rhel["repos"]["repos"]}
    assert set(repos) == {"baseos", "baseos-debuginfo", "pgdg13"}
    assert repos["baseos"]["enabled"] is True
    assert repos["baseos"]["mirrorlist"].endswith("/baseos")
    assert repos["baseos-debuginfo"]["enabled"] is False
    assert repos["pgdg13"]["gpgcheck"] == "0"
    assert repos["pgdg13"]["baseurl"].startswith("https://download.postgresql.org/")
    assert repos["pgdg13"]["file"] == "/etc/yum.repos.d/pgdg.repo"


def test_rhel_pkg_health_reports_problems(rhel: dict[str, Any]) -> None:
    health = rhel["pkg_health"]
    assert health["ok"] is False
    rpm = health["checks"]["rpm_verify"]
    assert rpm["rc"] == 1 and rpm["ok"] is False
    assert rpm["output"][0] == "Unsatisfied dependencies for pgtool-2.1-1.el9.noarch:"
    assert health["checks"]["dnf_check"]["output"] == [
        "pgtool-2.1-1.el9.noarch has missing requires of libpq.so.5()(64bit)"
    ]


def test_rhel_firewalld_nft_and_listening(rhel: dict[str, Any]) -> None:
    rules = rhel["firewall"]["nft"]["rules"]
    assert "table inet firewalld > chain filter_IN_public_allow: tcp dport 5432 accept" in rules
    assert "table inet firewalld > ct helper helper-netbios-ns-udp: l3proto ip" in rules
    assert "table inet firewalld > chain filter_INPUT: reject with icmpx admin-prohibited" in rules
    keys = {s["key"] for s in rhel["listening"]["sockets"]}
    assert {"udp:127.0.0.1:323", "udp:[::1]:323", "tcp:0.0.0.0:5432", "tcp:[::]:5432"} <= keys


def test_rhel_cron_and_users(rhel: dict[str, Any]) -> None:
    entries = rhel["cron"]["entries"]
    anacron = [e for e in entries if e["kind"] == "anacron"]
    assert [e["schedule"] for e in anacron] == ["1 5 cron.daily", "7 25 cron.weekly", "@monthly 45 cron.monthly"]
    pg = next(e for e in entries if e["file"] == "/var/spool/cron/postgres")
    assert pg["user"] == "postgres" and pg["schedule"] == "0 2 * * *"
    hourly = next(e for e in entries if e["file"] == "/etc/cron.d/0hourly" and e["kind"] == "job")
    assert hourly["user"] == "root" and hourly["command"] == "run-parts /etc/cron.hourly"
    assert rhel["users"]["groups"]["wheel"]["members"] == ["almalinux"]
    assert rhel["authorized_keys"]["keys"][0]["fingerprint"] == FP_ECDSA
    assert rhel["authorized_keys"]["keys"][0]["comment"] == ""
    assert {"file": "/etc/sudoers", "line": "#includedir /etc/sudoers.d"} in rhel["sudoers"]["rules"]
    assert rhel["secrets"]["files"] == {}
    assert rhel["services"]["failed"] == []
    assert rhel["processes"]["excluded_self"] == 2


# -------------------------------------------------------------------------------- alpine


def test_alpine_openrc_services(alpine: dict[str, Any]) -> None:
    svc = alpine["services"]
    assert svc["init"] == "openrc"
    assert svc["failed"] == ["chronyd"]
    assert "sshd" in svc["enabled"] and "nginx" not in svc["enabled"]
    assert "local" not in svc["enabled"]
    services = svc["openrc"]["services"]
    assert services["sshd"] == {"state": "started", "runlevel": "default"}
    assert services["nginx"]["state"] == "stopped"
    assert services["localmount"]["runlevel"] == "needed/wanted"
    assert svc["openrc"]["runlevels"]["devfs"] == ["sysinit"]
    assert svc["openrc"]["runlevels"]["local"] == []


def test_alpine_busybox_netstat(alpine: dict[str, Any]) -> None:
    listening = alpine["listening"]
    assert listening["source"] == "netstat"
    socks = {s["key"]: s for s in listening["sockets"]}
    assert set(socks) == {"tcp:0.0.0.0:22", "tcp:127.0.0.1:6379", "tcp:[::]:22", "udp:0.0.0.0:68"}
    assert socks["udp:0.0.0.0:68"]["state"] == "UNCONN"
    assert socks["udp:0.0.0.0:68"]["processes"] == [{"name": "udhcpc", "pid": 2190}]
    assert socks["tcp:127.0.0.1:6379"]["processes"][0]["name"] == "redis-server"


def test_netstat_without_pid_column() -> None:
    text = render_snapshot(
        {
            "listening": [
                (
                    "netstat",
                    0,
                    "\n".join(
                        [
                            "Proto Recv-Q Send-Q Local Address           Foreign Address         State",
                            "tcp        0      0 0.0.0.0:2024            0.0.0.0:*               LISTEN",
                            "udp        0      0 0.0.0.0:68              0.0.0.0:*",
                        ]
                    ),
                )
            ]
        }
    )
    socks = parse_snapshot(text)["listening"]["sockets"]
    assert [(s["key"], s["state"], s["processes"]) for s in socks] == [
        ("tcp:0.0.0.0:2024", "LISTEN", []),
        ("udp:0.0.0.0:68", "UNCONN", []),
    ]


def test_alpine_busybox_processes(alpine: dict[str, Any]) -> None:
    procs = alpine["processes"]
    pids = [p["pid"] for p in procs["processes"]]
    assert 4242 not in pids and 4250 not in pids and 3010 in pids
    assert 2 not in pids and 3 not in pids
    assert "unparsed" not in procs
    redis = next(p for p in procs["processes"] if p["pid"] == 2610)
    assert redis["user"] == "redis" and redis["command"] == "/usr/bin/redis-server 127.0.0.1:6379"


def test_alpine_apk_packages_and_repos(alpine: dict[str, Any]) -> None:
    pk = {p["name"]: p["version"] for p in alpine["packages"]["packages"]}
    assert pk["musl"] == "1.2.4_git20230717-r4"
    assert pk["py3-setuptools"] == "68.2.2-r0"
    assert pk["openssh-server"] == "9.6_p1-r0"
    assert pk["alpine-baselayout-data"] == "3.4.3-r2"
    assert "unparsed" not in alpine["packages"]  # the WARNING line is not a package
    assert alpine["packages"]["count"] == 14
    repos = alpine["repos"]["repos"]
    assert [r["tag"] for r in repos] == ["", "", "testing"]
    assert repos[2]["uris"] == ["https://dl-cdn.alpinelinux.org/alpine/edge/testing"]


def test_alpine_health_firewall_cron(alpine: dict[str, Any]) -> None:
    audit = alpine["pkg_health"]["checks"]["apk_audit"]
    assert audit["ok"] is False and audit["output"][1] == "A usr/local/bin/helper"
    fw = alpine["firewall"]
    assert fw["unavailable_parts"] == {"nft": "nft not found", "ip6tables": "ip6tables-save not found"}
    assert "nft" not in fw
    assert fw["iptables"]["rules"][:3] == ["filter :INPUT DROP", "filter :FORWARD DROP", "filter :OUTPUT ACCEPT"]
    cron = alpine["cron"]
    assert cron["timers"] is None
    assert cron["unavailable_parts"] == {"systemd_timers": "systemd not running"}
    first = cron["entries"][0]
    assert (first["user"], first["schedule"]) == ("root", "*/15 * * * *")
    assert first["command"] == "run-parts /etc/periodic/15min"
    assert list(cron["scripts"]) == ["/etc/periodic/daily/backup-redis"]


def test_alpine_busybox_file_names(alpine: dict[str, Any]) -> None:
    entries = alpine["tmp_files"]["entries"]
    assert entries["/tmp/two\nlines"]["size"] == 3
    assert entries["/tmp/etc-link"]["target"] == "/etc"
    assert entries["/tmp/ctl.fifo"]["type"] == "fifo"
    assert entries["/tmp/agent script.sh"]["owner"] == "root"
    files = alpine["etc_files"]["files"]
    assert files["/etc/motd with\nnewline"]["sha256"].startswith("f6f6")
    assert files["/etc/mtab"]["target"] == "/proc/mounts"
    assert "unparsed" not in alpine["etc_files"]
    assert alpine["secrets"]["files"]["/root/.netrc"]["kind"] == "credentials"
    assert alpine["sudoers"]["rules"][1] == {"file": "/etc/doas.d/wheel.conf", "line": "permit nopass alpine as root"}


# ----------------------------------------------------------------------- normalisers, cron


def test_nft_normaliser_handles_nesting_and_volatile_fields() -> None:
    rules = normalize_nft(
        [
            "table ip t {",
            "\tset blocked {",
            "\t\ttype ipv4_addr",
            "\t\tflags timeout",
            "\t\telements = { 192.0.2.1 expires 59s, 192.0.2.2 expires 10s }",
            "\t}",
            "\tchain c { # handle 1",
            "\t\tip saddr @blocked counter packets 3 bytes 180 drop # handle 4",
            "\t}",
            "}",
            "table ip6 u {",
            "}",
        ]
    )
    assert rules == [
        "table ip t > set blocked: type ipv4_addr",
        "table ip t > set blocked: flags timeout",
        "table ip t > set blocked: elements = { 192.0.2.1, 192.0.2.2 }",
        "table ip t > chain c: ip saddr @blocked counter drop",
    ]


def test_iptables_normaliser_with_counters() -> None:
    assert normalize_iptables(
        [
            "# Generated by iptables-save v1.8.9 on Tue Mar  5 10:12:01 2024",
            "*filter",
            ":INPUT ACCEPT [5:300]",
            "[10:600] -A INPUT -j DROP",
            "COMMIT",
        ]
    ) == ["filter :INPUT ACCEPT", "filter -A INPUT -j DROP"]


def test_cron_line_kinds() -> None:
    assert parse_cron_line("/etc/crontab", "MAILTO=root")["kind"] == "env"
    other = parse_cron_line("/etc/cron.d/x", "not a cron line")
    assert other["kind"] == "other" and other["line"] == "not a cron line"
    spool = parse_cron_line("/var/spool/cron/crontabs/bob", "@daily /bin/true")
    assert (spool["user"], spool["schedule"], spool["command"]) == ("bob", "@daily", "/bin/true")


# --------------------------------------------------------------------- real script runs


def _run_script(
    shell: list[str], *probes: str, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [*shell, str(SCRIPT_PATH), *probes],
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.decode("utf-8", "surrogateescape"), elapsed


def test_real_run_on_this_host() -> None:
    out, elapsed = _run_script(["sh"])
    assert elapsed < 30, f"snapshot took {elapsed:.1f}s"
    parsed = parse_snapshot(out)
    assert parsed["_meta"]["complete"] is True
    for name in PROBES:
        assert name in parsed and parsed[name] != {"unavailable": "missing from output"}, name
        assert "parse_error" not in parsed[name], parsed[name]
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert parsed["boot"]["boot_id"] == boot_id
    assert parsed["os"]["kernel"]["release"] == os.uname().release
    assert parsed["users"]["users"]["root"]["uid"] == 0
    passwd = parsed["etc_files"]["files"]["/etc/passwd"]
    assert passwd["sha256"] == hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    script_pid = parsed["_meta"]["script_pid"]
    assert script_pid not in {p["pid"] for p in parsed["processes"]["processes"]}
    assert not any(
        str(SCRIPT_PATH) in p["command"] and p["pid"] == script_pid for p in parsed["processes"]["processes"]
    )
    if not Path("/run/systemd/system").is_dir():
        assert "unavailable" in parsed["services"] or parsed["services"]["init"] == "openrc"
        assert parsed["cron"]["timers"] is None
        assert "systemd_timers" in parsed["cron"]["unavailable_parts"]
    if shutil.which("dpkg-query"):
        names = {p["name"] for p in parsed["packages"]["packages"]}
        assert "dpkg" in names and parsed["packages"]["manager"] == "dpkg"
    json.dumps(parsed)


def _available_shells() -> list[list[str]]:
    shells = [["sh"]]
    for name in ("dash", "bash"):
        if shutil.which(name):
            shells.append([name])
    if shutil.which("bash"):
        shells.append(["bash", "--posix"])
    if shutil.which("busybox"):
        shells.append(["busybox", "ash"])
    return shells


@pytest.fixture()
def planted(tmp_path: Path) -> dict[str, Path]:
    """A temp area and a home-like tree holding an odd file name and fake key material."""
    tmp_root = tmp_path / "tmp"
    home = tmp_path / "home"
    (home / "u" / ".ssh").mkdir(parents=True)
    tmp_root.mkdir()
    odd = tmp_root / "odd name\nwith newline"
    odd.write_text("hello")
    (tmp_root / "link").symlink_to("/etc")
    key = home / "u" / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LXNlY3JldA==\n-----END OPENSSH PRIVATE KEY-----\n")
    hidden = home / "u" / "notes.txt"  # no telling name: found by its header
    hidden.write_text("x\n-----BEGIN EC PRIVATE KEY-----\nZm9v\n-----END EC PRIVATE KEY-----\n")
    (home / "u" / "readme.md").write_text("nothing here\n")
    return {"tmp": tmp_root, "home": home, "odd": odd, "key": key, "hidden": hidden}


@pytest.mark.parametrize("shell", _available_shells(), ids=" ".join)
def test_real_run_each_shell_finds_planted_files(shell: list[str], planted: dict[str, Path]) -> None:
    env = {"TESTBED_PROBE_TMP_DIRS": str(planted["tmp"]), "TESTBED_PROBE_SECRET_DIRS": str(planted["home"])}
    out, _ = _run_script(shell, "boot", "tmp_files", "users", "secrets", env=env)
    parsed = parse_snapshot(out)
    assert parsed["_meta"]["complete"] is True
    assert parsed["os"] == {"unavailable": "missing from output"}  # not requested
    entries = parsed["tmp_files"]["entries"]
    assert entries[str(planted["odd"])]["size"] == 5
    assert entries[str(planted["tmp"] / "link")]["target"] == "/etc"
    secrets = parsed["secrets"]["files"]
    assert set(secrets) == {str(planted["key"]), str(planted["hidden"])}
    key = secrets[str(planted["key"])]
    assert key["kind"] == "private_key"
    assert key["sha256"] == hashlib.sha256(planted["key"].read_bytes()).hexdigest()
    assert secrets[str(planted["hidden"])]["headers"] == ["-----BEGIN EC PRIVATE KEY-----"]
    assert "c2VjcmV0" not in out and "Zm9v" not in out  # key bodies never leave the guest


@pytest.mark.skipif(not shutil.which("busybox"), reason="busybox is not installed")
def test_real_run_with_busybox_tools_only(tmp_path: Path, planted: dict[str, Path]) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    busybox = shutil.which("busybox")
    assert busybox is not None
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for applet in applets.stdout.split():
        (bindir / applet).symlink_to(busybox)
    env = {
        "TESTBED_PROBE_PATH": str(bindir),
        "TESTBED_PROBE_TMP_DIRS": str(planted["tmp"]),
        "TESTBED_PROBE_SECRET_DIRS": str(planted["home"]),
    }
    out, elapsed = _run_script([busybox, "ash"], env=env)
    assert elapsed < 30
    parsed = parse_snapshot(out)
    assert parsed["_meta"]["complete"] is True
    assert parsed["tmp_files"]["entries"][str(planted["odd"])]["size"] == 5
    assert parsed["processes"]["processes"], "busybox ps output parsed"
    assert "unparsed" not in parsed["processes"]
    assert parsed["listening"]["source"] in ("netstat", "ss")
    assert parsed["users"]["users"]["root"]["uid"] == 0
    assert parsed["sysctl"]["values"]
    assert "/etc/passwd" in parsed["etc_files"]["files"]
    assert str(planted["key"]) in parsed["secrets"]["files"]
