"""Waiting until a booted node is ready, and saying where to look when it is not.

`wait_ready` waits for SSH (with the pinned host key), or for the image's serial prompt;
on a console-managed device it then runs the console bootstrap
(`testbed.hypervisor.consoleboot`): the device is either reached on its console from then
on (`node.access == "console"`), or it answers SSH with the host key the bootstrap read,
which is pinned on the node's sessions and in its lab record (`save` writes the record).
It returns the seconds it took. `console_hint` is the text appended to a readiness error:
where the console log is kept and its last lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from testbed.guest.readiness import wait_for_serial, wait_for_ssh
from testbed.guest.result import ExecResult
from testbed.guest.ssh import public_key_line
from testbed.hypervisor.addressing import AddressPlan
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.console import LibvirtConsole
from testbed.hypervisor.consoleboot import bootstrap_values, console_bootstrap
from testbed.hypervisor.deviceconfig import Run, ensure_saved_config
from testbed.hypervisor.labstate import NodeState
from testbed.hypervisor.node import LabNode


async def wait_ready(
    hv: Hypervisor,
    node: LabNode,
    node_state: NodeState,
    plan: AddressPlan,
    *,
    progress: Callable[[str, str], None],
    save: Callable[[], None],
) -> float:
    """Wait for SSH, or for the serial prompt (then, on a console-managed device, its
    console bootstrap and SSH), then for the device's saved configuration to be in force
    (`testbed.hypervisor.deviceconfig`); the seconds it took."""
    t0 = time.monotonic()
    await _reach(hv, node, node_state, plan, progress=progress, save=save)
    missing = await ensure_saved_config(node.image.device, _runner(node), node.name, strict=True)
    if missing:
        progress(node.name, f"saved configuration re-applied ({len(missing)} line(s) the boot left out)")
    return time.monotonic() - t0


def _runner(node: LabNode) -> Run:
    async def run(command: str) -> ExecResult:
        return await node.exec(command, timeout=120)

    return run


async def _reach(
    hv: Hypervisor,
    node: LabNode,
    node_state: NodeState,
    plan: AddressPlan,
    *,
    progress: Callable[[str, str], None],
    save: Callable[[], None],
) -> float:
    image = node.image
    if image.readiness.method == "ssh":
        timeout = image.readiness.timeout_s
        return await wait_for_ssh(node.session, timeout=timeout, alive=node.is_running, name=node.name)
    waited = await wait_for_serial(
        node.console_log,
        image.readiness.prompt,
        timeout=image.readiness.timeout_s,
        alive=node.is_running,
        name=node.name,
    )
    if not image.console_managed:
        return waited
    t0 = time.monotonic()
    progress(node.name, "console bootstrap")
    await _console_bootstrap(hv, node, node_state, plan, save)
    if node.access == "console":
        return waited + time.monotonic() - t0
    progress(node.name, "waiting for ssh")
    left = max(30.0, image.readiness.timeout_s - waited)
    await wait_for_ssh(node.session, timeout=left, alive=node.is_running, name=node.name)
    return waited + time.monotonic() - t0


async def _console_bootstrap(
    hv: Hypervisor, node: LabNode, node_state: NodeState, plan: AddressPlan, save: Callable[[], None]
) -> None:
    """Bootstrap a console-managed device; keep its console channel, or pin its SSH host key."""
    assert node.image.console is not None
    values = bootstrap_values(
        hostname=node.name,
        mgmt_ip=node.mgmt_ip,
        mgmt_subnet=plan.mgmt_subnet,
        mgmt_mac=node_state.mgmt_mac,
        host_ip=plan.host_ip,
        public_key=public_key_line(node.session.client_key, "testbed-harness"),
    )
    stream = await LibvirtConsole.open(hv, node.domain)
    done = await console_bootstrap(stream, node.image.console, values, node.name)
    if done.channel is not None:
        node.console, node.access = done.channel, "console"
        return
    assert done.host_key is not None
    for session in (node.session, node.agent_session):
        if session is not None:
            session.pin_host_key(done.host_key)
    node_state.host_key = done.host_key
    save()


def console_hint(node: LabNode, run_id: str | None) -> str:
    """Where the console log of a node that failed to come up can be read afterwards,
    and its last lines (the lab directory is removed at teardown)."""
    try:
        tail = node.console_log.read_bytes()[-1200:].decode(errors="replace").strip()
    except OSError:
        tail = ""
    where = (
        f"its console log is kept with the run: testbed runs show {run_id[:8]} --console {node.name}"
        if run_id
        else f"console log {node.console_log} (removed with the lab)"
    )
    return f"{where}; console ends: {tail[-600:]!r}" if tail else where
