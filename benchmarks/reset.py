"""Fast reset: time to a ready environment-API episode, cold vs restored from a saved state.

Run through the namespace wrapper:  scripts/netns-run .venv/bin/python benchmarks/reset.py [ROUNDS] [TASK]

One task (default `web-port-conflict`, one debian-12 node), in one process, on a private
TESTBED_HOME (its images/ is the real image cache) and a temporary SQLite database, one
guest at a time:

1. cold: an episode without fast reset (provision, boot, snapshot, setup, snapshot);
2. build: the first fast-reset episode (the same cold start, then the state is saved and
   restored in place) — reported, not part of the ratio;
3. restore: ROUNDS (default 3) episodes restored from that saved state.

"Ready" is `EpisodeManager.create` returning (the agent phase has begun); each episode then
runs one command and is deleted (not timed). The saved state is removed at the end.
The last line: cold seconds, the restores' median, and the ratio (goal: at least 10x).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def episode(manager, task: str) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    ep = await manager.create(task)
    ready = time.monotonic() - t0
    out = await manager.step(ep.id, {"node": ep.nodes[0], "command": "true"})
    assert out.observation.get("exit_code") == 0, out
    await manager.delete(ep.id)
    assert ep.result is not None and ep.result.outcome != "error", ep.result
    return ready


async def main(rounds: int, task: str) -> str:
    from benchmarks.benchhome import episode_managers, private_home
    from testbed.db.engine import open_database

    with private_home("bench-reset-") as tmp:
        db = open_database(f"sqlite:///{tmp}/runs.db")
        async with episode_managers(ROOT, db, fast_max=1) as (cold_mgr, fast_mgr):
            cold = await episode(cold_mgr, task)
            print(f"cold episode ready in {cold:.1f} s", flush=True)
            build = await episode(fast_mgr, task)
            print(f"build episode (cold + save + restore) ready in {build:.1f} s", flush=True)
            restores = []
            for i in range(rounds):
                restores.append(await episode(fast_mgr, task))
                print(f"restored episode {i + 1} ready in {restores[-1]:.1f} s", flush=True)
    restore = statistics.median(restores)
    return (
        f"reset {task}: cold {cold:.1f} s, build {build:.1f} s, restore median {restore:.2f} s "
        f"(n={rounds}, min {min(restores):.2f}), ratio {cold / restore:.1f}x (goal >= 10x)"
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    name = sys.argv[2] if len(sys.argv) > 2 else "web-port-conflict"
    print(asyncio.run(main(n, name)))
