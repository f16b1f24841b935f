"""Seeds through the scheduler: a job over seeds has one cell per seed, the seed travels on
the pending row (`config.seed`) to the claimed run, and retries and recovery keep it — on
the SQL store (SQLite) and the in-memory store alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.model.job import RetryPolicy
from testbed.scheduler.followups import CellRow, cells_needing_follow_up
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.store import SqlRunStore
from testbed.testing.memstore import MemoryRunStore

OWNER = "me:1:1:x"
RUNS = [NewRun("t", "debian-12", 1, "svc", seed=seed) for seed in (5, 9)]


@pytest.fixture
def db(tmp_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{tmp_path / 'runs.db'}")


def test_sql_store_carries_seeds_through_retries(db: sessionmaker[Session]) -> None:
    store = SqlRunStore(db, RetryPolicy(limit=1, backoff_s=0))
    job_id, ids = create_job_with_runs(db, "j", {}, "oracle", RUNS)
    assert [(p.run_id, p.seed) for p in store.pending(job_id)] == [(ids[0], 5), (ids[1], 9)]
    assert store.claim(job_id, ids, OWNER, 60) == set(ids)
    store.mark_started(ids[0])
    settled = store.settle(job_id, ids[0], OWNER, "error", "boom")
    assert settled.follow_up is not None and settled.follow_up.seed == 5
    with db() as session:
        retry = session.get(Run, settled.follow_up.run_id)
        assert retry is not None and retry.config == {"seed": 5} and retry.retry_of == ids[0]
    assert {p.seed for p in store.pending(job_id)} == {5}
    store.mark_started(ids[1])
    assert store.settle(job_id, ids[1], OWNER, "passed", None).follow_up is None
    assert store.recover(job_id, OWNER).created == []  # cells of different seeds are told apart
    with db() as session:
        assert len(list(session.scalars(select(Run.id).where(Run.job_id == job_id)))) == 3


def test_memory_store_carries_seeds_through_retries() -> None:
    store = MemoryRunStore(RetryPolicy(limit=1, backoff_s=0))
    job_id, ids = store.create_job("j", "oracle", RUNS)
    assert [p.seed for p in store.pending(job_id)] == [5, 9]
    assert store.claim(job_id, ids, OWNER, 60) == set(ids)
    store.mark_started(ids[1])
    settled = store.settle(job_id, ids[1], OWNER, "error", "boom")
    assert settled.follow_up is not None and settled.follow_up.seed == 9


def test_cells_differ_by_seed() -> None:
    from testbed.db.types import utcnow

    now = utcnow()
    rows = [CellRow(f"r{s}", "t", "debian-12", "oracle", 1, 0, "finished", "error", now, None, s) for s in (1, 2)]
    assert {r.run_id for r in cells_needing_follow_up(rows)} == {"r1", "r2"}
