"""Per-command and per-snapshot overhead of the runner, on one real debian-12 node.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/run_overhead.py [N]

- per command: `true` through the runner's path (bounded exec with the guest-side deadline,
  impact classification, redaction, the row committed to SQLite before returning) against a
  bare asyncssh `conn.run("true")` on the same open connection; N of each, interleaved.
- per snapshot: one node's full snapshot (upload, probe script, parse, store) against one
  `true` round trip.
The last line prints both ratios (goals: <= 1.10 and <= 3).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.db.engine import open_database  # noqa: E402
from testbed.db.recorder import RunRecorder  # noqa: E402
from testbed.hypervisor.lab import Lab  # noqa: E402
from testbed.model.topology import load_topology  # noqa: E402
from testbed.runner.recording import CommandRecorder  # noqa: E402
from testbed.runner.snapshots import snapshot_node  # noqa: E402
from testbed.runtime import runtime  # noqa: E402


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
                snaps = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    await snapshot_node(node, commands, "after_agent")
                    snaps.append(time.perf_counter() - t0)
    m_bare, m_run, m_snap = statistics.median(bare), statistics.median(runner), statistics.median(snaps)
    print(f"bare asyncssh true: median {m_bare * 1000:.0f} ms; runner true: median {m_run * 1000:.0f} ms ({n} each)")
    print(f"snapshot: median {m_snap:.2f} s over {len(snaps)}")
    print(
        f"per-command ratio {m_run / m_bare:.2f} (goal <= 1.10); "
        f"snapshot / true ratio {m_snap / m_bare:.1f} (goal <= 3)"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
