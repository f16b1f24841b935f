"""How long a command that leaves background children takes to return, against `true`.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/background_exec.py [N]

On one debian-12 node, N interleaved rounds of `true`, `nohup sleep 600 &` (a child that
keeps the channel's pipes: the channel lingers and the children are listed) and
`sleep 600 >/dev/null 2>&1 &` (a redirected child: no lingering), each through
`LabNode.exec` as the agent's commands go. The issue's target for the first kind is "under
2 s"; the lingering case costs the EOF grace (`testbed.guest.channel.LINGER_GRACE_S`) and one
auxiliary exec that lists the session's children. The last line prints the medians and the
ratios to `true`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.hypervisor.lab import Lab  # noqa: E402
from testbed.model.topology import NodeSpec, Topology  # noqa: E402
from testbed.runtime import runtime  # noqa: E402

COMMANDS = {
    "true": "true",
    "lingering": "nohup sleep 600 &",
    "redirected": "sleep 600 >/dev/null 2>&1 &",
}


async def main(n: int) -> None:
    took: dict[str, list[float]] = {k: [] for k in COMMANDS}
    listed = 0
    async with runtime() as rt:
        topo = Topology(name="bench-background", nodes=[NodeSpec(name="box", image="debian-12", memory=512)])
        async with Lab(topo, rt.catalog, settings=rt.settings, hypervisor=rt.hypervisor, accel=rt.accel.accel) as lab:
            box = lab.nodes["box"]
            for i in range(n + 1):
                for kind, command in COMMANDS.items():
                    t0 = time.perf_counter()
                    result = await box.exec(command, timeout=120)
                    elapsed = time.perf_counter() - t0
                    assert result.exit_code == 0, (command, result)
                    if i == 0:
                        continue  # warm-up round
                    took[kind].append(elapsed)
                    if kind == "lingering":
                        listed += bool(result.background)
            alive = await box.exec("pgrep -c -x sleep")
    med = {k: statistics.median(v) for k, v in took.items()}
    print(f"{n} rounds; sleeps still running afterwards: {alive.stdout.strip()}; children listed: {listed}/{n}")
    ratios = " ".join(f"{k}_vs_true={med[k] / med['true']:.2f}" for k in ("lingering", "redirected"))
    print(" ".join(f"{k}_s={v:.2f}" for k, v in med.items()) + " " + ratios)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
