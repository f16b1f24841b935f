"""After a boot, a network device's saved configuration must be in force.

A router image loads its saved configuration at boot (`device.config_file`, read by the
device's own init: FRR's `vtysh -b`). Under emulation that load has been seen to lose a
line: one frr-router of four, at its first boot, ran without its link's `ip address` (the
running configuration kept the interface and its description, the saved file had the
address, the kernel had none). The cause is not established (most likely zebra applying
the line while udev and systemd-networkd were still setting the NIC up). A device that
silently runs less than its saved configuration makes a task's starting condition wrong,
or fails a persistence check for a fault that is not the agent's.

`ensure_saved_config` compares the running configuration with the saved file (both
flattened to `block > line` paths, `testbed.probes.parsers.router.config_lines`), polling
while the device may still be loading it. When saved lines are missing it runs
`device.apply_saved` (frr-router: `vtysh -b`) once and compares again. With `strict` (a
lab's first boot: nothing on the device is the agent's yet) lines still missing raise
`HarnessError` (the run ends `error`, not `failed`); after the harness's reboot of a device
the agent configured they are left to the persistence checks (a saved line that cannot be
applied at boot may be the agent's). It returns the lines that were missing before the
re-apply, for the caller to report; an image without the three `device` fields is left
alone.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from collections.abc import Awaitable, Callable

from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.model.device import DeviceOps
from testbed.probes.parsers.router import config_lines

Run = Callable[[str], Awaitable[ExecResult]]
"""Runs a harness command on the node (root's shell) and returns its result."""

LOAD_S = 60.0
"""How long after SSH answers the device may take to load its saved configuration."""
APPLY_S = 20.0
"""How long a re-apply may take to show in the running configuration."""
POLL_S = 2.0
log = logging.getLogger(__name__)


def missing_lines(saved: str, running: str) -> list[str]:
    """Saved configuration paths that the running configuration lacks, in saved order."""
    have = set(config_lines(running.splitlines()))
    # comments (`# ...`: Debian's stock frr.conf has a paragraph of them) are never running
    saved_lines = [raw for raw in saved.splitlines() if not raw.lstrip().startswith("#")]
    return [line for line in config_lines(saved_lines) if line not in have]


async def _read(run: Run, command: str, what: str, name: str) -> str | HarnessError:
    result = await run(command)
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip()[-300:]
        return HarnessError(f"{name}: cannot read the {what} configuration (exit {result.exit_code}): {detail}")
    return result.stdout


async def _settled(device: DeviceOps, run: Run, name: str, within: float) -> list[str] | str:
    """Poll until no saved line is missing from the running configuration (the device may
    still be loading it) or `within` passes; the missing lines, or why the configuration
    could not be read. The saved file is read once: nothing writes it while the harness
    waits for a boot."""
    assert device.config_file is not None and device.running_config is not None
    path = shlex.quote(device.config_file)
    saved = await _read(run, f"if [ -e {path} ]; then cat {path}; fi", "saved", name)  # no file: nothing to enforce
    if isinstance(saved, HarnessError):
        return str(saved)
    deadline = time.monotonic() + within
    while True:
        running = await _read(run, device.running_config, "running", name)
        found = str(running) if isinstance(running, HarnessError) else missing_lines(saved, running)
        if found == [] or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(POLL_S)


async def ensure_saved_config(device: DeviceOps | None, run: Run, name: str, *, strict: bool) -> list[str]:
    """Make sure the boot applied the whole saved configuration (see module docstring);
    a re-apply is logged as a warning naming the lines it restored."""
    if device is None or not (device.config_file and device.running_config and device.apply_saved):
        return []
    missing = await _settled(device, run, name, LOAD_S)
    if missing == []:
        return []
    if isinstance(missing, str):
        if strict:
            raise HarnessError(f"{missing} ({LOAD_S:.0f} s after boot)")
        log.warning("%s", missing)
        return []
    applied = await run(device.apply_saved)
    still = await _settled(device, run, name, APPLY_S)
    if still and strict:
        detail = (applied.stderr or applied.stdout).strip()[-300:]
        lost = still if isinstance(still, str) else "missing: " + "; ".join(still[:5])
        raise HarnessError(
            f"{name}: the saved configuration is not in force after boot, even after `{device.apply_saved}` "
            f"({lost}); {detail}"
        )
    when = "boot" if strict else "reboot"
    log.warning("%s: the %s left saved configuration out (%s); applied it again", name, when, "; ".join(missing))
    return missing
