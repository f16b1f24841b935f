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

Where the native helper builds (`testbed.probes.native`) and the node is reached over SSH,
the command runs the script with it: it first checks that the helper is in place on the
guest and exits with `EXIT_NO_HELPER`, before reading the script, when it is not (a fresh
boot: /dev/shm is empty); the helper is then placed (`place_helper`: one harness command
that also runs it once) and the snapshot taken again. A guest where it cannot run is
remembered for its session and snapshotted without it. Both ways give the same data.
"""

from __future__ import annotations

import asyncio
import shlex
import weakref
from pathlib import Path
from typing import Any

from testbed.config import Settings
from testbed.db.recorder import clean_json
from testbed.errors import HarnessError
from testbed.guest.ssh import GuestSession
from testbed.hypervisor.lab import LabNode
from testbed.model.vocab import SnapshotPoint
from testbed.probes import parse_snapshot, snapshot_command, snapshot_script
from testbed.probes.native import GUEST_DIR, helper_binary
from testbed.runner.recording import CommandRecorder, Recorded

REMOTE_DIR = "/run/testbed"
REMOTE_SCRIPT = f"{REMOTE_DIR}/snapshot.sh"
SNAPSHOT_TIMEOUT_S = 300
STORED_RAW = 4096
MAX_RAW_OUTPUT = 32 * 1024 * 1024


REMOTE_WORK = f"{REMOTE_DIR}/work"
REMOTE_CACHE = f"{REMOTE_DIR}/cache"


EXIT_NO_HELPER = 93
"""The probe command's exit status when the native helper it was told to use is missing."""
_NO_HELPER: weakref.WeakSet[GuestSession] = weakref.WeakSet()
"""Sessions of guests where the helper could not be placed (not asked for again)."""


def probe_command(helper: str | None = None) -> str:
    """The harness command of a snapshot: write the script from stdin, then run it (with
    the native helper at `helper`, a path on the guest: see module docstring)."""
    path, work, cache = (shlex.quote(p) for p in (REMOTE_SCRIPT, REMOTE_WORK, REMOTE_CACHE))
    check, env = "", f"TESTBED_PROBE_HIDE={shlex.quote(GUEST_DIR)} "
    if helper is not None:
        check = f"[ -x {shlex.quote(helper)} ] || exit {EXIT_NO_HELPER}; "
        env += f"TESTBED_PROBE_NATIVE={shlex.quote(helper)} "
    return (
        f"{check}umask 077; [ -d {work} ] && [ -d {cache} ] || mkdir -p {work} {cache} || exit 1; "
        f"cat > {path} && {env}TESTBED_PROBE_WORKDIR={work} TESTBED_PROBE_CACHE={cache} "
        f"exec {snapshot_command(REMOTE_SCRIPT)}"
    )


def place_command(helper: str) -> str:
    """Write the helper from stdin to `helper` (a path in GUEST_DIR) and run it once: exit 0
    only when it runs there; older helpers in the directory are removed."""
    final, new, d = shlex.quote(helper), shlex.quote(helper + ".new"), shlex.quote(GUEST_DIR)
    return (
        f"umask 077; mkdir -p {d} && cat > {new} && chmod 700 {new} && {new} version >/dev/null && "
        f"mv -f {new} {final}; rc=$?; rm -f {new}; "
        f"for f in {d}/tbprobe-*; do [ \"$f\" = {final} ] || rm -f \"$f\"; done; exit $rc"
    )


async def _helper_for(node: LabNode) -> Path | None:
    """The host's helper binary when `node` should use it."""
    if node.access != "ssh" or node.session in _NO_HELPER:
        return None
    return await asyncio.to_thread(helper_binary, Settings.from_env().tools_dir)


async def place_helper(node: LabNode, commands: CommandRecorder, binary: Path) -> bool:
    """Put `binary` on `node` (see `place_command`); False (and remembered) when it does not
    run there."""
    data = await asyncio.to_thread(binary.read_bytes)
    recorded = await commands.run(
        node,
        place_command(f"{GUEST_DIR}/{binary.name}"),
        phase="probe",
        source="harness",
        timeout=60,
        stdin=data,
    )
    if recorded.result.exit_code != 0:
        _NO_HELPER.add(node.session)
        return False
    return True


def zero_free_command(helper: str) -> str:
    """Zero the guest's free memory with the helper at `helper` (nothing when it is not
    there). The page cache is kept: dropping it too made the saved image smaller (164
    against about 220 MiB) but every restored run slower, its first command and its
    snapshot reading back from disk what the cache held (3.4 s and 4.3 s against about 1)."""
    h = shlex.quote(helper)
    return f"[ -x {h} ] || exit 0; {h} zerofree"


async def zero_free_memory(node: LabNode, commands: CommandRecorder) -> None:
    """Before a lab's state is saved: make `node`'s free memory zeros (`tbprobe zerofree`),
    so the saved memory image holds what is in use (page cache included) and not the
    leftovers of freed pages, and every restore reads and maps less. A harness command of
    phase setup; without the helper on the guest it does nothing."""
    binary = await _helper_for(node)
    if binary is None:
        return
    await commands.run(
        node, zero_free_command(f"{GUEST_DIR}/{binary.name}"), phase="setup", source="harness", timeout=120
    )


async def _probe(node: LabNode, commands: CommandRecorder, helper: str | None) -> Recorded:
    return await commands.run(
        node,
        probe_command(helper),
        phase="probe",
        source="harness",
        timeout=SNAPSHOT_TIMEOUT_S,
        stored_stdout_limit=STORED_RAW,
        max_output=MAX_RAW_OUTPUT,
        stdin=snapshot_script().encode(),
    )


async def snapshot_node(node: LabNode, commands: CommandRecorder, point: SnapshotPoint) -> dict[str, Any]:
    """Run the probe script on `node`, record the command and the parsed snapshot."""
    binary = await _helper_for(node)
    helper = None if binary is None else f"{GUEST_DIR}/{binary.name}"
    recorded = await _probe(node, commands, helper)
    if binary is not None and recorded.result.exit_code == EXIT_NO_HELPER and not recorded.result.stdout:
        placed = await place_helper(node, commands, binary)
        recorded = await _probe(node, commands, helper if placed else None)
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
