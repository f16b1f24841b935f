"""An in-memory `RunStore` with the contract of `SqlRunStore` (see testbed.scheduler.store).

Used by the scheduler benchmark (so it measures scheduling, not SQLite) and by fast unit
tests. Non-blocking: the coordinator calls it inline. Several coordinators in one event
loop may share one instance (every method is atomic: no await inside).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from testbed.db.models import new_id
from testbed.db.types import utcnow
from testbed.model.job import RetryPolicy
from testbed.scheduler.followups import CellRow, cells_needing_follow_up, follow_up_of
from testbed.scheduler.jobrows import NewRun
from testbed.scheduler.leaseowner import lease_dead
from testbed.scheduler.store import LOST, Clock, PendingRun, RecoverReport, Renewal, Settled


@dataclass
class MemRun:
    id: str
    job_id: str
    task_id: str
    image: str
    agent: str
    attempt: int
    seq: int
    created_at: datetime
    retry: int = 0
    retry_of: str | None = None
    state: str = "pending"
    outcome: str | None = None
    error: str | None = None
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    not_before: datetime | None = None
    started: bool = False  # the executor began it (the real runner moves `state` instead)
    settles: int = 0  # how many times it was finished (tests check: exactly once)
    seed: int | None = None

    def pending_view(self) -> PendingRun:
        return PendingRun(
            self.id, self.task_id, self.image, self.agent, self.attempt, self.retry, self.not_before, self.seq,
            self.seed,
        )


@dataclass
class MemJob:
    id: str
    name: str
    cancelled: bool = False
    runs: dict[str, MemRun] = field(default_factory=dict)


class MemoryRunStore:
    """See module docstring."""

    blocking = False

    def __init__(self, retry: RetryPolicy, *, clock: Clock = utcnow) -> None:
        self.retry = retry
        self.clock = clock
        self.jobs: dict[str, MemJob] = {}
        self._seq = 0
        # claimable pending runs per job, by id (kept in sync so `pending` is O(pending))
        self._pending: dict[str, dict[str, MemRun]] = {}

    def now(self) -> datetime:
        return self.clock()

    # -- setup ------------------------------------------------------------------------
    def create_job(self, name: str, agent: str, runs: Sequence[NewRun]) -> tuple[str, list[str]]:
        job = MemJob(new_id(), name)
        self.jobs[job.id] = job
        self._pending[job.id] = {}
        ids = [self._add(job, r.task_id, r.image, r.agent or agent, r.attempt, seed=r.seed).id for r in runs]
        return job.id, ids

    def _add(
        self,
        job: MemJob,
        task_id: str,
        image: str,
        agent: str,
        attempt: int,
        *,
        retry: int = 0,
        retry_of: str | None = None,
        not_before: datetime | None = None,
        seed: int | None = None,
    ) -> MemRun:
        self._seq += 1
        run = MemRun(
            new_id(),
            job.id,
            task_id,
            image,
            agent,
            attempt,
            self._seq,
            self.clock(),
            retry=retry,
            retry_of=retry_of,
            not_before=not_before,
            seed=seed,
        )
        job.runs[run.id] = run
        self._pending[job.id][run.id] = run
        return run

    def mark_started(self, run_id: str, state: str = "provisioning") -> None:
        """What the runner does when it starts a run (the fake executor calls it)."""
        for job in self.jobs.values():
            run = job.runs.get(run_id)
            if run is not None:
                run.started = True
                run.state = state
                self._pending[job.id].pop(run_id, None)
                return
        raise LookupError(run_id)

    # -- RunStore ---------------------------------------------------------------------
    def _finish(self, job: MemJob, run: MemRun, outcome: str, error: str | None) -> None:
        run.state = "finished"
        run.outcome = outcome
        run.error = error
        run.lease_expires_at = None
        run.settles += 1
        self._pending[job.id].pop(run.id, None)

    def _follow_up(self, job: MemJob, run: MemRun) -> PendingRun | None:
        assert run.outcome is not None
        decision = follow_up_of(run.outcome, run.retry, self.retry, job.cancelled)
        if decision is None or any(r.retry_of == run.id for r in job.runs.values()):
            return None
        retry, delay = decision
        nb = self.clock() + timedelta(seconds=delay) if delay > 0 else None
        return self._add(
            job, run.task_id, run.image, run.agent, run.attempt, retry=retry, retry_of=run.id, not_before=nb,
            seed=run.seed,
        ).pending_view()

    def recover(self, job_id: str, owner: str) -> RecoverReport:
        job = self.jobs[job_id]
        report = RecoverReport()
        now = self.clock()
        for run in list(job.runs.values()):
            if run.state == "finished" or run.lease_owner == owner:
                continue
            if not lease_dead(run.lease_owner, run.lease_expires_at, now):
                continue
            if run.state == "pending" and not run.started:
                if job.cancelled:
                    self._finish(job, run, "cancelled", "job cancelled")
                    report.cancelled.append(run.id)
                elif run.lease_owner is not None:
                    run.lease_owner = run.lease_expires_at = None
                    self._pending[job_id][run.id] = run
                    report.returned.append(run.id)
            else:
                self._finish(job, run, "error", f"{LOST}: {run.lease_owner} stopped renewing its lease")
                report.lost.append(run.id)
        rows = [
            CellRow(
                r.id, r.task_id, r.image, r.agent, r.attempt, r.retry, r.state, r.outcome, r.created_at, r.retry_of,
                r.seed,
            )
            for r in job.runs.values()
        ]
        for latest in cells_needing_follow_up(rows):
            made = self._follow_up(job, job.runs[latest.run_id])
            if made is not None:
                report.created.append(made.run_id)
        return report

    def pending(self, job_id: str) -> list[PendingRun]:
        job = self.jobs[job_id]
        if job.cancelled:
            return []
        now = self.clock()
        out = [
            r.pending_view()
            for r in self._pending[job_id].values()
            if r.lease_owner is None or (r.lease_expires_at is not None and r.lease_expires_at < now)
        ]
        out.sort(key=lambda p: p.seq)
        return out

    def claim(self, job_id: str, run_ids: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        job = self.jobs[job_id]
        if job.cancelled:
            return set()
        now = self.clock()
        got: set[str] = set()
        for run_id in run_ids:
            run = job.runs.get(run_id)
            if run is None or run.state != "pending" or run.started:
                continue
            if run.lease_owner is not None and run.lease_expires_at is not None and run.lease_expires_at >= now:
                continue
            if run.not_before is not None and run.not_before > now:
                continue
            run.lease_owner = owner
            run.lease_expires_at = now + timedelta(seconds=ttl_s)
            got.add(run_id)
        return got

    def release(self, run_ids: Sequence[str], owner: str) -> None:
        for job in self.jobs.values():
            for run_id in run_ids:
                run = job.runs.get(run_id)
                if run is not None and run.lease_owner == owner and run.state == "pending" and not run.started:
                    run.lease_owner = run.lease_expires_at = None

    def renew(self, job_id: str, owner: str, run_ids: Sequence[str], ttl_s: float) -> Renewal:
        job = self.jobs[job_id]
        now = self.clock()
        ours = set()
        for run_id in run_ids:
            run = job.runs.get(run_id)
            if run is not None and run.lease_owner == owner:
                ours.add(run_id)
                if run.state != "finished":
                    run.lease_expires_at = now + timedelta(seconds=ttl_s)
        return Renewal(frozenset(ours), job.cancelled)

    def settle(
        self, job_id: str, run_id: str, owner: str, outcome: str, error: str | None, *, override: bool = False
    ) -> Settled:
        job = self.jobs[job_id]
        run = job.runs[run_id]
        if run.lease_owner != owner:
            return Settled(run.outcome or outcome, None, lost=True)
        if run.state != "finished":
            self._finish(job, run, outcome, error)
        elif override:
            run.outcome, run.error = outcome, error
        run.lease_expires_at = None
        assert run.outcome is not None
        return Settled(run.outcome, self._follow_up(job, run))

    def unfinished(self, job_id: str) -> int:
        return sum(1 for r in self.jobs[job_id].runs.values() if r.state != "finished")

    # -- jobs -------------------------------------------------------------------------
    def cancel_job(self, job_id: str) -> int:
        job = self.jobs[job_id]
        job.cancelled = True
        now = self.clock()
        count = 0
        for run in list(job.runs.values()):
            if run.state == "pending" and not run.started and lease_dead(run.lease_owner, run.lease_expires_at, now):
                self._finish(job, run, "cancelled", "job cancelled")
                count += 1
        return count
