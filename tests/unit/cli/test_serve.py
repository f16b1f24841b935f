"""`testbed serve` options: `--no-token` only on loopback, never with a token (exit 2
before anything is opened)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from testbed.cli import app
from testbed.cli.bind import is_loopback
from testbed.cli.serve import check_token_options
from testbed.errors import InputError


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    check_token_options(host, None, True)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "example.org", "", "127.0.0.1.nip.io"])
def test_no_token_refused_off_loopback(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(InputError, match="loopback"):
        check_token_options(host, None, True)
    check_token_options(host, "t", False)  # with a token any address is fine


def test_no_token_with_a_token_is_refused() -> None:
    with pytest.raises(InputError, match="conflicts"):
        check_token_options("127.0.0.1", "t", True)


def test_serve_exits_2_off_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTBED_ENV_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["serve", "--no-token", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "loopback" in result.output
