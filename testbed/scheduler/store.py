"""Where a job's runs live while the scheduler works on them: claims, leases, retries.

The database is the source of truth, so nothing is lost if a coordinator dies:
`testbed launch` writes one `pending` run row per matrix cell x attempt before any run
starts, and every decision below is a committed transaction.

Contracts (both `SqlRunStore` and the in-memory `testbed.testing.memstore.MemoryRunStore`
keep them):

- **Claim.** A coordinator claims a pending run by setting `lease_owner` (its identity) and
  `lease_expires_at` (now + TTL) in one transaction; on PostgreSQL the candidate rows are
  read `FOR UPDATE SKIP LOCKED`, on SQLite the writer transaction is `BEGIN IMMEDIATE`
  (one writer at a time). A run is claimable while `pending`, not leased (or its lease
  expired), not delayed (`not_before` passed) and its job not cancelled. So a run is
  claimed by at most one live coordinator and executes at most once: a row is never put
  back to `pending` once it has started.
- **Lease.** The owner renews its leases by heartbeat (`renew`). A lease is dead when it
  expired, or — without waiting — when its owner is a process on this host that no longer
  exists (the identity records host, pid and process start time).
- **Recovery** (`recover`, at coordinator start and whenever it idles): a pending run
  leased by a dead owner returns to pending; a run that had *started* under a dead owner is
  finished as `error` ("coordinator lost") — its partial record is kept, never re-run — and
  its cell gets a follow-up run under the retry policy below. Cells whose latest run ended
  without the follow-up it calls for (a crash between the two writes) get it now.
- **Settle.** When a run's task ends, its owner settles it: the row is finished with the
  executor's outcome if the runner did not finish it (the runner's own record wins
  otherwise, unless `override` — the watchdog turning a timed-out run into `error`), the
  lease is dropped (`lease_owner` stays as a record of who ran it) and the follow-up run,
  if any, is inserted in the same transaction.
- **Retries** (the chosen design): a retry is a NEW run row of the same cell (same task,
  variant and attempt) with `retry` + 1, `retry_of` = the failed run and `not_before` = now
  + the backoff; the failed run keeps its full record and its `error` outcome. Harness
  errors (`error`, including a lost coordinator and the watchdog) are retried while
  `retry < limit`; agent failures (`failed`) and passes are final. A run `cancelled` by a
  coordinator shutting down (Ctrl-C, SIGTERM) is replaced by a new pending row with the
  same `retry` (an interruption is not a harness error), so `--resume` runs it again; after
  `testbed jobs cancel` nothing is replaced.
- Seeds: a job over several seeds has one cell per (task, variant, attempt, seed); the
  seed travels on the pending row as `config.seed`, and a follow-up copies it.
- A follow-up is inserted at most once per run (checked under the job's row lock on
  PostgreSQL, the single-writer transaction on SQLite).

Beside this module: lease-owner identities and liveness (`testbed.scheduler.leaseowner`),
the retry rule (`testbed.scheduler.followups`), and the job with its pending rows
(`testbed.scheduler.jobrows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from testbed.analysis.redact import redact
from testbed.db.engine import writer_engine
from testbed.db.models import Job, Phase, Run, new_id
from testbed.db.recorder import clean_text, engine_of
from testbed.db.types import utcnow
from testbed.model.job import RetryPolicy
from testbed.scheduler.followups import CellRow, cells_needing_follow_up, follow_up_of
from testbed.scheduler.jobrows import scenario_config, seed_of
from testbed.scheduler.leaseowner import lease_dead

Clock = Callable[[], datetime]
LOST = "coordinator lost"


# --- values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingRun:
    """A pending run row as the coordinator queues it."""

    run_id: str
    task_id: str
    image: str
    agent: str
    attempt: int
    retry: int = 0
    not_before: datetime | None = None
    seq: int = 0  # creation order, for FIFO among equals
    seed: int | None = None  # the scenario (`runs.config.seed`); None: the default seed


@dataclass
class RecoverReport:
    returned: list[str] = field(default_factory=list)  # back to pending (never started)
    lost: list[str] = field(default_factory=list)  # started under a dead owner: finished as error
    created: list[str] = field(default_factory=list)  # follow-up runs inserted
    cancelled: list[str] = field(default_factory=list)  # pending runs of a cancelled job


@dataclass(frozen=True)
class Renewal:
    renewed: frozenset[str]
    job_cancelled: bool


@dataclass(frozen=True)
class Settled:
    outcome: str  # the run's recorded outcome
    follow_up: PendingRun | None
    lost: bool = False  # the run was no longer ours (another coordinator recovered it)


class RunStore(Protocol):
    """What the coordinator needs from the run database (see module contract).

    `blocking`: whether the methods block (the coordinator then calls them in a thread)."""

    blocking: bool

    def recover(self, job_id: str, owner: str) -> RecoverReport: ...

    def pending(self, job_id: str) -> list[PendingRun]: ...

    def claim(self, job_id: str, run_ids: Sequence[str], owner: str, ttl_s: float) -> set[str]: ...

    def release(self, run_ids: Sequence[str], owner: str) -> None: ...

    def renew(self, job_id: str, owner: str, run_ids: Sequence[str], ttl_s: float) -> Renewal: ...

    def settle(
        self, job_id: str, run_id: str, owner: str, outcome: str, error: str | None, *, override: bool = False
    ) -> Settled: ...

    def unfinished(self, job_id: str) -> int: ...

    def now(self) -> datetime: ...


# --- SQL -------------------------------------------------------------------------------


def _error_text(error: str | None) -> str | None:
    """A run's error as stored: redacted like every text the run recorder writes."""
    return clean_text(redact(error).text) if error is not None else None


def finish_row(session: Session, run: Run, outcome: str, error: str | None, now: datetime) -> None:
    run.state = "finished"
    run.outcome = outcome
    run.error = _error_text(error)
    run.reward = 0.0 if outcome == "failed" else None
    run.finished_at = now
    run.lease_expires_at = None
    if run.started_at is None:
        run.started_at = now
    status = "cancelled" if outcome == "cancelled" else "error"
    for phase in session.scalars(select(Phase).where(Phase.run_id == run.id, Phase.finished_at.is_(None))):
        phase.finished_at = now
        phase.status = status


class SqlRunStore:
    """`RunStore` on the run database (SQLite or PostgreSQL)."""

    def __init__(
        self, db: sessionmaker[Session], retry: RetryPolicy, *, clock: Clock = utcnow, blocking: bool = True
    ) -> None:
        self.engine = writer_engine(engine_of(db))
        self.retry = retry
        self.clock = clock
        self.blocking = blocking

    def now(self) -> datetime:
        return self.clock()

    def _tx(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def _lock_job(self, session: Session, job_id: str) -> Job:
        job = session.scalars(select(Job).where(Job.id == job_id).with_for_update()).first()
        if job is None:
            raise LookupError(f"no job {job_id!r} in the database")
        return job

    def _insert_follow_up(self, session: Session, run: Run, retry: int, delay: float, now: datetime) -> PendingRun:
        new = Run(
            id=new_id(),
            job_id=run.job_id,
            task_id=run.task_id,
            task_category=run.task_category,
            variant=run.variant,
            image=run.image,
            agent=run.agent,
            attempt=run.attempt,
            state="pending",
            created_at=now,
            retry=retry,
            retry_of=run.id,
            not_before=now + timedelta(seconds=delay) if delay > 0 else None,
            config=scenario_config(seed_of(run.config)),
        )
        session.add(new)
        seed = seed_of(run.config)
        return PendingRun(new.id, run.task_id, run.image or "", run.agent, run.attempt, retry, new.not_before, 0, seed)

    def _follow_up(self, session: Session, run: Run, cancelled: bool, now: datetime) -> PendingRun | None:
        assert run.outcome is not None
        decision = follow_up_of(run.outcome, run.retry, self.retry, cancelled)
        if decision is None:
            return None
        exists = session.scalar(select(func.count()).select_from(Run).where(Run.retry_of == run.id))
        if exists:
            return None
        return self._insert_follow_up(session, run, decision[0], decision[1], now)

    def recover(self, job_id: str, owner: str) -> RecoverReport:
        report = RecoverReport()
        now = self.clock()
        with self._tx() as session, session.begin():
            job = self._lock_job(session, job_id)
            cancelled = job.cancelled_at is not None
            open_runs = session.scalars(select(Run).where(Run.job_id == job_id, Run.state != "finished")).all()
            for run in open_runs:
                if run.lease_owner == owner or not lease_dead(run.lease_owner, run.lease_expires_at, now):
                    continue
                if run.state == "pending":
                    if cancelled:
                        finish_row(session, run, "cancelled", "job cancelled", now)
                        report.cancelled.append(run.id)
                    elif run.lease_owner is not None:
                        run.lease_owner = None
                        run.lease_expires_at = None
                        report.returned.append(run.id)
                else:
                    finish_row(session, run, "error", f"{LOST}: {run.lease_owner or 'no owner'} stopped "
                                f"renewing its lease while the run was in state '{run.state}'", now)
                    report.lost.append(run.id)
            session.flush()
            rows = [
                CellRow(r[0], r[1], r[2] or "", r[3], r[4], r[5], r[6], r[7], r[8], r[9], seed_of(r[10]))
                for r in session.execute(
                    select(Run.id, Run.task_id, Run.image, Run.agent, Run.attempt, Run.retry, Run.state,
                           Run.outcome, Run.created_at, Run.retry_of, Run.config).where(Run.job_id == job_id)
                )
            ]
            for latest in cells_needing_follow_up(rows):
                if follow_up_of(latest.outcome or "", latest.retry, self.retry, cancelled) is None:
                    continue
                row = session.get(Run, latest.run_id)
                assert row is not None
                made = self._follow_up(session, row, cancelled, now)
                if made is not None:
                    report.created.append(made.run_id)
        return report

    def pending(self, job_id: str) -> list[PendingRun]:
        now = self.clock()
        with self._tx() as session:
            if session.scalar(select(Job.cancelled_at).where(Job.id == job_id)) is not None:
                return []
            rows = session.execute(
                select(Run.id, Run.task_id, Run.image, Run.agent, Run.attempt, Run.retry, Run.not_before, Run.config)
                .where(
                    Run.job_id == job_id,
                    Run.state == "pending",
                    or_(Run.lease_owner.is_(None), Run.lease_expires_at < now),
                )
                .order_by(Run.created_at, Run.id)
            ).all()
        return [
            PendingRun(r[0], r[1], r[2] or "", r[3], r[4], r[5], r[6], i, seed_of(r[7])) for i, r in enumerate(rows)
        ]

    def claim(self, job_id: str, run_ids: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        if not run_ids:
            return set()
        now = self.clock()
        with self._tx() as session, session.begin():
            if session.scalar(select(Job.cancelled_at).where(Job.id == job_id)) is not None:
                return set()
            got = set(
                session.scalars(
                    select(Run.id)
                    .where(
                        Run.id.in_(list(run_ids)),
                        Run.job_id == job_id,
                        Run.state == "pending",
                        or_(Run.lease_owner.is_(None), Run.lease_expires_at < now),
                        or_(Run.not_before.is_(None), Run.not_before <= now),
                    )
                    .with_for_update(skip_locked=True)
                )
            )
            if got:
                session.execute(
                    update(Run)
                    .where(Run.id.in_(list(got)))
                    .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=ttl_s))
                )
        return got

    def release(self, run_ids: Sequence[str], owner: str) -> None:
        if not run_ids:
            return
        with self._tx() as session, session.begin():
            session.execute(
                update(Run)
                .where(Run.id.in_(list(run_ids)), Run.lease_owner == owner, Run.state == "pending")
                .values(lease_owner=None, lease_expires_at=None)
            )

    def renew(self, job_id: str, owner: str, run_ids: Sequence[str], ttl_s: float) -> Renewal:
        now = self.clock()
        with self._tx() as session, session.begin():
            cancelled = session.scalar(select(Job.cancelled_at).where(Job.id == job_id)) is not None
            ours = set(
                session.scalars(select(Run.id).where(Run.id.in_(list(run_ids)), Run.lease_owner == owner))
            ) if run_ids else set()
            if ours:
                session.execute(
                    update(Run)
                    .where(Run.id.in_(list(ours)), Run.state != "finished")
                    .values(lease_expires_at=now + timedelta(seconds=ttl_s))
                )
        return Renewal(frozenset(ours), cancelled)

    def settle(
        self, job_id: str, run_id: str, owner: str, outcome: str, error: str | None, *, override: bool = False
    ) -> Settled:
        now = self.clock()
        with self._tx() as session, session.begin():
            job = self._lock_job(session, job_id)
            run = session.get(Run, run_id)
            if run is None:
                raise LookupError(f"run {run_id!r} vanished from the database")
            if run.lease_owner != owner:
                return Settled(run.outcome or outcome, None, lost=True)
            if run.state != "finished":
                finish_row(session, run, outcome, error, now)
            elif override:
                run.outcome = outcome
                run.error = _error_text(error)
                run.reward = None
            run.lease_expires_at = None
            session.flush()
            follow = self._follow_up(session, run, job.cancelled_at is not None, now)
            return Settled(run.outcome or outcome, follow)

    def mark_started(self, run_id: str, state: str = "provisioning") -> None:
        """Move a run out of `pending` as the runner does (for fake executors in tests)."""
        now = self.clock()
        with self._tx() as session, session.begin():
            session.execute(update(Run).where(Run.id == run_id).values(state=state, started_at=now))

    def unfinished(self, job_id: str) -> int:
        with self._tx() as session:
            return int(
                session.scalar(
                    select(func.count()).select_from(Run).where(Run.job_id == job_id, Run.state != "finished")
                )
                or 0
            )


# --- jobs ------------------------------------------------------------------------------


def cancel_job(db: sessionmaker[Session], job_id: str) -> int:
    """Mark the job cancelled and finish its unclaimed pending runs as `cancelled`; return
    how many. Running runs are stopped by their coordinators at their next heartbeat."""
    now = utcnow()
    with Session(writer_engine(engine_of(db)), expire_on_commit=False) as session, session.begin():
        job = session.scalars(select(Job).where(Job.id == job_id).with_for_update()).first()
        if job is None:
            raise LookupError(job_id)
        if job.cancelled_at is None:
            job.cancelled_at = now
        count = 0
        for run in session.scalars(select(Run).where(Run.job_id == job_id, Run.state == "pending")):
            if lease_dead(run.lease_owner, run.lease_expires_at, now):
                finish_row(session, run, "cancelled", "job cancelled", now)
                count += 1
        return count
