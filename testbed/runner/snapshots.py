"""Snapshots: the probe script sent to a fixed path and run there, once per node.

The script goes to `/run/testbed/snapshot.sh` (tmpfs: it never shows up in the /tmp
listing, and the same path every time keeps its own process lines identical between
points); writing it and running it is one recorded harness command (phase `probe`, the
script on its stdin). The script is written afresh every time (an agent's edit of an old
copy never runs) and `exec`ed by the login shell; `/run/testbed/work` is its work directory
and `/run/testbed/cache` keeps dpkg's answers while dpkg's database is unchanged (both made
once per boot, root only: no mkdir or rm per snapshot). Its output is parsed on the host and
stored under the snapshot point, in the database and in the run's journal; the command row
keeps only the start of the raw output.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

from testbed.db.recorder import clean_json
from testbed.errors import HarnessError
from testbed.hypervisor.lab import LabNode
from testbed.model.vocab import SnapshotPoint
from testbed.probes import parse_snapshot, snapshot_command, snapshot_script
from testbed.runner.recording import CommandRecorder

REMOTE_DIR = "/run/testbed"
REMOTE_SCRIPT = f"{REMOTE_DIR}/snapshot.sh"
SNAPSHOT_TIMEOUT_S = 300
STORED_RAW = 4096
MAX_RAW_OUTPUT = 32 * 1024 * 1024


REMOTE_WORK = f"{REMOTE_DIR}/work"
REMOTE_CACHE = f"{REMOTE_DIR}/cache"


def probe_command() -> str:
    """The harness command of a snapshot: write the script from stdin, then run it."""
    path, work, cache = (shlex.quote(p) for p in (REMOTE_SCRIPT, REMOTE_WORK, REMOTE_CACHE))
    return (
        f"umask 077; [ -d {work} ] && [ -d {cache} ] || mkdir -p {work} {cache} || exit 1; "
        f"cat > {path} && TESTBED_PROBE_WORKDIR={work} TESTBED_PROBE_CACHE={cache} "
        f"exec {snapshot_command(REMOTE_SCRIPT)}"
    )


async def snapshot_node(node: LabNode, commands: CommandRecorder, point: SnapshotPoint) -> dict[str, Any]:
    """Run the probe script on `node`, record the command and the parsed snapshot."""
    recorded = await commands.run(
        node,
        probe_command(),
        phase="probe",
        source="harness",
        timeout=SNAPSHOT_TIMEOUT_S,
        stored_stdout_limit=STORED_RAW,
        max_output=MAX_RAW_OUTPUT,
        stdin=snapshot_script().encode(),
    )
    if recorded.result.timed_out:
        raise HarnessError(f"{node.name}: snapshot {point} timed out after {SNAPSHOT_TIMEOUT_S} s")
    if recorded.result.stdout_truncated:
        raise HarnessError(f"{node.name}: snapshot {point} output exceeded {MAX_RAW_OUTPUT} bytes")
    if not recorded.result.stdout.strip():
        why = f"exit status {recorded.result.exit_code}: {recorded.result.stderr.strip()[-300:]}"
        raise HarnessError(f"{node.name}: snapshot {point} produced no output ({why})")
    data = parse_snapshot(recorded.result.stdout)
    await asyncio.to_thread(commands.recorder.record_snapshot, node.name, point, data)
    commands.journal.add_snapshot(node.name, point, clean_json(data))
    return data


async def snapshot_all(
    nodes: list[LabNode], commands: CommandRecorder, point: SnapshotPoint
) -> dict[str, dict[str, Any]]:
    results = await asyncio.gather(*(snapshot_node(n, commands, point) for n in nodes))
    return {n.name: data for n, data in zip(nodes, results, strict=True)}
