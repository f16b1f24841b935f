"""Jobs (batches of runs) and their progress.

Contracts:

- `JobProgress` is a job with its runs counted by outcome (`counts`) and its unfinished
  runs counted by state (`states`); `pending` and `running` split the unfinished ones.
- `recent_jobs` gives the newest `limit` jobs, newest first, counted with ONE grouped query.
- `job_detail(session, ref)` resolves the job (`testbed.db.read.ids`, field `JOB_ID`) and
  lists every run of it (retries included) by task, variant, agent, attempt and creation.
- `final_errors(session, job_id)` counts the job's matrix cells whose LAST run (one no
  retry replaced) ended as `error`; `final_counts_by_category` counts those last runs by
  outcome per task category (what promotion gates judge); `final_runs` lists them with
  their residue findings (what task validation reports).
- `job_choices` is (id, name) of the newest jobs, for a drop-down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import Finding, Job, Run
from testbed.db.read.ids import resolve_job_id
from testbed.db.read.rates import UNKNOWN, OutcomeCounts, count_outcomes, fold
from testbed.model.vocab import FindingKind, Outcome, RunState


@dataclass
class JobProgress:
    """A job and its runs by state (unfinished ones) and by outcome (finished ones)."""

    id: str
    name: str
    created_at: datetime
    counts: OutcomeCounts
    states: dict[str, int]
    cancelled_at: datetime | None = None

    @property
    def done(self) -> int:
        """Runs that have an outcome."""
        return self.counts.done

    @property
    def pending(self) -> int:
        """Unfinished runs that have not started."""
        return self.states.get(RunState.PENDING, 0)

    @property
    def running(self) -> int:
        """Unfinished runs past `pending`."""
        return self.counts.unfinished - self.pending


@dataclass(frozen=True)
class JobRun:
    """One run of a job, as `jobs show` lists it."""

    id: str
    task_id: str
    variant: str | None
    agent: str
    attempt: int
    retry: int
    state: str
    outcome: str | None
    host: str | None
    lease_owner: str | None
    error: str | None


@dataclass
class JobDetail:
    """A job, its settings (`config`) and every run of it."""

    job: JobProgress
    config: dict[str, Any]
    runs: list[JobRun]


def progress_of(session: Session, jobs: Sequence[tuple[str, str, datetime, datetime | None]]) -> list[JobProgress]:
    """`JobProgress` of each (id, name, created_at, cancelled_at), in the given order."""
    if not jobs:
        return []
    counts = {j[0]: OutcomeCounts(j[0]) for j in jobs}
    states: dict[str, dict[str, int]] = {j[0]: {} for j in jobs}
    stmt = (
        select(Run.job_id, Run.state, Run.outcome, func.count())
        .where(Run.job_id.in_(list(counts)))
        .group_by(Run.job_id, Run.state, Run.outcome)
    )
    for job_id, state, outcome, n in session.execute(stmt):
        key = str(job_id)
        counts[key].add(outcome, n)
        if outcome is None:
            states[key][state] = states[key].get(state, 0) + n
    return [JobProgress(i, name, created, counts[i], states[i], cancelled) for i, name, created, cancelled in jobs]


def recent_jobs(session: Session, limit: int = 20) -> list[JobProgress]:
    """The newest `limit` jobs with their progress, newest first."""
    stmt = select(Job.id, Job.name, Job.created_at, Job.cancelled_at).order_by(Job.created_at.desc()).limit(limit)
    return progress_of(session, [(r.id, r.name, r.created_at, r.cancelled_at) for r in session.execute(stmt)])


def job_choices(session: Session, limit: int = 200) -> list[tuple[str, str]]:
    """(id, name) of the newest `limit` jobs."""
    stmt = select(Job.id, Job.name).order_by(Job.created_at.desc()).limit(limit)
    return [(i, name) for i, name in session.execute(stmt)]


def job_names(session: Session, job_ids: set[str]) -> dict[str, str]:
    """Job id → name for the given ids."""
    if not job_ids:
        return {}
    return {i: name for i, name in session.execute(select(Job.id, Job.name).where(Job.id.in_(job_ids)))}


def job_detail(session: Session, ref: str) -> JobDetail:
    """The job named by `ref` with every run of it (see the module contract)."""
    job = session.get(Job, resolve_job_id(session, ref, field="JOB_ID"))
    assert job is not None
    [progress] = progress_of(session, [(job.id, job.name, job.created_at, job.cancelled_at)])
    order = (Run.task_id, Run.variant, Run.agent, Run.attempt, Run.created_at)
    stmt = select(Run).where(Run.job_id == job.id).order_by(*order)
    runs = [
        JobRun(r.id, r.task_id, r.variant, r.agent, r.attempt, r.retry, r.state, r.outcome, r.host, r.lease_owner,
               r.error)
        for r in session.scalars(stmt)
    ]  # fmt: skip
    return JobDetail(progress, dict(job.config or {}), runs)


def final_errors(session: Session, job_id: str) -> int:
    """Cells of the job whose last run ended as `error` (after every retry)."""
    replaced = select(Run.retry_of).where(Run.job_id == job_id, Run.retry_of.is_not(None))
    stmt = (
        select(func.count())
        .select_from(Run)
        .where(Run.job_id == job_id, Run.outcome == Outcome.ERROR, Run.id.not_in(replaced))
    )
    return int(session.scalar(stmt) or 0)


def final_counts_by_category(session: Session, job_id: str) -> dict[str, OutcomeCounts]:
    """The job's final runs (the last run of every cell: one no retry replaced) counted by
    outcome per task category (NULL → `UNKNOWN`)."""
    replaced = select(Run.retry_of).where(Run.job_id == job_id, Run.retry_of.is_not(None))
    rows = count_outcomes(session, Run.task_category, where=[Run.job_id == job_id, Run.id.not_in(replaced)])
    return fold(rows, UNKNOWN)


@dataclass(frozen=True)
class FinalRun:
    """The last run of one cell of a job, with what task validation reports of it."""

    id: str
    task_id: str
    variant: str | None
    agent: str
    attempt: int
    outcome: str | None
    residue: str | None
    residue_findings: list[str]
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


def final_runs(session: Session, job_id: str) -> list[FinalRun]:
    """The job's final runs (one per cell: no retry replaced it) by task, variant and
    attempt, each with the summaries of its residue findings."""
    replaced = select(Run.retry_of).where(Run.job_id == job_id, Run.retry_of.is_not(None))
    order = (Run.task_id, Run.variant, Run.agent, Run.attempt)
    runs = list(session.scalars(select(Run).where(Run.job_id == job_id, Run.id.not_in(replaced)).order_by(*order)))
    summaries: dict[str, list[str]] = {r.id: [] for r in runs}
    if runs:
        stmt = select(Finding.run_id, Finding.node, Finding.category, Finding.summary).where(
            Finding.run_id.in_(list(summaries)), Finding.kind == FindingKind.RESIDUE
        ).order_by(Finding.id)
        for run_id, node, category, summary in session.execute(stmt):
            summaries[run_id].append(f"{node}: {category}: {summary}" if node else f"{category}: {summary}")
    return [
        FinalRun(r.id, r.task_id, r.variant, r.agent, r.attempt, r.outcome, r.residue, summaries[r.id], r.error,
                 r.started_at, r.finished_at)
        for r in runs
    ]  # fmt: skip
