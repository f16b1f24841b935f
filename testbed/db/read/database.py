"""Opening the run database for reading: never creating, migrating or writing it.

Contracts (every read-only command — `runs list/show/findings`, `jobs list/show`,
`dashboard`, `export`, `report` — opens the database through `open_read_only` or
`read_only_engine`):

- The URL is resolved by `testbed.db.engine.database_url`. One that does not parse, or
  names a backend other than SQLite or PostgreSQL, is an `InputError` (exit status 2)
  naming where it came from (`--db`, `TESTBED_DB`).
- A SQLite file that does not exist is an `InputError` naming the file; nothing is created
  (not the file, not its directory). A file that is not a SQLite database is one too.
- A database without the run tables, or at a schema revision older than the newest
  migration, is an `InputError` that says to run `testbed db upgrade`; one at a revision
  this testbed does not know (written by a newer testbed) is an `InputError` as well.
- An unreachable PostgreSQL (refused, unknown host, bad credentials, timeout after
  `PG_CONNECT_TIMEOUT_S`) is a `HarnessError` (exit status 3) of one line naming the host,
  port, user and database and saying to check them (`testbed.db.engine.connection_error`).
- Nothing is written, not even a journal-mode change, and every connection refuses writes
  (`testbed.db.engine.make_engine(read_only=True)`). The one exception is `open_existing`,
  for commands that update rows already there: checked the same way, then writable.
"""

from __future__ import annotations

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.connect import parse_url, sqlite_path, url_source
from testbed.db.engine import connection_error, database_url, make_engine
from testbed.db.migrate import alembic_config
from testbed.errors import InputError

PG_CONNECT_TIMEOUT_S = 10
"""Seconds a read-only command waits for PostgreSQL to answer (unless the URL sets one)."""


def check_schema(conn: Connection, shown: str, field: str) -> None:
    """Raise `InputError` unless the database is at the newest schema (see the contract)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    revision = MigrationContext.configure(conn).get_current_revision()
    if revision == head:
        return
    upgrade = "run `testbed db upgrade` (read-only commands never migrate)"
    if revision is None:
        what = "has no run tables" if not inspect(conn).has_table("runs") else "has no schema revision"
        raise InputError(None, field, f"{shown} {what}; {upgrade}")
    known = {r.revision for r in script.walk_revisions()}
    if revision in known:
        raise InputError(None, field, f"{shown} is at schema revision {revision}, older than {head}; {upgrade}")
    raise InputError(
        None, field, f"{shown} is at schema revision {revision}, which this testbed does not know (newest: {head})"
    )


def read_only_engine(url: str | None = None) -> Engine:
    """An engine on the database at `url` (see the module contract) that refuses writes."""
    field = url_source(url)
    sa_url = parse_url(database_url(url), field)
    shown = sa_url.render_as_string(hide_password=True)
    path = sqlite_path(sa_url) if sa_url.get_backend_name() == "sqlite" else None
    if path is not None and not path.is_file():
        raise InputError(None, field, f"no database file at {path}; run `testbed db upgrade` to create one")
    if sa_url.get_backend_name() == "postgresql" and "connect_timeout" not in sa_url.query:
        sa_url = sa_url.update_query_dict({"connect_timeout": str(PG_CONNECT_TIMEOUT_S)})
    engine = make_engine(sa_url.render_as_string(hide_password=False), read_only=True)
    try:
        with engine.connect() as conn:
            check_schema(conn, shown, field)
    except DBAPIError as exc:
        engine.dispose()
        if path is not None:
            raise InputError(None, field, f"{path} cannot be read as a SQLite database ({exc.orig})") from None
        raise connection_error(exc, sa_url) from None
    except BaseException:
        engine.dispose()
        raise
    return engine


def open_read_only(url: str | None = None) -> sessionmaker[Session]:
    """A sessionmaker (`expire_on_commit=False`) over `read_only_engine(url)`."""
    return sessionmaker(bind=read_only_engine(url), expire_on_commit=False)


def open_existing(url: str | None = None) -> sessionmaker[Session]:
    """A WRITABLE sessionmaker on a database that must already exist at the newest schema,
    for commands that change rows that are there (`jobs cancel`, `launch --resume`): it is
    checked as `read_only_engine` checks it, so a missing file or an old schema is an
    `InputError` and nothing is created or migrated."""
    read_only_engine(url).dispose()
    return sessionmaker(bind=make_engine(database_url(url)), expire_on_commit=False)
