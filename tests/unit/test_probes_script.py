"""snapshot.sh itself, run on this host with fake tools: the output filter's framing and caps
(unterminated last lines, long lines, stderr), systemd units derived from one `systemctl
list-units` run, sysctl values read from /proc/sys, and its own processes left out."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testbed.probes import SCRIPT_PATH, parse_snapshot

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _shells() -> list[list[str]]:
    shells = [["sh"]]
    for name in ("dash", "bash"):
        if shutil.which(name):
            shells.append([name])
    if shutil.which("busybox"):
        shells.append(["busybox", "ash"])
    return shells


def _run(shell: list[str], *probes: str, env: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    proc = subprocess.run(
        [*shell, str(SCRIPT_PATH), *probes],
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.decode("utf-8", "surrogateescape")
    return out, parse_snapshot(out)


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
