"""`testbed.db.read.database`: read-only commands never create, migrate or write a database.

Every read-only command is run through the real entry point (`testbed.cli.main`) and must
exit 2 with a message naming the problem — a missing SQLite file (nothing created, not even
its directory), a database at an older schema or without tables, a bad URL — or exit 3
with one line when PostgreSQL cannot be reached."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from testbed.db.migrate import current_revision, head_revision, upgrade
from testbed.db.read import open_read_only, read_only_engine
from testbed.errors import HarnessError, InputError

RUN = "feedface" + "0" * 24


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    return {
        "runs list": ["runs", "list"],
        "runs show": ["runs", "show", RUN],
        "runs findings": ["runs", "findings", RUN],
        "jobs list": ["jobs", "list"],
        "jobs show": ["jobs", "show", RUN],
        "dashboard": ["dashboard", "--port", "1"],
        "export": ["export", str(tmp_path / "out")],
        "report": ["report", "--out", str(tmp_path / "report.md")],
    }


COMMANDS = list(_commands(Path("/")))


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    from testbed.cli import main

    monkeypatch.setattr("sys.argv", ["testbed", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.err + captured.out


def _nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "out").exists() and not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_sqlite_file_is_exit_2_and_creates_nothing(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "absent" / "testbed.db"
    status, out = _main(monkeypatch, capsys, [*_commands(tmp_path)[command], "--db", f"sqlite:///{db}"])
    assert status == 2, out
    assert f"no database file at {db}" in out and "testbed db upgrade" in out
    assert not db.parent.exists()
    _nothing_written(tmp_path)


def test_default_database_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TESTBED_DB", raising=False)
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    status, out = _main(monkeypatch, capsys, ["runs", "list"])
    assert status == 2 and "TESTBED_HOME: no database file at" in out
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_older_schema_says_to_upgrade(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0003")
    status, out = _main(monkeypatch, capsys, [*_commands(tmp_path)[command], "--db", url])
    assert status == 2, out
    assert f"is at schema revision 0003, older than {head_revision()}; run `testbed db upgrade`" in out
    assert current_revision(url) == "0003"  # not migrated
    _nothing_written(tmp_path)


@pytest.mark.parametrize("command", COMMANDS)
def test_unreachable_postgresql_is_exit_3_in_one_line(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://tester:s3cret@127.0.0.1:1/runs"  # nothing listens on port 1
    status, out = _main(monkeypatch, capsys, [*_commands(tmp_path)[command], "--db", url])
    assert status == 3, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness error: cannot connect to PostgreSQL at 127.0.0.1:1")
    assert "(user tester, database runs)" in out and "check the host, port and credentials" in out
    assert "s3cret" not in out and "Traceback" not in out
    _nothing_written(tmp_path)


def test_database_without_tables(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(InputError, match="has no run tables; run `testbed db upgrade`"):
        read_only_engine(f"sqlite:///{path}")
    assert path.stat().st_size == 0


def test_unknown_revision_and_broken_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'newer.db'}"
    upgrade(url)
    from testbed.db.engine import make_engine

    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(InputError, match="schema revision 9999, which this testbed does not know"):
        read_only_engine(url)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(InputError, match="cannot be read as a SQLite database"):
        read_only_engine(f"sqlite:///{junk}")


@pytest.mark.parametrize(
    ("url", "message"),
    [("::not a url::", "is not a database URL"), ("mysql://u@h/db", "unsupported database 'mysql'")],
)
def test_bad_urls_are_input_errors(url: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match=message) as caught:
        read_only_engine(url)
    assert caught.value.field == "--db"
    monkeypatch.setenv("TESTBED_DB", url)
    with pytest.raises(InputError) as from_env:
        read_only_engine(None)
    assert from_env.value.field == "TESTBED_DB"


def test_connections_refuse_writes(db_url: str) -> None:
    sessions = open_read_only(db_url)
    with sessions() as session, pytest.raises(OperationalError, match=r"readonly|query_only"):
        session.execute(text("DELETE FROM runs"))


def test_upgrade_of_unreachable_postgresql_is_a_harness_error() -> None:
    with pytest.raises(HarnessError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:1 .*check the host"):
        upgrade("postgresql://tester@127.0.0.1:1/runs")
