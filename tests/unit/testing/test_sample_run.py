"""`record_sample_run` writes a complete run through the recorder; `check_sample_run` accepts
it and rejects a run that differs."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from testbed.db.engine import open_database
from testbed.db.models import Command, Run
from testbed.db.recorder import engine_of
from testbed.testing.sample_run import check_sample_run, record_sample_run


def test_sample_run_reads_back_as_recorded(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = record_sample_run(db)
    check_sample_run(db, run_id)
    with Session(engine_of(db)) as session:
        run = session.get(Run, run_id)
        commands = session.scalars(select(Command).where(Command.run_id == run_id)).all()
    assert run is not None and (run.outcome, run.reward) == ("passed", 1.0)
    assert len(commands) == 5


def test_parameters_reach_the_record(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = record_sample_run(db, task_id="dns-zone", agent="claude", outcome="failed", attempt=3)
    with Session(engine_of(db)) as session:
        run = session.get(Run, run_id)
    assert run is not None
    assert (run.task_id, run.agent, run.outcome, run.reward, run.attempt) == ("dns-zone", "claude", "failed", 0.0, 3)


def test_check_rejects_a_changed_run(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = record_sample_run(db)
    with Session(engine_of(db)) as session, session.begin():
        session.execute(update(Run).where(Run.id == run_id).values(host="elsewhere"))
    with pytest.raises(AssertionError):
        check_sample_run(db, run_id)
