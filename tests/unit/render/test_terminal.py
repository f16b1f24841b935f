"""`testbed.render.terminal`: stored text is never Rich markup and never a control sequence
— the helper itself, and `runs show` / `runs findings` / `runs list` / `jobs show` on a
database holding hostile text."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from testbed.cli import app
from testbed.db.recorder import create_job
from testbed.render.terminal import cell, error_line, json_text, neutralise
from tests.unit.db.conftest import Seeder

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CSI = "\x1b[2J\x1b[31m"
C1_CSI = "\x9b31m"
SED = "sed -i 's/[/]var/[bold]x[/]/' /etc/fstab"


def test_neutralise_makes_controls_visible() -> None:
    assert neutralise(OSC52) == "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"
    assert neutralise(CSI) == "\\x1b[2J\\x1b[31m"
    assert neutralise(C1_CSI) == "\\x9b31m"
    assert neutralise("a\rb\x08c\x00d\x7f") == "a\\x0db\\x08c\\x00d\\x7f"
    assert neutralise("keep\ttabs\nand lines, ünïcode and …") == "keep\ttabs\nand lines, ünïcode and …"


def test_cell_is_never_markup() -> None:
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(cell(SED), cell(None), cell("[red]x[/red]"))
    assert buf.getvalue().split() == [*SED.split(), "-", "[red]x[/red]"]


def test_error_line_neutralises_the_message() -> None:
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(error_line("error", f"bad [/] {CSI}"))
    assert buf.getvalue() == "error: bad [/] \\x1b[2J\\x1b[31m\n"


def test_json_text_escapes_every_control_and_round_trips() -> None:
    value = {"out": OSC52 + C1_CSI + "é\x7f"}
    for ensure_ascii in (True, False):
        text = json_text(value, ensure_ascii=ensure_ascii)
        assert not any((ord(ch) < 0x20 and ch not in "\n ") or 0x7F <= ord(ch) <= 0x9F for ch in text)
        assert json.loads(text) == value
    assert "é" in json_text(value, ensure_ascii=False)


# --- every CLI output of stored text -----------------------------------------------------


@pytest.fixture
def hostile(sessions: sessionmaker[Session], seed: Seeder) -> dict[str, str]:
    job = create_job(sessions, f"nightly {CSI}[bold]")
    rec = seed.run(job_id=job, task="web[/]fix", commands=(SED,))
    cmd = seed.command(rec, f"printf '{OSC52}'", stdout=OSC52 + C1_CSI)
    rec.record_finding("residue", "file", f"left [/tmp] {CSI}", node="web", command_id=cmd)
    rec.record_check("R1", "failed", description=f"[link]{OSC52}", node="web")
    rec.update_run(error=f"lost guest: {OSC52}")
    return {"run": rec.run_id, "job": job}


@pytest.mark.parametrize(
    "args",
    [["runs", "show", "{run}"], ["runs", "findings", "{run}"], ["runs", "list"], ["jobs", "list"],
     ["jobs", "show", "{job}"], ["runs", "show", "{run}", "--json"], ["runs", "findings", "{run}", "--json"],
     ["runs", "list", "--json"]],
)  # fmt: skip
def test_cli_prints_hostile_text_inertly(db_url: str, hostile: dict[str, str], args: list[str]) -> None:
    result = CliRunner().invoke(app, [a.format(**hostile) for a in args] + ["--db", db_url])
    assert result.exit_code == 0, result.output
    out = result.output
    assert not any(ch in out for ch in "\x1b\x07\x9b"), repr(out)
    if "--json" in args:
        json.loads(out)  # still valid JSON, the escapes decode to the stored text
    elif args[:2] == ["runs", "show"]:
        assert SED in out and "\\x1b]52;c;" in out and "web[/]fix" in out and "left [/tmp]" in out
    elif args[:2] == ["jobs", "show"]:
        assert "web[/]fix" in out and "nightly \\x1b[2J" in out


def test_runs_show_json_keeps_the_stored_text(db_url: str, hostile: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["runs", "show", hostile["run"], "--json", "--db", db_url])
    data = json.loads(result.output)
    assert data["commands"][0]["command"] == SED
    assert data["commands"][1]["stdout"] == OSC52 + C1_CSI
    assert data["run"]["error"] == f"lost guest: {OSC52}"


def test_run_result_prints_guest_text_inertly() -> None:
    from testbed.cli.run import _print_result
    from testbed.model.task import Check
    from testbed.runner.run import RunResult
    from testbed.runner.verify import CheckResult

    check = Check(id="R1", description="d", node="web", command="true")
    result = RunResult(
        run_id="f" * 32,
        outcome="error",
        error=f"guest lost after {SED} {OSC52}",
        checks=[CheckResult(check, "after_agent", "failed", {"reason": f"stdout was [/]{CSI}"})],
    )
    buf = io.StringIO()
    _print_result(Console(file=buf, width=300, color_system=None), result)
    out = buf.getvalue()
    assert "stdout was [/]\\x1b[2J" in out and SED in out and "\\x1b]52;c;" in out
    assert "\x1b" not in out and "\x07" not in out
