"""The read model on a real PostgreSQL server (env `TESTBED_TEST_PG_URL`, see
`scripts/start-postgres.sh`): read-only sessions, the dialect-specific queries (duration
sort, the impactful predicate, outcome counts), an older schema, a missing database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InternalError
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import normalize_url, open_database
from testbed.db.migrate import upgrade
from testbed.db.read import open_read_only, read_only_engine, run_detail
from testbed.db.read.figures import compute_figures
from testbed.db.read.overview import overview
from testbed.db.read.runlist import RunsQuery, runs_page
from testbed.errors import HarnessError, InputError
from tests.pgscratch import PG_URL, REQUIRES_POSTGRES, scratch_database
from tests.unit.db.conftest import T0, Seeder

pytestmark = REQUIRES_POSTGRES


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    yield from scratch_database("testbed_r")


@pytest.fixture(scope="module")
def seeded(pg_url: str) -> dict[str, str]:
    writer = open_database(pg_url)
    seed = Seeder(writer)
    fast = seed.run(duration_s=10, commands=("systemctl stop nginx",))
    Seeder.command(fast, "rm -rf /tmp/x", impact=["recursive-delete"])
    slow = seed.run(outcome="failed", duration_s=300, start=T0 + timedelta(hours=1))
    open_run = seed.run(outcome=None, start=T0 + timedelta(hours=2))
    return {"fast": fast.run_id, "slow": slow.run_id, "open": open_run.run_id}


def test_read_only_sessions_read_and_refuse_writes(pg_url: str, seeded: dict[str, str]) -> None:
    sessions: sessionmaker[Session] = open_read_only(pg_url)
    with sessions() as s:
        ov = overview(s)
        by_duration = runs_page(s, RunsQuery.parse({"sort": "duration", "order": "asc"}))
        detail = run_detail(s, seeded["fast"][:6])
        figures = compute_figures(s)
        with pytest.raises(InternalError, match="read-only transaction"):
            s.execute(text("DELETE FROM runs"))
    assert (ov.totals.total, ov.totals.pass_rate, ov.high_impact.part) == (3, 0.5, 1)
    assert [r.run.id for r in by_duration.rows] == [seeded["fast"], seeded["slow"], seeded["open"]]
    assert [c.command for c in detail.commands] == ["systemctl stop nginx", "rm -rf /tmp/x"]
    assert [(p.category, p.runs, p.pass_rate) for p in figures.pass_rates] == [("web", 2, 0.5)]
    sessions.kw["bind"].dispose()


def test_older_schema_and_missing_database() -> None:
    for url in scratch_database("testbed_o"):
        upgrade(url, "0002")
        with pytest.raises(InputError, match=r"schema revision 0002, older than .*run `testbed db upgrade`"):
            read_only_engine(url)
    assert PG_URL
    missing = make_url(normalize_url(PG_URL)).set(database="testbed_no_such_db")
    with pytest.raises(HarnessError, match=r"cannot connect to PostgreSQL at .*database testbed_no_such_db") as caught:
        read_only_engine(missing.render_as_string(hide_password=False))
    assert "\n" not in str(caught.value)
