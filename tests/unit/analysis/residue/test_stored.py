"""Residue through the database: `record_residue` with a real `RunRecorder`, inputs read
back with `load_residue_inputs`, and `testbed runs findings` via CliRunner (SQLite)."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from testbed.analysis.residue import find_residue, record_residue
from testbed.analysis.residue.stored import load_residue_inputs
from testbed.cli.runs import findings_command
from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord
from testbed.db.types import utcnow
from testbed.errors import InputError
from testbed.model.task import Expected
from testbed.probes import parse_snapshot
from testbed.testing.snapshots import snapshot_from_dir

DEBIAN = Path(__file__).parents[2] / "fixtures" / "probes" / "debian"

app = typer.Typer()
app.command("findings")(findings_command)


@app.callback()
def _root() -> None:
    """Test CLI."""


runner = CliRunner()


def _cmd(rec: RunRecorder, command: str, *, source: str = "agent", phase: str = "agent", offset: int = 0) -> int:
    return rec.record_command(
        CommandRecord(
            node="web",
            phase=phase,
            source=source,
            command=command,
            started_at=utcnow() + timedelta(seconds=offset),
            duration_ms=50,
            exit_code=0,
        )
    )


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[str, str, dict[str, int]]:
    url = f"sqlite:///{tmp_path / 'testbed.db'}"
    sessions = open_database(url)
    rec = RunRecorder.create(sessions, task_id="web-fix", agent="scripted", image="debian-12")
    rec.add_node("web", "debian-12")
    base = parse_snapshot(snapshot_from_dir(DEBIAN))
    after = copy.deepcopy(base)
    after["tmp_files"]["entries"]["/tmp/build.log"] = {
        "type": "file",
        "mode": "0644",
        "uid": 0,
        "owner": "root",
        "gid": 0,
        "group": "root",
        "size": 5,
        "mtime": 1709700000,
    }
    after["sysctl"]["values"]["vm.swappiness"] = "10"
    ids = {
        "setup": _cmd(rec, "apt-get install -y nginx", source="harness", phase="setup"),
        "probe": _cmd(rec, "sh /run/testbed/snapshot.sh", source="harness", phase="probe"),
        "log": _cmd(rec, "make > /tmp/build.log 2>&1\necho done", offset=1),
        "swap": _cmd(rec, "sysctl -w vm.swappiness=10", offset=2),
        "noop": _cmd(rec, "uptime", offset=3),
    }
    rec.record_snapshot("web", "after_setup", base)
    rec.record_snapshot("web", "after_agent", after)
    rec.record_finding("impact", "service_stop", "systemctl stop cron", node="web", command_id=ids["noop"])
    with sessions() as session:
        snapshots, commands = load_residue_inputs(session, rec.run_id)
    assert set(snapshots["web"]) == {"after_setup", "after_agent"}
    assert [c.seq for c in commands] == [1, 2, 3, 4, 5]
    result = find_residue(snapshots, commands, Expected())
    assert result.verdict == "yes"
    record_residue(rec, result)
    return url, rec.run_id, ids


def test_findings_table(seeded: tuple[str, str, dict[str, int]]) -> None:
    url, run_id, _ = seeded
    result = runner.invoke(app, ["findings", run_id[:8], "--db", url])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "3 finding(s); residue: yes" in out
    for text in (
        "residue",
        "temp_files",
        "/tmp/build.log",
        "system_config",
        "vm.swappiness",
        "impact",
        "service_stop",
        "make > /tmp/build.log 2>&1 …",
        "sysctl -w vm.swappiness=10",
    ):
        assert text in out, text


def test_findings_json_and_kind_filter(seeded: tuple[str, str, dict[str, int]]) -> None:
    url, run_id, ids = seeded
    result = runner.invoke(app, ["findings", run_id, "--db", url, "--json", "--kind", "residue"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    assert data["run_id"] == run_id and data["residue"] == "yes"
    rows = {r["category"]: r for r in data["findings"]}
    assert set(rows) == {"temp_files", "system_config"}
    assert rows["temp_files"]["command_id"] == ids["log"]
    assert rows["temp_files"]["command_seq"] == 3
    assert rows["temp_files"]["command"].startswith("make > /tmp/build.log")
    assert rows["temp_files"]["evidence"]["attribution"]["command"]["seq"] == 3
    assert rows["system_config"]["command_seq"] == 4
    assert all(r["kind"] == "residue" for r in data["findings"])


def test_findings_unknown_run_and_bad_kind(seeded: tuple[str, str, dict[str, int]]) -> None:
    url, run_id, _ = seeded
    result = runner.invoke(app, ["findings", "ffffffffff", "--db", url])
    assert isinstance(result.exception, InputError)
    result = runner.invoke(app, ["findings", run_id, "--db", url, "--kind", "bogus"])
    assert isinstance(result.exception, InputError)
