"""testbed.db.connect: a database URL is checked before anything is opened or created."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.db.connect import database_url, parse_url
from testbed.db.engine import open_database
from testbed.errors import InputError


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("nonsense", "'nonsense' is not a database URL"),
        ("sqlite://relative", "a SQLite URL has no host"),
        ("postgresql+psycopg://u:hunter2@db:port/x", "u:***@db:port/x' is not a database URL"),
        ("postgresql+psycopg://u@db:70000/x", "port 70000"),
        ("postgresql+psycopg://u@db:0/x", "port 0"),
        ("mysql://u@db/x", "unsupported database 'mysql'"),
        ("postgresql+psycopg2://db/x", "driver 'psycopg2' is not installed"),
        ("sqlite+pysqlcipher:///x.db", "driver 'pysqlcipher'"),
    ],
)
def test_bad_urls_are_input_errors(url: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        parse_url(url, "--db")
    assert info.value.field == "--db" and needle in info.value.problem
    assert "hunter2" not in str(info.value)


def test_sqlite_files_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is not a directory"):
        parse_url(f"sqlite:///{tmp_path}/f/x.db")
    with pytest.raises(InputError, match="not a regular file"):
        parse_url(f"sqlite:///{tmp_path}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_the_field_says_where_the_url_came_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TESTBED_DB", "postgres://u@db:x/y")
    with pytest.raises(InputError) as info:
        database_url()
    assert info.value.field == "TESTBED_DB"
    with pytest.raises(InputError) as info:
        open_database("nonsense")
    assert info.value.field == "--db"
    monkeypatch.delenv("TESTBED_DB")
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    assert database_url() == f"sqlite:///{tmp_path / 'home' / 'testbed.db'}"
    assert parse_url("sqlite://").get_backend_name() == "sqlite"  # in memory: nothing to check
