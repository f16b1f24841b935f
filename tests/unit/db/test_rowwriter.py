"""RowWriter's checks: enumerations, timezone-aware datetimes, the engine behind a sessionmaker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from testbed.db.rowwriter import aware, engine_of, one_of


def test_one_of_names_the_field_and_the_allowed_values() -> None:
    one_of("outcome", "passed", ("passed", "failed"))
    with pytest.raises(ValueError, match=r"outcome must be one of passed, failed; got 'pass'"):
        one_of("outcome", "pass", ("passed", "failed"))


def test_aware_rejects_naive_datetimes() -> None:
    now = datetime.now(UTC)
    assert aware("at", now) is now
    with pytest.raises(ValueError, match="at must be timezone-aware"):
        aware("at", now.replace(tzinfo=None))


def test_engine_of_engine_or_bound_sessionmaker() -> None:
    engine = create_engine("sqlite://")
    assert engine_of(engine) is engine
    assert engine_of(sessionmaker(bind=engine)) is engine
    with pytest.raises(TypeError, match="must be bound to an Engine"):
        engine_of(sessionmaker())
