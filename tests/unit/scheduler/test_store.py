"""The scheduler on the run database (SQLite): claims and leases, settle and follow-ups,
recovery, job cancellation, crash + resume, and two coordinators in two threads sharing a
job; the `0003` migration; the coordinator on a SQL store in simulated time."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Job, Phase, Run
from testbed.db.recorder import RunRecorder
from testbed.db.types import utcnow
from testbed.model.job import RetryPolicy
from testbed.scheduler.coordinator import Coordinator, CoordinatorConfig
from testbed.scheduler.executor import ClaimedRun
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.store import SqlRunStore, cancel_job
from testbed.testing.clock import VirtualClockLoop, run_simulated
from testbed.testing.scheduler import FakeCatalog, FakeExecutor, FakeRun, make_hosts

DEAD_OWNER = f"{socket.gethostname()}:4194000:12345:dead0000"


@pytest.fixture
def db(tmp_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{tmp_path / 'runs.db'}")


def _job(db: sessionmaker[Session], n: int, prefix: str = "t") -> tuple[str, list[str]]:
    return create_job_with_runs(db, "j", {"k": 1}, "fake", [NewRun(f"{prefix}{i}", "debian-12", 1) for i in range(n)])


def _runs(db: sessionmaker[Session], job_id: str) -> list[Run]:
    with db() as s:
        return list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.created_at)))


def test_claim_is_exclusive_until_the_lease_expires(db: sessionmaker[Session]) -> None:
    clock = [utcnow()]
    store = SqlRunStore(db, RetryPolicy(), clock=lambda: clock[0])
    job_id, ids = _job(db, 4)
    assert [p.run_id for p in store.pending(job_id)] == ids
    assert store.claim(job_id, ids[:3], "a:1:1:x", 60) == set(ids[:3])
    assert store.claim(job_id, ids, "b:1:1:x", 60) == {ids[3]}
    assert store.pending(job_id) == []
    store.release([ids[2]], "a:1:1:x")
    assert [p.run_id for p in store.pending(job_id)] == [ids[2]]
    renewal = store.renew(job_id, "a:1:1:x", ids[:2], 60)
    assert renewal.renewed == frozenset(ids[:2]) and not renewal.job_cancelled
    clock[0] += timedelta(seconds=61)  # a's lease lapses
    assert store.claim(job_id, ids[:2], "b:1:1:x", 60) == set(ids[:2])
    assert store.renew(job_id, "a:1:1:x", ids[:2], 60).renewed == frozenset()  # a learns it lost them


def test_settle_finishes_once_and_creates_one_follow_up(db: sessionmaker[Session]) -> None:
    store = SqlRunStore(db, RetryPolicy(limit=1, backoff_s=30))
    job_id, ids = _job(db, 2)
    assert store.claim(job_id, ids, "me:1:1:x", 60) == set(ids)
    store.mark_started(ids[0])
    RunRecorder(db, ids[0]).phase_started("provisioning")
    settled = store.settle(job_id, ids[0], "me:1:1:x", "error", "libvirt fell over")
    assert settled.outcome == "error" and settled.follow_up is not None
    assert settled.follow_up.retry == 1 and settled.follow_up.not_before is not None
    # the runner's own record wins; the watchdog's override replaces it
    RunRecorder(db, ids[1]).finish("failed", None, 0.0)
    assert store.settle(job_id, ids[1], "me:1:1:x", "passed", None).outcome == "failed"
    runs = {r.id: r for r in _runs(db, job_id)}
    assert runs[ids[0]].state == "finished" and runs[ids[0]].error == "libvirt fell over"
    assert runs[ids[0]].lease_owner == "me:1:1:x" and runs[ids[0]].lease_expires_at is None
    retry = runs[settled.follow_up.run_id]
    assert retry.retry_of == ids[0] and retry.state == "pending" and retry.attempt == 1
    with db() as s:
        phase = s.scalars(select(Phase).where(Phase.run_id == ids[0])).one()
        assert phase.status == "error" and phase.finished_at is not None
    # the retry is not claimable before its backoff
    assert store.claim(job_id, [retry.id], "me:1:1:x", 60) == set()
    # recovery never duplicates the follow-up
    assert store.recover(job_id, "me:1:1:x").created == []
    assert len(_runs(db, job_id)) == 3


def test_recover_returns_unstarted_runs_and_finishes_started_ones(db: sessionmaker[Session]) -> None:
    store = SqlRunStore(db, RetryPolicy(limit=2, backoff_s=0))
    job_id, ids = _job(db, 4)
    assert store.claim(job_id, ids[:3], DEAD_OWNER, 3600) == set(ids[:3])
    store.mark_started(ids[0])
    RunRecorder(db, ids[0]).phase_started("provisioning")
    # a finished error without its retry (the coordinator died between the two writes)
    RunRecorder(db, ids[3]).finish("error", "boom", None)
    report = store.recover(job_id, "me:1:1:x")
    assert report.lost == [ids[0]] and sorted(report.returned) == sorted(ids[1:3])
    assert len(report.created) == 2  # follow-ups of the lost run and of ids[3]
    runs = {r.id: r for r in _runs(db, job_id)}
    assert runs[ids[0]].outcome == "error" and "coordinator lost" in (runs[ids[0]].error or "")
    assert runs[ids[1]].state == "pending" and runs[ids[1]].lease_owner is None
    assert {runs[c].retry_of for c in report.created} == {ids[0], ids[3]}
    assert store.recover(job_id, "me:1:1:x").created == []  # idempotent


def test_cancel_job_cancels_pending_runs_and_blocks_claims(db: sessionmaker[Session]) -> None:
    store = SqlRunStore(db, RetryPolicy())
    job_id, ids = _job(db, 3)
    assert store.claim(job_id, [ids[0]], "me:1:1:x", 60) == {ids[0]}
    assert cancel_job(db, job_id) == 2
    assert store.claim(job_id, ids, "me:1:1:x", 60) == set()
    assert store.renew(job_id, "me:1:1:x", [ids[0]], 60).job_cancelled
    settled = store.settle(job_id, ids[0], "me:1:1:x", "cancelled", "cancelled")
    assert settled.follow_up is None  # nothing is replaced after a cancel
    assert store.unfinished(job_id) == 0
    with db() as s:
        assert s.get(Job, job_id).cancelled_at is not None  # type: ignore[union-attr]


def test_coordinator_on_sqlite_in_simulated_time_with_crash_and_resume(db: sessionmaker[Session]) -> None:
    def behaviour(run: ClaimedRun) -> FakeRun:
        r = random.Random(run.run_id)
        return FakeRun(r.uniform(5, 30), r.uniform(30, 300), 5, "error" if r.random() < 0.15 else "passed")

    job_id, _ids = _job(db, 24)

    async def first(loop: VirtualClockLoop) -> set[str]:
        store = SqlRunStore(db, RetryPolicy(limit=3, backoff_s=5), clock=loop.wall_clock, blocking=False)
        ex = FakeExecutor(behaviour, on_start=store.mark_started)
        coord = Coordinator(
            job_id,
            store,
            ex,
            make_hosts(2, 3),
            FakeCatalog(),
            owner=DEAD_OWNER,
            config=CoordinatorConfig(poll_s=30, heartbeat_s=10),
        )
        task = asyncio.create_task(coord.run())
        await asyncio.sleep(200)
        task.cancel()  # the process "dies": nothing settles, leases stay with a dead owner
        with pytest.raises(asyncio.CancelledError):
            await task
        return set(ex.stats.executions)

    ran_first = run_simulated(first)
    unfinished = [r for r in _runs(db, job_id) if r.state not in ("pending", "finished")]
    assert unfinished and all(r.lease_owner == DEAD_OWNER for r in unfinished)

    async def resume(loop: VirtualClockLoop) -> tuple[set[str], int]:
        store = SqlRunStore(db, RetryPolicy(limit=3, backoff_s=5), clock=loop.wall_clock, blocking=False)
        ex = FakeExecutor(behaviour, on_start=store.mark_started)
        coord = Coordinator(
            job_id,
            store,
            ex,
            make_hosts(2, 3),
            FakeCatalog(),
            owner="me:1:1:resume",
            config=CoordinatorConfig(poll_s=30, heartbeat_s=10),
        )
        summary = await coord.run()
        assert summary.complete
        assert set(ex.stats.executions.values()) == {1}
        return set(ex.stats.executions), summary.lost

    ran_second, lost = run_simulated(resume)
    assert not ran_first & ran_second  # no run row executed twice
    assert lost == len(unfinished)
    runs = _runs(db, job_id)
    assert all(r.state == "finished" for r in runs)
    # every cell ends with exactly one final run; each retry points at a finished run
    replaced = {r.retry_of for r in runs if r.retry_of}
    finals = [r for r in runs if r.id not in replaced]
    assert sorted(r.task_id for r in finals) == sorted(f"t{i}" for i in range(24))


def _thread_coordinator(
    db: sessionmaker[Session], job_id: str, owner: str, out: dict[str, object], start: threading.Barrier
) -> None:
    async def go() -> None:
        store = SqlRunStore(db, RetryPolicy(limit=1, backoff_s=0.05))
        seen: list[str] = []

        def behaviour(run: ClaimedRun) -> FakeRun:
            seen.append(run.run_id)
            r = random.Random(run.run_id)
            return FakeRun(0.005, r.uniform(0.05, 0.15), 0.005, "error" if r.random() < 0.1 else "passed")

        ex = FakeExecutor(behaviour, on_start=store.mark_started)
        coord = Coordinator(
            job_id,
            store,
            ex,
            make_hosts(1, 3, boot_concurrency=3),
            FakeCatalog(),
            owner=owner,
            config=CoordinatorConfig(poll_s=0.1, heartbeat_s=0.2, lease_ttl_s=30),
        )
        # both begin claiming together, so neither can finish the job before the other starts
        await asyncio.to_thread(start.wait, 60)
        summary = await coord.run()
        out[owner] = (summary, seen, ex.stats)

    asyncio.run(go())


def share_job_between_two_threads(db: sessionmaker[Session], runs: int = 30) -> None:
    """Two coordinators (own threads, loops and store instances) on one database."""
    job_id, _ = create_job_with_runs(db, "shared", {}, "fake", [NewRun(f"t{i}", "d", 1) for i in range(runs)])
    out: dict[str, object] = {}
    start = threading.Barrier(2)
    threads = [
        threading.Thread(target=_thread_coordinator, args=(db, job_id, f"h{i}:1:1:c{i}", out, start)) for i in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(out) == 2, "a coordinator thread failed"
    seen = [set(v[1]) for v in out.values()]  # type: ignore[index]
    assert not seen[0] & seen[1], "a run was claimed by both coordinators"
    for summary, executed, stats in out.values():  # type: ignore[misc]
        assert summary.complete and not stats.violations
        assert len(executed) == len(set(executed))
    with db() as s:
        rows = list(s.scalars(select(Run).where(Run.job_id == job_id)))
    assert all(r.state == "finished" for r in rows)
    assert len(seen[0] | seen[1]) == len(rows)  # every row ran exactly once, across both
    owners = {r.lease_owner for r in rows}
    assert owners == {"h0:1:1:c0", "h1:1:1:c1"}


def test_two_coordinators_in_two_threads_share_a_sqlite_job(db: sessionmaker[Session]) -> None:
    share_job_between_two_threads(db)
