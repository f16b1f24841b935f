"""GRPO-sized groups: G episodes of one task made ready at once from one saved state.

Run through the namespace wrapper:
    scripts/netns-run .venv/bin/python benchmarks/group_reset.py [TASK]

One task (default `web-port-conflict`, one debian-12 node), in one process, on a private
TESTBED_HOME (its images/ is the real image cache) and a temporary SQLite database:

1. cold: one episode without fast reset (provision, boot, snapshot, setup, snapshot);
2. build: the first fast-reset episode (a cold start, saved and restored in place; not in
   the ratios);
3. single: one episode restored from the saved state, alone (the median of two);
4. group of 4, then a group of 8: G episodes created at once (`EpisodeManager.create`
   gathered), timed until the last of them is ready. Every episode then runs one command
   and is deleted (not timed).

"4 cold starts' time" is 4 x the measured cold episode: under TCG on this host's 2 cores,
cold boots side by side share the CPUs and take about as long as one after another.
The last line carries `group4_over_single=` (the group's time / one restore's; goal <= 3),
`cold_over_group4=` (4 cold starts' time / the group's; goal >= 10) and the same for G = 8.
A second group of 4 is made ready with the restores-first wait off
(`testbed.hypervisor.restorefirst`: each guest's SSH reconnect starts as soon as its own
restore ends, beside the restores still loading): `mixed_over_group4=` is its ready time over
the first group's, and `group4_answered_mixed_over_first=` the same for the time until every
episode of the group has answered its first command (the four sent at once), which the wait
must not make worse.
`saved_mem_mib=` is the size of the saved memory image that every restore loads.
The saved state is removed at the end.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


RUN_IDS: dict[str, list[str]] = {}  # label -> run ids of its episodes
T0_WALL: dict[str, float] = {}  # label -> wall-clock time (epoch s) its group was asked for
FIRST_STEP_S: dict[str, list[float]] = {}  # label -> seconds of each episode's first step
ANSWERED_S: dict[str, float] = {}  # label -> seconds from the ask until every first step answered


async def ready_group(manager, task: str, size: int, label: str = "") -> float:  # type: ignore[no-untyped-def]
    """Create `size` episodes at once; the seconds until the last is ready. Then all of them
    run `true` at once (`ANSWERED_S[label]`: seconds from the ask until the last answer) and
    are deleted; none may end in `error`."""
    t0 = time.monotonic()
    T0_WALL[label] = time.time()
    episodes = await asyncio.gather(*(manager.create(task) for _ in range(size)))
    took = time.monotonic() - t0
    RUN_IDS.setdefault(label, []).extend(ep.run_id for ep in episodes)

    async def first_step(ep) -> None:  # type: ignore[no-untyped-def]
        t1 = time.monotonic()
        out = await manager.step(ep.id, {"node": ep.nodes[0], "command": "true"})
        FIRST_STEP_S.setdefault(label, []).append(time.monotonic() - t1)
        assert out.observation.get("exit_code") == 0, out

    await asyncio.gather(*(first_step(ep) for ep in episodes))
    ANSWERED_S[label] = time.monotonic() - t0
    for ep in episodes:
        await manager.delete(ep.id)
        assert ep.result is not None and ep.result.outcome != "error", ep.result
    return took


def restore_breakdown(db, run_ids: list[str]) -> str:  # type: ignore[no-untyped-def]
    """Median `networks_s`, `memory_s` (overlays + restore), `ssh_s` (reconnect + clock) and
    `restore_s` (the whole lab) of the runs `run_ids`, from their phase details."""
    import re

    from sqlalchemy import select

    from testbed.db.models import Phase

    with db() as s:
        details = s.scalars(
            select(Phase.detail).where(Phase.name == "snapshot_before_setup", Phase.run_id.in_(run_ids))
        ).all()
    values: dict[str, list[float]] = {}
    for detail in details:
        for name, value in re.findall(r"(\w+_s) ([0-9.]+)", detail or ""):
            values.setdefault(name, []).append(float(value))
    return ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in sorted(values.items()))


def group_timeline(db, label: str) -> str:  # type: ignore[no-untyped-def]
    """For the group of `label` (each group label is asked for once): when (s after the
    group was asked for) its runs started, their provisioning (the restore) began and
    ended, and their agent phase began — the earliest and the latest of the group."""
    from sqlalchemy import select

    from testbed.db.models import Phase, Run

    marks: dict[str, list[float]] = {}
    t0 = T0_WALL[label]
    with db() as s:
        for run_id in RUN_IDS[label]:
            run = s.get(Run, run_id)
            if run is None or run.started_at is None:
                continue
            marks.setdefault("run", []).append(_epoch(run.started_at) - t0)
            for phase in s.scalars(select(Phase).where(Phase.run_id == run_id)).all():
                if phase.name == "provisioning":
                    marks.setdefault("restore_from", []).append(_epoch(phase.started_at) - t0)
                    if phase.finished_at is not None:
                        marks.setdefault("restore_to", []).append(_epoch(phase.finished_at) - t0)
                if phase.name == "agent":
                    marks.setdefault("agent", []).append(_epoch(phase.started_at) - t0)
    return ", ".join(f"{k} {min(v):.2f}..{max(v):.2f}" for k, v in marks.items())


def saved_memory_mib(states: Path) -> float:
    """MiB of the saved memory images (`*.mem`) under `states`: the pages a restore loads
    (QEMU stores zero pages in a few bytes each, so this is roughly the guest's touched memory)."""
    return sum(p.stat().st_size for p in states.rglob("*.mem")) / 2**20


def _epoch(when) -> float:  # type: ignore[no-untyped-def]
    from datetime import UTC

    return float(when.replace(tzinfo=when.tzinfo or UTC).timestamp())


def phase_times(db, run_ids: list[str]) -> str:  # type: ignore[no-untyped-def]
    """Median seconds of each phase up to the agent's (from the run's start) of `run_ids`."""
    from sqlalchemy import select

    from testbed.db.models import Phase, Run

    spans: dict[str, list[float]] = {}
    with db() as s:
        for run_id in run_ids:
            run = s.get(Run, run_id)
            phases = s.scalars(select(Phase).where(Phase.run_id == run_id).order_by(Phase.id)).all()
            if run is None or run.started_at is None:
                continue
            last = run.started_at
            for phase in phases:
                spans.setdefault(f"{phase.name}_start", []).append((phase.started_at - last).total_seconds())
                if phase.name == "agent":
                    break
                if phase.finished_at is not None:
                    spans.setdefault(phase.name, []).append((phase.finished_at - phase.started_at).total_seconds())
                    last = phase.finished_at
    return ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in spans.items())


async def main(task: str) -> str:
    from benchmarks.benchhome import episode_managers, private_home
    from testbed.db.engine import open_database

    with private_home("bench-group-") as tmp:
        db = open_database(f"sqlite:///{tmp}/runs.db")
        async with episode_managers(ROOT, db, fast_max=8) as (cold_mgr, fast_mgr):
            cold = await ready_group(cold_mgr, task, 1, "cold")
            print(f"cold episode ready in {cold:.1f} s", flush=True)
            build = await ready_group(fast_mgr, task, 1)
            print(f"build episode (cold + save + restore) ready in {build:.1f} s", flush=True)
            mem_mib = saved_memory_mib(tmp / "home" / "states")
            print(f"saved memory image(s): {mem_mib:.1f} MiB", flush=True)
            singles = [await ready_group(fast_mgr, task, 1, "single") for _ in range(2)]
            single = statistics.median(singles)
            print(f"single restores ready in {', '.join(f'{s:.1f}' for s in singles)} s", flush=True)
            group4 = await ready_group(fast_mgr, task, 4, "group4")
            print(f"group of 4 ready in {group4:.1f} s", flush=True)
            traffic = fast_mgr.backend.rt.hypervisor.restores
            traffic.enabled = False  # the same group with reconnects not waiting for restores
            group4_mixed = await ready_group(fast_mgr, task, 4, "group4_mixed")
            traffic.enabled = True
            print(f"group of 4 with reconnects beside the restores ready in {group4_mixed:.1f} s", flush=True)
            group8 = await ready_group(fast_mgr, task, 8, "group8")
            print(f"group of 8 ready in {group8:.1f} s", flush=True)
            for label in ("single", "group4", "group4_mixed", "group8"):
                print(f"where a {label} restore's time goes (medians): {restore_breakdown(db, RUN_IDS[label])}")
            print(f"a single restore's phases (medians, s): {phase_times(db, RUN_IDS['single'])}", flush=True)
            for label in ("group4", "group4_mixed", "group8"):
                print(
                    f"{label} timeline (s after it was asked for, first..last): {group_timeline(db, label)}; "
                    f"every first step answered at {ANSWERED_S[label]:.2f}"
                )
            cold_step = statistics.median(FIRST_STEP_S["cold"])
            single_step = statistics.median(FIRST_STEP_S["single"])
            print(
                f"first step (`true`): cold episode {cold_step:.2f} s, single restore {single_step:.2f} s "
                "(a restore's SSH reconnect and clock finish while the agent reads its first observation)"
            )
    return (
        f"group reset {task}: cold {cold:.1f} s, build {build:.1f} s, single restore {single:.2f} s, "
        f"group4 {group4:.1f} s, group8 {group8:.1f} s; "
        f"group4_over_single={group4 / single:.2f} cold_over_group4={4 * cold / group4:.1f} "
        f"group8_over_single={group8 / single:.2f} cold_over_group8={8 * cold / group8:.1f} "
        f"mixed_over_group4={group4_mixed / group4:.2f} "
        f"group4_answered_mixed_over_first={ANSWERED_S['group4_mixed'] / ANSWERED_S['group4']:.2f} "
        f"single_first_step_s={single_step:.2f} single_to_first_answer_s={single + single_step:.2f} "
        f"saved_mem_mib={mem_mib:.1f}"
    )


if __name__ == "__main__":
    print(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "web-port-conflict")))
