"""`testbed redact [FILE|-]` through `testbed.cli.main` (what the `testbed` script runs) and typer."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.analysis.redact import redact
from testbed.cli import app, main

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----\n"
)
LOG = f"$ mysql -uroot -pR00tPassw0rd app\nok\n{PEM}$ htpasswd -b f admin Adm1nPw!\nDone.\n"


class _Stream(io.TextIOWrapper):
    """A text stream over bytes, like sys.stdin/sys.stdout."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")


def _main(monkeypatch: pytest.MonkeyPatch, *args: str, data: bytes = b"") -> tuple[int, bytes]:
    """Run `testbed redact ARGS` through `testbed.cli.main`: (exit status, stdout bytes)."""
    out = _Stream()
    monkeypatch.setattr(sys, "argv", ["testbed", "redact", *args])
    monkeypatch.setattr(sys, "stdin", _Stream(data))
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(SystemExit) as exit_:
        main()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), out.buffer.getvalue()  # type: ignore[attr-defined]


def test_file_is_redacted_like_the_recorder_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "session.log"
    log.write_text(LOG)
    code, data = _main(monkeypatch, str(log))
    assert code == 0
    out = data.decode()
    assert out == redact(LOG).text
    assert "R00tPassw0rd" not in out and "Adm1nPw!" not in out and "MIIEpAIBAAKCAQEA" not in out
    assert out.count("[REDACTED:") == 3 and out.endswith("Done.\n")


def test_standard_input_and_bytes_that_are_not_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\xff\xfe binary \x00\n" + LOG.encode() + b"caf\xe9 password=S3cr3t\xe9x end\n"
    code, out = _main(monkeypatch, "-", data=data)
    assert code == 0
    assert out.startswith(b"\xff\xfe binary \x00\n")  # bytes that are not UTF-8 pass through
    assert b"caf\xe9 password=[REDACTED:password] end\n" in out
    assert b"S3cr3t" not in out and b"R00tPassw0rd" not in out


def test_unreadable_file_is_exit_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.log"
    code, out = _main(monkeypatch, str(missing))
    err = capsys.readouterr().err
    assert code == 2 and out == b""
    assert str(missing) in err and "cannot read" in err
    code, out = _main(monkeypatch, str(tmp_path))  # a directory
    assert code == 2 and out == b"" and str(tmp_path) in capsys.readouterr().err


def test_default_is_standard_input_through_typer() -> None:
    result = CliRunner().invoke(app, ["redact"], input="export DB_PASS=DbPass_7788\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "export DB_PASS=[REDACTED:password]\n"
