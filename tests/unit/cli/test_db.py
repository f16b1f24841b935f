"""`testbed db upgrade|current` through Typer's CliRunner (SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli.db import db_app

runner = CliRunner()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'testbed.db'}"


def test_db_upgrade_and_current(url: str) -> None:
    from testbed.db.migrate import head_revision

    head = head_revision()
    result = runner.invoke(db_app, ["upgrade", "--db", url])
    assert result.exit_code == 0, result.output
    assert f"at revision {head}" in result.output
    result = runner.invoke(db_app, ["current", "--db", url])
    assert result.exit_code == 0, result.output
    assert f"at revision {head}; head is {head}" in result.output


def test_db_upgrade_uses_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_DB", raising=False)
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    result = runner.invoke(db_app, ["upgrade"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "home" / "testbed.db").exists()
