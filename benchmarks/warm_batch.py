"""Warm starts for batch runs: a job of one task x N attempts, makespan warm vs cold.

Run through the namespace wrapper:
    scripts/netns-run .venv/bin/python benchmarks/warm_batch.py [ATTEMPTS] [TASK] [AGENT]

One task (default `config-permissions`, one debian-12 node, no reboot check) with the
oracle agent, on a private TESTBED_HOME (its images/ is the real image cache) and a
temporary SQLite database, one run at a time (the same host budget for both modes):

1. cold: ATTEMPTS runs, each booting fresh guests (`--cold`);
2. warm: ATTEMPTS runs through `testbed.runner.warm.WarmStarts`: the first builds the
   task's saved post-setup state, the others restore it.

Both modes must give the same outcomes (every oracle run passes). The saved state is removed
at the end. The last line carries `warm_speedup=` (cold makespan / warm makespan; goal >= 4)
and the per-run medians.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def batch(attempts: int, task_id: str, agent: str, *, warm: bool) -> tuple[float, list[float], list[str]]:
    from testbed.db.engine import open_database
    from testbed.model.taskload import load_task
    from testbed.runner.request import RunRequest
    from testbed.runner.warm import WarmStarts
    from testbed.runtime import image_catalog, runtime

    task = load_task(ROOT / "tasks" / task_id, images=set(image_catalog()))
    db = open_database(f"sqlite:///{os.environ['TESTBED_HOME']}/runs-{'warm' if warm else 'cold'}.db")
    durations, outcomes = [], []
    t0 = time.monotonic()
    async with runtime() as rt:
        starts = WarmStarts(rt, enabled=warm)
        for attempt in range(1, attempts + 1):
            request = RunRequest(task, task.definition.images[0], agent, attempt=attempt)
            t = time.monotonic()
            result = await starts.execute(request, db)
            durations.append(time.monotonic() - t)
            outcomes.append(result.outcome)
            print(f"{'warm' if warm else 'cold'} run {attempt}: {result.outcome} in {durations[-1]:.1f} s", flush=True)
        if warm:
            starts.store.remove()
    print_phases(db, "warm" if warm else "cold")
    return time.monotonic() - t0, durations, outcomes


def print_phases(db: Any, mode: str) -> None:
    """Where each kind of run spent its time: the median seconds of every phase, for the
    cold runs, the build and the restores (from the runs' `phases` rows)."""
    from sqlalchemy import select

    from testbed.db.models import Phase, Run

    kinds: dict[str, dict[str, list[float]]] = {}
    with db() as session:
        for run in session.scalars(select(Run).order_by(Run.attempt)):
            how = ((run.config or {}).get("fast_reset") or {}).get("mode", "cold")
            spent = kinds.setdefault(how, {})
            for phase in session.scalars(select(Phase).where(Phase.run_id == run.id)):
                if phase.finished_at is not None:
                    spent.setdefault(phase.name, []).append((phase.finished_at - phase.started_at).total_seconds())
                if phase.name == "save_state" and phase.detail:
                    print(f"{mode} build: {phase.detail}", flush=True)
    for how, spent in kinds.items():
        parts = ", ".join(f"{name} {statistics.median(v):.1f}" for name, v in spent.items())
        print(f"{mode} {how} phases (median s): {parts}", flush=True)


async def main(attempts: int, task_id: str, agent: str) -> str:
    from benchmarks.benchhome import private_home

    with private_home("bench-warm-"):
        cold_total, cold_runs, cold_outcomes = await batch(attempts, task_id, agent, warm=False)
        warm_total, warm_runs, warm_outcomes = await batch(attempts, task_id, agent, warm=True)
    assert cold_outcomes == warm_outcomes, (cold_outcomes, warm_outcomes)
    return (
        f"task={task_id} attempts={attempts} outcomes={','.join(warm_outcomes)} "
        f"cold_makespan_s={cold_total:.1f} warm_makespan_s={warm_total:.1f} "
        f"cold_run_median_s={statistics.median(cold_runs):.1f} warm_build_s={warm_runs[0]:.1f} "
        f"warm_restore_median_s={statistics.median(warm_runs[1:] or warm_runs):.1f} "
        f"warm_speedup={cold_total / warm_total:.2f}"
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    task = sys.argv[2] if len(sys.argv) > 2 else "config-permissions"
    agent = sys.argv[3] if len(sys.argv) > 3 else "oracle"
    print(asyncio.run(main(n, task, agent)))
