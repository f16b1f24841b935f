"""`testbed.runner.reboot`: the harness reboot waits for a new boot id, then for the boot to
settle, before it returns (so the after-reboot snapshot sees a booted system)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from testbed.guest.result import ExecResult
from testbed.model.services import settle_after_boot
from testbed.runner import reboot
from testbed.testing.nodes import ScriptedNode


class RebootingNode(ScriptedNode):
    """Answers the boot id with a new one once the reboot was asked for."""

    def __init__(self, init: str) -> None:
        super().__init__("web")
        self.image = SimpleNamespace(name="debian-12", init=init, device=None)
        self.rebooted = False

    async def answer(self, command: str) -> tuple[str, int]:
        if command == reboot.BOOT_ID:
            return ("boot-2\n" if self.rebooted else "boot-1\n"), 0
        if "reboot" in command:
            self.rebooted = True
        return "", 0

    async def is_running(self) -> bool:
        return True


class ListRecorder:
    """A `CommandRecorder` stand-in: runs the command on the node and keeps it in order."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    async def run(self, node: RebootingNode, command: str, **_: Any) -> SimpleNamespace:
        self.commands.append(command)
        result: ExecResult = await node.exec(command)
        return SimpleNamespace(result=result)


async def _no_wait(_: float) -> None:
    return None


@pytest.mark.parametrize("init", ["systemd", "openrc"])
def test_the_reboot_returns_only_after_the_new_boot_settled(init: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def ssh_up(session: Any, **_: Any) -> float:
        return 0.0

    monkeypatch.setattr(reboot, "wait_for_ssh", ssh_up)
    monkeypatch.setattr(reboot, "asyncio", SimpleNamespace(sleep=_no_wait))
    node, recorder = RebootingNode(init), ListRecorder()
    asyncio.run(reboot.reboot_node(node, recorder, timeout=60))  # type: ignore[arg-type]
    settle = settle_after_boot(init, reboot.BOOT_SETTLE_S)
    assert settle is not None
    # boot id, reboot, boot id (new), then the settle wait as the last command
    assert recorder.commands[-1] == settle, recorder.commands
    assert recorder.commands[-2] == reboot.BOOT_ID and "reboot" in recorder.commands[1]


def test_settle_commands_are_bounded_and_exist_only_where_the_init_can_wait() -> None:
    systemd = settle_after_boot("systemd", 180)
    assert systemd == "timeout 180 sh -c 'systemctl is-system-running --wait'"
    openrc = settle_after_boot("openrc", 90)
    assert openrc is not None and openrc.startswith("timeout 90 sh -c ") and "pgrep -x openrc" in openrc
    assert settle_after_boot("other", 180) is None
