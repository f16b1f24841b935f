"""`testbed.db.read.filters`: the one `RunFilter` (CLI, dashboard, export, report)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Run
from testbed.db.read.filters import RunFilter, make_filter, parse_day, parse_since
from testbed.db.read.runlist import RunsQuery
from testbed.db.recorder import create_job
from testbed.errors import InputError
from tests.unit.db.conftest import T0, Seeder


def _ids(sessions: sessionmaker[Session], f: RunFilter) -> set[str]:
    with sessions() as s:
        return set(s.scalars(select(Run.id).where(*f.where())))


def test_every_criterion(sessions: sessionmaker[Session], seed: Seeder) -> None:
    job = create_job(sessions, "j", job_id="abcd" + "1" * 28)
    a = seed.run(job_id=job, task="t1", category="web", agent="oracle").run_id
    b = seed.run(task="t2", category="db", outcome="failed", image="rocky-9", start=T0 + timedelta(days=2)).run_id
    c = seed.run(task="t2", outcome=None, agent="claude", start=T0 + timedelta(days=3)).run_id
    assert _ids(sessions, RunFilter()) == {a, b, c}
    assert _ids(sessions, RunFilter(job_id=job)) == _ids(sessions, RunFilter(job_id="abcd")) == {a}
    assert _ids(sessions, RunFilter(job_id="ab%")) == set()  # literal
    assert _ids(sessions, RunFilter(task="t2", outcome="unfinished")) == {c}
    assert _ids(sessions, RunFilter(category="db", image="rocky-9")) == {b}
    assert _ids(sessions, RunFilter(agent="claude")) == {c}
    assert _ids(sessions, RunFilter(since=T0 + timedelta(days=1))) == {b, c}
    day = (T0 + timedelta(days=2)).date()
    assert _ids(sessions, RunFilter(date_from=day, date_to=day)) == {b}
    with sessions() as s:
        assert set(s.scalars(RunFilter(task="t1").run_ids())) == {a}


def test_selects_all_and_describe() -> None:
    assert RunFilter().selects_all and not RunFilter().active() and RunFilter().describe() == "all runs"
    f = RunFilter(job_id="1" * 32, since=datetime(2026, 1, 2, tzinfo=UTC), outcome="failed")
    assert f.active() and f.describe() == f"job {'1' * 32}, outcome failed, created since 2026-01-02T00:00:00+00:00"


def test_parse_since_and_day() -> None:
    assert parse_since("2024-05-06") == datetime(2024, 5, 6, tzinfo=UTC)
    assert parse_since("2024-05-06T12:30:00+02:00") == datetime(2024, 5, 6, 10, 30, tzinfo=UTC)
    assert parse_since("2024-05-06T12:30Z") == datetime(2024, 5, 6, 12, 30, tzinfo=UTC)
    with pytest.raises(InputError, match="--since"):
        parse_since("last tuesday")
    assert parse_day("from", "2024-05-06T10:00") == date(2024, 5, 6) and parse_day("from", "") is None
    with pytest.raises(InputError, match="from: expected a date"):
        parse_day("from", "yesterday")


def test_make_filter_resolves_the_job(sessions: sessionmaker[Session]) -> None:
    job = create_job(sessions, "j")
    with sessions() as s:
        assert make_filter(s, job[:4], None) == RunFilter(job_id=job)
        assert make_filter(s, None, None) == RunFilter()
        with pytest.raises(InputError) as caught:
            make_filter(s, "%%%%", None)
    assert caught.value.field == "--job"


def test_runs_query_is_a_filter_with_sort_and_page() -> None:
    q = RunsQuery.parse({"job": "ABCD", "outcome": "unfinished", "sort": "task", "page": "2", "token": "x"})
    assert isinstance(q, RunFilter)
    assert (q.job_id, q.outcome, q.sort, q.order, q.page) == ("abcd", "unfinished", "task", "asc", 2)
    assert q.query(page="") == {"job": "abcd", "outcome": "unfinished", "sort": "task"}
    for bad in ({"outcome": "won"}, {"sort": "colour"}, {"size": "0"}, {"page": "x"}, {"from": "soon"}):
        with pytest.raises(InputError):
            RunsQuery.parse(bad)
