"""`seed_demo` writes what its contract promises: the jobs, one run per spec with its
outcome, residue verdict and pinned timestamps, and snapshots at every point."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.engine import open_database
from testbed.db.models import Job, Run, Snapshot
from testbed.db.recorder import engine_of
from testbed.testing.demo import BASE_TIME, SPECS, seed_demo


def test_seed_writes_every_outcome_with_pinned_days(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'demo.db'}")
    demo = seed_demo(db)
    assert set(demo.jobs) == {"nightly", "smoke"}
    assert set(demo.runs) == {s.label for s in SPECS}
    with Session(engine_of(db)) as session:
        runs = {r.id: r for r in session.scalars(select(Run))}
        jobs = {j.id: j.name for j in session.scalars(select(Job))}
        points = Counter(s.run_id for s in session.scalars(select(Snapshot)))
    assert len(runs) == 8
    assert Counter(r.outcome for r in runs.values()) == {"passed": 4, "failed": 1, "error": 1, "cancelled": 1, None: 1}
    for spec in SPECS:
        run = runs[demo.runs[spec.label]]
        assert (run.task_id, run.image, run.agent, run.outcome) == (spec.task, spec.image, spec.agent, spec.outcome)
        assert jobs[run.job_id].startswith(spec.job)
        if spec.outcome is not None:
            assert run.residue == spec.residue
            assert run.started_at is not None and run.finished_at is not None
            assert (run.started_at.replace(tzinfo=BASE_TIME.tzinfo) - BASE_TIME).days == spec.day
            assert run.finished_at > run.started_at
        if spec.outcome in ("passed", "failed"):
            assert points[run.id] >= 3, spec.label
    assert points[demo.runs["dns-error"]] == 0  # it lost its guest during setup
    running = runs[demo.runs["running"]]
    assert running.finished_at is None and running.state != "finished"


def test_seed_without_the_unfinished_run(tmp_path: Path) -> None:
    demo = seed_demo(open_database(f"sqlite:///{tmp_path / 'demo.db'}"), unfinished=False)
    assert "running" not in demo.runs and len(demo.runs) == 7
