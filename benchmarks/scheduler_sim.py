"""Scheduler benchmark: 2,000 runs of 1-4 nodes with random durations over 4 simulated
hosts of 50 VM slots each, on the fake executor with SIMULATED time (a virtual-clock event
loop: simulated hours take seconds, nothing sleeps for real).

Figures:
- makespan / lower bound, where the lower bound is max(total node-seconds / total slots,
  longest run) — no schedule can beat it (goal: <= 1.05);
- scheduler CPU time per run: process CPU time of the whole simulation (coordinator, store,
  fake executor and event loop) divided by the runs executed (goal: < 5 ms).

Usage: python benchmarks/scheduler_sim.py [--runs 2000] [--hosts 4] [--slots 50] [--seed 1]
       [--store memory|sqlite] [--error-rate 0.02]
`--store sqlite` puts the run table in a temporary SQLite database (inline calls), so the
CPU figure includes the database work. The last line holds the figures.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed.model.job import RetryPolicy
from testbed.scheduler.coordinator import Coordinator, CoordinatorConfig
from testbed.scheduler.executor import ClaimedRun
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.resources import Demand
from testbed.scheduler.store import SqlRunStore
from testbed.testing.clock import VirtualClockLoop
from testbed.testing.memstore import MemoryRunStore
from testbed.testing.scheduler import FakeCatalog, FakeExecutor, FakeRun, make_hosts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--slots", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    parser.add_argument("--error-rate", type=float, default=0.0, help="share of runs ending as harness errors")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    # One task id per run so every run has its own demand and duration.
    plans: dict[str, FakeRun] = {}
    demands: dict[str, Demand] = {}
    for i in range(args.runs):
        task = f"t{i:05d}"
        nodes = rng.randint(1, 4)
        demands[task] = Demand(nodes, nodes, 640 * nodes)
        plans[task] = FakeRun(
            boot_s=rng.uniform(35, 60),
            agent_s=rng.uniform(60, 1800),
            verify_s=rng.uniform(10, 60),
        )
    work = sum(demands[t].nodes * (p.boot_s + p.agent_s + p.verify_s) for t, p in plans.items())
    longest = max(p.boot_s + p.agent_s + p.verify_s for p in plans.values())
    lower_bound = max(work / (args.hosts * args.slots), longest)

    loop = VirtualClockLoop()
    retry = RetryPolicy(limit=2, backoff_s=30)
    tmp = tempfile.TemporaryDirectory()
    new_runs = [NewRun(t, "debian-12", 1) for t in plans]
    if args.store == "sqlite":
        from testbed.db.engine import open_database

        sessions = open_database(f"sqlite:///{tmp.name}/bench.db")
        job_id, _ = create_job_with_runs(sessions, "bench", {}, "fake", new_runs)
        store: MemoryRunStore | SqlRunStore = SqlRunStore(sessions, retry, clock=loop.wall_clock, blocking=False)
        on_start = store.mark_started
    else:
        mem = MemoryRunStore(retry, clock=loop.wall_clock)
        job_id, _ = mem.create_job("bench", "fake", new_runs)
        store, on_start = mem, mem.mark_started

    errors = set(rng.sample(sorted(plans), int(args.error_rate * args.runs)))

    def behaviour(run: ClaimedRun) -> FakeRun:
        plan = plans[run.task_id]
        if run.task_id in errors and run.retry == 0:
            return FakeRun(plan.boot_s, 0, 0, "error", "simulated harness fault")
        return plan

    executor = FakeExecutor(behaviour, on_start=on_start)
    hosts = make_hosts(args.hosts, args.slots, boot_concurrency=args.slots)
    coordinator = Coordinator(
        job_id, store, executor, hosts, FakeCatalog(demands), owner="bench",
        config=CoordinatorConfig(poll_s=600, heartbeat_s=60),
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()
    summary = loop.run_until_complete(coordinator.run())
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    loop.close()
    executed = sum(executor.stats.executions.values())
    assert not executor.stats.violations, executor.stats.violations[:5]
    assert max(executor.stats.executions.values()) == 1 and summary.complete
    ratio = summary.elapsed_s / lower_bound
    print(f"runs executed {executed} (retries {summary.retries}); outcomes {summary.outcomes}")
    print(f"peak VM slots per host {summary.peak_slots}; simulated makespan {summary.elapsed_s:.0f} s; "
          f"lower bound {lower_bound:.0f} s; wall {wall:.2f} s")
    print(f"store={args.store} runs={args.runs} hosts={args.hosts}x{args.slots} makespan/lower_bound={ratio:.3f} "
          f"(goal <= 1.05) scheduler_cpu_per_run_ms={1000 * cpu / executed:.2f} (goal < 5)")


if __name__ == "__main__":
    main()
