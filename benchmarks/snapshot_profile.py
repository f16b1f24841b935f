"""Where one snapshot's time goes, on one real debian-12 node.

Run through the namespace wrapper:
    scripts/netns-run .venv/bin/python benchmarks/snapshot_profile.py [N]

N times each, on the same guest: a `true` round trip; the snapshot as the runner takes it
(`snapshot_node`: upload, script, parse, store); the script alone run from a file already on
the guest with its output thrown away (`sh snapshot.sh >/dev/null`, so no transfer and no
parse); and an instrumented copy of the script that prints, to stderr, the milliseconds of
the one walk and of every probe (each probe's time includes waiting on the filter, which
runs beside it in the pipeline). The host-side parse of one snapshot's output is timed
alone. Then each command the script still starts is timed on its own (`SPAWNED`, net of
the `date` timer's cost, which is one process start: `spawn_s`). The last line carries the
medians as `name=value` pairs (seconds).
"""

from __future__ import annotations

import asyncio
import re
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
from testbed.model.vocab import SnapshotPoint  # noqa: E402
from testbed.probes import parse_snapshot  # noqa: E402
from testbed.probes.native import GUEST_DIR, binary_name  # noqa: E402
from testbed.probes.script import snapshot_script  # noqa: E402
from testbed.runner.recording import CommandRecorder  # noqa: E402
from testbed.runner.snapshots import snapshot_node  # noqa: E402
from testbed.runtime import runtime  # noqa: E402

HELPER = f"{GUEST_DIR}/{binary_name()}"
ENV = (
    "TESTBED_PROBE_WORKDIR=/run/testbed/work TESTBED_PROBE_CACHE=/run/testbed/cache "
    f"TESTBED_PROBE_HIDE={GUEST_DIR} TESTBED_PROBE_NATIVE={HELPER}"
)
"""The environment the runner gives the script (the native helper placed by the first snapshot)."""

SPAWNED = {
    "systemctl": "systemctl list-units --all --plain --no-legend --no-pager >/dev/null",
    "ss": "ss -Htlnup >/dev/null",
    "ip_addr": "ip -o addr show >/dev/null",
    "ip_routes": "ip route show table all >/dev/null",
    "df": f"{HELPER} timeout 15 df -P >/dev/null",
    "helper_walk": f"{HELPER} walk --walk /dev/null --hash /dev/null --odd /dev/null -- /etc",
    "helper_sysctl": f"{HELPER} sysctl /proc/sys/net /proc/sys/kernel /proc/sys/vm >/dev/null",
    "helper_start": f"{HELPER} version >/dev/null",
    "ps": "ps -e -ww -o pid=,ppid=,user:32=,args= >/dev/null",
    "awk_start": "awk 'BEGIN {}' </dev/null",
}
"""What the script still starts per snapshot with the native helper, the helper's own commands, and
ps and awk (which it no longer starts) for scale."""


def spawn_costs_script(n: int) -> str:
    """A script printing `COST name ms` lines: each command of `SPAWNED` timed `n` times,
    and `date` itself (the timer's own cost, subtracted from the others)."""
    now = "$(date +%s%N)"
    timed = {"date": ":", **SPAWNED}
    lines = [
        f'for i in $(seq {n}); do t0={now}; {command}; t1={now}; echo "COST {name} $(( (t1 - t0) / 1000000 ))"; done'
        for name, command in timed.items()
    ]
    return "\n".join(lines) + "\n"


def instrumented(script: str) -> str:
    """`script` with the walk and every probe timed (`PROF name ms` on stderr)."""
    now = "$(date +%s%N)"
    probe = '        "p_$_tb_probe"\n'
    walk = "    tb_walk\n"
    assert probe in script and walk in script, "snapshot.sh's main loop changed: update the profiler"
    script = script.replace(
        probe, f'        _tb_t0={now}; "p_$_tb_probe"; echo "PROF $_tb_probe $(( ({now} - _tb_t0) / 1000000 ))" >&2\n'
    )
    timed_walk = f'    _tb_t0={now}; tb_walk; echo "PROF walk $(( ({now} - _tb_t0) / 1000000 ))" >&2\n'
    return script.replace(walk, timed_walk, 1)


async def main(n: int) -> str:
    async with runtime() as rt:
        topo = load_topology(ROOT / "topologies" / "single.yaml", images=set(rt.catalog), default_image="debian-12")
        with tempfile.TemporaryDirectory() as tmp:
            db = open_database(f"sqlite:///{tmp}/bench.db")
            commands = CommandRecorder(RunRecorder.create(db, task_id="bench", agent="bench"))
            async with Lab(
                topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel
            ) as lab:
                node = lab.nodes["node"]
                await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)  # warm up: caches, work dir
                await node.session.upload(snapshot_script().encode(), "/run/testbed/plain.sh")
                await node.session.upload(instrumented(snapshot_script()).encode(), "/run/testbed/prof.sh")
                raw = await node.session.exec(f"{ENV} sh /run/testbed/plain.sh", timeout=300, max_output=64 << 20)
                t0 = time.perf_counter()
                parse_snapshot(raw.stdout)
                parse_s = time.perf_counter() - t0
                trues, snaps, scripts = [], [], []
                probes: dict[str, list[float]] = {}
                for _ in range(n):
                    t0 = time.perf_counter()
                    await node.session.exec("true")
                    trues.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT)
                    snaps.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await node.session.exec(f"{ENV} sh /run/testbed/plain.sh >/dev/null 2>&1", timeout=300)
                    scripts.append(time.perf_counter() - t0)
                    prof = await node.session.exec(f"{ENV} sh /run/testbed/prof.sh >/dev/null", timeout=300)
                    for name, ms in re.findall(r"^PROF (\w+) (\d+)$", prof.stderr, re.M):
                        probes.setdefault(name, []).append(int(ms) / 1000)
                await node.session.upload(spawn_costs_script(n).encode(), "/run/testbed/costs.sh")
                costs_out = await node.session.exec("sh /run/testbed/costs.sh", timeout=600)
    costs: dict[str, list[float]] = {}
    for name, ms in re.findall(r"^COST (\w+) (\d+)$", costs_out.stdout, re.M):
        costs.setdefault(name, []).append(int(ms) / 1000)
    timer = statistics.median(costs.pop("date"))
    net = {k: max(0.0, statistics.median(v) - timer) for k, v in costs.items()}
    print(
        f"per command, net of the timer's own {timer:.3f} s (medians, s): "
        + ", ".join(f"{k} {v:.3f}" for k, v in sorted(net.items(), key=lambda kv: -kv[1])),
        flush=True,
    )
    med = {k: statistics.median(v) for k, v in probes.items()}
    top = sorted(med.items(), key=lambda kv: -kv[1])
    print("per probe (medians, s): " + ", ".join(f"{k} {v:.2f}" for k, v in top), flush=True)
    m_true, m_snap, m_script = statistics.median(trues), statistics.median(snaps), statistics.median(scripts)
    print(f"output {len(raw.stdout) / 1024:.0f} KiB; host parse {parse_s:.2f} s; {n} of each", flush=True)
    return (
        f"true_s={m_true:.3f} snapshot_s={m_snap:.2f} script_alone_s={m_script:.2f} parse_s={parse_s:.2f} "
        f"probes_sum_s={sum(med.values()):.2f} snapshot_over_script={m_snap / m_script:.2f} "
        f"spawn_s={timer:.3f} static_start_s={net['helper_start']:.3f} ps_s={net['ps']:.3f}"
    )


if __name__ == "__main__":
    print(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
