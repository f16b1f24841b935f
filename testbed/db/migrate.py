"""Programmatic Alembic migrations of the run database.

Contracts:

- The migration scripts live in the repository's `db/` directory
  (`Path(testbed.__file__).parent.parent / "db"`), overridable by env `TESTBED_MIGRATIONS`.
  No `alembic.ini` is needed: `alembic_config(url)` builds the `Config` in code.
- `upgrade(url, revision="head")` migrates and returns the revision the database is at.
  It is safe to call concurrently from several processes: on SQLite the migration runs in
  one `BEGIN IMMEDIATE` transaction (transactional DDL), on PostgreSQL under a
  transaction-scoped advisory lock; the second caller finds the work done.
- A PostgreSQL server that cannot be reached is a one-line `HarnessError`
  (`testbed.db.engine.connection_error`), never a driver traceback.
- On SQLite, foreign-key enforcement is off while migrating (a batch "recreate table" would
  otherwise cascade-delete child rows) and `PRAGMA foreign_key_check` must come back empty
  afterwards, else `HarnessError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

import testbed
from testbed.db.connect import connection_error, database_url, make_engine, writer_engine
from testbed.errors import HarnessError

ADVISORY_LOCK_KEY = 0x7E57BED
"""PostgreSQL advisory lock key held while migrating."""


def migrations_dir() -> Path:
    """The Alembic script directory (env `TESTBED_MIGRATIONS` overrides)."""
    env = os.environ.get("TESTBED_MIGRATIONS")
    if env:
        return Path(env)
    return Path(testbed.__file__).resolve().parent.parent / "db"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic `Config` for `url` (resolved by `database_url`) and `migrations_dir()`."""
    directory = migrations_dir()
    if not (directory / "env.py").is_file():
        raise HarnessError(f"no Alembic migrations at {directory} (set TESTBED_MIGRATIONS)")
    cfg = Config()
    cfg.set_main_option("script_location", str(directory))
    # configparser interpolation: a literal '%' (e.g. in a password) must be doubled.
    cfg.set_main_option("sqlalchemy.url", database_url(url).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest revision among the migration scripts."""
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise HarnessError(f"no migration scripts in {migrations_dir()}")
    return head


def _connect(engine: Engine) -> Connection:
    """`engine.connect()`, an unreachable PostgreSQL turned into a `HarnessError`."""
    try:
        return engine.connect()
    except DBAPIError as exc:
        if engine.dialect.name == "postgresql":
            raise connection_error(exc, engine.url) from None
        raise


def current_revision(url: str | None = None) -> str | None:
    """The revision the database at `url` is at (None: never migrated)."""
    engine = make_engine(database_url(url))
    try:
        with _connect(engine) as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def upgrade(url: str | None = None, revision: str = "head") -> str:
    """Migrate the database at `url` (resolved by `database_url`) to `revision`; return
    the revision it is at afterwards."""
    resolved = database_url(url)
    cfg = alembic_config(resolved)
    engine = writer_engine(make_engine(resolved))
    try:
        with _connect(engine) as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                # Must run outside any transaction to take effect.
                conn.connection.dbapi_connection.execute(  # type: ignore[union-attr]
                    "PRAGMA foreign_keys = OFF"
                )
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
            if sqlite:
                violations = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                conn.commit()
                if violations:
                    raise HarnessError(f"foreign key violations after migrating {resolved}: {violations[:5]}")
            rev = MigrationContext.configure(conn).get_current_revision()
            conn.commit()
    finally:
        engine.dispose()
    if rev is None:
        raise HarnessError(f"migration of {resolved} left no revision")
    return rev
