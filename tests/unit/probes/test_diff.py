"""Diffs between parsed snapshots: stable keys, volatile fields ignored, availability changes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from testbed.probes import PROBES, ProbeDiff, diff_probe, diff_snapshots, parse_snapshot
from testbed.probes.diff import collections, repo_key
from testbed.testing.snapshots import load_fixture_dir, snapshot_from_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
DEBIAN = FIXTURES / "debian"


def _part(probe: str, part: str, distro: str = "debian") -> str:
    """The fixture text of one part."""
    spec = {name: text for name, _, text in load_fixture_dir(FIXTURES / distro)[probe]}
    return spec[part]


def _snap(overrides: dict[tuple[str, str], str] | None = None, distro: str = "debian") -> dict[str, Any]:
    return parse_snapshot(snapshot_from_dir(FIXTURES / distro, overrides))


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    return _snap()


@pytest.mark.parametrize("distro", ["debian", "rhel", "alpine"])
def test_identical_snapshots_have_no_differences(distro: str) -> None:
    a, b = _snap(distro=distro), _snap(distro=distro)
    diffs = diff_snapshots(a, b)
    assert set(diffs) == set(PROBES)
    for name, d in diffs.items():
        assert d.status == ("unavailable" if name == "router" else "compared"), name  # no vtysh there
        assert d.empty, (name, d.to_dict())


def test_tmp_files_added_removed_changed_and_dir_mtime_ignored(before: dict[str, Any]) -> None:
    text = _part("tmp_files", "entries")
    text = text.replace('1709633500\t"/tmp"', '1709699999\t"/tmp"')  # dir mtime only
    text = text.replace(
        '600\t1000\tdebian\t1000\tdebian\t0\t1709633495\t"/tmp/notes for agent.txt"',
        '644\t1000\tdebian\t1000\tdebian\t0\t1709633495\t"/tmp/notes for agent.txt"',
    )
    text = "\n".join(ln for ln in text.splitlines() if "nginx-test.conf" not in ln)
    text += '\nregular file\t644\t0\troot\t0\troot\t77\t1709634000\t"/tmp/residue.log"\n'
    after = _snap({("tmp_files", "entries"): text})
    d = diff_probe("tmp_files", before["tmp_files"], after["tmp_files"])
    assert d.keys("added") == ["/tmp/residue.log"]
    assert d.keys("removed") == ["/tmp/nginx-test.conf"]
    assert d.keys("changed") == ["/tmp/notes for agent.txt"]
    assert d.changed[0].fields == ["mode"]
    assert d.changed[0].before == {**d.changed[0].before, "mode": "0600"}
    assert d.changed[0].after == {**d.changed[0].after, "mode": "0644"}
    assert d.added[0].collection == "entries" and d.added[0].after["size"] == 77


def test_listening_keys_ignore_pids(before: dict[str, Any]) -> None:
    text = _part("listening", "ss").replace("pid=531", "pid=9531")
    text += 'tcp   LISTEN 0      4096         0.0.0.0:8080       0.0.0.0:*    users:(("node",pid=7,fd=3))\n'
    after = _snap({("listening", "ss"): text})
    d = diff_probe("listening", before["listening"], after["listening"])
    assert d.keys() == ["tcp:0.0.0.0:8080"]
    assert d.added[0].after == {"processes": ["node"]}


def test_processes_compare_user_and_command_counts_not_pids(before: dict[str, Any]) -> None:
    lines = _part("processes", "ps").splitlines()
    shifted = [ln.replace(" 1202 ", " 5202 ") for ln in lines]  # restarted worker, new pid
    shifted.append(f"{6001:>7} {1:>7} {'root':<32} /usr/bin/python3 -m http.server 9000")
    shifted.append(f"{6002:>7} {1201:>7} {'www-data':<32} nginx: worker process")
    after = _snap({("processes", "ps"): "\n".join(shifted) + "\n"})
    d = diff_probe("processes", before["processes"], after["processes"])
    assert d.keys("added") == ["root /usr/bin/python3 -m http.server 9000"]
    assert d.keys("changed") == ["www-data nginx: worker process"]
    assert (d.changed[0].before, d.changed[0].after) == ({"count": 2}, {"count": 3})
    assert d.removed == []


def test_users_groups_and_password_state(before: dict[str, Any]) -> None:
    passwd = _part("users", "passwd").replace(
        "deploy:x:1001:1001::/home/deploy:/bin/bash", "deploy:x:1001:1001::/home/deploy:/bin/sh"
    )
    passwd += "backdoor:x:0:0::/root:/bin/bash\n"
    group = _part("users", "group").replace("sudo:x:27:debian,deploy", "sudo:x:27:debian")
    shadow = _part("users", "shadow").replace("deploy:empty:19788", "deploy:set:19790")
    after = _snap({("users", "passwd"): passwd, ("users", "group"): group, ("users", "shadow"): shadow})
    d = diff_probe("users", before["users"], after["users"])
    assert d.keys("added", "users") == ["backdoor"]
    assert d.keys("changed", "users") == ["deploy"]
    deploy = next(c for c in d.changed if c.collection == "users")
    assert deploy.fields == ["password", "password_changed", "shell"]
    assert deploy.after is not None and deploy.after["password"] == "set"
    sudo = next(c for c in d.changed if c.collection == "groups")
    assert sudo.key == "sudo" and sudo.fields == ["members"]


def test_packages_version_change_removal_and_multiarch_keys(before: dict[str, Any]) -> None:
    text = _part("packages", "dpkg")
    text = text.replace("nginx\t1.22.1-9\tamd64", "nginx\t1.22.1-9+deb12u1\tamd64")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("python3\t")) + "\n"
    text += "netcat-openbsd\t1.219-1\tamd64\tii \n"
    after = _snap({("packages", "dpkg"): text})
    d = diff_probe("packages", before["packages"], after["packages"])
    assert d.keys("added") == ["netcat-openbsd"]
    assert d.keys("removed") == ["python3"]
    assert d.keys("changed") == ["nginx"]
    assert d.changed[0].after == {"version": "1.22.1-9+deb12u1", "status": "ii"}
    keys = collections("packages", before["packages"])["packages"]
    assert "libc6:amd64" in keys and "libc6:i386" in keys and "libc6" not in keys


def test_rpm_kernel_versions_share_one_key() -> None:
    rhel = _snap(distro="rhel")
    keys = collections("packages", rhel["packages"])["packages"]
    assert keys["kernel"]["version"] == "5.14.0-284.11.1.el9_2, 5.14.0-362.8.1.el9_3"


def test_sysctl_change_and_volatile_noise(before: dict[str, Any]) -> None:
    text = _part("sysctl", "sysctl").replace("net.ipv4.ip_forward = 0", "net.ipv4.ip_forward = 1")
    text = text.replace("kernel.ns_last_pid = 4290", "kernel.ns_last_pid = 9999")
    text = text.replace("entropy_avail = 256", "entropy_avail = 3000")
    after = _snap({("sysctl", "sysctl"): text})
    d = diff_probe("sysctl", before["sysctl"], after["sysctl"])
    assert [(c.key, c.before, c.after) for c in d.items()] == [("net.ipv4.ip_forward", {"value": "0"}, {"value": "1"})]


def test_firewall_counters_are_not_changes_but_rules_are(before: dict[str, Any]) -> None:
    nft = _part("firewall", "nft").replace("packets 1520 bytes 125431", "packets 9 bytes 99")
    after = _snap({("firewall", "nft"): nft})
    assert diff_probe("firewall", before["firewall"], after["firewall"]).empty
    nft = nft.replace("\t\ttcp dport 22 accept\n", "\t\ttcp dport 22 accept\n\t\ttcp dport 3306 accept\n")
    nft = nft.replace("policy drop;", "policy accept;", 1)
    after = _snap({("firewall", "nft"): nft})
    d = diff_probe("firewall", before["firewall"], after["firewall"])
    assert d.keys("added") == [
        "nft table inet filter > chain input: tcp dport 3306 accept",
        "nft table inet filter > chain input: type filter hook input priority filter; policy accept;",
    ]
    assert d.keys("removed") == [
        "nft table inet filter > chain input: type filter hook input priority filter; policy drop;"
    ]


def test_etc_files_hash_decides_mtime_alone_does_not(before: dict[str, Any]) -> None:
    stat = _part("etc_files", "stat").replace('1709633300\t"/etc/hostname"', '1709690000\t"/etc/hostname"')
    after = _snap({("etc_files", "stat"): stat})
    assert diff_probe("etc_files", before["etc_files"], after["etc_files"]).empty
    sha = _part("etc_files", "sha256").replace("a4f1c7a5b3d0", "b4f1c7a5b3d0")
    stat = stat.replace('1709633000\t"/etc/big.db"', '1709690000\t"/etc/big.db"')
    after = _snap({("etc_files", "stat"): stat, ("etc_files", "sha256"): sha})
    d = diff_probe("etc_files", before["etc_files"], after["etc_files"])
    assert [(c.key, c.fields) for c in d.changed] == [("/etc/big.db", ["mtime"]), ("/etc/hostname", ["sha256"])]


def test_boot_id_change_shows_a_reboot(before: dict[str, Any]) -> None:
    after = _snap({("boot", "boot"): "boot_id=ffff\nuptime=5.00\nclock=1709700000\n"})
    d = diff_probe("boot", before["boot"], after["boot"])
    assert [(c.key, c.after) for c in d.changed] == [("boot_id", {"value": "ffff"})]


def test_other_probe_keys(before: dict[str, Any]) -> None:
    cron = _part("cron", "entries") + "/etc/cron.d/agent\t* * * * * root /tmp/x.sh\n"
    keys = _part("authorized_keys", "keys").replace(" alice@laptop", " mallory@evil")
    sudo = _part("sudoers", "lines") + "/etc/sudoers.d/zz\tagent ALL=(ALL) NOPASSWD:ALL\n"
    units = _part("services", "systemd_unit_files").replace(
        "rsync.service                              disabled", "rsync.service   enabled"
    )
    after = _snap(
        {
            ("cron", "entries"): cron,
            ("authorized_keys", "keys"): keys,
            ("sudoers", "lines"): sudo,
            ("services", "systemd_unit_files"): units,
        }
    )
    diffs = diff_snapshots(before, after)
    assert diffs["cron"].keys("added") == ["/etc/cron.d/agent: * * * * * root /tmp/x.sh"]
    ak = diffs["authorized_keys"]
    assert [c.fields for c in ak.changed] == [["comment", "line_sha256"]]
    assert ak.changed[0].key.startswith("/root/.ssh/authorized_keys SHA256:")
    assert diffs["sudoers"].keys("added") == ["/etc/sudoers.d/zz: agent ALL=(ALL) NOPASSWD:ALL"]
    svc = diffs["services"]
    assert [(c.collection, c.key, c.after) for c in svc.changed] == [
        ("unit_files", "rsync.service", {"state": "enabled"})
    ]
    changed = {n for n, d in diffs.items() if not d.empty}
    assert changed == {"cron", "authorized_keys", "sudoers", "services"}


def test_repo_keys() -> None:
    assert repo_key({"file": "/etc/yum.repos.d/a.repo", "format": "yum", "id": "x"}) == ("/etc/yum.repos.d/a.repo: [x]")
    assert (
        repo_key({"file": "/etc/apk/repositories", "format": "apk", "tag": "t", "uris": ["https://h/edge"]})
        == "/etc/apk/repositories: @t https://h/edge"
    )
    debian = _snap()
    keys = sorted(collections("repos", debian["repos"])["repos"])
    assert keys[0] == (
        "/etc/apt/sources.list.d/debian.sources: deb http://deb.debian.org/debian bookworm bookworm-updates"
    )


def test_availability_changes_list_no_items(before: dict[str, Any]) -> None:
    after = copy.deepcopy(before)
    after["services"] = {"unavailable": "systemd not running"}
    d = diff_probe("services", before["services"], after["services"])
    assert d.status == "became_unavailable" and d.empty
    assert d.notes == ["unavailable after: systemd not running"]
    back = diff_probe("services", after["services"], before["services"])
    assert back.status == "became_available" and back.empty
    both = diff_probe("services", after["services"], after["services"])
    assert both.status == "unavailable"
    assert diff_probe("services", None, before["services"]).status == "became_available"


def test_truncated_listing_is_flagged(before: dict[str, Any]) -> None:
    after = copy.deepcopy(before)
    after["tmp_files"]["truncated"] = {"entries": {"max_lines": 5000, "more": 1, "long_lines": 0}}
    del after["tmp_files"]["entries"]["/var/tmp"]
    d = diff_probe("tmp_files", before["tmp_files"], after["tmp_files"])
    assert d.truncated is True and d.keys("removed") == ["/var/tmp"]
    assert any("truncated" in n for n in d.notes)


@pytest.mark.parametrize("odd", [{}, {"entries": None}, {"entries": []}, {"sockets": "x", "processes": [1, None]}])
def test_odd_input_never_raises(odd: dict[str, Any]) -> None:
    for name in [*PROBES, "not_a_probe"]:
        d = diff_probe(name, odd, odd)
        assert d.status == "compared" and d.empty


def test_unknown_probe_uses_generic_fields() -> None:
    d = diff_probe("custom", {"a": 1, "part_rc": {"x": 0}}, {"a": 2, "part_rc": {"x": 1}})
    assert [(c.key, c.before, c.after) for c in d.changed] == [("a", {"value": 1}, {"value": 2})]


def test_to_dict_is_json_and_complete(before: dict[str, Any]) -> None:
    after = _snap({("boot", "boot"): "boot_id=ffff\n"})
    diffs = diff_snapshots(before, after)
    blob = json.loads(json.dumps({n: d.to_dict() for n, d in diffs.items()}))
    boot = blob["boot"]
    assert boot["status"] == "compared" and boot["added"] == [] and boot["truncated"] is False
    assert boot["changed"] == [
        {
            "collection": "boot",
            "key": "boot_id",
            "change": "changed",
            "before": {"value": "3f6b1a0e-5c1d-4d7a-9a4f-2b8e1c7d9e01"},
            "after": {"value": "ffff"},
            "fields": ["value"],
        }
    ]
    assert isinstance(diffs["boot"], ProbeDiff)
