"""The run database on a real PostgreSQL server (env `TESTBED_TEST_PG_URL`).

Start a throwaway server with `scripts/start-postgres.sh /tmp/tb-pg 55432`, then run
`TESTBED_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:55432/testbed_test
pytest -m postgres tests/unit/db/test_postgres.py`. Each test module run creates its own
scratch database next to the given one (the role needs CREATEDB) and drops it afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import make_engine, open_database
from testbed.db.migrate import head_revision, upgrade
from testbed.db.models import Base, Command, Snapshot
from testbed.db.read import run_detail
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord
from testbed.db.types import utcnow
from testbed.testing.sample_run import check_sample_run, record_sample_run
from tests.pgscratch import REQUIRES_POSTGRES, scratch_database

pytestmark = REQUIRES_POSTGRES


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    yield from scratch_database("testbed_t")


@pytest.fixture(scope="module")
def sessions(pg_url: str) -> sessionmaker[Session]:
    return open_database(pg_url)


def test_migrated_schema_equals_models(pg_url: str, sessions: sessionmaker[Session]) -> None:
    assert upgrade(pg_url) == head_revision()  # idempotent
    engine = make_engine(pg_url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(ctx, Base.metadata) == []
        kinds = dict(
            conn.execute(
                text(
                    "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_name = 'commands' AND column_name IN ('impact', 'started_at', 'id')"
                )
            ).all()
        )
    engine.dispose()
    assert kinds == {"impact": "jsonb", "started_at": "timestamp with time zone", "id": "bigint"}


def test_round_trip(sessions: sessionmaker[Session]) -> None:
    run_id = record_sample_run(sessions)
    check_sample_run(sessions, run_id)
    with sessions() as session:
        assert run_detail(session, run_id[:6]).run.id == run_id


async def test_seq_under_concurrency_and_visibility(pg_url: str, sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")

    def record(i: int) -> int:
        return rec.record_command(
            CommandRecord(
                node="n",
                phase="agent",
                source="agent",
                command=f"echo {i}",
                started_at=utcnow(),
                duration_ms=1,
                exit_code=0,
            )
        )

    async def worker(w: int) -> None:
        for i in range(8):
            await asyncio.to_thread(record, w * 10 + i)

    await asyncio.gather(*(worker(w) for w in range(5)))
    other = make_engine(pg_url)
    try:
        cid = record(99)
        with other.connect() as conn:  # another connection sees it at once: committed
            assert conn.execute(select(Command.seq).where(Command.id == cid)).scalar() == 41
            seqs = (
                conn.execute(select(Command.seq).where(Command.run_id == rec.run_id).order_by(Command.id))
                .scalars()
                .all()
            )
    finally:
        other.dispose()
    assert seqs == list(range(1, 42))


def test_nul_bytes_are_storable(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    cid = rec.record_command(
        CommandRecord(
            node="n",
            phase="probe",
            source="harness",
            command="cat /proc/1/cmdline",
            started_at=utcnow(),
            duration_ms=1,
            exit_code=0,
            stdout="/sbin/init\x00splash\x00",
        )
    )
    sid = rec.record_snapshot("n", "before_setup", {"cmdline": "a\x00b", "x": float("nan")})
    with sessions() as session:
        row = session.get(Command, cid)
        snap = session.get(Snapshot, sid)
        assert row is not None and row.stdout == "/sbin/init\ufffdsplash\ufffd"
        assert snap is not None and snap.data == {"cmdline": "a\ufffdb", "x": None}
