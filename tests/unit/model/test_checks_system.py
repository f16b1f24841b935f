"""System check primitives: the generated guest shell, run under dash and bash with real
basic tools and stand-ins for the guest's service manager and package database, on
systemd and OpenRC guests and dpkg, rpm, apk and opkg package databases."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from testbed.model.checks import (
    CronCheck,
    FileCheck,
    GroupCheck,
    MountCheck,
    PackageCheck,
    ServiceCheck,
    SysctlCheck,
    UserCheck,
)
from testbed.model.checkscript import Target
from testbed.model.checkshell import judge_script, primitive_script
from tests.unit.model.guestsh import SHELLS, GuestSh

SYSTEMD = Target("systemd", "dpkg")
OPENRC = Target("openrc", "dpkg")

shells = pytest.mark.parametrize("shell", SHELLS)


def fake_systemctl(g: GuestSh, active: str, enabled: str) -> None:
    g.tool("systemctl", f'case "$1" in is-active) echo {active}; [ {active} = active ] ;; '
                        f"is-enabled) echo {enabled}; [ {enabled} = enabled ] ;; esac")  # fmt: skip
    (g.root / "run/systemd/system").mkdir(parents=True, exist_ok=True)


@shells
@pytest.mark.parametrize(
    ("active", "enabled", "check", "rc", "says"),
    [
        ("active", "enabled", {"enabled": True}, 0, "active and enabled as expected"),
        ("inactive", "enabled", {"enabled": True}, 1, "nginx is inactive (expected: active)"),
        ("active", "static", {"enabled": True}, 1, "nginx at boot is static (expected: enabled)"),
        ("active", "generated", {"enabled": True}, 0, "as expected"),
        ("failed", "disabled", {"active": False, "enabled": False}, 0, "as expected"),
        ("active", "disabled", {"active": None, "enabled": True}, 1, "disabled (expected: enabled)"),
    ],
)
def test_service_on_systemd(tmp_path: Path, shell: str, active: str, enabled: str, check: dict, rc: int, says: str):
    g = GuestSh(tmp_path)
    fake_systemctl(g, active, enabled)
    code, line = g.run(primitive_script(ServiceCheck(name="nginx", wait_s=0, **check), SYSTEMD), shell)
    assert (code, says in line) == (rc, True), line


@shells
def test_service_on_systemd_cannot_decide_without_systemd(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    g.tool("systemctl", "echo active")
    code, line = g.run(primitive_script(ServiceCheck(name="nginx"), SYSTEMD), shell)  # no /run/systemd/system
    assert code == 3 and "systemd is not running" in line
    code, line = GuestSh(tmp_path / "x").run(primitive_script(ServiceCheck(name="nginx"), SYSTEMD), shell)
    assert code == 3 and "systemctl not found" in line


RC_UPDATE = """cat <<'EOF'
            bootmisc |      boot
                cron |      default
                 ssh |      default
               nginx |
          killprocs | shutdown
EOF"""


@shells
@pytest.mark.parametrize(
    ("name", "started", "rc", "says"),
    [
        ("cron.service", True, 0, "cron: active and enabled as expected"),  # the .service suffix is dropped
        ("nginx", True, 1, "nginx is in no boot runlevel"),
        ("ssh", False, 1, "ssh is not started"),
        ("killprocs", True, 1, "in no boot runlevel"),  # the shutdown runlevel starts nothing at boot
    ],
)
def test_service_on_openrc(tmp_path: Path, shell: str, name: str, started: bool, rc: int, says: str) -> None:
    g = GuestSh(tmp_path)
    g.tool("rc-service", f'[ "$2" = status ] && exit {0 if started else 3}; exit 1')
    g.tool("rc-update", RC_UPDATE)
    code, line = g.run(primitive_script(ServiceCheck(name=name, enabled=True, wait_s=0), OPENRC), shell)
    assert (code, says in line) == (rc, True), line


def test_service_script_differs_per_init_and_is_undecided_elsewhere(tmp_path: Path) -> None:
    check = ServiceCheck(name="nginx", enabled=True)
    systemd, openrc = primitive_script(check, SYSTEMD), primitive_script(check, OPENRC)
    assert systemd and "systemctl is-enabled" in systemd and "rc-service" not in systemd
    assert openrc and "rc-update show -v" in openrc and "systemctl" not in openrc
    code, line = GuestSh(tmp_path).run(primitive_script(check, Target("other", None)))
    assert code == 3 and "no service manager" in line


@shells
def test_service_waits_until_it_holds(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    count = tmp_path / "calls"
    g.tool("systemctl", f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; '
                        '[ "$n" -ge 1 ] && { echo active; exit 0; }; echo activating; exit 3')  # fmt: skip
    (g.root / "run/systemd/system").mkdir(parents=True)
    start = time.monotonic()
    code, line = g.run(primitive_script(ServiceCheck(name="app", wait_s=20), SYSTEMD), shell)
    assert code == 0, line
    assert time.monotonic() - start < 10
    assert int(count.read_text()) == 2


DPKG = 'case "$3" in chrony) echo "install ok installed" ;; old) echo "deinstall ok config-files" ;; *) exit 1 ;; esac'
PACKAGE_TOOLS = {
    "dpkg": ("dpkg-query", DPKG),
    "rpm": ("rpm", '[ "$2" = chrony ]'),
    "apk": ("apk", '[ "$3" = chrony ]'),
    "opkg": ("opkg", '[ "$2" = chrony ] && echo "chrony - 4.5-1"; true'),
}  # fmt: skip


@shells
@pytest.mark.parametrize("manager", sorted(PACKAGE_TOOLS))
def test_package_per_database(tmp_path: Path, shell: str, manager: str) -> None:
    g = GuestSh(tmp_path)
    tool, body = PACKAGE_TOOLS[manager]
    g.tool(tool, body)
    target = Target("systemd", manager)
    assert g.run(primitive_script(PackageCheck(name="chrony"), target), shell)[0] == 0
    code, line = g.run(primitive_script(PackageCheck(name="old"), target), shell)
    assert code == 1 and "not installed" in line
    assert g.run(primitive_script(PackageCheck(name="old", installed=False), target), shell)[0] == 0
    code, line = GuestSh(tmp_path / "bare").run(primitive_script(PackageCheck(name="chrony"), target), shell)
    assert code == 3 and f"{tool} not found" in line


def test_package_without_a_known_database_cannot_decide(tmp_path: Path) -> None:
    code, line = GuestSh(tmp_path).run(primitive_script(PackageCheck(name="x"), Target("other", None)))
    assert code == 3 and "no package database" in line


@shells
def test_file_attributes_and_content(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    conf = tmp_path / "app.ini"
    conf.write_text("[server]\nkey=secret\n")
    conf.chmod(0o640)
    me = os.getuid()

    def run(**kw: object) -> tuple[int, str]:
        return g.run(primitive_script(FileCheck(path=str(conf), **kw), SYSTEMD), shell)

    assert run(type="file", mode="0640", mode_max="0640", owner=str(me), contains="^key=")[0] == 0
    assert run(mode="640")[0] == 0
    code, line = run(mode="0600")
    assert code == 1 and "has mode 640, expected 0600" in line
    code, line = run(mode_max="0600")
    assert code == 1 and "more than 0600 allows" in line
    assert run(mode_max="0644")[0] == 0
    code, line = run(lacks="^key=")
    assert code == 1 and "has a line matching" in line
    assert run(contains=r"^\[server\]$", lacks="^debug")[0] == 0
    assert run(type="directory")[0] == 1
    assert run(owner="nobody")[0] == 1
    assert run(exists=False)[0] == 1
    assert g.run(primitive_script(FileCheck(path=str(tmp_path / "gone"), exists=False), SYSTEMD), shell)[0] == 0
    code, line = g.run(primitive_script(FileCheck(path=str(tmp_path / "gone")), SYSTEMD), shell)
    assert code == 1 and "does not exist" in line
    link = tmp_path / "link"
    link.symlink_to(conf)
    assert g.run(primitive_script(FileCheck(path=str(link), type="symlink", mode="0640"), SYSTEMD), shell)[0] == 0


@shells
def test_user_and_group_with_getent_and_from_files(tmp_path: Path, shell: str) -> None:
    with_getent = GuestSh(tmp_path / "a")
    assert with_getent.run(primitive_script(UserCheck(name="root", uid=0, groups=["root"]), SYSTEMD), shell)[0] == 0
    code, line = with_getent.run(primitive_script(UserCheck(name="root", not_groups=["root"]), SYSTEMD), shell)
    assert code == 1 and "root in group root" in line
    assert with_getent.run(primitive_script(UserCheck(name="no-such-user-x", exists=False), SYSTEMD), shell)[0] == 0

    files = GuestSh(tmp_path / "b", without=("getent",))
    files.file("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ndeploy:x:1001:1001::/home/deploy:/usr/sbin/nologin\n")
    files.file("/etc/group", "root:x:0:\nops:x:2000:deploy\n")
    files.tool("id", '[ "$1" = -nG ] && case "$2" in deploy) echo "deploy ops" ;; *) echo "$2" ;; esac')
    ok = UserCheck(name="deploy", uid=1001, shell="/usr/sbin/nologin", home="/home/deploy", groups=["ops"])
    assert files.run(primitive_script(ok, SYSTEMD), shell)[0] == 0
    code, line = files.run(primitive_script(UserCheck(name="deploy", shell="/bin/bash"), SYSTEMD), shell)
    assert code == 1 and "has shell /usr/sbin/nologin, expected /bin/bash" in line
    assert files.run(primitive_script(GroupCheck(name="ops", gid=2000, members=["deploy"]), SYSTEMD), shell)[0] == 0
    code, line = files.run(primitive_script(GroupCheck(name="ops", not_members=["deploy"]), SYSTEMD), shell)
    assert code == 1 and "deploy in group ops" in line
    assert files.run(primitive_script(GroupCheck(name="wheel", exists=False), SYSTEMD), shell)[0] == 0
    assert files.run(primitive_script(GroupCheck(name="wheel"), SYSTEMD), shell)[0] == 1


@shells
def test_cron_entries_from_user_and_system_files(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    g.file(
        "/var/spool/cron/crontabs/alice",
        "MAILTO=alice\n# m h dom mon dow command\n*/5 * * * * /usr/local/bin/report.sh --daily\n",
    )
    g.file("/etc/crontab", "SHELL=/bin/sh\n17 *\t* * *\troot    cd / && run-parts --report /etc/cron.hourly\n")
    g.file("/etc/cron.d/backup", "@daily backup /opt/backup/run.sh\n30 2 * * * alice /usr/bin/cleanup\n")
    g.file("/etc/cron.d/ignored.dpkg-old", "* * * * * alice /usr/bin/never\n")
    g.file("/etc/crontabs/bob", "0 0 * * * /bin/busybox-job\n")  # busybox's spool (Alpine)

    def run(**kw: object) -> tuple[int, str]:
        return g.run(primitive_script(CronCheck(**kw), SYSTEMD), shell)

    assert run(user="alice", command=r"report\.sh", schedule="*/5  * * * *")[0] == 0
    assert run(user="alice", command=r"report\.sh", schedule="0 * * * *")[0] == 1
    assert run(user="alice", command="cleanup", schedule="30 2 * * *")[0] == 0
    assert run(user="root", command="run-parts")[0] == 0
    assert run(user="backup", command="/opt/backup", schedule="@daily")[0] == 0
    code, line = run(user="alice", command="never")
    assert code == 1 and "has no matching entry" in line
    assert run(user="alice", command="never", present=False)[0] == 0
    assert run(user="bob", command="busybox-job")[0] == 0
    assert run(user="carol", command=".", present=False)[0] == 0
    assert run(user="root", command="cleanup", present=False)[0] == 0  # alice's, not root's


@shells
def test_mount_and_fstab(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    g.file(
        "/proc/mounts",
        "/dev/vda / ext4 rw,noatime 0 0\ntmpfs /srv/my\\040data tmpfs rw,nosuid,noexec,size=16384k 0 0\n",
    )
    g.file("/etc/fstab", "# static\n/dev/vda / ext4 defaults 0 1\n")
    run = lambda **kw: g.run(primitive_script(MountCheck(**kw), SYSTEMD), shell)  # noqa: E731
    assert run(path="/", fstype="ext4", source="^/dev/vd", options=["noatime"], fstab=True)[0] == 0
    assert run(path="/srv/my data", fstype="tmpfs", options=["noexec", "nosuid"], fstab=False)[0] == 0
    code, line = run(path="/srv/my data", fstab=True)
    assert code == 1 and "/etc/fstab has no entry for it" in line
    code, line = run(path="/", options=["noexec"])
    assert code == 1 and "lacks mount option noexec" in line
    assert run(path="/mnt", mounted=False)[0] == 0
    assert run(path="/mnt")[0] == 1


@shells
def test_sysctl_value_and_bounds(tmp_path: Path, shell: str) -> None:
    g = GuestSh(tmp_path)
    g.file("/proc/sys/vm/swappiness", "10\n")
    g.file("/proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n")
    g.file("/proc/sys/net/ipv4/conf/eth0.100/forwarding", "1\n")
    run = lambda **kw: g.run(primitive_script(SysctlCheck(**kw), SYSTEMD), shell)  # noqa: E731
    assert run(key="vm.swappiness", value="10")[0] == 0
    assert run(key="vm.swappiness", max=10, min=1)[0] == 0
    code, line = run(key="vm.swappiness", min=20)
    assert code == 1 and "expected at least 20" in line
    assert run(key="net.ipv4.ip_local_port_range", value="32768   60999")[0] == 0
    assert run(key="net/ipv4/conf/eth0.100/forwarding", value="1")[0] == 0  # slashes keep the dot
    code, line = run(key="vm.no_such", value="1")
    assert code == 1 and "no sysctl vm.no_such" in line


def test_judge_script_maps_exit_statuses() -> None:
    check = SysctlCheck(key="vm.swappiness", value="1")
    assert judge_script(check, 0, "x\nvm.swappiness = 1 as expected\n") == ("passed", "vm.swappiness = 1 as expected")
    assert judge_script(check, 1, "vm.swappiness = 60, expected 1") == ("failed", "vm.swappiness = 60, expected 1")
    assert judge_script(check, 3, "no tool")[0] == "indeterminate"
    status, reason = judge_script(check, 127, "")
    assert status == "indeterminate" and "exited 127" in reason


def test_every_generated_script_parses(tmp_path: Path) -> None:
    """sh -n over a script of every system primitive on every target."""
    checks = [
        ServiceCheck(name="nginx", enabled=True), PackageCheck(name="curl"), FileCheck(path="/etc/x", mode="0644"),
        UserCheck(name="root", groups=["wheel"]), GroupCheck(name="adm", members=["root"]),
        CronCheck(command="x", schedule="@daily"), MountCheck(path="/", options=["rw"], fstab=True),
        SysctlCheck(key="vm.swappiness", min=1),
    ]  # fmt: skip
    targets = [Target(i, p) for i in ("systemd", "openrc", "other") for p in ("dpkg", "rpm", "apk", "opkg", None)]
    for shell in SHELLS:
        for check in checks:
            for target in targets:
                text = primitive_script(check, target)
                assert text is not None
                path = tmp_path / "s.sh"
                path.write_text(text)
                assert os.system(f"{shell} -n {path}") == 0, (shell, check, target)
