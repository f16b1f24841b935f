"""`testbed.db.read.commands`, `findings`, `snapshots`: a run's commands (full and paged),
its findings, and the inputs of a residue re-analysis."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.analysis.residue.stored import load_residue_inputs
from testbed.db.read.commands import attach_findings, command_infos, command_page, command_page_of, full_command
from testbed.db.read.findings import load_findings, run_findings
from testbed.db.read.snapshots import residue_inputs, snapshot_infos, snapshot_stamps
from testbed.errors import InputError
from tests.unit.db.conftest import Seeder


def test_command_page_cuts_and_counts(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(commands=[f"echo {i}" for i in range(1, 8)])
    big = seed.command(rec, "cat big", stdout="x" * 50, impact=["service-stop"])
    fid = rec.record_finding("impact", "service-stop", "stopped", command_id=big)
    with sessions() as s:
        page = command_page(s, rec.run_id, page=3, page_size=3, chars=10)
        clamped = command_page(s, rec.run_id, page=99, page_size=3)
        findings = run_findings(s, rec.run_id)
    assert (page.total, page.pages, page.page, page.impactful, page.phase_counts) == (8, 3, 3, 1, {"agent": 8})
    assert [c.seq for c in page.commands] == [7, 8] and clamped.page == 3
    last = page.commands[-1]
    assert (last.stdout, last.stdout_length, last.status) == ("x" * 10, 50, "ok")
    attach_findings(page.commands, findings)
    assert last.findings == [{"id": fid, "kind": "impact", "category": "service-stop"}]
    assert command_page_of(1, 3) == 1 and command_page_of(7, 3) == 3


def test_full_command_and_infos(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(commands=("a", "b"))
    with sessions() as s:
        full = full_command(s, rec.run_id[:8], 2)
        assert full_command(s, rec.run_id, 9) is None
        infos = command_infos(s, rec.run_id)
    assert full is not None and full["run_id"] == rec.run_id and full["command"] == "b"
    assert full["started_at"].endswith("+00:00") and [c.command for c in infos] == ["a", "b"]


def test_findings_of_a_run(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(commands=("x" * 300,))
    rec.record_finding("residue", "file", "left /tmp/x", command_id=1)
    rec.record_finding("safety", "power", "rebooted")
    rec.set_residue("yes")
    with sessions() as s:
        found = load_findings(s, rec.run_id[:5])
        residue = load_findings(s, rec.run_id, "residue")
        cut = run_findings(s, rec.run_id, command_chars=20)
        with pytest.raises(InputError, match="kind: must be one of residue, impact, safety"):
            load_findings(s, rec.run_id, "bogus")
    assert found.residue == "yes" and [f.kind for f in found.findings] == ["residue", "safety"]
    assert found.findings[0].command_text == "x" * 300 and cut[0].command_text == "x" * 20
    assert [f.kind for f in residue.findings] == ["residue"] and found.findings[1].command_seq is None


def test_residue_inputs_and_snapshots(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(commands=("make > /tmp/log",))
    rec.record_snapshot("web", "after_setup", {"packages": {}})
    rec.record_snapshot("web", "after_agent", {"packages": {"x": 1}})
    with sessions() as s:
        snapshots, commands = residue_inputs(s, rec.run_id)
        views = load_residue_inputs(s, rec.run_id)[1]
        points = [i.point for i in snapshot_infos(s, rec.run_id)]
        stamps = snapshot_stamps(s, rec.run_id)
    assert snapshots == {"web": {"after_setup": {"packages": {}}, "after_agent": {"packages": {"x": 1}}}}
    assert [(c.seq, c.command, c.exit_code) for c in commands] == [(1, "make > /tmp/log", 0)]
    assert [(v.seq, v.command, v.source) for v in views] == [(1, "make > /tmp/log", "agent")]
    assert points == ["after_setup", "after_agent"] and len(stamps) == 2
