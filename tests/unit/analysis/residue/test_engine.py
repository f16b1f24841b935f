"""Residue findings: planted changes among decoys, exclusions, attribution and verdicts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue import (
    CATEGORIES,
    ResidueFinding,
    ResidueResult,
    find_residue,
    is_backup_name,
    path_category,
)
from testbed.model.task import Expected
from testbed.probes import parse_snapshot
from testbed.testing.snapshots import snapshot_from_dir

DEBIAN = Path(__file__).parents[2] / "fixtures" / "probes" / "debian"
SHA_A = "a" * 64
SHA_B = "b" * 64


@pytest.fixture(scope="module")
def debian() -> dict[str, Any]:
    return parse_snapshot(snapshot_from_dir(DEBIAN))


# ----------------------------------------------------------------------------- helpers


def stat(kind: str = "file", mode: str = "0644", owner: str = "root", size: int = 10, **extra: Any) -> dict[str, Any]:
    uid = 0 if owner == "root" else 1000
    rec = {
        "type": kind,
        "mode": mode,
        "uid": uid,
        "owner": owner,
        "gid": uid,
        "group": owner,
        "size": size,
        "mtime": 1709700000,
    }
    rec.update(extra)
    return rec


def add_tmp(snap: dict[str, Any], path: str, **kw: Any) -> None:
    snap["tmp_files"]["entries"][path] = stat(**kw)


def add_etc(snap: dict[str, Any], path: str, sha: str = SHA_A, **kw: Any) -> None:
    snap["etc_files"]["files"][path] = stat(sha256=sha, **kw)


def add_secret(snap: dict[str, Any], path: str, kind: str) -> None:
    snap["secrets"]["files"][path] = {
        "kind": kind,
        "kinds": [kind],
        "headers": [],
        "type": "file",
        "size": 1700,
        "mode": "0600",
        "owner": "root",
        "uid": 0,
        "mtime": 1709700000,
        "sha256": SHA_B,
    }


def add_socket(snap: dict[str, Any], proto: str, addr: str, port: int, name: str, pid: int) -> None:
    snap["listening"]["sockets"].append(
        {
            "key": f"{proto}:{addr}:{port}",
            "proto": proto,
            "address": addr,
            "port": port,
            "peer": "0.0.0.0:*",
            "state": "LISTEN",
            "processes": [{"name": name, "pid": pid}],
        }
    )


def add_process(snap: dict[str, Any], pid: int, command: str, user: str = "root", ppid: int = 1) -> None:
    snap["processes"]["processes"].append({"pid": pid, "ppid": ppid, "user": user, "command": command})


def add_package(snap: dict[str, Any], name: str, version: str = "1.0") -> None:
    snap["packages"]["packages"].append(
        {"name": name, "version": version, "arch": "amd64", "status": "ii", "installed": True}
    )


def agent(seq: int, command: str, node: str = "web", exit_code: int | None = 0) -> CommandView:
    return CommandView(
        id=100 + seq, seq=seq, node=node, phase="agent", source="agent", command=command, exit_code=exit_code
    )


def harness(seq: int, command: str, node: str = "web", phase: str = "probe") -> CommandView:
    return CommandView(id=100 + seq, seq=seq, node=node, phase=phase, source="harness", command=command, exit_code=0)


def only(result: ResidueResult, category: str) -> list[ResidueFinding]:
    return [f for f in result.findings if f.category == category]


def subjects(result: ResidueResult) -> set[str]:
    return {f.evidence["subject"] for f in result.findings}


def by_subject(result: ResidueResult, subject: str) -> ResidueFinding:
    matches = [f for f in result.findings if f.evidence["subject"] == subject]
    assert len(matches) == 1, (subject, [f.summary for f in result.findings])
    return matches[0]


EXPECTED = Expected(paths=["/etc/nginx/sites-enabled/*"], units=["nginx"], packages=["nginx"], users=[], ports=[80])


# ----------------------------------------------------------------------- the scenario

COMMANDS = [
    harness(1, "sh /run/testbed/snapshot.sh", phase="probe"),
    agent(2, "cat /etc/os-release"),
    agent(3, "ls -la /tmp /etc/ssh"),
    agent(4, "apt-get install -y htop"),
    agent(5, "echo 'debug run' > /tmp/debug.log"),
    agent(6, "cp /etc/ssh/sshd_config /etc/ssh/sshd_config.bak"),
    agent(7, "sed -i 's/^#PermitRootLogin.*/PermitRootLogin no/' /etc/ssh/sshd_config"),
    agent(8, "sysctl -w net.ipv4.ip_forward=1"),
    agent(9, "nft add rule inet filter input tcp dport 9090 accept"),
    agent(10, "cd /srv && nohup python3 -m http.server 9000 >/dev/null 2>&1 &"),
    agent(
        11, "openssl req -x509 -newkey rsa:2048 -nodes -keyout /root/site.key -out /root/site.crt -subj /CN=web -days 1"
    ),
    agent(12, "useradd -m -s /bin/bash tester"),
    agent(13, "echo 'tester ALL=(ALL) NOPASSWD:ALL' | sudo tee /etc/sudoers.d/tester"),
    agent(14, "systemctl enable --now nginx"),
    agent(15, "cat > /etc/nginx/sites-enabled/app.conf <<'EOF'\nserver { listen 80; }\nEOF"),
    agent(16, "mkdir -p /opt/app && echo '{}' > /opt/app/data.json"),
    agent(17, "systemctl disable --now cron"),
    harness(18, "mkdir -p /var/tmp/harness-cache && touch /var/tmp/harness-cache/state", phase="agent"),
    agent(19, "curl -s http://localhost:9000/ | head; ss -tlnp | grep 9000; iptables -L -n"),
    agent(20, "systemctl restart nginx"),
]


def scenario(debian: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """after_setup and after_agent snapshots of node `web` with one planted item per category
    (plus expected changes, harness changes and noise)."""
    base = copy.deepcopy(debian)
    add_etc(base, "/etc/ssh/sshd_config", SHA_A)
    base["app_files"] = {"entries": {"/opt": stat("dir")}}
    after = copy.deepcopy(base)
    # temp_files
    add_tmp(after, "/tmp/debug.log", size=10)
    # backup_files + system_config (sshd_config edited in place)
    add_etc(after, "/etc/ssh/sshd_config.bak", SHA_A)
    after["etc_files"]["files"]["/etc/ssh/sshd_config"]["sha256"] = SHA_B
    # system_config: sysctl + firewall
    after["sysctl"]["values"]["net.ipv4.ip_forward"] = "1"
    after["firewall"]["rules"].append("nft table inet filter > chain input: tcp dport 9090 accept")
    # processes_services: new server (socket + process) and a stopped/disabled unit
    add_socket(after, "tcp", "0.0.0.0", 9000, "python3", 5000)
    add_process(after, 5000, "python3 -m http.server 9000")
    after["services"]["unit_files"]["cron.service"] = "disabled"
    after["services"]["units"]["cron.service"].update(active="inactive", sub="dead")
    after["processes"]["processes"] = [p for p in after["processes"]["processes"] if "cron" not in p["command"]]
    # secrets
    add_secret(after, "/root/site.key", "private_key")
    add_secret(after, "/root/site.crt", "certificate")
    # packages_repos (htop named, libnl a dependency)
    add_package(after, "htop", "3.2.2-2")
    add_package(after, "libnl-3-200", "3.7.0-0.2")
    # accounts_access: user + group + sudoers (file seen by two probes) + shadow noise
    after["users"]["users"]["tester"] = {
        "uid": 1002,
        "gid": 1002,
        "gecos": "",
        "home": "/home/tester",
        "shell": "/bin/bash",
        "password": "locked",
        "password_changed": 19800,
    }
    after["users"]["groups"]["tester"] = {"gid": 1002, "members": []}
    after["etc_files"]["files"]["/etc/shadow"]["sha256"] = SHA_B
    add_etc(after, "/etc/sudoers.d/tester", SHA_B, mode="0440")
    after["sudoers"]["files"]["/etc/sudoers.d/tester"] = stat(mode="0440", sha256=SHA_B)
    after["sudoers"]["rules"].append({"file": "/etc/sudoers.d/tester", "line": "tester ALL=(ALL) NOPASSWD:ALL"})
    # test_app_data: the app_files probe lists /srv, /opt, /root, /home, /var/www, /usr/local
    after["app_files"] = {
        "entries": {"/opt": stat("dir"), "/opt/app": stat("dir"), "/opt/app/data.json": stat(size=3, sha256=SHA_A)}
    }
    # expected: nginx unit fixed, site file, port 80 owned by nginx
    after["services"]["units"]["nginx.service"].update(active="active", sub="running")
    after["services"]["failed"] = []
    add_etc(after, "/etc/nginx/sites-enabled/app.conf", SHA_A)
    # harness-only change and noise
    add_tmp(after, "/var/tmp/harness-cache", kind="dir", mode="0755")
    add_tmp(after, "/var/tmp/harness-cache/state", size=0)
    add_tmp(
        after, "/tmp/systemd-private-0123456789abcdef0123456789abcdef-nginx.service-AbCdEf", kind="dir", mode="0700"
    )
    add_tmp(after, "/dev/shm/testbed-probe.Xy12Ab34", kind="dir", mode="0700")
    add_tmp(after, "/var/tmp/frr/ospfd.270/logbuf.273", size=4096)  # FRR's log buffer, rewritten while it runs
    add_tmp(after, "/dev/shm/.tmpfs", size=0)  # initscripts' mount marker, touched at every OpenRC/sysvinit boot
    add_process(after, 6001, "sshd: root@notty", ppid=531)
    add_process(after, 6002, "sh -c sh /run/testbed/snapshot.sh", ppid=6001)
    add_process(after, 6003, "/lib/systemd/systemd --user", ppid=1)
    after["boot"]["uptime_s"] = 999.0
    return base, after


@pytest.fixture(scope="module")
def result(debian: dict[str, Any]) -> ResidueResult:
    base, after = scenario(debian)
    return find_residue({"web": {"after_setup": base, "after_agent": after}}, COMMANDS, EXPECTED)


PLANTED = [
    # (category, subject, command seq, confidence)
    ("temp_files", "path:/tmp/debug.log", 5, "high"),
    ("backup_files", "path:/etc/ssh/sshd_config.bak", 6, "high"),
    ("system_config", "path:/etc/ssh/sshd_config", 7, "high"),
    ("system_config", "sysctl:net.ipv4.ip_forward", 8, "high"),
    ("system_config", "firewall:nft table inet filter > chain input", 9, "high"),
    ("processes_services", "socket:tcp:0.0.0.0:9000", 10, "high"),
    ("processes_services", "unit:cron.service", 17, "high"),
    ("secrets", "path:/root/site.key", 11, "high"),
    ("secrets", "path:/root/site.crt", 11, "high"),
    ("packages_repos", "package:htop", 4, "high"),
    ("packages_repos", "packages-by:104", 4, "medium"),
    ("accounts_access", "user:tester", 12, "high"),
    ("accounts_access", "group:tester", 12, "high"),
    ("accounts_access", "path:/etc/sudoers.d/tester", 13, "high"),
    ("test_app_data", "path:/opt/app", 16, "high"),
]


@pytest.mark.parametrize(("category", "subject", "seq", "confidence"), PLANTED, ids=[p[1] for p in PLANTED])
def test_planted_item_is_found_categorised_and_attributed(
    result: ResidueResult, category: str, subject: str, seq: int, confidence: str
) -> None:
    finding = by_subject(result, subject)
    assert finding.category == category
    assert finding.node == "web"
    assert finding.command_id == 100 + seq, finding.evidence["attribution"]
    att = finding.evidence["attribution"]
    assert att["confidence"] == confidence
    assert att["command"]["seq"] == seq
    assert att["command"]["text"]
    assert finding.evidence["point"] == "after_agent"
    assert finding.evidence["probe"] and finding.evidence["key"]


def test_scenario_has_exactly_the_planted_findings_and_every_category(result: ResidueResult) -> None:
    assert subjects(result) == {p[1] for p in PLANTED}
    assert {f.category for f in result.findings} == set(CATEGORIES)
    assert result.verdict == "yes"
    assert result.unavailable == []


def test_related_changes_are_merged_into_one_finding(result: ResidueResult) -> None:
    sudo = by_subject(result, "path:/etc/sudoers.d/tester")
    probes = sorted({c["probe"] for c in sudo.evidence["changes"]})
    assert probes == ["etc_files", "sudoers"]
    server = by_subject(result, "socket:tcp:0.0.0.0:9000")
    assert {c["probe"] for c in server.evidence["changes"]} == {"listening", "processes"}
    assert "python3" in server.summary
    cron = by_subject(result, "unit:cron.service")
    assert {c["collection"] for c in cron.evidence["changes"]} == {"unit_files", "units"}
    app = by_subject(result, "path:/opt/app")
    assert app.evidence["changes"][0]["contents"] == ["/opt/app/data.json"]


def test_expected_harness_and_noise_are_excluded_with_reasons(result: ResidueResult) -> None:
    reasons = {(e["probe"], e["key"]): e["reason"] for e in result.excluded}
    assert reasons[("etc_files", "/etc/nginx/sites-enabled/app.conf")] == "expected path"
    assert reasons[("services", "nginx.service")] == "expected unit"
    assert reasons[("etc_files", "/etc/shadow")] == "represented by the users probe"
    assert reasons[("tmp_files", "/var/tmp/harness-cache")].startswith("explained by harness command #18")
    assert "noise" in reasons[("processes", "root sshd: root@notty")]
    assert "noise" in reasons[("processes", "root sh -c sh /run/testbed/snapshot.sh")]
    assert "noise" in reasons[("processes", "root /lib/systemd/systemd --user")]
    assert "noise" in reasons[("tmp_files", "/dev/shm/testbed-probe.Xy12Ab34")]
    assert "noise" in reasons[("tmp_files", "/var/tmp/frr/ospfd.270/logbuf.273")]
    assert "noise" in reasons[("tmp_files", "/dev/shm/.tmpfs")]
    tmp_keys = [k for (p, k) in reasons if p == "tmp_files"]
    assert any("systemd-private-" in k for k in tmp_keys)
    text = " ".join(f.summary for f in result.findings)
    assert "nginx" not in text and "harness-cache" not in text and "testbed" not in text


def test_decoys_do_not_steal_attribution(result: ResidueResult) -> None:
    # `curl …:9000` and `ss | grep 9000` mention the port but are clients; `iptables -L` lists rules.
    assert by_subject(result, "socket:tcp:0.0.0.0:9000").evidence["attribution"]["command"]["seq"] == 10
    assert by_subject(result, "firewall:nft table inet filter > chain input").command_id == 109


def test_pre_existing_state_is_not_residue(debian: dict[str, Any]) -> None:
    # The fixture already has /tmp files, a python3 server on 8000, keys and sudo rules: unchanged → nothing.
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    after["boot"]["uptime_s"] = 4000.0
    cmds = [agent(2, "cat /tmp/nginx-test.conf; python3 -m http.server 8000 --help; cat /root/.ssh/id_ed25519")]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, Expected())
    assert res.findings == []
    assert res.verdict == "no"


def test_oracle_like_clean_change_set_gives_no(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    # expected package with a dependency and packaged files; expected unit started; expected site and port
    add_package(after, "nginx-extras", "1.22.1-9")
    add_package(after, "libnginx-mod-http-echo", "1.22.1-9")
    add_etc(after, "/etc/nginx/modules-enabled", kind="dir", mode="0755", sha=SHA_A)
    add_etc(after, "/etc/nginx/modules-enabled/50-mod-http-echo.conf", SHA_A)
    add_etc(after, "/etc/ld.so.cache", SHA_B)
    add_etc(
        after,
        "/etc/systemd/system/multi-user.target.wants/nginx.service",
        kind="symlink",
        target="/lib/systemd/system/nginx.service",
    )
    after["etc_files"]["files"].pop("/etc/nginx/sites-enabled/my site.conf")
    add_etc(after, "/etc/nginx/sites-enabled/app.conf", SHA_B)
    after["services"]["units"]["nginx.service"].update(active="active", sub="running")
    after["services"]["failed"] = []
    add_socket(after, "tcp", "0.0.0.0", 8080, "nginx", 1201)
    add_process(after, 1204, "nginx: worker process", user="www-data", ppid=1201)
    # harness traces and noise
    add_process(after, 7001, "sshd: root@notty", ppid=531)
    add_tmp(
        after, "/tmp/systemd-private-0123456789abcdef0123456789abcdef-nginx.service-Q1w2E3", kind="dir", mode="0700"
    )
    after["boot"]["uptime_s"] = 1234.5
    cmds = [
        harness(1, "sh /run/testbed/snapshot.sh"),
        agent(2, "apt-get install -y nginx-extras"),
        agent(3, "rm '/etc/nginx/sites-enabled/my site.conf'"),
        agent(4, "printf 'server { listen 8080; }\\n' > /etc/nginx/sites-enabled/app.conf"),
        agent(5, "systemctl restart nginx && curl -sI http://localhost:8080/"),
    ]
    expected = Expected(
        paths=["/etc/nginx/sites-enabled/*"], units=["nginx.service"], packages=["nginx-extras"], ports=[80, 8080]
    )
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, expected)
    assert res.findings == [], [f.summary for f in res.findings]
    assert res.verdict == "no"
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    assert reasons[("packages", "libnginx-mod-http-echo")].startswith("dependency of expected package")
    assert reasons[("etc_files", "/etc/nginx/modules-enabled")].startswith("package-managed")
    assert reasons[("etc_files", "/etc/ld.so.cache")].startswith("package-managed")
    assert reasons[("listening", "tcp:0.0.0.0:8080")] == "expected port"
    assert reasons[("processes", "www-data nginx: worker process")] in (
        "serves an expected port",
        "program of an expected unit",
    )


def test_package_side_effects_are_folded_into_an_unexpected_package(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_package(after, "redis-server", "5:7.0.15-1")
    add_etc(after, "/etc/redis", kind="dir", mode="0755", sha=SHA_A)
    add_etc(after, "/etc/redis/redis.conf", SHA_A)
    after["users"]["users"]["redis"] = {
        "uid": 105,
        "gid": 108,
        "gecos": "",
        "home": "/var/lib/redis",
        "shell": "/usr/sbin/nologin",
        "password": "locked",
        "password_changed": 1,
    }
    after["users"]["groups"]["redis"] = {"gid": 108, "members": []}
    cmds = [agent(2, "apt-get install -y redis-server")]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, Expected())
    assert subjects(res) == {"package:redis-server"}
    finding = res.findings[0]
    assert finding.command_id == 102
    side = {s["key"] for s in finding.evidence["changes"][0]["side_effects"]}
    assert side == {"/etc/redis", "redis"}  # the dir folds its file; the user and the group share the key


def test_unavailable_probe_gives_undetermined(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    after["firewall"] = {"unavailable": "nft not found; iptables-save not found"}
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, [], Expected())
    assert res.findings == []
    assert res.verdict == "undetermined"
    assert res.unavailable == ["web: firewall@after_agent: nft not found; iptables-save not found"]
    # a finding elsewhere still makes it "yes"
    add_tmp(after, "/tmp/leftover.txt")
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, [agent(2, "touch /tmp/leftover.txt")])
    assert res.verdict == "yes"
    assert res.unavailable
    # malformed data never raises: the probe counts as unavailable
    broken = copy.deepcopy(debian)
    broken["listening"]["sockets"].append({"key": None, "processes": [None]})
    res = find_residue({"web": {"after_setup": base, "after_agent": broken}}, [])
    assert res.verdict == "undetermined"
    assert any(u.startswith("web: listening@after_agent: cannot compare") for u in res.unavailable)
    # a missing snapshot makes every required probe unavailable
    res = find_residue({"web": {"after_setup": base}}, [], Expected())
    assert res.verdict == "undetermined"
    assert "web: tmp_files@after_agent: no snapshot" in res.unavailable
    # narrowing the required probes
    res = find_residue(
        {"web": {"after_setup": base, "after_agent": copy.deepcopy(debian) | {"firewall": {"unavailable": "x"}}}},
        [],
        required=["tmp_files"],
    )
    assert res.verdict == "no"


def test_reboot_surfaces_changes_and_ignores_reboot_churn(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    base["services"]["unit_files"]["redis-server.service"] = "disabled"
    base["services"]["units"]["redis-server.service"] = {
        "load": "loaded",
        "active": "inactive",
        "sub": "dead",
        "description": "Redis",
    }
    agent_snap = copy.deepcopy(base)
    agent_snap["services"]["unit_files"]["redis-server.service"] = "enabled"
    add_etc(agent_snap, "/etc/sysctl.d/99-swap.conf", SHA_A)
    add_socket(agent_snap, "tcp", "0.0.0.0", 9000, "python3", 5000)
    add_process(agent_snap, 5000, "python3 -m http.server 9000")
    reboot = copy.deepcopy(base)
    reboot["services"]["unit_files"]["redis-server.service"] = "enabled"
    reboot["services"]["units"]["redis-server.service"].update(active="active", sub="running")
    add_etc(reboot, "/etc/sysctl.d/99-swap.conf", SHA_A)
    add_socket(reboot, "tcp", "127.0.0.1", 6379, "redis-server", 480)
    add_process(reboot, 480, "/usr/bin/redis-server 127.0.0.1:6379", user="redis")
    reboot["sysctl"]["values"]["vm.swappiness"] = "10"
    reboot["boot"]["boot_id"] = "new-boot-id"
    reboot["boot"]["uptime_s"] = 42.0
    for p in reboot["processes"]["processes"]:
        p["pid"] += 7
    add_tmp(
        reboot,
        "/tmp/systemd-private-ffffffffffffffffffffffffffffffff-systemd-logind.service-Zz9",
        kind="dir",
        mode="0700",
    )
    cmds = [
        agent(2, "nohup python3 -m http.server 9000 &"),
        agent(3, "systemctl enable redis-server"),
        agent(4, "echo vm.swappiness=10 > /etc/sysctl.d/99-swap.conf"),
        harness(5, "systemctl reboot", phase="verify"),
    ]
    res = find_residue({"web": {"after_setup": base, "after_agent": agent_snap, "after_reboot": reboot}}, cmds)
    unit = by_subject(res, "unit:redis-server.service")
    points = {c["point"] for c in unit.evidence["changes"]}
    assert points == {"after_agent", "after_reboot"}
    assert unit.command_id == 103
    swap = by_subject(res, "sysctl:vm.swappiness")
    assert swap.evidence["point"] == "after_reboot"
    assert swap.evidence["before"] == {"value": "60"} and swap.evidence["after"] == {"value": "10"}
    assert swap.command_id == 104
    assert swap.evidence["attribution"]["confidence"] == "medium"
    # the socket and process of the unit started at boot are part of the unit's finding
    keys = {(c["point"], c["probe"], c["key"]) for c in unit.evidence["changes"]}
    assert ("after_reboot", "listening", "tcp:127.0.0.1:6379") in keys
    assert ("after_reboot", "processes", "redis /usr/bin/redis-server 127.0.0.1:6379") in keys
    assert "socket:tcp:127.0.0.1:6379" not in subjects(res)
    assert by_subject(res, "socket:tcp:0.0.0.0:9000").evidence["point"] == "after_agent"
    assert by_subject(res, "path:/etc/sysctl.d/99-swap.conf").command_id == 104
    # the server started by the agent is gone after the reboot: no extra finding; boot churn: none
    assert all("boot" not in f.evidence["probe"] for f in res.findings)
    assert not any("systemd-private" in f.summary for f in res.findings)


def test_attribution_picks_last_touching_command_and_prefers_successful(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_tmp(after, "/tmp/report.txt")
    cmds = [
        agent(2, "echo a > /tmp/report.txt"),
        agent(3, "echo b >> /tmp/report.txt"),
        agent(4, "cat /tmp/report.txt"),  # reads, mentions only
        agent(5, "cp /nonexistent /tmp/report.txt", exit_code=1),  # failed
    ]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds)
    f = by_subject(res, "path:/tmp/report.txt")
    assert f.command_id == 103
    assert f.evidence["attribution"]["candidates"] == 3
    # weak fallback: only a mention → low; nothing → unattributed
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, [agent(2, "ls /tmp/report.txt")])
    assert res.findings[0].evidence["attribution"]["confidence"] == "low"
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, [agent(2, "uptime")])
    assert res.findings[0].command_id is None
    assert res.findings[0].evidence["attribution"]["confidence"] == "none"


def test_commands_via_ssh_from_another_node(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_tmp(after, "/tmp/from-client")
    snaps = {
        "web": {"after_setup": base, "after_agent": after},
        "client": {"after_setup": copy.deepcopy(debian), "after_agent": copy.deepcopy(debian)},
    }
    cmds = [agent(2, "ssh web 'touch /tmp/from-client'", node="client"), agent(3, "touch /tmp/other", node="client")]
    res = find_residue(snaps, cmds)
    f = by_subject(res, "path:/tmp/from-client")
    assert f.node == "web" and f.command_id == 102
    assert "via ssh" in f.evidence["attribution"]["method"]


def test_unattributed_new_process_is_noted_not_reported(debian: dict[str, Any]) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_process(after, 8100, "/usr/lib/some/helper --daemon")
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, [agent(2, "uptime")])
    assert res.findings == [] and res.verdict == "no"
    assert any("unattributed new process" in n for n in res.notes)
    res = find_residue(
        {"web": {"after_setup": base, "after_agent": after}}, [agent(2, "nohup /usr/lib/some/helper --daemon &")]
    )
    assert subjects(res) == {"process:root /usr/lib/some/helper --daemon"}
    assert res.findings[0].evidence["attribution"]["confidence"] == "high"


def test_backup_and_category_rules() -> None:
    for name in (
        "nginx.conf.bak",
        "a.bak2",
        "x.orig",
        "x~",
        "x.old",
        "x.save",
        "x.dpkg-old",
        "nginx.conf.2024-01-01",
        "file.20240101",
        "db_20240101-1200",
        "c.conf.2024-01-01T12:00:00",
        "#x#",
        "a.bak.1",
        "x.1700000000",
        "sshd_config.rpmsave",
    ):
        assert is_backup_name("/etc/" + name), name
    for name in ("passwd-", "nginx.conf", "server.key", "x.log", "2024-report.txt", "boot.img", "ld.so.cache"):
        assert not is_backup_name("/etc/" + name), name
    assert path_category("/tmp/x.bak") == "backup_files"
    assert path_category("/root/.ssh/id_rsa.orig") == "backup_files"
    assert path_category("/tmp/server.key") == "secrets"
    assert path_category("/tmp/app.log") == "temp_files"
    assert path_category("/root/nginx_1.0_amd64.deb") == "temp_files"
    assert path_category("/etc/.sshd_config.swp") == "temp_files"
    assert path_category("/etc/motd") == "system_config"
    assert path_category("/srv/www/index.html") == "test_app_data"


MORE = [
    # (category, subject, command seq, confidence)
    ("accounts_access", "path:/root/.ssh/authorized_keys", 2, "high"),
    ("processes_services", "path:/etc/cron.d/backup", 3, "high"),
    ("processes_services", "path:/var/spool/cron/crontabs/root", 4, "medium"),
    ("packages_repos", "path:/etc/apt/sources.list.d/docker.list", 5, "high"),
    ("packages_repos", "pkg_health:dpkg_audit", 6, "medium"),
    ("system_config", "network:addresses:eth0:10.0.2.99/24", 7, "high"),
    ("system_config", "network:routes:10.50.0.0/16 via 10.0.2.1 dev eth0", 8, "high"),
    ("system_config", "mount:/mnt/scratch", 9, "high"),
    ("system_config", "hostname", 10, "high"),
    ("accounts_access", "group:adm", 11, "high"),
    ("processes_services", "unit:app.service", 13, "high"),
    ("secrets", "path:/tmp/server2.key", 14, "high"),
]


@pytest.fixture(scope="module")
def more(debian: dict[str, Any]) -> ResidueResult:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    after["authorized_keys"]["keys"].append(
        {
            "file": "/root/.ssh/authorized_keys",
            "type": "ssh-ed25519",
            "comment": "ci@build",
            "fingerprint": "SHA256:x",
            "options": "",
            "line_sha256": SHA_A,
        }
    )
    after["cron"]["entries"].append({"file": "/etc/cron.d/backup", "line": "0 2 * * * root /usr/local/bin/backup.sh"})
    add_etc(after, "/etc/cron.d/backup", SHA_A)
    after["cron"]["entries"].append({"file": "/var/spool/cron/crontabs/root", "line": "*/5 * * * * /root/x.sh"})
    after["repos"]["repos"].append(
        {
            "file": "/etc/apt/sources.list.d/docker.list",
            "format": "apt",
            "types": ["deb"],
            "uris": ["https://download.docker.com/linux/debian"],
            "suites": ["bookworm"],
            "components": ["stable"],
            "options": [],
            "enabled": True,
        }
    )
    add_etc(after, "/etc/apt/sources.list.d/docker.list", SHA_A)
    after["pkg_health"]["checks"]["dpkg_audit"].update(ok=False, rc=1, output=["broken"])
    after["network"]["addresses"].append(
        {
            "ifname": "eth0",
            "family": "inet",
            "address": "10.0.2.99",
            "prefixlen": 24,
            "scope": "global",
            "key": "eth0:10.0.2.99/24",
        }
    )
    after["network"]["routes"].append("10.50.0.0/16 via 10.0.2.1 dev eth0")
    after["mounts"]["mounts"].append(
        {"device": "tmpfs", "mountpoint": "/mnt/scratch", "fstype": "tmpfs", "options": ["rw"]}
    )
    after["os"]["hostname"] = "web9"
    after["etc_files"]["files"]["/etc/hostname"]["sha256"] = SHA_B
    after["users"]["groups"]["adm"]["members"] = ["debian", "deploy"]
    add_etc(after, "/etc/systemd/system/app.service", SHA_A)
    add_etc(after, "/etc/systemd/system/multi-user.target.wants", kind="dir", mode="0755", sha=None)
    add_etc(
        after,
        "/etc/systemd/system/multi-user.target.wants/app.service",
        kind="symlink",
        target="/etc/systemd/system/app.service",
    )
    after["services"]["unit_files"]["app.service"] = "enabled"
    after["services"]["units"]["app.service"] = {
        "load": "loaded",
        "active": "active",
        "sub": "running",
        "description": "app",
    }
    add_tmp(after, "/tmp/server2.key", mode="0600")
    add_secret(after, "/tmp/server2.key", "private_key")
    cmds = [
        agent(2, "echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB ci@build' >> /root/.ssh/authorized_keys"),
        agent(3, "echo '0 2 * * * root /usr/local/bin/backup.sh' > /etc/cron.d/backup"),
        agent(4, "(crontab -l; echo '*/5 * * * * /root/x.sh') | crontab -"),
        agent(
            5,
            "echo 'deb https://download.docker.com/linux/debian bookworm stable' "
            "| tee /etc/apt/sources.list.d/docker.list",
        ),
        agent(6, "dpkg -i /tmp/broken_1.0_all.deb"),
        agent(7, "ip addr add 10.0.2.99/24 dev eth0"),
        agent(8, "ip route add 10.50.0.0/16 via 10.0.2.1"),
        agent(9, "mkdir -p /mnt/scratch && mount -t tmpfs tmpfs /mnt/scratch"),
        agent(10, "hostnamectl set-hostname web9"),
        agent(11, "usermod -aG adm deploy"),
        agent(12, "cat > /etc/systemd/system/app.service <<'EOF'\n[Service]\nExecStart=/opt/app/run\nEOF"),
        agent(13, "systemctl daemon-reload && systemctl enable --now app"),
        agent(14, "openssl genpkey -algorithm ed25519 -out /tmp/server2.key"),
        agent(15, "ip addr show; mount | grep scratch; crontab -l; cat /etc/hostname"),
    ]
    return find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, Expected())


@pytest.mark.parametrize(("category", "subject", "seq", "confidence"), MORE, ids=[m[1] for m in MORE])
def test_more_handlers(more: ResidueResult, category: str, subject: str, seq: int, confidence: str) -> None:
    finding = by_subject(more, subject)
    assert finding.category == category
    assert finding.evidence["attribution"]["command"]["seq"] == seq
    assert finding.evidence["attribution"]["confidence"] == confidence


def test_more_handlers_merge_probes(more: ResidueResult) -> None:
    assert subjects(more) == {m[1] for m in MORE}
    probes = {f.evidence["subject"]: {c["probe"] for c in f.evidence["changes"]} for f in more.findings}
    assert probes["path:/etc/cron.d/backup"] == {"cron", "etc_files"}
    assert probes["path:/etc/apt/sources.list.d/docker.list"] == {"repos", "etc_files"}
    assert probes["hostname"] == {"os", "etc_files"}
    assert probes["unit:app.service"] == {"services", "etc_files"}
    assert probes["path:/tmp/server2.key"] == {"tmp_files", "secrets"}
    reasons = {(e["probe"], e["key"]): e["reason"] for e in more.excluded}
    assert reasons[("etc_files", "/etc/systemd/system/multi-user.target.wants")].startswith("noise")


HEADER = "nft table inet filter > chain input: type filter hook input priority filter; policy accept;"


@pytest.mark.parametrize(
    ("rules", "reported"),
    [
        # the firewall-persist oracle: a new accept chain holding only the expected rule
        ([HEADER, "nft table inet filter > chain input: tcp dport 9000 counter drop"], False),
        # the same chain with an unexpected rule as well: the chain and the rule are residue
        (
            [
                HEADER,
                "nft table inet filter > chain input: tcp dport 9000 drop",
                "nft table inet filter > chain input: tcp dport 22 drop",
            ],
            True,
        ),
        # an accept chain on its own is still a change the task did not ask for
        ([HEADER], True),
        # a drop-policy chain filters by itself: never excused
        (
            [
                HEADER.replace("policy accept", "policy drop"),
                "nft table inet filter > chain input: tcp dport 9000 drop",
            ],
            True,
        ),
    ],
)
def test_accept_chain_holding_only_expected_rules_is_not_residue(
    debian: dict[str, Any], rules: list[str], reported: bool
) -> None:
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    after["firewall"]["rules"].extend(rules)
    cmds = [agent(2, "nft -f /etc/nftables.conf")]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, Expected(ports=[9000]))
    assert (res.verdict == "yes") is reported, [f.summary for f in res.findings]


def test_expected_firewall_groups_and_conntrack_sysctls_are_not_residue(debian: dict[str, Any]) -> None:
    """A task that asks for forward rules declares their group; the netfilter sysctls that
    appear when the stateful rule loads conntrack are the module's defaults, not a change
    (unless an agent command names the key)."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    after["firewall"]["rules"].extend(
        [
            "nft table inet filter > chain forward: type filter hook forward priority filter; policy drop;",
            "nft table inet filter > chain forward: ct state established,related accept",
            'nft table inet filter > chain forward: iifname "eth1" tcp dport 80 accept',
        ]
    )
    after["sysctl"]["values"]["net.netfilter.nf_conntrack_max"] = "4096"
    after["sysctl"]["values"]["net.nf_conntrack_max"] = "4096"
    cmds = [agent(2, "nft -f /etc/nftables.conf")]
    expected = Expected(paths=["/etc/nftables.conf"], firewall=["nft table inet filter > chain forward"])
    clean = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, expected)
    assert clean.verdict == "no", [f.summary for f in clean.findings]
    # without the declaration the rules are residue; a key the agent set is reported
    bare = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, Expected())
    assert any(f.category == "system_config" and "firewall" in f.summary for f in bare.findings)
    named = [*cmds, agent(3, "sysctl -w net.netfilter.nf_conntrack_max=4096")]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, named, expected)
    assert [f.summary for f in res.findings] == ["sysctl net.netfilter.nf_conntrack_max changed None → 4096"]


def test_expected_addresses_are_not_residue(debian: dict[str, Any]) -> None:
    """A floating VIP the task asks for (`[expected] addresses`, globs over the network
    probe's `IFNAME:ADDRESS/PREFIX` keys) is not residue; any other address still is."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    for ifname, address in (("eth1", "192.168.60.150"), ("eth1", "192.168.60.7")):
        key = f"{ifname}:{address}/24"
        entry = {"ifname": ifname, "family": "inet", "address": address, "prefixlen": 24, "scope": "global"}
        after["network"]["addresses"].append({**entry, "key": key})
    after["network"]["routes"] += ["172.16.2.0/24 dev wg0 scope link", "10.9.0.0/16 via 10.0.2.2 dev eth0"]
    cmds = [agent(2, "systemctl restart keepalived")]
    expected = Expected(addresses=["eth1:192.168.60.150/*"], routes=["172.16.2.0/24 dev wg0*"])
    res = find_residue({"lb1": {"after_setup": base, "after_agent": after}}, cmds, expected)
    assert sorted(f.summary for f in res.findings) == [
        "address added: eth1:192.168.60.7/24", "route added: 10.9.0.0/16 via 10.0.2.2 dev eth0"
    ]  # fmt: skip
    excluded = {e["key"]: e["reason"] for e in res.excluded}
    assert excluded["eth1:192.168.60.150/24"] == "expected address"
    assert excluded["172.16.2.0/24 dev wg0 scope link"] == "expected route"


def test_first_boot_units_stopping_at_the_reboot_are_noise(debian: dict[str, Any]) -> None:
    """debian-13 runs ldconfig, sysusers, catalog update and update-done once after its image's
    first boot (`ConditionNeedsUpdate=`): after the harness's reboot they are inactive on every
    node, agent or not. Any other unit that stops at the reboot is still reported."""
    base = copy.deepcopy(debian)
    for unit in ("ldconfig.service", "systemd-sysusers.service", "systemd-update-done.service", "rsyslog.service"):
        base["services"]["units"][unit] = {"load": "loaded", "active": "active", "sub": "exited", "description": unit}
    reboot = copy.deepcopy(base)
    for unit in ("ldconfig.service", "systemd-sysusers.service", "systemd-update-done.service", "rsyslog.service"):
        reboot["services"]["units"][unit].update(active="inactive", sub="dead")
    reboot["boot"]["boot_id"] = "new-boot-id"
    snaps = {"client": {"after_setup": base, "after_agent": copy.deepcopy(base), "after_reboot": reboot}}
    res = find_residue(snaps, [harness(5, "systemctl reboot", phase="verify")])
    assert [f.evidence["subject"] for f in res.findings] == ["unit:rsyslog.service"]
    reasons = {e["key"]: e["reason"] for e in res.excluded if e["probe"] == "services"}
    assert reasons["ldconfig.service"].startswith("noise (first-boot unit")


def test_after_a_reboot_children_of_an_expected_port_server_are_not_residue(debian: dict[str, Any]) -> None:
    """postgres-replication showed it: after the reboot the server listening on an expected
    port came back with the same socket (the listening diff is empty) but new pids and new
    children (a walsender). The children still serve the expected port."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_socket(after, "tcp", "0.0.0.0", 5432, "postgres", 2685)
    add_process(after, 2685, "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", user="postgres")
    add_process(after, 2712, "postgres: 15/main: walsender replicator 10.0.0.11(53708) streaming 0/3", user="postgres",
                ppid=2685)  # fmt: skip
    reboot = copy.deepcopy(debian)
    add_socket(reboot, "tcp", "0.0.0.0", 5432, "postgres", 253)
    add_process(reboot, 253, "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", user="postgres")
    add_process(reboot, 301, "postgres: 15/main: walsender replicator 10.0.0.11(47198) idle", user="postgres", ppid=253)
    expected = Expected(units=["postgresql@15-main.service"], ports=[5432])
    cmds = [agent(2, "systemctl restart postgresql")]
    res = find_residue({"pg1": {"after_setup": base, "after_agent": after, "after_reboot": reboot}}, cmds, expected)
    assert res.findings == [], [f.summary for f in res.findings]


def test_a_socket_an_expected_units_daemon_draws_is_not_residue(debian: dict[str, Any]) -> None:
    """rpc.statd (of rpc-statd.service) listens on a port drawn at each start: the task can
    expect the unit, not the port. A socket of any other program still counts."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_socket(after, "udp", "127.0.0.1", 879, "rpc.statd", 1301)
    add_process(after, 1301, "/sbin/rpc.statd", user="statd")
    add_socket(after, "tcp", "0.0.0.0", 4444, "nc", 1302)
    cmds = [agent(1, "mount -t nfs server:/srv/share /mnt/share"), agent(2, "nc -l -p 4444 &")]
    expected = Expected(units=["rpc-statd.service"])
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, expected)
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    assert reasons[("listening", "udp:127.0.0.1:879")] == "program of an expected unit"
    assert [f.summary for f in res.findings if "4444" in f.summary], "another program's socket is still residue"
    assert not [f for f in res.findings if "879" in f.summary]


def test_a_cron_job_running_at_the_snapshot_is_not_process_residue(debian: dict[str, Any]) -> None:
    """A job the agent installed may be mid-run when the snapshot is taken: its processes sit
    under the CRON process cron forked for that run and are left to the cron probe; a process
    the agent started outside cron is still reported."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_process(after, 900, "/usr/sbin/CRON -f", ppid=1)
    add_process(after, 901, "/bin/sh -c /usr/local/sbin/app-conf-push", ppid=900)
    add_process(after, 902, "ssh -o BatchMode=yes app2 cat > /etc/app.conf", ppid=901)
    add_process(after, 950, "ssh -N -L 8080:app2:80 app2", ppid=1)
    cmds = [
        agent(2, "echo '* * * * * root /usr/local/sbin/app-conf-push' > /etc/cron.d/app-conf-push"),
        agent(3, "/usr/local/sbin/app-conf-push"),
        agent(4, "nohup ssh -N -L 8080:app2:80 app2 &"),
    ]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds)
    processes = {s for s in subjects(res) if s.startswith("process:")}
    assert processes == {"process:root ssh -N -L 8080:app2:80 app2"}, processes
    reasons = {e["key"]: e["reason"] for e in res.excluded if e["probe"] == "processes"}
    assert any("cron job's run" in r for k, r in reasons.items() if "app-conf-push" in k), reasons


def test_children_of_a_server_listening_since_setup_are_not_residue_after_a_reboot(debian: dict[str, Any]) -> None:
    """postgres-replication on debian-12 (job dda5007d) showed it: setup already had the
    server listening on the expected port, so neither comparison's listening diff held
    that socket, and the replication processes the server forked after the reboot
    (walsender, startup, walreceiver) were reported as new processes."""
    base = copy.deepcopy(debian)
    add_socket(base, "tcp", "0.0.0.0", 5432, "postgres", 2627)
    add_process(base, 2627, "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", user="postgres")
    after = copy.deepcopy(base)
    add_process(after, 2654, "postgres: 15/main: walsender replicator 10.0.0.11(38914) streaming 0/3000060",
                user="postgres", ppid=2627)  # fmt: skip
    reboot = copy.deepcopy(debian)
    add_socket(reboot, "tcp", "0.0.0.0", 5432, "postgres", 254)
    add_process(reboot, 254, "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", user="postgres")
    add_process(reboot, 277, "postgres: 15/main: walsender replicator 10.0.0.11(38544) streaming 0/5000110",
                user="postgres", ppid=254)  # fmt: skip
    expected = Expected(ports=[5432])
    cmds = [agent(2, "su postgres -c 'pg_basebackup -h 10.0.0.11 -D /var/lib/postgresql/15/main'; postgres -V")]
    res = find_residue({"pg1": {"after_setup": base, "after_agent": after, "after_reboot": reboot}}, cmds, expected)
    assert res.findings == [], [f.summary for f in res.findings]
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    walsender = "postgres postgres: 15/main: walsender replicator 10.0.0.11(38544) streaming 0/5000110"
    assert reasons[("processes", walsender)] == "serves an expected port"


def test_a_start_script_of_an_expected_unit_and_what_it_runs_are_not_residue(debian: dict[str, Any]) -> None:
    """galera-cluster on debian-13 (job 4f272dce) showed it: after the reboot the oracle's
    `galera-autostart` unit (a bash script) was still running, with the `systemctl start
    mariadb.service` it had asked for; both were reported as new processes."""
    base = copy.deepcopy(debian)
    reboot = copy.deepcopy(debian)
    add_process(reboot, 412, "/bin/bash /usr/local/sbin/galera-autostart --last-resort")
    add_process(reboot, 530, "systemctl start mariadb.service", ppid=412)
    expected = Expected(units=["mariadb.service", "galera-autostart.service"], ports=[3306])
    cmds = [agent(2, "systemctl enable galera-autostart.service", node="db1")]
    res = find_residue({"db1": {"after_setup": base, "after_agent": base, "after_reboot": reboot}}, cmds, expected)
    assert res.findings == [], [f.summary for f in res.findings]
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    assert reasons[("processes", "root /bin/bash /usr/local/sbin/galera-autostart --last-resort")] == (
        "program of an expected unit"
    )
    assert reasons[("processes", "root systemctl start mariadb.service")] == "run by a program of an expected unit"


def test_a_background_job_below_an_expected_sshd_is_still_residue(debian: dict[str, Any]) -> None:
    """sshd is a session spawner: an expected ssh unit does not make the agent's leftover
    job under its session the unit's own."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_process(after, 900, "sshd: root@notty")
    add_process(after, 901, "/usr/sbin/sshd -D", ppid=1)
    add_process(after, 950, "python3 -m http.server 8000", ppid=900)
    add_process(after, 951, "sh -c sleep-forever", ppid=901)
    expected = Expected(units=["ssh.service", "sshd.service"])
    cmds = [agent(2, "nohup python3 -m http.server 8000 &"), agent(3, "sh -c sleep-forever &")]
    res = find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, expected)
    summaries = [f.summary for f in res.findings]
    assert any("http.server" in s for s in summaries), summaries
    assert any("sleep-forever" in s for s in summaries), summaries


def _memory_sized(snap: dict[str, Any], rmem_max: int, dev_size: str, tmp_options: list[str]) -> None:
    snap["sysctl"]["values"]["net.ipv4.tcp_rmem"] = f"4096 131072 {rmem_max}"
    snap["mounts"]["mounts"] = [
        m for m in snap["mounts"]["mounts"] if m.get("mountpoint") not in ("/dev", "/tmp")
    ] + [
        {"device": "udev", "mountpoint": "/dev", "fstype": "devtmpfs",
         "options": ["rw", "nosuid", "relatime", f"size={dev_size}", "mode=755", "inode64"]},
        {"device": "tmpfs", "mountpoint": "/tmp", "fstype": "tmpfs", "options": tmp_options},
    ]  # fmt: skip


def test_what_the_kernel_sizes_from_memory_at_boot_is_not_residue_after_a_reboot(debian: dict[str, Any]) -> None:
    """postgres-replication on debian-13 showed it: the reboot freed a few pages more than
    the first boot, so tcp_rmem's maximum, devtmpfs's size and /tmp's shown size moved."""
    base, reboot = copy.deepcopy(debian), copy.deepcopy(debian)
    _memory_sized(base, 2550304, "161084k", ["rw", "nosuid", "nodev", "nr_inodes=1048576", "inode64"])
    _memory_sized(reboot, 2550336, "161088k", ["rw", "nosuid", "nodev", "size=173408k", "nr_inodes=1048576", "inode64"])
    res = find_residue({"client": {"after_setup": base, "after_agent": base, "after_reboot": reboot}}, [], Expected())
    assert res.findings == [], [f.summary for f in res.findings]
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    assert "sized by the kernel" in reasons[("sysctl", "net.ipv4.tcp_rmem")], reasons


def test_a_persisted_buffer_size_or_a_new_tmpfs_option_after_a_reboot_is_still_residue(debian: dict[str, Any]) -> None:
    base, reboot = copy.deepcopy(debian), copy.deepcopy(debian)
    _memory_sized(base, 2550304, "161084k", ["rw", "nosuid", "nodev", "inode64"])
    _memory_sized(reboot, 6291456, "161084k", ["rw", "nosuid", "nodev", "noexec", "inode64"])
    cmds = [agent(2, "echo 'net.ipv4.tcp_rmem = 4096 131072 6291456' > /etc/sysctl.d/90-tcp.conf")]
    res = find_residue({"web": {"after_setup": base, "after_agent": base, "after_reboot": reboot}}, cmds, Expected())
    summaries = sorted(f.summary for f in res.findings)
    assert any(s.startswith("sysctl net.ipv4.tcp_rmem changed") for s in summaries), summaries
    assert any(s.startswith("/tmp remounted") for s in summaries), summaries


def test_temp_files_first_seen_after_the_reboot_are_not_residue(debian: dict[str, Any]) -> None:
    """galera-cluster on debian-13 showed it: mariadb's start at boot runs mariadb-upgrade,
    whose temp files were in /tmp when the after-reboot snapshot was taken. A temp file the
    agent left before the reboot is still reported (at the after-agent comparison)."""
    base = copy.deepcopy(debian)
    after = copy.deepcopy(debian)
    add_tmp(after, "/tmp/agent-notes.txt", size=10)
    reboot = copy.deepcopy(after)
    add_tmp(reboot, "/tmp/mysql_upgrade-7O3ci1", size=112)
    cmds = [agent(2, "echo notes > /tmp/agent-notes.txt", node="db2")]
    res = find_residue({"db2": {"after_setup": base, "after_agent": after, "after_reboot": reboot}}, cmds, Expected())
    assert [f.summary for f in res.findings] == ["new file /tmp/agent-notes.txt (10 B)"], [
        f.summary for f in res.findings
    ]
    reasons = {(e["probe"], e["key"]): e["reason"] for e in res.excluded}
    assert reasons[("tmp_files", "/tmp/mysql_upgrade-7O3ci1")] == "noise (a temp entry made during the reboot)"


def test_the_fsck_daemon_exiting_after_boot_is_noise(debian: dict[str, Any]) -> None:
    """A disk-booted guest (debian-12-disk) starts systemd-fsckd for the boot's fsck; it is
    active in the setup snapshot and exits on its idle timeout during the agent's work."""
    base = copy.deepcopy(debian)
    base["services"]["units"]["systemd-fsckd.service"] = {
        "load": "loaded", "active": "active", "sub": "running", "description": "File System Check Daemon"
    }  # fmt: skip
    after = copy.deepcopy(base)
    after["services"]["units"]["systemd-fsckd.service"].update(active="inactive", sub="dead")
    res = find_residue({"node": {"after_setup": base, "after_agent": after}}, [agent(1, "update-grub")])
    assert res.findings == [], [f.summary for f in res.findings]
    reasons = {e["key"]: e["reason"] for e in res.excluded if e["probe"] == "services"}
    assert reasons["systemd-fsckd.service"].startswith("noise")
