"""SQLAlchemy models of the run database (see docs/design.md, "Run database").

Contracts:

- Table and column names are the ones docs/design.md fixes; extra columns are additive.
- Run and job ids are strings: a uuid4 hex (32 chars). The short id used in libvirt object
  names is `run_id[:8]` (`short_id()`).
- Every timestamp is `UTCDateTime` (aware UTC in, aware UTC out, on every backend).
- JSON columns are JSONB on PostgreSQL and JSON on SQLite.
- Enumerations are plain strings guarded twice: a named CHECK constraint in the schema
  (so a bad value never lands, whoever writes) and the tuples below, which the recorder
  uses to reject a bad value early with a clear `ValueError`. The words themselves live in
  `testbed.model.vocab` (StrEnums); adding a value means adding a member there AND writing
  a migration that replaces the CHECK constraint.
- Child rows reference `runs.id` with ON DELETE CASCADE; `runs.job_id` and
  `findings.command_id` are nullable with ON DELETE SET NULL.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from testbed.db.types import JSONType, UTCDateTime, utcnow
from testbed.model.vocab import (
    CheckStatus,
    CommandPhase,
    EgressDecision,
    FindingKind,
    Outcome,
    PhaseStatus,
    Residue,
    RunState,
    SnapshotPoint,
    Source,
    values,
)

# --- enumerations ----------------------------------------------------------------------

RUN_STATES: tuple[str, ...] = values(RunState)
"""`runs.state`: where the run is in its lifecycle (docs/design.md, "Run lifecycle")."""

OUTCOMES: tuple[str, ...] = values(Outcome)
"""`runs.outcome`: NULL until the run finishes."""

RESIDUE_VALUES: tuple[str, ...] = values(Residue)
"""`runs.residue`: whether the agent left residue; NULL until analysed."""

PHASE_STATUSES: tuple[str, ...] = values(PhaseStatus)
"""`phases.status` (see `testbed.model.vocab.PhaseStatus`)."""

COMMAND_PHASES: tuple[str, ...] = values(CommandPhase)
"""`commands.phase` (see `testbed.model.vocab.CommandPhase`)."""

COMMAND_SOURCES: tuple[str, ...] = values(Source)
"""`commands.source`: who issued the command."""

SNAPSHOT_POINTS: tuple[str, ...] = values(SnapshotPoint)
"""`snapshots.point` and `checks.point`."""

CHECK_STATUSES: tuple[str, ...] = values(CheckStatus)
"""`checks.status`: a verifier that cannot decide records `indeterminate`, never `failed`."""

FINDING_KINDS: tuple[str, ...] = values(FindingKind)
"""`findings.kind`."""

EGRESS_DECISIONS: tuple[str, ...] = values(EgressDecision)
"""`egress.decision`: allowed, denied, dns_failure."""


def new_id() -> str:
    """A fresh run/job id: a uuid4 hex string of 32 characters."""
    return uuid.uuid4().hex


def short_id(run_id: str) -> str:
    """The 8-character short id used in libvirt object names."""
    return run_id[:8]


def _one_of(column: str, values: tuple[str, ...], name: str) -> CheckConstraint:
    """A named CHECK constraint `column IN (values)` (NULL passes, as in SQL)."""
    listed = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({listed})", name=name)


NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# 64-bit ids on PostgreSQL; plain INTEGER on SQLite so the column is the ROWID alias.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    """Declarative base; `Base.metadata` is the schema the migrations must produce."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Job(Base):
    """A batch of runs started together (one `testbed run`/scheduler invocation)."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    config: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    # Scheduler (migration 0003): set by `testbed jobs cancel`; coordinators stop its runs.
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    runs: Mapped[list[Run]] = relationship(back_populates="job", passive_deletes=True)


class Run(Base):
    """One attempt of one task variant with one agent."""

    __tablename__ = "runs"
    __table_args__ = (
        _one_of("state", RUN_STATES, "state"),
        _one_of("outcome", OUTCOMES, "outcome"),
        _one_of("residue", RESIDUE_VALUES, "residue"),
        Index(None, "job_id"),
        Index(None, "task_id"),
        Index(None, "created_at"),
        Index(None, "job_id", "state"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    job_id: Mapped[str | None] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="SET NULL"), nullable=True)
    task_id: Mapped[str] = mapped_column(String(200))
    task_category: Mapped[str | None] = mapped_column(String(100), nullable=True)
    variant: Mapped[str | None] = mapped_column(String(100), nullable=True)
    image: Mapped[str | None] = mapped_column(String(200), nullable=True)
    agent: Mapped[str] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(20), default="pending")
    outcome: Mapped[str | None] = mapped_column(String(20), nullable=True)
    reward: Mapped[float | None] = mapped_column(Float, nullable=True)
    residue: Mapped[str | None] = mapped_column(String(20), nullable=True)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    config: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    # Scheduler (migration 0003; see testbed.scheduler.store). A coordinator claims a pending
    # run by setting `lease_owner` and keeps `lease_expires_at` in the future by heartbeat;
    # `retry` counts harness-error retries of the run's matrix cell (0 for the first try) and
    # `retry_of` names the finished run this one replaces; `not_before` delays a retry (backoff).
    lease_owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    not_before: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    retry: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    retry_of: Mapped[str | None] = mapped_column(String(32), nullable=True)

    job: Mapped[Job | None] = relationship(back_populates="runs")
    phases: Mapped[list[Phase]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Phase.id",
    )
    nodes: Mapped[list[Node]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Node.id",
    )
    commands: Mapped[list[Command]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Command.seq",
    )
    snapshots: Mapped[list[Snapshot]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Snapshot.id",
    )
    checks: Mapped[list[Check]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Check.id",
    )
    findings: Mapped[list[Finding]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Finding.id",
    )

    @property
    def short_id(self) -> str:
        """First 8 characters of the id (used in libvirt object names)."""
        return short_id(self.id)


class Phase(Base):
    """One timed phase of a run (provisioning, setup, agent, verify, reboot, teardown, ...).

    A phase name may occur more than once in a run (e.g. `verify` after the reboot); rows
    are ordered by id, which follows start order.
    """

    __tablename__ = "phases"
    __table_args__ = (
        _one_of("status", PHASE_STATUSES, "status"),
        Index(None, "run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(50))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    status: Mapped[str] = mapped_column(String(20), default="running")
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)

    run: Mapped[Run] = relationship(back_populates="phases")


class Node(Base):
    """One guest of a run's lab."""

    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    image: Mapped[str | None] = mapped_column(String(200), nullable=True)
    os_release: Mapped[str | None] = mapped_column(String(200), nullable=True)
    domain_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    mgmt_ip: Mapped[str | None] = mapped_column(String(64), nullable=True)

    run: Mapped[Run] = relationship(back_populates="nodes")


class Command(Base):
    """One command executed on a guest, by the harness or the agent.

    `seq` numbers a run's commands from 1 in the order they were recorded (unique per run).
    `impact` is the list of the command's high-impact classes (empty list if none);
    `redacted` lists the kinds of secrets redacted from command/stdout/stderr (NULL if none);
    `error` describes a transport failure (the command may not have run; `exit_code` NULL).
    """

    __tablename__ = "commands"
    __table_args__ = (
        UniqueConstraint("run_id", "seq"),
        _one_of("phase", COMMAND_PHASES, "phase"),
        _one_of("source", COMMAND_SOURCES, "source"),
        Index(None, "run_id"),
        # Partial index of the high-impact commands (migration 0002; used by the dashboard).
        Index(
            "ix_commands_impactful",
            "run_id",
            sqlite_where=text("impact != '[]'"),
            postgresql_where=text("impact <> '[]'::jsonb"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    node: Mapped[str | None] = mapped_column(String(100), nullable=True)
    phase: Mapped[str] = mapped_column(String(20))
    source: Mapped[str] = mapped_column(String(20))
    command: Mapped[str] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    stdout: Mapped[str] = mapped_column(Text, default="")
    stderr: Mapped[str] = mapped_column(Text, default="")
    stdout_truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    stderr_truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    timed_out: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    duration_ms: Mapped[int] = mapped_column(Integer)
    impact: Mapped[list[str]] = mapped_column(JSONType, default=list)
    redacted: Mapped[list[str] | None] = mapped_column(JSONType, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Migration 0005: processes the command left running that still held its output when
    # its shell exited (`[{pid, args}]`, left alive); NULL when none.
    background: Mapped[Any | None] = mapped_column(JSONType, nullable=True)

    run: Mapped[Run] = relationship(back_populates="commands")


class Snapshot(Base):
    """Machine state of one node at one point; `data` is JSON keyed by probe name.

    At most one row per (run, node, point).
    """

    __tablename__ = "snapshots"
    __table_args__ = (
        UniqueConstraint("run_id", "node", "point"),
        _one_of("point", SNAPSHOT_POINTS, "point"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    node: Mapped[str] = mapped_column(String(100))
    point: Mapped[str] = mapped_column(String(20))
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    data: Mapped[Any] = mapped_column(JSONType)

    run: Mapped[Run] = relationship(back_populates="snapshots")


class Check(Base):
    """One verification of one task requirement at one point (on one node, if node-bound)."""

    __tablename__ = "checks"
    __table_args__ = (
        _one_of("status", CHECK_STATUSES, "status"),
        _one_of("point", SNAPSHOT_POINTS, "point"),
        Index(None, "run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    requirement: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    point: Mapped[str | None] = mapped_column(String(20), nullable=True)
    node: Mapped[str | None] = mapped_column(String(100), nullable=True)
    status: Mapped[str] = mapped_column(String(20))
    detail: Mapped[Any | None] = mapped_column(JSONType, nullable=True)

    run: Mapped[Run] = relationship(back_populates="checks")


class Finding(Base):
    """Something the analysis found: residue left behind, a high-impact command, a safety
    violation. `command_id` points at the command that caused it, when known."""

    __tablename__ = "findings"
    __table_args__ = (
        _one_of("kind", FINDING_KINDS, "kind"),
        Index(None, "run_id"),
        Index(None, "command_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    node: Mapped[str | None] = mapped_column(String(100), nullable=True)
    kind: Mapped[str] = mapped_column(String(20))
    category: Mapped[str] = mapped_column(String(100))
    summary: Mapped[str] = mapped_column(Text)
    evidence: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    command_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("commands.id", ondelete="SET NULL"), nullable=True)

    run: Mapped[Run] = relationship(back_populates="findings")
    command: Mapped[Command | None] = relationship()


class ModelTurn(Base):
    """One model call of an LLM agent (migration 0004): what was sent, what came back.

    `seq` numbers a run's turns from 1 (unique per run). `messages` holds the chat messages
    appended since the previous turn (the whole conversation is the concatenation, in `seq`
    order, of `messages` and `response`); `response` is the assistant message; `tool_calls`
    the parsed actions it asked for (JSON list, empty when none); token counts come from the
    endpoint's `usage` (NULL when it reports none); `error` describes a failed call;
    `cost_usd` (migration 0006) is the call's price at the agent's per-token prices, NULL
    when none were given.
    """

    __tablename__ = "model_turns"
    __table_args__ = (UniqueConstraint("run_id", "seq"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    latency_ms: Mapped[int] = mapped_column(Integer)
    messages: Mapped[Any] = mapped_column(JSONType)
    response: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    tool_calls: Mapped[Any] = mapped_column(JSONType)
    finish_reason: Mapped[str | None] = mapped_column(String(50), nullable=True)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    completion_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    total_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)


class Artifact(Base):
    """A file kept with a run (migration 0005): each node's serial console log (`kind`
    `console`), redacted like every stored text, the tail kept when it is over the limit
    (`truncated`). `name` is unique per run (`console-<node>.log`)."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    node: Mapped[str | None] = mapped_column(String(100), nullable=True)
    kind: Mapped[str] = mapped_column(String(50))
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    size: Mapped[int] = mapped_column(Integer)
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    content: Mapped[str] = mapped_column(Text)


class Egress(Base):
    """One request a guest made through the lab host's egress proxy (migration 0007).

    `node` is the guest whose management address made it (NULL when no node of the run has
    that address); `host` the requested host name (or address); `url` the URL, or
    `host:port` for CONNECT; `status` the HTTP status the proxy answered (0 when it answered
    none); `bytes` what it sent back; `decision` ∈ `EGRESS_DECISIONS`.
    """

    __tablename__ = "egress"
    __table_args__ = (
        _one_of("decision", EGRESS_DECISIONS, "decision"),
        Index(None, "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"))
    node: Mapped[str | None] = mapped_column(String(100), nullable=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    method: Mapped[str] = mapped_column(String(20))
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    url: Mapped[str] = mapped_column(Text)
    status: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    decision: Mapped[str] = mapped_column(String(20))


TABLES: tuple[str, ...] = (
    "jobs",
    "runs",
    "phases",
    "nodes",
    "commands",
    "snapshots",
    "checks",
    "findings",
    "model_turns",
    "artifacts",
    "egress",
)
"""Every table of the schema, parents first."""
