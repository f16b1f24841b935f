"""`testbed dashboard`'s bind policy (no public address without a token) and its refusal of
a missing database (exit 2 before anything is served)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from testbed.cli.bind import is_loopback
from testbed.cli.dashboard import check_bind, dashboard_command
from testbed.errors import InputError


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.0.0.5")
    assert not is_loopback("example.org")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "t")
    with pytest.raises(InputError, match="without a token"):
        check_bind("0.0.0.0", None)


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("dashboard")(dashboard_command)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps `dashboard` a named sub-command
        """Nothing."""

    return app


def test_cli_refuses_public_bind_without_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_DASHBOARD_TOKEN", raising=False)
    result = CliRunner().invoke(_cli(), ["dashboard", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2
    assert "refusing to serve the dashboard on non-loopback address '0.0.0.0' without a token" in result.output


def test_cli_missing_database_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(_cli(), ["dashboard", "--db", f"sqlite:///{tmp_path / 'nope.db'}"])
    assert result.exit_code == 2
    assert "no database file" in result.output
