"""Per-command and per-snapshot overhead of the runner, on one real debian-12 node.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/run_overhead.py [N]

- per command: `true` through the runner's path (bounded exec with the guest-side deadline,
  impact classification, redaction, the row committed to SQLite before returning) against a
  bare asyncssh `conn.run("true")` on the same open connection; N of each, interleaved.
- per snapshot: one node's full snapshot (upload, probe script, parse, store; with the native
  helper, placed by the warm-up) against one `true` round trip, against the same snapshot
  taken with the script and probe command of commit `BASELINE` (before the one walk and the
  dpkg cache), and against today's script without the helper (`TESTBED_NATIVE_PROBE=0`),
  interleaved on the same guest.
The last line prints the ratios (goals: <= 1.10, and old/new snapshot >= 3).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.db.engine import open_database  # noqa: E402
from testbed.db.recorder import RunRecorder  # noqa: E402
from testbed.hypervisor.lab import Lab, LabNode  # noqa: E402
from testbed.model.topology import load_topology  # noqa: E402
from testbed.model.vocab import SnapshotPoint  # noqa: E402
from testbed.probes import parse_snapshot  # noqa: E402
from testbed.runner.recording import CommandRecorder  # noqa: E402
from testbed.runner.snapshots import snapshot_node  # noqa: E402
from testbed.runtime import runtime  # noqa: E402

BASELINE = "5d0c55c"
"""The last commit whose snapshot script walked each tree on its own and always ran dpkg."""


def baseline_script() -> str:
    """snapshot.sh as of `BASELINE` (from this checkout's git history)."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BASELINE}:testbed/probes/snapshot.sh"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


async def baseline_snapshot(node: LabNode, commands: CommandRecorder, script: str) -> None:
    """A snapshot as `BASELINE` took it: its probe command and script, parsed and stored."""
    path = "/run/testbed/snapshot-baseline.sh"
    command = f"mkdir -p /run/testbed && (umask 077; cat > {path}) && sh {shlex.quote(path)}"
    recorded = await commands.run(
        node,
        command,
        phase="probe",
        source="harness",
        timeout=300,
        stored_stdout_limit=4096,
        max_output=32 << 20,
        stdin=script.encode(),
    )
    data = parse_snapshot(recorded.result.stdout)
    assert data["_meta"]["complete"], "the baseline snapshot did not complete"
    await asyncio.to_thread(commands.recorder.record_snapshot, node.name, SnapshotPoint.AFTER_AGENT, data)


async def main(n: int) -> None:
    async with runtime() as rt:
        topo = load_topology(ROOT / "topologies" / "single.yaml", images=set(rt.catalog), default_image="debian-12")
        with tempfile.TemporaryDirectory() as tmp:
            db = open_database(f"sqlite:///{tmp}/bench.db")
            recorder = RunRecorder.create(db, task_id="bench", agent="bench")
            commands = CommandRecorder(recorder)
            async with Lab(
                topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel
            ) as lab:
                node = lab.nodes["node"]
                conn = node.session._conn
                assert conn is not None
                for _ in range(3):  # warm up both paths
                    await conn.run("true")
                    await commands.run(node, "true", phase="agent", source="agent", timeout=120)
                bare, runner = [], []
                for _ in range(n):
                    t0 = time.perf_counter()
                    await conn.run("true")
                    bare.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await commands.run(node, "true", phase="agent", source="agent", timeout=120)
                    runner.append(time.perf_counter() - t0)
                old_script = baseline_script()
                await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)  # warm up both scripts
                await baseline_snapshot(node, commands, old_script)
                snaps, olds, portables = [], [], []
                for _ in range(5):
                    t0 = time.perf_counter()
                    await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)
                    snaps.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await baseline_snapshot(node, commands, old_script)
                    olds.append(time.perf_counter() - t0)
                    os.environ["TESTBED_NATIVE_PROBE"] = "0"  # today's script without the native helper
                    t0 = time.perf_counter()
                    await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)
                    portables.append(time.perf_counter() - t0)
                    del os.environ["TESTBED_NATIVE_PROBE"]
    m_bare, m_run = statistics.median(bare), statistics.median(runner)
    m_snap, m_old, m_port = statistics.median(snaps), statistics.median(olds), statistics.median(portables)
    print(f"bare asyncssh true: median {m_bare * 1000:.0f} ms; runner true: median {m_run * 1000:.0f} ms ({n} each)")
    print(
        f"snapshot: median {m_snap:.2f} s (native helper), {m_port:.2f} s (same script without it), "
        f"baseline {BASELINE} script {m_old:.2f} s, over {len(snaps)} each"
    )
    print(
        f"per_command_ratio={m_run / m_bare:.2f} snapshot_over_true={m_snap / m_bare:.1f} "
        f"baseline_over_true={m_old / m_bare:.1f} portable_over_native={m_port / m_snap:.2f} "
        f"old_over_new_snapshot={m_old / m_snap:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
