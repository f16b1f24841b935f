"""Runs: one line per run, everything about one run, and run durations.

Contracts:

- Results are plain dataclasses detached from any session; `to_dict()` gives JSON-ready
  data (datetimes as ISO 8601 strings with offset, in UTC).
- A run is named by its full id or a prefix (`testbed.db.read.ids`).
- `list_runs` gives the newest `limit` runs matching a `RunFilter`, newest first (by
  creation, ties by id).
- `run_detail` never loads snapshot data, only which (node, point) snapshots exist; with
  `commands=False` it loads no command either (the dashboard pages them). Phases carry
  `start_s`, seconds from the start of the run's first phase (else of the run).
- `completion_times`: per task category (NULL → `UNKNOWN`), min / median / max of
  `finished_at - started_at` over selected runs with both set (any outcome).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import Node, Phase, Run, short_id
from testbed.db.read.checks import CheckInfo, check_infos
from testbed.db.read.commands import CommandInfo, command_infos
from testbed.db.read.filters import RunFilter, check_outcome
from testbed.db.read.findings import FindingInfo, run_findings
from testbed.db.read.ids import resolve_run_id
from testbed.db.read.jsonable import JsonRecord, seconds_between
from testbed.db.read.rates import UNKNOWN
from testbed.db.read.snapshots import SnapshotInfo, snapshot_infos
from testbed.errors import InputError

FINDING_COMMAND_CHARS = 200
"""Characters of an attributed command's text loaded with a run's findings."""


@dataclass(frozen=True)
class RunSummary(JsonRecord):
    """One run, without its children (a line of `runs list`, the head of `runs show`)."""

    id: str
    short_id: str
    job_id: str | None
    task_id: str
    task_category: str | None
    variant: str | None
    image: str | None
    agent: str
    attempt: int
    state: str
    outcome: str | None
    reward: float | None
    residue: str | None
    host: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    error: str | None

    @classmethod
    def of(cls, run: Run) -> RunSummary:
        """The summary of ORM row `run`."""
        return cls(
            id=run.id, short_id=short_id(run.id), job_id=run.job_id, task_id=run.task_id,
            task_category=run.task_category, variant=run.variant, image=run.image, agent=run.agent,
            attempt=run.attempt, state=run.state, outcome=run.outcome, reward=run.reward, residue=run.residue,
            host=run.host, created_at=run.created_at, started_at=run.started_at, finished_at=run.finished_at,
            duration_s=seconds_between(run.started_at, run.finished_at), error=run.error,
        )  # fmt: skip


@dataclass(frozen=True)
class PhaseInfo(JsonRecord):
    """A timed phase; `duration_s` is None while it is open, `start_s` counts from the run's
    first phase."""

    name: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    duration_s: float | None
    detail: str | None
    start_s: float


@dataclass(frozen=True)
class NodeInfo(JsonRecord):
    """A node of the run's lab."""

    name: str
    image: str | None
    os_release: str | None
    domain_name: str | None
    mgmt_ip: str | None


@dataclass(frozen=True)
class RunDetail(JsonRecord):
    """Everything `runs show` displays."""

    run: RunSummary
    config: Any
    phases: list[PhaseInfo]
    nodes: list[NodeInfo]
    commands: list[CommandInfo]
    snapshots: list[SnapshotInfo]
    checks: list[CheckInfo]
    findings: list[FindingInfo]


def list_runs(session: Session, selection: RunFilter | None = None, limit: int = 50) -> list[RunSummary]:
    """The newest `limit` runs matching `selection`, newest first."""
    if limit < 1:
        raise InputError(None, "limit", f"must be at least 1; got {limit}")
    selection = selection or RunFilter()
    check_outcome("outcome", selection.outcome)
    stmt = select(Run).where(*selection.where()).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
    return [RunSummary.of(run) for run in session.scalars(stmt)]


def phase_infos(session: Session, run_id: str, fallback_origin: datetime | None = None) -> list[PhaseInfo]:
    """The run's phases in the order they started; `start_s` counts from the first one's
    start (or `fallback_origin` when there is none)."""
    rows = list(session.scalars(select(Phase).where(Phase.run_id == run_id).order_by(Phase.id)))
    origin = rows[0].started_at if rows else fallback_origin
    return [
        PhaseInfo(
            name=p.name,
            status=p.status,
            started_at=p.started_at,
            finished_at=p.finished_at,
            duration_s=seconds_between(p.started_at, p.finished_at),
            detail=p.detail,
            start_s=seconds_between(origin, p.started_at) or 0.0,
        )
        for p in rows
    ]


def node_infos(session: Session, run_id: str) -> list[NodeInfo]:
    """The nodes of the run's lab in the order they were added."""
    rows = session.scalars(select(Node).where(Node.run_id == run_id).order_by(Node.id))
    return [NodeInfo(n.name, n.image, n.os_release, n.domain_name, n.mgmt_ip) for n in rows]


def run_detail(session: Session, ref: str, *, commands: bool = True) -> RunDetail:
    """Everything about the run named by `ref` (see `RunDetail` and the module contract)."""
    run_id = resolve_run_id(session, ref)
    run = session.get(Run, run_id)
    assert run is not None
    return RunDetail(
        run=RunSummary.of(run),
        config=run.config,
        phases=phase_infos(session, run_id, run.started_at),
        nodes=node_infos(session, run_id),
        commands=command_infos(session, run_id) if commands else [],
        snapshots=snapshot_infos(session, run_id),
        checks=check_infos(session, run_id),
        findings=run_findings(session, run_id, command_chars=FINDING_COMMAND_CHARS),
    )


def run_count(session: Session, selection: RunFilter) -> int:
    """Number of selected runs."""
    return int(session.scalar(select(func.count()).select_from(Run).where(*selection.where())) or 0)


@dataclass(frozen=True)
class CompletionTimes:
    """Run durations of one task category (seconds)."""

    category: str
    runs: int
    min_s: float
    median_s: float
    max_s: float


def completion_times(session: Session, selection: RunFilter) -> list[CompletionTimes]:
    """min / median / max run duration per task category, sorted by category."""
    durations: dict[str, list[float]] = defaultdict(list)
    stmt = select(Run.task_category, Run.started_at, Run.finished_at).where(
        *selection.where(), Run.started_at.is_not(None), Run.finished_at.is_not(None)
    )
    for category, started, finished in session.execute(stmt):
        assert started is not None and finished is not None
        durations[category if category is not None else UNKNOWN].append((finished - started).total_seconds())
    return [
        CompletionTimes(category=k, runs=len(v), min_s=min(v), median_s=float(statistics.median(v)), max_s=max(v))
        for k, v in sorted(durations.items())
    ]
