"""Database URLs and engines (below `testbed.db.migrate`; `testbed.db.engine.open_database`
combines the two).

Contracts:

- `database_url(explicit)`: the explicit `--db` URL, else env `TESTBED_DB`, else
  `sqlite:///$TESTBED_HOME/testbed.db`. `postgresql://` and `postgres://` are rewritten to
  `postgresql+psycopg://` (psycopg 3 is the only PostgreSQL driver installed).
- `make_engine(url)`: on SQLite, every connection runs in WAL journal mode with
  `synchronous=NORMAL`, `foreign_keys=ON` and a busy timeout; SQLAlchemy (not the sqlite3
  module) emits BEGIN, so transactions and DDL are real transactions. Writers should use
  `writer_engine(engine)`, whose transactions start with `BEGIN IMMEDIATE`: they take the
  write lock up front and wait for it (busy timeout) instead of failing with "database is
  locked" when upgrading a read transaction. On PostgreSQL, connections are pre-pinged.
  The parent directory of a SQLite file is created if missing.
- `make_engine(url, read_only=True)`: nothing is created and nothing written — no parent
  directory, no journal-mode change (a WAL database is read in WAL mode, another in its
  own mode) — and every connection refuses writes (`PRAGMA query_only` on SQLite,
  read-only session characteristics on PostgreSQL).
- `connection_error(exc, url)`: the `HarnessError` of a database that cannot be reached —
  one line naming host, port, user and database, the driver's reason, and what to check.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from testbed.config import Settings
from testbed.errors import HarnessError

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite connection waits for a lock held by another writer."""

_BEGIN_OPTION = "testbed_sqlite_begin"


def database_url(explicit: str | None = None) -> str:
    """The URL to use: `explicit`, else env `TESTBED_DB`, else the SQLite file under
    `TESTBED_HOME`. The result is normalised by `normalize_url`."""
    if explicit:
        return normalize_url(explicit)
    env = os.environ.get("TESTBED_DB")
    if env:
        return normalize_url(env)
    path = Settings.from_env().home / "testbed.db"
    return f"sqlite:///{path}"


def normalize_url(url: str) -> str:
    """Rewrite `postgresql://`/`postgres://` (no driver) to `postgresql+psycopg://`."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def connection_error(exc: BaseException, url: URL) -> HarnessError:
    """A one-line `HarnessError` for a database at `url` that cannot be reached."""
    reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
    if url.get_backend_name() == "postgresql":
        host = url.host or url.query.get("host") or "localhost"
        where = f"PostgreSQL at {host}:{url.port or 5432} (user {url.username or '-'}, database {url.database or '-'})"
        hint = "check the host, port and credentials in --db / TESTBED_DB and that the server is running"
    else:
        where = url.render_as_string(hide_password=True)
        hint = "check the URL in --db / TESTBED_DB"
    return HarnessError(f"cannot connect to {where}: {reason}; {hint}")


def _sqlite_pragmas(dbapi_connection: Any, pragmas: tuple[str, ...]) -> None:
    # Let SQLAlchemy emit BEGIN itself (see the "begin" hook) instead of pysqlite's
    # implicit, DML-only transaction handling.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        for pragma in (f"busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}", *pragmas):
            cursor.execute(f"PRAGMA {pragma}")
    finally:
        cursor.close()


def _sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    _sqlite_pragmas(dbapi_connection, ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"))


def _sqlite_connect_read_only(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    _sqlite_pragmas(dbapi_connection, ("foreign_keys = ON", "query_only = ON"))


def _postgresql_read_only(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    finally:
        cursor.close()
    dbapi_connection.commit()


def _sqlite_begin(conn: Connection) -> None:
    mode = conn.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
    conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(url: str, *, echo: bool = False, read_only: bool = False) -> Engine:
    """An engine for `url` (after `normalize_url`), configured as the module doc says."""
    sa_url: URL = make_url(normalize_url(url))
    if sa_url.get_backend_name() == "sqlite":
        database = sa_url.database
        if not read_only and database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(sa_url, echo=echo)
        event.listen(engine, "connect", _sqlite_connect_read_only if read_only else _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if sa_url.get_backend_name() == "postgresql":
        engine = create_engine(sa_url, echo=echo, pool_pre_ping=True)
        if read_only:
            event.listen(engine, "connect", _postgresql_read_only)
        return engine
    return create_engine(sa_url, echo=echo)


def writer_engine(engine: Engine) -> Engine:
    """A view of `engine` (same pool) whose SQLite transactions use `BEGIN IMMEDIATE`.

    On other backends it is `engine` itself."""
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"})
    return engine
