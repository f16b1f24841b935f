"""snapshot.sh itself: shipped as package data; real runs on this host (sh, dash, bash,
busybox ash; busybox tools only); with fake tools: the output filter's framing and caps
(unterminated last lines, long lines, stderr), systemd units derived from one `systemctl
list-units` run, sysctl values read from /proc/sys, and its own processes left out."""

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

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _shells() -> list[list[str]]:
    shells = [["sh"]]
    for name in ("dash", "bash"):
        if shutil.which(name):
            shells.append([name])
    if shutil.which("bash"):
        shells.append(["bash", "--posix"])
    if shutil.which("busybox"):
        shells.append(["busybox", "ash"])
    return shells


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


def _run(shell: list[str], *probes: str, env: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    out, _ = _run_script(shell, *probes, env=env)
    return out, parse_snapshot(out)


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


def _tool(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


FAKE_IP = r"""
case "$*" in
  "-o addr show")
    awk 'BEGIN {
        for (i = 0; i < 10; i++) printf "%d: eth%d    inet 10.0.0.%d/24 scope global eth%d\n", i, i, i, i
        s = ""; for (i = 0; i < 5000; i++) s = s "x"; print s
        for (i = 10; i < 2100; i++)
            printf "%d: eth%d    inet 10.1.%d.%d/24 scope global eth%d\n", i, i, i % 250, i % 250, i
    }'
    i=0
    while [ $i -lt 25 ]; do echo "ip: warning $i" >&2; i=$((i + 1)); done
    exit 3
    ;;
  "route show") printf 'default via 10.0.0.1 dev eth0' ;;
  "-6 route show") printf 'fe80::/64 dev eth0 proto kernel metric 256 pref medium\n' ;;
esac
"""


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_filter_caps_lines_keeps_stderr_and_frames_unterminated_output(shell: list[str], tmp_path: Path) -> None:
    _tool(tmp_path, "ip", FAKE_IP)
    out, parsed = _run(shell, "network", env={"TESTBED_PROBE_PATH": f"{tmp_path}:{SYSTEM_PATH}"})
    assert parsed["_meta"]["complete"] is True
    net = parsed["network"]
    assert net["part_rc"] == {"addr": 3, "route": 0, "route6": 0}
    assert net["truncated"] == {"addr": {"max_lines": 2000, "more": 1, "long_lines": 1}}
    assert net["stderr"]["addr"] == [f"ip: warning {i}" for i in range(20)]
    assert len(net["addresses"]) == 1999  # 2000 lines kept, one of them the long junk line
    assert net["unparsed"] == ["x" * 4096]
    # The last line had no newline: it still ends before the part's end marker.
    assert net["routes"] == ["default via 10.0.0.1 dev eth0"]
    assert net["routes6"] == ["fe80::/64 dev eth0 proto kernel metric 256 pref medium"]
    assert "\036" not in out  # control lines never reach the output


FAKE_SYSTEMCTL = r"""
echo "$*" >>"$FAKE_SYSTEMCTL_LOG"
case "$1" in
  list-units)
    printf '%s\n' \
      '● nginx.service loaded failed failed A web server' \
      'cron.service loaded active running Regular background program processing daemon' \
      'apt-daily.timer loaded active waiting Daily apt download activities' \
      'dev-vda.device loaded active plugged /dev/vda' \
      'broken.mount loaded failed failed Broken mount' \
      'ghost.service not-found inactive dead ghost.service'
    printf 'last.timer loaded active waiting No newline at the end'
    echo "systemctl: a warning" >&2
    ;;
  list-unit-files)
    printf 'cron.service enabled enabled\nnginx.service disabled enabled\napt-daily.timer enabled enabled\n'
    ;;
esac
"""


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_services_and_timers_come_from_one_list_units_run(shell: list[str], tmp_path: Path) -> None:
    bindir, run = tmp_path / "bin", tmp_path / "run-systemd"
    bindir.mkdir()
    run.mkdir()
    _tool(bindir, "systemctl", FAKE_SYSTEMCTL)
    log = tmp_path / "calls"
    etc = tmp_path / "etc-systemd"
    for wants, unit in (("multi-user.target.wants", "cron.service"), ("timers.target.wants", "apt-daily.timer")):
        (etc / wants).mkdir(parents=True, exist_ok=True)
        (etc / wants / unit).symlink_to(f"/lib/systemd/system/{unit}")
    (etc / "ctrl-alt-del.target").symlink_to("/dev/null")
    env = {
        "TESTBED_PROBE_PATH": f"{bindir}:{SYSTEM_PATH}",
        "TESTBED_PROBE_SYSTEMD_RUN": str(run),
        "TESTBED_PROBE_SYSTEMD_ETC": str(etc),
        "FAKE_SYSTEMCTL_LOG": str(log),
    }
    _, parsed = _run(shell, "services", "cron", env=env)
    svc = parsed["services"]
    assert svc["init"] == "systemd"
    assert svc["failed"] == ["broken.mount", "nginx.service"]
    assert set(svc["units"]) == {"nginx.service", "cron.service", "ghost.service"}
    assert svc["units"]["nginx.service"] == {
        "load": "loaded",
        "active": "failed",
        "sub": "failed",
        "description": "A web server",
    }
    assert svc["enabled"] == ["apt-daily.timer", "cron.service"]
    assert svc["unit_files"]["ctrl-alt-del.target"] == "masked"
    assert svc["stderr"]["systemd_services"] == ["systemctl: a warning"]
    assert "unparsed" not in svc
    timers = parsed["cron"]["timers"]
    assert set(timers) == {"apt-daily.timer", "last.timer"}
    assert timers["last.timer"]["description"] == "No newline at the end"
    calls = log.read_text().splitlines()
    # one systemctl call: unit-file states come from the enablement links on disk
    assert [c.split()[0] for c in calls] == ["list-units"]


def test_sysctl_values_come_from_proc_sys() -> None:
    _, parsed = _run(["sh"], "sysctl", "processes")
    values = parsed["sysctl"]["values"]
    assert parsed["sysctl"]["part_rc"] == {"sysctl": 0}
    assert "unparsed" not in parsed["sysctl"]
    assert values["kernel.ostype"] == Path("/proc/sys/kernel/ostype").read_text().strip()
    assert values["vm.overcommit_memory"] == Path("/proc/sys/vm/overcommit_memory").read_text().strip()
    forward = Path("/proc/sys/net/ipv4/ip_forward")
    if forward.exists():
        assert values["net.ipv4.ip_forward"] == forward.read_text().strip()
    # the same keys `sysctl -a` prints: its deprecated neighbour timers are left out
    assert not any(k.endswith((".retrans_time", ".base_reachable_time")) for k in values)
    assert all(k.startswith(("net.", "kernel.", "vm.")) for k in values)
    # the script's own processes (the shell, the output filter, ps) are not listed
    commands = [p["command"] for p in parsed["processes"]["processes"]]
    assert not any("filter.awk" in c or str(SCRIPT_PATH) in c for c in commands)
    assert parsed["processes"]["excluded_self"] >= 2


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_owner_names_come_from_the_filter_and_etc_is_walked_once(shell: list[str], tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    orphan = tmp / "orphan"
    orphan.write_text("x")
    try:
        os.chown(orphan, 4242, 4243)  # ids with no passwd/group entry
    except PermissionError:
        pytest.skip("needs root to chown")
    env = {"TESTBED_PROBE_TMP_DIRS": str(tmp)}
    _, parsed = _run(shell, "tmp_files", "etc_files", env=env)
    entries = parsed["tmp_files"]["entries"]
    assert entries[str(orphan)]["owner"] == "UNKNOWN" and entries[str(orphan)]["group"] == "UNKNOWN"
    assert (entries[str(orphan)]["uid"], entries[str(orphan)]["gid"]) == (4242, 4243)
    etc = parsed["etc_files"]
    assert etc["part_rc"] == {"stat": 0, "sha256": 0}
    assert "unparsed" not in etc
    passwd = etc["files"]["/etc/passwd"]
    st = Path("/etc/passwd").stat()
    assert (passwd["uid"], passwd["owner"], passwd["size"]) == (st.st_uid, "root", st.st_size)
    assert passwd["group"] == "root"
    assert len(passwd["sha256"]) == 64
    assert all(e.get("type") for e in etc["files"].values())  # every hashed file was stat'ed too


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


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
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


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_tree_probes_walk_the_roots_that_exist_and_say_when_none_does(shell: list[str], tmp_path: Path) -> None:
    app = tmp_path / "srv"
    (app / "site").mkdir(parents=True)
    (app / "site" / "index.html").write_text("hi\n")
    env = {
        "TESTBED_PROBE_TMP_DIRS": f"{tmp_path}/no-such-tmp {tmp_path}/nor-this",
        "TESTBED_PROBE_APP_DIRS": f"{tmp_path}/absent {app}",
    }
    _, parsed = _run(shell, "tmp_files", "app_files", env=env)
    assert parsed["tmp_files"]["unavailable"].startswith("none of ")
    assert str(app / "site" / "index.html") in parsed["app_files"]["entries"]
