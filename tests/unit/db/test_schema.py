"""Schema, migrations and engine configuration of the run database (SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.orm import Session

from testbed.db import engine as engine_mod
from testbed.db.engine import database_url, make_engine, normalize_url, open_database
from testbed.db.migrate import alembic_config, current_revision, head_revision, upgrade
from testbed.db.models import TABLES, Base, Job, Run
from testbed.errors import HarnessError


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sub' / 'testbed.db'}"


def test_migrated_schema_equals_models(url: str) -> None:
    assert upgrade(url) == head_revision()
    engine = make_engine(url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
        assert compare_metadata(ctx, Base.metadata) == []
        insp = inspect(conn)
        assert set(insp.get_table_names()) == {*TABLES, "alembic_version"}
        # Alembic does not compare CHECK constraints: compare their names ourselves.
        for table in Base.metadata.sorted_tables:
            want = {c.name for c in table.constraints if c.__class__.__name__ == "CheckConstraint"}
            got = {c["name"] for c in insp.get_check_constraints(table.name)}
            assert got == want, table.name
    engine.dispose()


def test_upgrade_is_idempotent_and_downgrade_works(url: str) -> None:
    head = head_revision()
    assert current_revision(url) is None
    assert upgrade(url) == head
    assert upgrade(url) == head
    assert current_revision(url) == head
    engine = make_engine(url)
    with engine.connect() as conn:
        cfg = alembic_config(url)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
        conn.commit()
        assert set(inspect(conn).get_table_names()) == {"alembic_version"}
    engine.dispose()
    assert upgrade(url) == head


def test_migrations_dir_override(url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TESTBED_MIGRATIONS", str(tmp_path / "nowhere"))
    with pytest.raises(HarnessError, match="no Alembic migrations"):
        upgrade(url)


def test_sqlite_pragmas(url: str) -> None:
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == (engine_mod.SQLITE_BUSY_TIMEOUT_MS)
    engine.dispose()


def test_database_url_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TESTBED_DB", raising=False)
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path))
    assert database_url(None) == f"sqlite:///{tmp_path / 'testbed.db'}"
    monkeypatch.setenv("TESTBED_DB", "postgresql://u@h/db")
    assert database_url(None) == "postgresql+psycopg://u@h/db"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


def test_open_database_creates_and_migrates(url: str) -> None:
    sessions = open_database(url)
    with sessions() as session:
        assert session.scalars(select(Run)).all() == []
    assert current_revision(url) == head_revision()


def test_constraints_are_enforced(url: str) -> None:
    sessions = open_database(url)
    with sessions() as session, pytest.raises(IntegrityError):
        session.add(Run(task_id="t", agent="a", state="sleeping"))
        session.commit()
    with sessions() as session, pytest.raises(IntegrityError):  # foreign key
        session.add(Run(task_id="t", agent="a", job_id="nope"))
        session.commit()


def test_timestamps_are_aware_utc(url: str) -> None:
    sessions = open_database(url)
    cet = timezone(timedelta(hours=1))
    with sessions() as session:
        session.add(Job(id="j1", name="job", created_at=datetime(2024, 1, 1, 12, tzinfo=cet)))
        session.commit()
    with sessions() as session:
        job = session.get(Job, "j1")
        assert job is not None
        assert job.created_at == datetime(2024, 1, 1, 11, tzinfo=UTC)
        assert job.created_at.tzinfo is UTC
        raw = session.execute(text("SELECT created_at FROM jobs")).scalar()
        assert str(raw).startswith("2024-01-01 11:00:00")  # stored as UTC
    with sessions() as session, pytest.raises(StatementError, match="naive"):
        session.add(Job(id="j2", name="job", created_at=datetime(2024, 1, 1)))
        session.commit()


def test_deleting_a_run_cascades(url: str) -> None:
    from testbed.db.models import Command, Finding
    from testbed.testing.sample_run import record_sample_run

    sessions = open_database(url)
    run_id = record_sample_run(sessions)
    with Session(make_engine(url)) as session:
        run = session.get(Run, run_id)
        session.delete(run)
        session.commit()
        assert session.scalars(select(Command)).all() == []
        assert session.scalars(select(Finding)).all() == []


def test_concurrent_upgrades_from_several_processes(url: str) -> None:
    import subprocess
    import sys

    code = "import sys; from testbed.db.migrate import upgrade; print(upgrade(sys.argv[1]))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == head_revision()
