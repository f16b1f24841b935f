"""Open the run database: `open_database(url, upgrade=True)` resolves the URL, migrates the
schema to head (optional) and returns a `sessionmaker` with `expire_on_commit=False` bound
to a fresh engine.

URLs and engines themselves are `testbed.db.connect` (`database_url`, `normalize_url`,
`make_engine`, `writer_engine`, see its contracts); they are re-exported here because most
callers want them together with `open_database`. `connect` sits below `migrate`, this
module above both, so neither imports the other back.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from testbed.db.connect import (
    SQLITE_BUSY_TIMEOUT_MS,
    connection_error,
    database_url,
    make_engine,
    normalize_url,
    writer_engine,
)
from testbed.db.migrate import upgrade as run_upgrade

__all__ = [
    "SQLITE_BUSY_TIMEOUT_MS",
    "connection_error",
    "database_url",
    "make_engine",
    "normalize_url",
    "open_database",
    "writer_engine",
]


def open_database(url: str | None = None, *, upgrade: bool = True) -> sessionmaker[Session]:
    """Resolve `url` with `database_url`, migrate it to head when `upgrade`, and return a
    sessionmaker (`expire_on_commit=False`) bound to a fresh engine for it."""
    resolved = database_url(url)
    if upgrade:
        run_upgrade(resolved)
    return sessionmaker(bind=make_engine(resolved), expire_on_commit=False)
