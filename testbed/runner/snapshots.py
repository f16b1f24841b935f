"""Snapshots: one probe script uploaded to a fixed path and run once per node.

The script goes to `/run/testbed/snapshot.sh` (tmpfs: it never shows up in the /tmp
listing, and the same path every time keeps its own process lines identical between
points). Its output is parsed on the host and stored under the snapshot point; the command
row keeps only the start of the raw output.
"""

from __future__ import annotations

import asyncio
from typing import Any

from testbed.errors import HarnessError
from testbed.hypervisor.lab import LabNode
from testbed.probes import parse_snapshot, snapshot_command, snapshot_script
from testbed.runner.recording import CommandRecorder

REMOTE_SCRIPT = "/run/testbed/snapshot.sh"
SNAPSHOT_TIMEOUT_S = 300
STORED_RAW = 4096
MAX_RAW_OUTPUT = 32 * 1024 * 1024


async def snapshot_node(node: LabNode, commands: CommandRecorder, point: str) -> dict[str, Any]:
    """Run the probe script on `node`, record the command and the parsed snapshot."""
    script = snapshot_script().encode()
    await node.session.exec("mkdir -p /run/testbed", timeout=30)
    await node.upload(script, REMOTE_SCRIPT, mode=0o700)
    recorded = await commands.run(
        node,
        snapshot_command(REMOTE_SCRIPT),
        phase="probe",
        source="harness",
        timeout=SNAPSHOT_TIMEOUT_S,
        stored_stdout_limit=STORED_RAW,
        max_output=MAX_RAW_OUTPUT,
    )
    if recorded.result.timed_out:
        raise HarnessError(f"{node.name}: snapshot {point} timed out after {SNAPSHOT_TIMEOUT_S} s")
    if recorded.result.stdout_truncated:
        raise HarnessError(f"{node.name}: snapshot {point} output exceeded {MAX_RAW_OUTPUT} bytes")
    data = parse_snapshot(recorded.result.stdout)
    await asyncio.to_thread(commands.recorder.record_snapshot, node.name, point, data)
    return data


async def snapshot_all(nodes: list[LabNode], commands: CommandRecorder, point: str) -> dict[str, dict[str, Any]]:
    results = await asyncio.gather(*(snapshot_node(n, commands, point) for n in nodes))
    return {n.name: data for n, data in zip(nodes, results, strict=True)}
