"""`testbed.db.read.runs`: the runs list, one run's detail and completion times (SQLite)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.read import RunFilter, list_runs, run_detail
from testbed.db.read.runs import completion_times
from testbed.db.recorder import create_job
from testbed.errors import InputError
from tests.unit.db.conftest import T0, Seeder


def test_list_runs_filters_and_order(sessions: sessionmaker[Session], seed: Seeder) -> None:
    job = create_job(sessions, "j")
    a = seed.run(job_id=job, start=T0).run_id
    b = seed.run(outcome="failed", task="other", start=T0 + timedelta(minutes=1)).run_id
    c = seed.run(outcome=None, task="other", start=T0 + timedelta(minutes=2)).run_id
    with sessions() as s:
        assert [r.id for r in list_runs(s)] == [c, b, a]
        assert [r.id for r in list_runs(s, limit=2)] == [c, b]
        assert [r.id for r in list_runs(s, RunFilter(job_id=job))] == [a]
        assert [r.id for r in list_runs(s, RunFilter(job_id=job[:6]))] == [a]
        assert [r.id for r in list_runs(s, RunFilter(job_id="%"))] == []  # literal
        assert [r.id for r in list_runs(s, RunFilter(task="other"))] == [c, b]
        assert [r.id for r in list_runs(s, RunFilter(outcome="failed"))] == [b]
        assert [r.id for r in list_runs(s, RunFilter(outcome="unfinished"))] == [c]
        with pytest.raises(InputError, match="outcome"):
            list_runs(s, RunFilter(outcome="meh"))
        with pytest.raises(InputError, match="limit"):
            list_runs(s, limit=0)
        summary = list_runs(s, RunFilter(outcome="passed"))[0]
    assert summary.short_id == a[:8] and summary.duration_s == 90.0
    json.dumps(summary.to_dict())


def test_run_detail(sessions: sessionmaker[Session], seed: Seeder) -> None:
    rec = seed.run(commands=("a", "b\nsecond line", "c"))
    rec.phase_started("verify", at=T0 + timedelta(seconds=100))
    rec.phase_finished("verify", at=T0 + timedelta(seconds=112))
    cmd = seed.command(rec, "d", at=T0 + timedelta(seconds=105))
    rec.record_snapshot("web", "after_agent", {"packages": {}}, taken_at=T0 + timedelta(seconds=95))
    rec.record_check("R1", "passed", description="works", point="after_agent", node="web", detail={"stdout": "ok"})
    rec.record_finding("impact", "service_restart", "restarted nginx", node="web", command_id=cmd)
    with sessions() as s:
        d = run_detail(s, rec.run_id[:6])
        light = run_detail(s, rec.run_id, commands=False)
    assert [c.seq for c in d.commands] == [1, 2, 3, 4] and d.commands[1].command == "b\nsecond line"
    assert light.commands == [] and light.findings == d.findings
    assert [(p.name, p.start_s, p.duration_s) for p in d.phases] == [("agent", 0.0, 90.0), ("verify", 100.0, 12.0)]
    assert [(n.name, n.mgmt_ip) for n in d.nodes] == [("web", "10.213.0.10")]
    assert [(s.node, s.point) for s in d.snapshots] == [("web", "after_agent")]
    assert [(c.requirement, c.status, c.detail) for c in d.checks] == [("R1", "passed", {"stdout": "ok"})]
    [finding] = d.findings
    assert (finding.command_seq, finding.command_text, finding.kind) == (4, "d", "impact")
    data = d.to_dict()
    assert data["run"]["created_at"].endswith("+00:00") and "data" not in data["snapshots"][0]
    json.dumps(data)


def test_completion_times_per_category(sessions: sessionmaker[Session], seed: Seeder) -> None:
    seed.run(category="web", duration_s=10)
    seed.run(category="web", duration_s=30)
    seed.run(category="web", duration_s=20, outcome="error")
    seed.run(category=None, duration_s=5)
    seed.run(category="web", outcome=None)  # unfinished: no duration
    with sessions() as s:
        rows = completion_times(s, RunFilter())
    assert [(r.category, r.runs, r.min_s, r.median_s, r.max_s) for r in rows] == [
        ("(unknown)", 1, 5.0, 5.0, 5.0),
        ("web", 3, 10.0, 20.0, 30.0),
    ]
