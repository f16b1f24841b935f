"""Read-side queries of the run database (CLI, dashboard, reports).

Contracts:

- Results are plain frozen dataclasses, detached from any session; `to_dict()` returns
  JSON-ready data (datetimes as ISO 8601 strings with offset, in UTC).
- A run is named by its full id or a unique prefix of at least `MIN_PREFIX` characters.
  Unknown → `RunNotFound`; several matches → `AmbiguousRunId`; both are `InputError`
  (CLI exit status 2).
- `run_detail` never loads snapshot data, only which (node, point) snapshots exist.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.models import (
    OUTCOMES,
    Check,
    Command,
    Finding,
    Node,
    Phase,
    Run,
    Snapshot,
    short_id,
)
from testbed.errors import InputError

MIN_PREFIX = 6
"""Shortest run-id prefix accepted."""


class RunNotFound(InputError):
    """No run matches the given id or prefix."""

    def __init__(self, ref: str) -> None:
        super().__init__(None, "run id", f"no run matches {ref!r}")


class AmbiguousRunId(InputError):
    """Several runs match the given prefix."""

    def __init__(self, ref: str, matches: list[str]) -> None:
        self.matches = matches
        listed = ", ".join(matches)
        super().__init__(None, "run id", f"{ref!r} matches several runs ({listed}); give more characters")


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


class _ToDict:
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of this record (datetimes as ISO 8601 strings)."""
        result = _jsonable(asdict(self))  # type: ignore[call-overload]
        assert isinstance(result, dict)
        return result


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


@dataclass(frozen=True)
class RunSummary(_ToDict):
    """One line of `runs list`."""

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
        return cls(
            id=run.id,
            short_id=short_id(run.id),
            job_id=run.job_id,
            task_id=run.task_id,
            task_category=run.task_category,
            variant=run.variant,
            image=run.image,
            agent=run.agent,
            attempt=run.attempt,
            state=run.state,
            outcome=run.outcome,
            reward=run.reward,
            residue=run.residue,
            host=run.host,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            duration_s=_seconds(run.started_at, run.finished_at),
            error=run.error,
        )


@dataclass(frozen=True)
class PhaseInfo(_ToDict):
    """A timed phase; `duration_s` is None while it is open."""

    name: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    duration_s: float | None
    detail: str | None


@dataclass(frozen=True)
class NodeInfo(_ToDict):
    """A node of the run's lab."""

    name: str
    image: str | None
    os_release: str | None
    domain_name: str | None
    mgmt_ip: str | None


@dataclass(frozen=True)
class CommandInfo(_ToDict):
    """A recorded command, every column."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    started_at: datetime
    duration_ms: int
    impact: list[str]
    redacted: list[str] | None
    error: str | None


@dataclass(frozen=True)
class SnapshotPoint(_ToDict):
    """That a snapshot of `node` at `point` exists (its data is not loaded)."""

    id: int
    node: str
    point: str
    taken_at: datetime


@dataclass(frozen=True)
class CheckInfo(_ToDict):
    """A check result."""

    id: int
    requirement: str
    description: str | None
    point: str | None
    node: str | None
    status: str
    detail: Any


@dataclass(frozen=True)
class FindingInfo(_ToDict):
    """A finding; `command_seq` is the seq of `command_id` when set."""

    id: int
    node: str | None
    kind: str
    category: str
    summary: str
    evidence: Any
    command_id: int | None
    command_seq: int | None


@dataclass(frozen=True)
class RunDetail(_ToDict):
    """Everything `runs show` displays."""

    run: RunSummary
    config: Any
    phases: list[PhaseInfo]
    nodes: list[NodeInfo]
    commands: list[CommandInfo]
    snapshots: list[SnapshotPoint]
    checks: list[CheckInfo]
    findings: list[FindingInfo]


def resolve_run_id(session: Session, ref: str) -> str:
    """The full id of the run named by `ref` (full id or unique prefix ≥ `MIN_PREFIX`)."""
    ref = ref.strip().lower()
    if session.get(Run, ref) is not None:
        return ref
    if len(ref) < MIN_PREFIX:
        raise InputError(None, "run id", f"{ref!r} is too short: give at least {MIN_PREFIX} characters")
    matches = list(
        session.scalars(select(Run.id).where(Run.id.startswith(ref, autoescape=True)).order_by(Run.id).limit(5))
    )
    if not matches:
        raise RunNotFound(ref)
    if len(matches) > 1:
        raise AmbiguousRunId(ref, [short_id(m) for m in matches])
    return matches[0]


def list_runs(
    session: Session,
    limit: int = 50,
    job_id: str | None = None,
    task: str | None = None,
    outcome: str | None = None,
) -> list[RunSummary]:
    """The newest `limit` runs, newest first; `job_id` matches a job id or its prefix,
    `task` a task id exactly, `outcome` one of `OUTCOMES` (else `InputError`)."""
    if limit < 1:
        raise InputError(None, "limit", f"must be at least 1; got {limit}")
    stmt = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
    if job_id:
        stmt = stmt.where(Run.job_id.startswith(job_id.strip().lower(), autoescape=True))
    if task:
        stmt = stmt.where(Run.task_id == task)
    if outcome:
        if outcome not in OUTCOMES:
            raise InputError(None, "outcome", f"must be one of {', '.join(OUTCOMES)}")
        stmt = stmt.where(Run.outcome == outcome)
    return [RunSummary.of(run) for run in session.scalars(stmt)]


def run_detail(session: Session, run_id_or_prefix: str) -> RunDetail:
    """Everything about one run (see `RunDetail`)."""
    run_id = resolve_run_id(session, run_id_or_prefix)
    run = session.get(Run, run_id)
    assert run is not None
    phases = [
        PhaseInfo(
            name=p.name,
            status=p.status,
            started_at=p.started_at,
            finished_at=p.finished_at,
            duration_s=_seconds(p.started_at, p.finished_at),
            detail=p.detail,
        )
        for p in session.scalars(select(Phase).where(Phase.run_id == run_id).order_by(Phase.id))
    ]
    nodes = [
        NodeInfo(
            name=n.name,
            image=n.image,
            os_release=n.os_release,
            domain_name=n.domain_name,
            mgmt_ip=n.mgmt_ip,
        )
        for n in session.scalars(select(Node).where(Node.run_id == run_id).order_by(Node.id))
    ]
    commands = [
        CommandInfo(
            id=c.id,
            seq=c.seq,
            node=c.node,
            phase=c.phase,
            source=c.source,
            command=c.command,
            exit_code=c.exit_code,
            stdout=c.stdout,
            stderr=c.stderr,
            stdout_truncated=c.stdout_truncated,
            stderr_truncated=c.stderr_truncated,
            timed_out=c.timed_out,
            started_at=c.started_at,
            duration_ms=c.duration_ms,
            impact=list(c.impact or []),
            redacted=list(c.redacted) if c.redacted is not None else None,
            error=c.error,
        )
        for c in session.scalars(select(Command).where(Command.run_id == run_id).order_by(Command.seq))
    ]
    seq_of = {c.id: c.seq for c in commands}
    snapshots = [
        SnapshotPoint(id=row.id, node=row.node, point=row.point, taken_at=row.taken_at)
        for row in session.execute(
            select(Snapshot.id, Snapshot.node, Snapshot.point, Snapshot.taken_at)
            .where(Snapshot.run_id == run_id)
            .order_by(Snapshot.taken_at, Snapshot.id)
        )
    ]
    checks = [
        CheckInfo(
            id=c.id,
            requirement=c.requirement,
            description=c.description,
            point=c.point,
            node=c.node,
            status=c.status,
            detail=c.detail,
        )
        for c in session.scalars(select(Check).where(Check.run_id == run_id).order_by(Check.id))
    ]
    findings = [
        FindingInfo(
            id=f.id,
            node=f.node,
            kind=f.kind,
            category=f.category,
            summary=f.summary,
            evidence=f.evidence,
            command_id=f.command_id,
            command_seq=seq_of.get(f.command_id) if f.command_id is not None else None,
        )
        for f in session.scalars(select(Finding).where(Finding.run_id == run_id).order_by(Finding.id))
    ]
    return RunDetail(
        run=RunSummary.of(run),
        config=run.config,
        phases=phases,
        nodes=nodes,
        commands=commands,
        snapshots=snapshots,
        checks=checks,
        findings=findings,
    )
