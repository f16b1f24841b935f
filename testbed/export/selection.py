"""Which runs an export or a report covers (`--job`, `--since`).

Contracts:

- `RunFilter(job_id, since)` selects the runs of job `job_id` (a full id) created at or
  after `since` (aware UTC); both None selects every run. `runs_where()` gives the SQL
  conditions on `runs`, `run_ids()` a subquery of the selected run ids for child tables.
- `parse_since(text)` accepts `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.ffffff]]` with an
  optional offset or `Z`; a value without an offset is UTC. Anything else → `InputError`.
- `resolve_job(session, ref)` returns the full id of the job named by a full id or a unique
  prefix of at least 6 characters; unknown, ambiguous or too short → `InputError`.
- `make_filter(session, job, since)` does both (the CLI's entry point).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session

from testbed.db.models import Job, Run
from testbed.errors import InputError

MIN_JOB_PREFIX = 6


@dataclass(frozen=True)
class RunFilter:
    """A selection of runs; see the module contract."""

    job_id: str | None = None
    since: datetime | None = None

    def runs_where(self) -> list[ColumnElement[bool]]:
        """SQL conditions on `runs` (empty: every run)."""
        conditions: list[ColumnElement[bool]] = []
        if self.job_id is not None:
            conditions.append(Run.job_id == self.job_id)
        if self.since is not None:
            conditions.append(Run.created_at >= self.since)
        return conditions

    @property
    def selects_all(self) -> bool:
        """True when no condition applies."""
        return self.job_id is None and self.since is None

    def run_ids(self) -> Select[Any]:
        """`SELECT runs.id WHERE ...`, for `child.run_id IN (...)`."""
        return select(Run.id).where(*self.runs_where())

    def describe(self) -> str:
        """Human-readable description (dataset card, report header)."""
        parts = []
        if self.job_id is not None:
            parts.append(f"job {self.job_id}")
        if self.since is not None:
            parts.append(f"created since {self.since.isoformat()}")
        return ", ".join(parts) if parts else "all runs"


def parse_since(text: str) -> datetime:
    """Parse a `--since` value (see the module contract) into an aware UTC datetime."""
    raw = text.strip()
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError as exc:
        raise InputError(None, "--since", f"{text!r} is not a date (YYYY-MM-DD) or an ISO 8601 time") from exc
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def resolve_job(session: Session, ref: str) -> str:
    """The full id of the job named by `ref` (see the module contract)."""
    ref = ref.strip().lower()
    if session.get(Job, ref) is not None:
        return ref
    if len(ref) < MIN_JOB_PREFIX:
        raise InputError(None, "--job", f"no job {ref!r} (give the id or at least {MIN_JOB_PREFIX} characters of it)")
    matches = list(session.scalars(select(Job.id).where(Job.id.startswith(ref, autoescape=True)).limit(3)))
    if not matches:
        raise InputError(None, "--job", f"no job matches {ref!r}")
    if len(matches) > 1:
        raise InputError(None, "--job", f"{ref!r} matches several jobs ({', '.join(m[:8] for m in matches)})")
    return matches[0]


def make_filter(session: Session, job: str | None, since: str | None) -> RunFilter:
    """Build a `RunFilter` from CLI values, validating both."""
    return RunFilter(
        job_id=resolve_job(session, job) if job else None,
        since=parse_since(since) if since else None,
    )
