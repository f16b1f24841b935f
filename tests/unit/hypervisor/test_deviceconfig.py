"""A device's saved configuration must be in force after a boot: the comparison, the one
re-apply, and what is an error (a lab's first boot) and what is left to the checks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.hypervisor import deviceconfig
from testbed.hypervisor.deviceconfig import ensure_saved_config, missing_lines
from testbed.model.device import DeviceOps

SAVED = """frr version 8.4.4
frr defaults traditional
hostname r1
!
interface eth1
 description core to r2:eth1
 ip address 10.0.12.1/30
exit
!
end
"""
LOST_ADDRESS = SAVED.replace(" ip address 10.0.12.1/30\n", "")
DEVICE = DeviceOps(config_file="/etc/frr/frr.conf", running_config="vtysh -c 'show running-config'",
                   apply_saved="vtysh -b")  # fmt: skip


class FakeRouter:
    """Answers the three commands; `vtysh -b` brings the saved configuration back when
    `apply_fixes`."""

    def __init__(self, running: str, *, apply_fixes: bool = True, running_exit: int = 0) -> None:
        self.running, self.apply_fixes, self.running_exit = running, apply_fixes, running_exit
        self.commands: list[str] = []

    async def run(self, command: str) -> ExecResult:
        self.commands.append(command)
        out, code = "", 0
        if command.startswith("if [ -e /etc/frr/frr.conf ]"):
            out = SAVED
        elif command == DEVICE.running_config:
            out, code = self.running, self.running_exit
        elif command == DEVICE.apply_saved and self.apply_fixes:
            self.running = SAVED
        return ExecResult(command, code, out, "" if code == 0 else "vtysh: zebra is not running", datetime.now(UTC), 1)


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deviceconfig, "LOAD_S", 0.0)
    monkeypatch.setattr(deviceconfig, "APPLY_S", 0.0)
    monkeypatch.setattr(deviceconfig, "POLL_S", 0.0)


def test_missing_lines_are_saved_paths_the_running_configuration_lacks() -> None:
    assert missing_lines(SAVED, LOST_ADDRESS) == ["interface eth1 > ip address 10.0.12.1/30"]
    assert missing_lines(SAVED, SAVED) == []
    # Debian's stock frr.conf (a console-managed router keeps it) starts with comments
    stock = "# default to using syslog.\n#\n# Note: vtysh edits the live configuration\nlog syslog informational\n"
    assert missing_lines(stock, "frr version 8.4.4\nlog syslog informational\nend\n") == []
    # a running line the file lacks is unsaved configuration, not a boot that lost something
    assert missing_lines(SAVED, SAVED.replace("hostname r1", "hostname r1\nip forwarding")) == []


def test_a_complete_boot_is_left_alone() -> None:
    router = FakeRouter(SAVED)
    assert asyncio.run(ensure_saved_config(DEVICE, router.run, "r1", strict=True)) == []
    assert DEVICE.apply_saved not in router.commands


def test_a_lost_line_is_applied_again_and_reported() -> None:
    router = FakeRouter(LOST_ADDRESS)
    missing = asyncio.run(ensure_saved_config(DEVICE, router.run, "r1", strict=True))
    assert missing == ["interface eth1 > ip address 10.0.12.1/30"]
    assert router.commands.count(DEVICE.apply_saved) == 1 and router.running == SAVED


def test_a_line_that_stays_lost_is_an_error_only_at_the_first_boot() -> None:
    with pytest.raises(HarnessError, match=r"not in force after boot.*ip address 10\.0\.12\.1/30"):
        asyncio.run(ensure_saved_config(DEVICE, FakeRouter(LOST_ADDRESS, apply_fixes=False).run, "r1", strict=True))
    router = FakeRouter(LOST_ADDRESS, apply_fixes=False)
    assert asyncio.run(ensure_saved_config(DEVICE, router.run, "r1", strict=False)) == [
        "interface eth1 > ip address 10.0.12.1/30"
    ]


def test_an_unreadable_running_configuration_is_an_error_at_the_first_boot() -> None:
    with pytest.raises(HarnessError, match="cannot read the running configuration"):
        asyncio.run(ensure_saved_config(DEVICE, FakeRouter(SAVED, running_exit=1).run, "r1", strict=True))
    assert asyncio.run(ensure_saved_config(DEVICE, FakeRouter(SAVED, running_exit=1).run, "r1", strict=False)) == []


def test_images_without_the_device_fields_are_not_touched() -> None:
    router = FakeRouter(LOST_ADDRESS)
    assert asyncio.run(ensure_saved_config(None, router.run, "h1", strict=True)) == []
    partial = DeviceOps(config_file="/etc/frr/frr.conf", running_config="vtysh -c 'show running-config'")
    assert asyncio.run(ensure_saved_config(partial, router.run, "r1", strict=True)) == []
    assert router.commands == []


def test_a_poll_reads_the_saved_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the device is still loading, each poll reads only the running configuration."""
    monkeypatch.setattr(deviceconfig, "LOAD_S", 0.2)
    monkeypatch.setattr(deviceconfig, "POLL_S", 0.02)
    router = FakeRouter(LOST_ADDRESS, apply_fixes=False)
    with pytest.raises(HarnessError):
        asyncio.run(ensure_saved_config(DEVICE, router.run, "r1", strict=True))
    reads = [c for c in router.commands if c.startswith("if [ -e")]
    polls = [c for c in router.commands if c == DEVICE.running_config]
    assert len(polls) > 3 and len(reads) == 2, router.commands  # once per settle: after boot, after the re-apply
