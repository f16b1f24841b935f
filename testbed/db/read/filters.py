"""Which runs a view covers: the one `RunFilter` of the CLI, the dashboard, the export and
the report.

Contracts:

- `RunFilter` holds optional criteria; every one that is set must match. Text criteria
  match exactly, except `job_id`: a job id or a prefix of one, matched literally (the
  export and the report resolve `--job` to one full id first, see `make_filter`).
  `outcome` is an outcome or `unfinished` (no outcome yet). `since` is an aware time
  compared with the run's creation; `date_from` / `date_to` are UTC days, both inclusive,
  compared with the run's start (its creation while it has not started).
- `where()` gives the SQL conditions on `runs` (empty: every run); `run_ids()` a subquery of
  the selected ids for child tables; `describe()` a line for people (dataset card, report).
- `parse_since(text)` accepts `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.ffffff]]` with an optional
  offset or `Z`; a value without an offset is UTC. `parse_day(field, text)` accepts a day.
  Anything else → `InputError` naming the field.
- `make_filter(session, job, since)` builds the filter of `--job` / `--since` options,
  resolving the job by `testbed.db.read.ids.resolve_job_id` (field `--job`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, func, or_, select
from sqlalchemy.orm import Session

from testbed.db.models import OUTCOMES, Run
from testbed.db.read.ids import resolve_job_id
from testbed.errors import InputError

UNFINISHED = "unfinished"
"""The `outcome` criterion of runs that have no outcome yet."""

OUTCOME_FILTERS: tuple[str, ...] = (*OUTCOMES, UNFINISHED)
"""Accepted values of `RunFilter.outcome`."""


def start_expr() -> ColumnElement[Any]:
    """A run's start: `started_at`, else `created_at` while it has not started."""
    return func.coalesce(Run.started_at, Run.created_at)


@dataclass(frozen=True)
class RunFilter:
    """A selection of runs (see the module contract)."""

    job_id: str = ""
    task: str = ""
    category: str = ""
    image: str = ""
    agent: str = ""
    outcome: str = ""
    since: datetime | None = None
    date_from: date | None = None
    date_to: date | None = None

    def where(self) -> list[ColumnElement[bool]]:
        """SQL conditions on `runs` (empty: every run)."""
        conditions: list[ColumnElement[bool]] = [
            column == value
            for column, value in (
                (Run.task_id, self.task),
                (Run.task_category, self.category),
                (Run.image, self.image),
                (Run.agent, self.agent),
            )
            if value
        ]
        if self.outcome == UNFINISHED:
            conditions.append(Run.outcome.is_(None))
        elif self.outcome:
            conditions.append(Run.outcome == self.outcome)
        if self.job_id:
            conditions.append(or_(Run.job_id == self.job_id, Run.job_id.startswith(self.job_id, autoescape=True)))
        if self.since is not None:
            conditions.append(Run.created_at >= self.since)
        if self.date_from:
            conditions.append(start_expr() >= datetime.combine(self.date_from, time(), UTC))
        if self.date_to:
            conditions.append(start_expr() < datetime.combine(self.date_to + timedelta(days=1), time(), UTC))
        return conditions

    @property
    def selects_all(self) -> bool:
        """True when no criterion is set."""
        return not self.where()

    def active(self) -> bool:
        """True when any criterion is set."""
        return not self.selects_all

    def run_ids(self) -> Select[Any]:
        """`SELECT runs.id WHERE ...`, for `child.run_id IN (...)`."""
        return select(Run.id).where(*self.where())

    def in_selection(self, run_id_column: Any) -> list[ColumnElement[bool]]:
        """Conditions on a child table's `run_id` column (empty when every run is selected)."""
        return [] if self.selects_all else [run_id_column.in_(self.run_ids())]

    def describe(self) -> str:
        """Human-readable description (dataset card, report header)."""
        parts = [
            f"{label} {value}"
            for label, value in (
                ("job", self.job_id),
                ("task", self.task),
                ("category", self.category),
                ("image", self.image),
                ("agent", self.agent),
                ("outcome", self.outcome),
            )
            if value
        ]
        if self.since is not None:
            parts.append(f"created since {self.since.isoformat()}")
        if self.date_from or self.date_to:
            parts.append(f"started {self.date_from or '…'} to {self.date_to or '…'}")
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


def parse_day(field: str, value: str | None) -> date | None:
    """A day `YYYY-MM-DD` (a longer ISO time is cut to its day); empty → None."""
    if not value:
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise InputError(None, field, f"expected a date YYYY-MM-DD; got {value!r}") from None


def check_outcome(field: str, value: str) -> str:
    """`value` when it is empty or one of `OUTCOME_FILTERS`, else `InputError`."""
    if value and value not in OUTCOME_FILTERS:
        raise InputError(None, field, f"must be one of {', '.join(OUTCOME_FILTERS)}; got {value!r}")
    return value


def make_filter(session: Session, job: str | None, since: str | None) -> RunFilter:
    """The filter of the `--job` / `--since` options, both validated."""
    return RunFilter(
        job_id=resolve_job_id(session, job, field="--job") if job else "",
        since=parse_since(since) if since else None,
    )
