"""Harness-driven reboot of a node, for requirements that must persist.

The reboot is asked of the guest itself (its service manager's reboot: `systemctl reboot`,
or sysvinit's `reboot` under OpenRC; detached so the command returns), then the harness
waits until SSH answers again with a different boot id, then until the boot has settled (no
start job queued: `testbed.model.services.settle_after_boot`, at most `BOOT_SETTLE_S`), and, on
a network device, until its saved configuration is in force (`testbed.hypervisor.deviceconfig`).
The settle wait is what keeps the after-reboot snapshot from catching a unit still starting
(a cluster's bootstrap helper waiting for its peers) as residue; a boot that has not settled
within the bound is snapshotted as it is. Every command it sends is recorded (phase `probe`,
source `harness`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from testbed.errors import HarnessError
from testbed.guest.readiness import wait_for_ssh
from testbed.guest.result import ExecResult
from testbed.guest.ssh import GuestConnectionError
from testbed.hypervisor.deviceconfig import ensure_saved_config
from testbed.hypervisor.lab import LabNode
from testbed.model.services import detached_reboot, settle_after_boot
from testbed.runner.recording import CommandRecorder

BOOT_ID = "cat /proc/sys/kernel/random/boot_id"
BOOT_SETTLE_S = 180


def console_tail(node: LabNode, chars: int = 1500) -> str:
    """The end of the node's serial console log (for error messages)."""
    try:
        data = node.console_log.read_bytes()[-chars:]
    except OSError:
        return "(no console log)"
    return data.decode(errors="replace").strip() or "(empty)"


async def boot_id(node: LabNode, commands: CommandRecorder) -> str:
    recorded = await commands.run(node, BOOT_ID, phase="probe", source="harness", timeout=30)
    return recorded.result.stdout.strip()


async def reboot_node(node: LabNode, commands: CommandRecorder, timeout: float = 600) -> float:
    """Reboot `node` and wait until it is back; returns the seconds it took."""
    t0 = time.monotonic()
    before = await boot_id(node, commands)
    with contextlib.suppress(GuestConnectionError):  # the connection may drop as the reboot starts
        await commands.run(node, detached_reboot(node.image.init), phase="probe", source="harness", timeout=30)
    await node.session.close()
    await asyncio.sleep(3)
    while True:
        remaining = timeout - (time.monotonic() - t0)
        if remaining <= 0:
            raise HarnessError(
                f"{node.name}: did not come back from reboot within {timeout:.0f} s; console: {console_tail(node)}"
            )
        try:
            await wait_for_ssh(node.session, timeout=remaining, alive=node.is_running, name=node.name)
        except HarnessError as exc:
            raise HarnessError(f"{exc}; console: {console_tail(node)}") from exc
        after = await boot_id(node, commands)
        if after and after != before:
            await _boot_settled(node, commands)
            await _saved_config_in_force(node, commands)
            return time.monotonic() - t0
        await node.session.close()
        await asyncio.sleep(2)


async def _boot_settled(node: LabNode, commands: CommandRecorder) -> None:
    """Wait until the node's boot has no start job queued, at most `BOOT_SETTLE_S` seconds.
    The exit status is not judged: `degraded` (a unit failed) is settled too, and a boot still
    starting after the bound is left to the snapshot and the checks."""
    command = settle_after_boot(node.image.init, BOOT_SETTLE_S)
    if command is not None:
        await commands.run(node, command, phase="probe", source="harness", timeout=BOOT_SETTLE_S + 30)


async def _saved_config_in_force(node: LabNode, commands: CommandRecorder) -> None:
    """On a device that loads a saved configuration at boot, apply it again when the boot
    left lines out (`testbed.hypervisor.deviceconfig`; recorded as probe commands)."""

    async def run(command: str) -> ExecResult:
        return (await commands.run(node, command, phase="probe", source="harness", timeout=120)).result

    await ensure_saved_config(node.image.device, run, node.name, strict=False)
