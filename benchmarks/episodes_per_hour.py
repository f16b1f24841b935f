"""Episodes per hour on this host: a scripted policy of 10 commands per episode, cold vs
fast reset, one at a time and in GRPO-style groups of 4.

Run through the namespace wrapper:
    scripts/netns-run .venv/bin/python benchmarks/episodes_per_hour.py [ROUNDS] [TASK]

One task (default `web-port-conflict`, one debian-12 node), in one process, on a private
TESTBED_HOME (its images/ is the real image cache) and a temporary SQLite database. An
episode is `EpisodeManager.create`, 10 steps (read-only commands a policy would run: `ls`,
`systemctl`, `ss`, ...) and `delete` (which verifies and records the run), all timed:

1. cold: ROUNDS (default 2) episodes without fast reset, one after another;
2. build: the first fast-reset episode (reported, not in the rates);
3. fast: ROUNDS x 2 restored episodes one after another;
4. fast x4: ROUNDS groups of 4 restored episodes run at once.

The last line carries `cold_per_hour=`, `fast_per_hour=`, `group4_per_hour=` and the
ratios `fast_over_cold=` and `group4_over_cold=`. The saved state is removed at the end.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLICY = (
    "hostname",
    "ls -la /etc/nginx",
    "systemctl is-active nginx",
    "ss -Hltn",
    "cat /etc/os-release",
    "journalctl -n 20 --no-pager",
    "ps -eo pid,comm | head -20",
    "df -h /",
    "ip -br addr",
    "systemctl list-units --failed --no-pager",
)


async def episode(manager, task: str) -> float:  # type: ignore[no-untyped-def]
    """One whole episode (create, the 10-command policy, delete); its wall seconds."""
    t0 = time.monotonic()
    ep = await manager.create(task)
    for command in POLICY:
        out = await manager.step(ep.id, {"node": ep.nodes[0], "command": command})
        assert out.observation.get("exit_code") is not None, out
    await manager.delete(ep.id)
    assert ep.result is not None and ep.result.outcome != "error", ep.result
    return time.monotonic() - t0


async def main(rounds: int, task: str) -> str:
    from benchmarks.benchhome import episode_managers, private_home
    from testbed.db.engine import open_database

    with private_home("bench-eph-") as tmp:
        db = open_database(f"sqlite:///{tmp}/runs.db")
        async with episode_managers(ROOT, db, fast_max=4) as (cold_mgr, fast_mgr):
            cold = [await episode(cold_mgr, task) for _ in range(rounds)]
            print(f"cold episodes: {', '.join(f'{c:.1f}' for c in cold)} s", flush=True)
            build = await episode(fast_mgr, task)
            print(f"build episode: {build:.1f} s", flush=True)
            fast = [await episode(fast_mgr, task) for _ in range(rounds * 2)]
            print(f"restored episodes: {', '.join(f'{f:.1f}' for f in fast)} s", flush=True)
            groups = []
            for _ in range(rounds):
                t0 = time.monotonic()
                await asyncio.gather(*(episode(fast_mgr, task) for _ in range(4)))
                groups.append(time.monotonic() - t0)
            print(f"groups of 4 restored episodes: {', '.join(f'{g:.1f}' for g in groups)} s", flush=True)
    cold_rate = 3600 / statistics.mean(cold)
    fast_rate = 3600 / statistics.mean(fast)
    group_rate = 4 * 3600 / statistics.mean(groups)
    return (
        f"episodes per hour ({task}, {len(POLICY)} commands each): "
        f"cold_per_hour={cold_rate:.0f} fast_per_hour={fast_rate:.0f} group4_per_hour={group_rate:.0f} "
        f"fast_over_cold={fast_rate / cold_rate:.1f} group4_over_cold={group_rate / cold_rate:.1f}"
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    name = sys.argv[2] if len(sys.argv) > 2 else "web-port-conflict"
    print(asyncio.run(main(n, name)))
