"""Two coordinators share one job on a real PostgreSQL server (claims `FOR UPDATE SKIP
LOCKED` + leases): no run is claimed twice and none is lost. Needs env TESTBED_TEST_PG_URL
(see tests/unit/db/test_postgres.py; `scripts/start-postgres.sh` starts a throwaway server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.model.job import RetryPolicy
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.store import SqlRunStore
from tests.pgscratch import REQUIRES_POSTGRES, scratch_database
from tests.unit.scheduler.test_store import share_job_between_two_threads

pytestmark = REQUIRES_POSTGRES


@pytest.fixture(scope="module")
def db() -> Iterator[sessionmaker[Session]]:
    for url in scratch_database("testbed_s"):
        yield open_database(url)


def test_skip_locked_claims_never_overlap(db: sessionmaker[Session]) -> None:
    job_id, ids = create_job_with_runs(db, "j", {}, "fake", [NewRun(f"t{i}", "d", 1) for i in range(50)])
    stores = [SqlRunStore(db, RetryPolicy()) for _ in range(2)]
    got: list[set[str]] = [set(), set()]
    for i in range(10):  # alternate claims of overlapping candidate sets
        for k, store in enumerate(stores):
            got[k] |= store.claim(job_id, ids[i * 3 : i * 3 + 10], f"c{k}:1:1:x", 60)
    assert not got[0] & got[1]


def test_two_coordinators_share_a_job_on_postgres(db: sessionmaker[Session]) -> None:
    share_job_between_two_threads(db, runs=40)
