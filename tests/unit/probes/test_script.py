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
  "route show table all")
    printf 'local 10.0.0.5 dev eth0 table local proto kernel scope host src 10.0.0.5\n'
    printf 'fe80::/64 dev eth0 proto kernel metric 256 pref medium\n'
    printf 'default via 10.0.0.1 dev eth0' ;;
esac
"""


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_filter_caps_lines_keeps_stderr_and_frames_unterminated_output(shell: list[str], tmp_path: Path) -> None:
    _tool(tmp_path, "ip", FAKE_IP)
    out, parsed = _run(shell, "network", env={"TESTBED_PROBE_PATH": f"{tmp_path}:{SYSTEM_PATH}"})
    assert parsed["_meta"]["complete"] is True
    net = parsed["network"]
    assert net["part_rc"] == {"addr": 3, "route_all": 0}
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
    # the script's own processes (the shell, the output filter) are not listed; another
    # test's snapshot may run beside this one, so only this run's work directory counts
    own = f"testbed-probe.{parsed['_meta']['script_pid']}."
    commands = [p["command"] for p in parsed["processes"]["processes"]]
    assert not any(own in c for c in commands)
    assert parsed["processes"]["excluded_self"] >= 2


@pytest.mark.skipif(not shutil.which("ps"), reason="ps is not installed")
def test_the_filter_reads_the_process_table_as_ps_prints_it() -> None:
    odd = subprocess.Popen(["sh", "-c", "sleep 30", "tab\there", "new\nline", "caf\u00e9"])
    zombie = subprocess.Popen(["sleep", "0"])  # not reaped until wait(): a zombie meanwhile
    time.sleep(0.3)
    try:
        _, parsed = _run(["sh"], "processes")
        _, portable = _run(["sh"], "processes", env={"TESTBED_PROBE_PORTABLE": "1"})
    finally:
        odd.kill()
        odd.wait()
        zombie.wait()
    assert parsed["processes"]["part_rc"] == {"ps": 0}
    assert "unparsed" not in parsed["processes"] and "unparsed" not in portable["processes"]
    # no ps process of its own: only the shell, its pipeline half and the filter
    assert parsed["processes"]["excluded_self"] < portable["processes"]["excluded_self"]
    rows = {p["pid"]: p for p in parsed["processes"]["processes"]}
    ps_rows = {p["pid"]: p for p in portable["processes"]["processes"]}
    me = os.getpid()
    for pid in (1, me, odd.pid, zombie.pid):  # alive through both runs: the same user and command line
        assert rows[pid]["user"] == ps_rows[pid]["user"], pid
        assert rows[pid]["command"] == ps_rows[pid]["command"], pid
    assert rows[me]["ppid"] == os.getppid()
    assert rows[odd.pid]["command"] == "sh -c sleep 30 tab.here new line caf??"
    assert rows[zombie.pid]["command"] == "[sleep] <defunct>"
    assert (parsed["processes"]["kernel_threads"] > 0) == (portable["processes"]["kernel_threads"] > 0)


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


def _logging_tool(bindir: Path, name: str, log: Path, body: str | None = None) -> None:
    """A tool on PATH that notes each run in `log`, then runs the real one (or `body`)."""
    real = shutil.which(name, path=SYSTEM_PATH)
    tail = body if body is not None else f'exec {real} "$@"'
    _tool(bindir, name, f"echo {name} >> {log}\n{tail}")


@pytest.fixture()
def tricky(tmp_path: Path) -> dict[str, Path]:
    """Trees with every kind of entry the walks treat specially (no newline or tab names)."""
    tmp, app, home = tmp_path / "tmp", tmp_path / "srv", tmp_path / "home"
    for d in (tmp, app / "a" / "b" / "c" / "d" / "e" / "f" / "g", home / "u" / ".ssh", home / "u" / ".cache"):
        d.mkdir(parents=True)
    (tmp / 'quote " and \\ back').write_text("q")
    (tmp / "caf\u00e9 \x01 ctl ??").write_text("u")
    (tmp / "empty").write_text("")
    (tmp / "null-link").symlink_to("/dev/null")
    (tmp / "key.pem").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    (tmp / "big.pem").write_bytes(b"-----BEGIN PRIVATE KEY-----\n" + b"A" * (1100 * 1024))
    (tmp / "big.txt").write_bytes(b"-----BEGIN PRIVATE KEY-----\n" + b"A" * (70 * 1024))
    (app / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "deep.txt").write_text("deep")
    for skipped in ("node_modules/pkg", "__pycache__", ".venv/lib", "site-packages/x"):
        (app / skipped).mkdir(parents=True)
        (app / skipped / "inner.txt").write_text("x")
    (app / ".env").write_text("dot file, listed")
    (app / "mid.json").write_text('{"k": "x-----BEGIN RSA PRIVATE KEY-----"}\n')
    (home / "u" / ".ssh" / "id_rsa").write_text(
        "-----BEGIN RSA PRIVATE KEY-----\nQUJD\n-----END RSA PRIVATE KEY-----\n"
    )
    (home / "u" / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA u@h\n")
    (home / "u" / ".cache" / "id_rsa").write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    (home / "u" / "bin.dat").write_bytes(b"\x00\x01-----BEGIN EC PRIVATE KEY-----\n\x00")
    return {"tmp": tmp, "app": app, "home": home}


def _tree_env(tricky: dict[str, Path], bindir: Path) -> dict[str, str]:
    return {
        "TESTBED_PROBE_PATH": f"{bindir}:{SYSTEM_PATH}",
        "TESTBED_PROBE_TMP_DIRS": str(tricky["tmp"]),
        "TESTBED_PROBE_APP_DIRS": str(tricky["app"]),
        "TESTBED_PROBE_SECRET_DIRS": f"{tricky['home']} {tricky['tmp']} {tricky['app']}",
    }


TREE_PROBES = ("tmp_files", "app_files", "secrets", "etc_files", "sudoers", "authorized_keys", "cron")


def _without_meta(parsed: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in parsed.items() if k != "_meta"}


@pytest.mark.parametrize("shell", _shells(), ids=" ".join)
def test_the_one_walk_gives_what_the_portable_walks_give(
    shell: list[str], tricky: dict[str, Path], tmp_path: Path
) -> None:
    find = shutil.which("find", path=SYSTEM_PATH)
    if find is None or Path(find).is_symlink():
        pytest.skip("needs GNU find (the one walk's tool)")
    bindir, log = tmp_path / "bin", tmp_path / "stat.log"
    bindir.mkdir()
    _logging_tool(bindir, "stat", log)
    env = _tree_env(tricky, bindir)
    _, portable = _run(shell, *TREE_PROBES, env={**env, "TESTBED_PROBE_PORTABLE": "1"})
    assert log.read_text().count("stat") >= 3  # the portable walks stat their entries
    log.unlink()
    fast_out, fast = _run(shell, *TREE_PROBES, env=env)
    assert not log.exists(), "the one walk needs no stat process"
    assert _without_meta(fast) == _without_meta(portable)
    # and what it gives is right: the special cases, one by one
    tmp, app, home = tricky["tmp"], tricky["app"], tricky["home"]
    entries = fast["tmp_files"]["entries"]
    assert entries[str(tmp / 'quote " and \\ back')]["size"] == 1
    assert entries[str(tmp / "caf\u00e9 \x01 ctl ??")]["size"] == 1
    assert entries[str(tmp / "null-link")]["target"] == "/dev/null"
    assert entries[str(tmp / "empty")]["size"] == 0
    listed = fast["app_files"]["entries"]
    assert str(app / ".env") in listed and str(app / "node_modules") in listed
    assert str(app / "a" / "b" / "c" / "d" / "e" / "f") in listed
    hidden = ("a/b/c/d/e/f/g", "node_modules/pkg", "__pycache__", ".venv", "site-packages/x")
    assert not any(str(app / h) in listed for h in hidden)
    found = fast["secrets"]["files"]
    expected = {
        tmp / "key.pem",
        tmp / "big.pem",
        app / "mid.json",
        home / "u" / ".ssh" / "id_rsa",
        home / "u" / "bin.dat",
    }
    assert set(found) == {str(p) for p in expected}
    assert "sha256" not in found[str(tmp / "big.pem")]  # over 1 MiB: listed, not hashed
    assert found[str(tmp / "key.pem")]["headers"] == ["-----BEGIN CERTIFICATE-----"]
    assert "QUJD" not in fast_out


def test_a_name_with_a_newline_sends_every_tree_probe_the_portable_way(
    tmp_path: Path, planted: dict[str, Path]
) -> None:
    bindir, log = tmp_path / "bin", tmp_path / "stat.log"
    bindir.mkdir()
    _logging_tool(bindir, "stat", log)
    env = {"TESTBED_PROBE_PATH": f"{bindir}:{SYSTEM_PATH}", "TESTBED_PROBE_TMP_DIRS": str(planted["tmp"])}
    _, parsed = _run(["sh"], "tmp_files", "etc_files", env=env)
    assert parsed["tmp_files"]["entries"][str(planted["odd"])]["size"] == 5
    assert "stat" in log.read_text()
    assert "/etc/passwd" in parsed["etc_files"]["files"]


def test_dpkg_answers_are_kept_while_its_database_is_unchanged(tmp_path: Path) -> None:
    if not shutil.which("find", path=SYSTEM_PATH):
        pytest.skip("needs find")
    bindir, log, cache, db = tmp_path / "bin", tmp_path / "dpkg.log", tmp_path / "cache", tmp_path / "dpkg"
    for d in (bindir, cache, db / "updates", db / "info"):
        d.mkdir(parents=True)
    (db / "status").write_text("Package: demo\n")
    _logging_tool(bindir, "dpkg-query", log, 'printf "demo\\t1.0\\tamd64\\tii \\n"')
    _logging_tool(bindir, "dpkg", log, "exit 0")
    env = {"TESTBED_PROBE_PATH": f"{bindir}:{SYSTEM_PATH}", "TESTBED_PROBE_DPKG_DIR": str(db)}

    def calls() -> list[str]:
        return log.read_text().split() if log.exists() else []

    _, first = _run(["sh"], "packages", "pkg_health", env={**env, "TESTBED_PROBE_CACHE": str(cache)})
    assert sorted(calls()) == ["dpkg", "dpkg-query"]
    _, second = _run(["sh"], "packages", "pkg_health", env={**env, "TESTBED_PROBE_CACHE": str(cache)})
    assert sorted(calls()) == ["dpkg", "dpkg-query"], "unchanged database: nothing ran again"
    assert second["packages"] == first["packages"] and second["pkg_health"] == first["pkg_health"]
    assert [p["name"] for p in second["packages"]["packages"]] == ["demo"]
    with (db / "status").open("a") as status:
        status.write("Status: install ok installed\n")
    _run(["sh"], "packages", "pkg_health", env={**env, "TESTBED_PROBE_CACHE": str(cache)})
    assert sorted(calls()) == ["dpkg", "dpkg", "dpkg-query", "dpkg-query"], "a changed status file: asked again"
    (db / "info" / "demo.list").write_text("/x\n")
    _run(["sh"], "packages", "pkg_health", env={**env, "TESTBED_PROBE_CACHE": str(cache)})
    assert len(calls()) == 6, "a file added to info/: asked again"
    _run(["sh"], "packages", env=env)
    assert len(calls()) == 7, "without a cache directory dpkg-query runs every time"


def test_the_walk_is_bounded_and_says_which_sets_it_cut(tmp_path: Path) -> None:
    """Past 60,000 entries the filter stops loading the walk, as the portable walks stop at
    their `head -n`: the tmp roots (walked last) are marked truncated, /etc is not."""
    find = shutil.which("find", path=SYSTEM_PATH)
    if find is None or Path(find).is_symlink():
        pytest.skip("needs GNU find (the one walk's tool)")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for i in range(60_050):
        (tmp / f"f{i}").touch()
    _, parsed = _run(["sh"], "tmp_files", "etc_files", env={"TESTBED_PROBE_TMP_DIRS": str(tmp)})
    assert len(parsed["tmp_files"]["entries"]) == 5000
    assert parsed["tmp_files"]["truncated"]["entries"]["more"] == 1
    assert "truncated" not in parsed["etc_files"] and "/etc/passwd" in parsed["etc_files"]["files"]
