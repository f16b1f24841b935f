"""Cost of a router's snapshot: an frr-router node against a debian-12 node, one lab.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/router_snapshot.py [N]

Both nodes are snapshotted N times (interleaved) through the runner's path (upload, probe
script, parse, store); for the router the time of the `router` probe alone (its vtysh
calls and `ip -o link`) is read from the snapshot's own per-probe timing. The last line
prints the medians and the ratios router/debian and router-probe/router-snapshot.
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
from testbed.images.build import build_image  # noqa: E402
from testbed.images.store import ImageStore  # noqa: E402
from testbed.model.topology import topology_from_data  # noqa: E402
from testbed.model.vocab import SnapshotPoint  # noqa: E402
from testbed.runner.recording import CommandRecorder  # noqa: E402
from testbed.runner.snapshots import snapshot_node  # noqa: E402
from testbed.runtime import runtime  # noqa: E402

TOPOLOGY = {
    "name": "bench-router",
    "nodes": [{"name": "r1", "image": "frr-router", "memory": 512}, {"name": "h1", "memory": 512}],
    "links": [{"endpoints": ["r1:eth1", "h1:eth1"], "subnet": "10.0.1.0/24"}],
}


async def main(n: int) -> None:
    async with runtime() as rt:
        await build_image(rt.catalog["frr-router"], ImageStore(rt.settings.images_dir))
        topo = topology_from_data(TOPOLOGY, ROOT / "bench-router.yaml", images=rt.catalog, default_image="debian-12")
        with tempfile.TemporaryDirectory() as tmp:
            commands = CommandRecorder(
                RunRecorder.create(open_database(f"sqlite:///{tmp}/b.db"), task_id="b", agent="b")
            )
            async with Lab(
                topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel
            ) as lab:
                router, host = lab.nodes["r1"], lab.nodes["h1"]
                took: dict[str, list[float]] = {"r1": [], "h1": []}
                probe: list[float] = []
                for i in range(n + 1):
                    for node in (router, host):
                        t0 = time.perf_counter()
                        data = await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)
                        if i == 0:
                            continue  # warm-up round
                        took[node.name].append(time.perf_counter() - t0)
                        if node is router:
                            probe.append(float(data["_meta"]["probe_seconds"]["router"]))
    r, h, p = statistics.median(took["r1"]), statistics.median(took["h1"]), statistics.median(probe)
    print(f"router snapshot: median {r:.2f} s; debian: {h:.2f} s; router probe alone: {p:.2f} s ({n} each)")
    print(
        f"router_snapshot_s={r:.2f} debian_snapshot_s={h:.2f} router_probe_s={p:.2f} "
        f"router_vs_debian={r / h:.2f} router_probe_share={p / r:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
