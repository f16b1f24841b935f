"""Warm starts for batch runs: a job of one task x N attempts, makespan warm vs cold.

Run through the namespace wrapper:
    scripts/netns-run .venv/bin/python benchmarks/warm_batch.py [ATTEMPTS] [TASK] [AGENT] [SLOTS]

One task (default `config-permissions`, one debian-12 node, no reboot check) with the
oracle agent, on a private TESTBED_HOME (its images/ is the real image cache) and a
temporary SQLite database per mode. Each mode is one real job, `testbed launch JOB
--no-progress` (the scheduler, its slots and its warm starts), with the same host budget
(`vm_slots: SLOTS`, default 3):

1. cold: `warm: false`, every run boots fresh guests;
2. warm: `warm: true`: the first run of the cell builds the task's saved post-setup state;
   the other attempts wait for it (holding their slots) and restore it.

Under TCG on this host's 2 cores, cold boots side by side share the CPUs: a cold job's
makespan is about the sum of its boots whatever SLOTS is, while restored runs are light
enough to overlap. SLOTS=1 gives the one-run-at-a-time comparison.

Both modes must give the same outcomes (every oracle run passes). The saved state is removed
at the end. The last line carries `warm_speedup=` (cold makespan / warm makespan; goal >= 4)
and the per-run medians (from the runs' own start and end times).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def job_file(path: Path, task: str, agent: str, attempts: int, slots: int, *, warm: bool) -> Path:
    spec = {
        "name": f"bench-warm-batch-{'warm' if warm else 'cold'}",
        "tasks": [task],
        "images": "default",
        "agent": agent,
        "attempts": attempts,
        "warm": warm,
        "hosts": [{"name": "local", "vm_slots": slots}],
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def launch(job: Path, db_url: str) -> float:
    """Run the job through `testbed launch`; its wall-clock seconds."""
    t0 = time.monotonic()
    command = [sys.executable, "-m", "testbed.cli", "launch", str(job), "--no-progress", "--db", db_url]
    proc = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, check=False)
    took = time.monotonic() - t0
    print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-400:], flush=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"testbed launch {job.name} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return took


def runs_of(db_url: str) -> list[tuple[int, str, float, str]]:
    """(attempt, outcome, seconds, fast-reset mode) of every run of the database's one job."""
    from sqlalchemy import select

    from testbed.db.engine import open_database
    from testbed.db.models import Run

    db = open_database(db_url)
    with db() as s:
        rows = s.scalars(select(Run).order_by(Run.attempt)).all()
        out = []
        for run in rows:
            took = (run.finished_at - run.started_at).total_seconds() if run.started_at and run.finished_at else 0.0
            mode = str(((run.config or {}).get("fast_reset") or {}).get("mode", "?"))
            out.append((run.attempt, run.outcome or "unfinished", took, mode))
    return out


def main(attempts: int, task: str, agent: str, slots: int) -> str:
    from benchmarks.benchhome import private_home
    from testbed.config import Settings
    from testbed.hypervisor.slots import SlotStore

    with private_home("bench-warm-") as tmp:
        made: dict[str, tuple[float, list[tuple[int, str, float, str]]]] = {}
        try:
            for mode in ("cold", "warm"):
                url = f"sqlite:///{tmp}/runs-{mode}.db"
                job = job_file(tmp / f"{mode}.yaml", task, agent, attempts, slots, warm=mode == "warm")
                took = launch(job, url)
                made[mode] = (took, runs_of(url))
                print(f"{mode} job: {took:.1f} s; runs: "
                      + ", ".join(f"{a}:{o} {s:.1f}s ({m})" for a, o, s, m in made[mode][1]), flush=True)  # fmt: skip
        finally:
            SlotStore(Settings.from_env()).remove()
    (cold_total, cold_runs), (warm_total, warm_runs) = made["cold"], made["warm"]
    cold_outcomes = [o for _, o, _, _ in cold_runs]
    warm_outcomes = [o for _, o, _, _ in warm_runs]
    assert cold_outcomes == warm_outcomes, (cold_outcomes, warm_outcomes)
    restored = [s for _, _, s, m in warm_runs if m == "restore"]
    built = [s for _, _, s, m in warm_runs if m != "restore"]
    return (
        f"task={task} attempts={attempts} slots={slots} outcomes={','.join(warm_outcomes)} "
        f"cold_makespan_s={cold_total:.1f} warm_makespan_s={warm_total:.1f} "
        f"cold_run_median_s={statistics.median(s for _, _, s, _ in cold_runs):.1f} "
        f"warm_build_s={max(built, default=0.0):.1f} warm_restored_runs={len(restored)} "
        f"warm_restore_median_s={statistics.median(restored) if restored else 0.0:.1f} "
        f"warm_speedup={cold_total / warm_total:.2f}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args[0]) if len(args) > 0 else 6
    task_id = args[1] if len(args) > 1 else "config-permissions"
    agent_name = args[2] if len(args) > 2 else "oracle"
    vm_slots = int(args[3]) if len(args) > 3 else 3
    print(main(n, task_id, agent_name, vm_slots))
