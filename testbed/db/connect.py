"""Database URLs and engines (below `testbed.db.migrate`; `testbed.db.engine.open_database`
combines the two).

Contracts:

- `database_url(explicit)`: the explicit `--db` URL, else env `TESTBED_DB`, else
  `sqlite:///$TESTBED_HOME/testbed.db`. `postgresql://` and `postgres://` are rewritten to
  `postgresql+psycopg://` (psycopg 3 is the only PostgreSQL driver installed). The URL is
  checked by `parse_url` first: one that does not parse, names another backend or driver,
  a bad port, or a SQLite file that cannot be created is an `InputError` naming `--db` or
  `TESTBED_DB` (exit status 2) — before anything is opened or created.
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
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import ConnectionPoolEntry

from testbed.config import testbed_home
from testbed.errors import HarnessError, InputError
from testbed.model.outputs import check_output

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite connection waits for a lock held by another writer."""

_BEGIN_OPTION = "testbed_sqlite_begin"


SUPPORTED_DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg",)}
"""Backends and the drivers installed for them."""

URL_FORMS = "sqlite:///FILE or postgresql://USER@HOST[:PORT]/DATABASE"

_PASSWORD_RE = re.compile(r"(://[^:/@]*:)[^@/]*@")


def url_source(explicit: str | None) -> str:
    """Where the database URL comes from, as the field of an `InputError`."""
    if explicit:
        return "--db"
    return "TESTBED_DB" if os.environ.get("TESTBED_DB", "").strip() else "TESTBED_HOME"


def database_url(explicit: str | None = None) -> str:
    """The URL to use: `explicit`, else env `TESTBED_DB`, else the SQLite file under
    `TESTBED_HOME`; normalised by `normalize_url` and checked by `parse_url`."""
    field = url_source(explicit)
    raw = explicit or os.environ.get("TESTBED_DB", "").strip()
    url = normalize_url(raw) if raw else f"sqlite:///{testbed_home() / 'testbed.db'}"
    parse_url(url, field)
    return url


def parse_url(url: str, field: str = "--db") -> URL:
    """`url` parsed; one that is not a database URL testbed can use is an `InputError`
    naming `field` (`--db`, `TESTBED_DB`) and nothing is opened or created: it must parse,
    name SQLite or PostgreSQL with an installed driver, have a port in 1..65535, and a
    SQLite file must not be a directory nor sit below a file."""
    shown = _PASSWORD_RE.sub(r"\1***@", url)
    try:
        sa_url = make_url(url)
    except (ArgumentError, ValueError):
        raise InputError(None, field, f"{shown!r} is not a database URL ({URL_FORMS})") from None
    backend, driver = sa_url.get_backend_name(), sa_url.get_driver_name()
    if backend not in SUPPORTED_DRIVERS:
        raise InputError(None, field, f"unsupported database {backend!r} in {shown!r}: use {URL_FORMS}")
    if driver not in SUPPORTED_DRIVERS[backend]:
        raise InputError(None, field, f"driver {driver!r} is not installed: use {URL_FORMS}")
    if sa_url.port is not None and not 1 <= sa_url.port <= 65535:
        raise InputError(None, field, f"port {sa_url.port} in {shown!r} is not in 1..65535")
    if backend == "sqlite":
        _check_sqlite(sa_url, shown, field)
    return sa_url


def _check_sqlite(sa_url: URL, shown: str, field: str) -> None:
    if sa_url.host or sa_url.username or sa_url.port:
        raise InputError(
            None, field, f"{shown!r}: a SQLite URL has no host; use sqlite:///relative.db or sqlite:////absolute.db"
        )
    path = sqlite_path(sa_url)
    if path is None:
        return
    try:
        check_output(path)
    except InputError as exc:
        raise InputError(None, field, f"{path} {exc.problem}") from None


def normalize_url(url: str) -> str:
    """Rewrite `postgresql://`/`postgres://` (no driver) to `postgresql+psycopg://`."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def sqlite_path(sa_url: URL) -> Path | None:
    """The file of a SQLite URL; None for an in-memory database or a `file:` URI."""
    database = sa_url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


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
        path = sqlite_path(sa_url)
        if not read_only and path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
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
