"""The dashboard's runs list: a `RunFilter` plus sort and page, as given in a query string.

Contracts:

- `RunsQuery.parse(params)` validates the query string (unknown keys ignored; a bad value
  raises `InputError`, HTTP 400); `query(**changes)` gives the parameters of links to other
  pages and sort orders (empty values and defaults left out). `page` counts from 1.
- `runs_page` pages with LIMIT/OFFSET, sorted by `sort` (ties by id in the same order);
  `duration` puts runs without one last either way. Per run it adds its job's name, its
  command count (max(seq): seq is gap-free from 1, so this is an O(log n) probe of the
  (run_id, seq) unique index), whether it ran a high-impact command and its residue
  findings; and the values the filter drop-downs offer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, literal_column, select
from sqlalchemy.orm import Session

from testbed.db.models import Command, Finding, Run
from testbed.db.read.commands import impactful_clause
from testbed.db.read.filters import RunFilter, check_outcome, parse_day, start_expr
from testbed.db.read.jobs import job_choices, job_names
from testbed.db.read.runs import RunSummary
from testbed.errors import InputError
from testbed.model.vocab import FindingKind

MAX_PAGE_SIZE = 500
"""Largest accepted page size of the runs list."""

DEFAULT_PAGE_SIZE = 50

SORT_KEYS: tuple[str, ...] = ("started", "duration", "task", "outcome")
"""Sort keys of the runs list."""


def _parse_int(name: str, value: str | None, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InputError(None, name, f"expected a whole number; got {value!r}") from None
    if not low <= number <= high:
        raise InputError(None, name, f"must be between {low} and {high}; got {number}")
    return number


def _default_order(sort: str) -> str:
    return "asc" if sort == "task" else "desc"


@dataclass(frozen=True)
class RunsQuery(RunFilter):
    """Filters, sort and page of the runs list (see the module contract)."""

    sort: str = "started"
    order: str = "desc"
    page: int = 1
    size: int = DEFAULT_PAGE_SIZE

    @classmethod
    def parse(cls, params: dict[str, str]) -> RunsQuery:
        """Build from query parameters; unknown keys are ignored, bad values raise `InputError`."""

        def get(key: str) -> str:
            return (params.get(key) or "").strip()

        outcome = check_outcome("outcome", get("outcome"))
        sort = get("sort") or "started"
        if sort not in SORT_KEYS:
            raise InputError(None, "sort", f"must be one of {', '.join(SORT_KEYS)}; got {sort!r}")
        order = get("order") or _default_order(sort)
        if order not in ("asc", "desc"):
            raise InputError(None, "order", f"must be asc or desc; got {order!r}")
        return cls(
            task=get("task"),
            category=get("category"),
            image=get("image"),
            agent=get("agent"),
            outcome=outcome,
            job_id=get("job").lower(),
            date_from=parse_day("from", get("from")),
            date_to=parse_day("to", get("to")),
            sort=sort,
            order=order,
            page=_parse_int("page", get("page"), 1, 1, 1_000_000),
            size=_parse_int("size", get("size"), DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE),
        )

    def query(self, **changes: Any) -> dict[str, str]:
        """The query-string parameters of this query with `changes` applied."""
        values: dict[str, Any] = {
            "task": self.task,
            "category": self.category,
            "image": self.image,
            "agent": self.agent,
            "outcome": self.outcome,
            "job": self.job_id,
            "from": self.date_from.isoformat() if self.date_from else "",
            "to": self.date_to.isoformat() if self.date_to else "",
            "sort": self.sort if self.sort != "started" else "",
            "order": self.order,
            "page": self.page if self.page != 1 else "",
            "size": self.size if self.size != DEFAULT_PAGE_SIZE else "",
        }
        values.update(changes)
        if values.get("order") == _default_order(values.get("sort") or "started"):
            values["order"] = ""
        return {k: str(v) for k, v in values.items() if v not in ("", None)}


@dataclass
class RunRow:
    """One line of the runs list: the run, its job's name, command and finding counts."""

    run: RunSummary
    job_name: str | None
    commands: int
    high_impact: bool
    residue_findings: int


@dataclass
class RunsPage:
    """A page of the runs list plus the values offered in its filter drop-downs."""

    filter: RunsQuery
    rows: list[RunRow]
    total: int
    pages: int
    options: dict[str, list[str]]
    jobs: list[tuple[str, str]]
    unfinished: int


def _duration_expr(session: Session) -> ColumnElement[Any]:
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", Run.finished_at - Run.started_at)
    return (func.julianday(Run.finished_at) - func.julianday(Run.started_at)) * 86400.0


def _distinct(session: Session, column: Any) -> list[str]:
    return list(session.scalars(select(column).where(column.is_not(None)).distinct().order_by(column)))


def _page_of_runs(session: Session, q: RunsQuery) -> list[Run]:
    sort_column: Any = {
        "started": start_expr(),
        "duration": _duration_expr(session),
        "task": Run.task_id,
        "outcome": func.coalesce(Run.outcome, literal_column("'~unfinished'")),
    }[q.sort]
    direction = sort_column.asc() if q.order == "asc" else sort_column.desc()
    if q.sort == "duration":
        direction = direction.nulls_last()
    stmt = (
        select(Run)
        .where(*q.where())
        .order_by(direction, Run.id.desc() if q.order == "desc" else Run.id.asc())
        .limit(q.size)
        .offset((q.page - 1) * q.size)
    )
    return list(session.scalars(stmt))


def _rows(session: Session, runs: list[Run]) -> list[RunRow]:
    ids = [r.id for r in runs]
    counts: dict[str, int] = {}
    impactful: set[str] = set()
    residue: dict[str, int] = {}
    if ids:
        top_seq = select(func.max(Command.seq)).where(Command.run_id == Run.id).correlate(Run).scalar_subquery()
        counts = {rid: n for rid, n in session.execute(select(Run.id, top_seq).where(Run.id.in_(ids)))}
        impactful = set(
            session.scalars(select(Command.run_id).where(Command.run_id.in_(ids), impactful_clause(session)).distinct())
        )
        residue_stmt = (
            select(Finding.run_id, func.count())
            .where(Finding.run_id.in_(ids), Finding.kind == FindingKind.RESIDUE)
            .group_by(Finding.run_id)
        )
        residue = {rid: n for rid, n in session.execute(residue_stmt)}
    names = job_names(session, {r.job_id for r in runs if r.job_id})
    return [
        RunRow(
            run=RunSummary.of(r),
            job_name=names.get(r.job_id) if r.job_id else None,
            commands=counts.get(r.id) or 0,
            high_impact=r.id in impactful,
            residue_findings=residue.get(r.id, 0),
        )
        for r in runs
    ]


def runs_page(session: Session, q: RunsQuery) -> RunsPage:
    """The page `q.page` of the runs matching `q`, sorted by `q.sort` (ties by id)."""
    total = session.scalar(select(func.count()).select_from(Run).where(*q.where())) or 0
    runs = _page_of_runs(session, q)
    options = {
        "task": _distinct(session, Run.task_id),
        "category": _distinct(session, Run.task_category),
        "image": _distinct(session, Run.image),
        "agent": _distinct(session, Run.agent),
    }
    unfinished = sum(1 for r in runs if r.outcome is None)
    pages = max(1, -(-total // q.size))
    return RunsPage(q, _rows(session, runs), total, pages, options, job_choices(session), unfinished)
