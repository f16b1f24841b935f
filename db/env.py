"""Alembic environment of the run database.

Used programmatically by `testbed.db.migrate` (which passes an open connection in
`config.attributes["connection"]`) or by the `alembic` CLI with `-x`-free defaults: the URL
comes from `sqlalchemy.url`, else from `testbed.db.connect.database_url(None)`.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from testbed.db.connect import database_url, make_engine, writer_engine
from testbed.db.migrate import ADVISORY_LOCK_KEY
from testbed.db.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return database_url(config.get_main_option("sqlalchemy.url") or None)


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=sqlite,
        # SQLAlchemy emits BEGIN itself on SQLite (testbed.db.connect), so DDL is transactional.
        transactional_ddl=True if sqlite else None,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": ADVISORY_LOCK_KEY})
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit SQL to stdout (`alembic upgrade --sql`)."""
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate through the caller's connection, or one opened on the configured URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = writer_engine(make_engine(_url()))
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
