"""`testbed.db.read.jobs`: jobs with their progress, one job's runs, final errors."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Run
from testbed.db.read.jobs import final_errors, job_choices, job_detail, recent_jobs
from testbed.db.recorder import RunRecorder, create_job
from tests.unit.db.conftest import Seeder


def test_recent_jobs_count_runs_by_state_and_outcome(sessions: sessionmaker[Session], seed: Seeder) -> None:
    old = create_job(sessions, "old")
    new = create_job(sessions, "new", {"spec": {"agent": "oracle"}})
    seed.run(job_id=new, outcome="passed")
    seed.run(job_id=new, outcome="error")
    RunRecorder.create(sessions, task_id="t", agent="a", job_id=new)  # pending
    running = RunRecorder.create(sessions, task_id="t", agent="a", job_id=new)
    running.set_state("agent")
    with sessions() as s:
        jobs = recent_jobs(s, limit=5)
        assert [j.name for j in recent_jobs(s, limit=1)] == ["new"]
        assert job_choices(s) == [(new, "new"), (old, "old")]
    assert [j.id for j in jobs] == [new, old]
    j = jobs[0]
    assert (j.counts.total, j.counts.passed, j.counts.error, j.pending, j.running, j.done) == (4, 1, 1, 1, 1, 2)
    assert j.states == {"pending": 1, "agent": 1} and jobs[1].counts.total == 0


def test_job_detail_and_final_errors(sessions: sessionmaker[Session], seed: Seeder) -> None:
    job = create_job(sessions, "j", {"spec": {"attempts": 2}}, job_id="face" + "0" * 28)
    first = seed.run(job_id=job, outcome="error", task="b").run_id
    retry = seed.run(job_id=job, outcome="passed", task="b").run_id
    seed.run(job_id=job, outcome="error", task="a")
    with sessions() as s, s.begin():
        s.execute(update(Run).where(Run.id == retry).values(retry_of=first, retry=1))
    with sessions() as s:
        detail = job_detail(s, "face")
        assert final_errors(s, job) == 1  # task b's error was retried and passed
    assert detail.config == {"spec": {"attempts": 2}} and detail.job.counts.total == 3
    assert [(r.task_id, r.retry) for r in detail.runs] == [("a", 0), ("b", 0), ("b", 1)]
