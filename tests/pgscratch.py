"""Scratch databases on the real PostgreSQL server the tests are given (env
`TESTBED_TEST_PG_URL`; `scripts/start-postgres.sh DIR PORT` starts a throwaway one and prints
the URL). Every test module that needs PostgreSQL marks itself with `REQUIRES_POSTGRES` and
takes a database of its own from `scratch_database`, dropped afterwards (the role needs
CREATEDB)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from testbed.db.engine import normalize_url

PG_URL = os.environ.get("TESTBED_TEST_PG_URL")

REQUIRES_POSTGRES = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_URL, reason="TESTBED_TEST_PG_URL is not set (start a server with scripts/start-postgres.sh)"
    ),
]


def scratch_database(prefix: str) -> Iterator[str]:
    """Create a fresh database next to `TESTBED_TEST_PG_URL`'s, yield its URL (password
    kept), drop it (with its connections) afterwards. Use with `yield from`, or iterate."""
    assert PG_URL, "scratch_database needs TESTBED_TEST_PG_URL"
    base = make_url(normalize_url(PG_URL))
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
