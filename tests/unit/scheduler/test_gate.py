"""`testbed gate`: the exit status of a promotion gate over a job's final runs, on a real
SQLite database (retried cells count their last run; every category above its floor;
incomplete jobs and missing data fail closed; bad input is exit 2)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from testbed.cli import app
from testbed.db.engine import open_database
from testbed.db.models import Run, new_id
from testbed.db.recorder import RunRecorder
from testbed.db.types import utcnow
from testbed.scheduler.gate import GateRules, evaluate
from testbed.scheduler.jobrows import NewRun, create_job_with_runs

runner = CliRunner()


def make_job(db: sessionmaker[Session], outcomes: list[tuple[str, str | None]]) -> tuple[str, list[str]]:
    """A job with one run per (category, outcome); None leaves the run pending."""
    runs = [NewRun(f"task-{i}", "debian-12", 1, category) for i, (category, _) in enumerate(outcomes)]
    job_id, run_ids = create_job_with_runs(db, "gate", {}, "oracle", runs)
    for run_id, (_, outcome) in zip(run_ids, outcomes, strict=True):
        if outcome is not None:
            RunRecorder(db, run_id).finish(outcome)
    return job_id, run_ids


def retry(db: sessionmaker[Session], run_id: str, outcome: str) -> None:
    """A follow-up of `run_id` (as the scheduler inserts it) that ended with `outcome`."""
    with db() as session, session.begin():
        old = session.get(Run, run_id)
        assert old is not None
        new = Run(id=new_id(), job_id=old.job_id, task_id=old.task_id, task_category=old.task_category,
                  variant=old.variant, image=old.image, agent=old.agent, attempt=old.attempt, state="pending",
                  created_at=utcnow() + timedelta(seconds=1), retry=old.retry + 1, retry_of=old.id)  # fmt: skip
        session.add(new)
        new_run = new.id
    RunRecorder(db, new_run).finish(outcome)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def gate(db_url: str, job: str, *flags: str) -> tuple[int, str]:
    result = runner.invoke(app, ["gate", job, "--db", db_url, *flags])
    return result.exit_code, result.output


def test_a_job_that_meets_every_floor_passes(db_url: str) -> None:
    db = open_database(db_url)
    job, runs = make_job(db, [("web", "passed"), ("web", "passed"), ("web", "failed"), ("storage", "error")])
    retry(db, runs[3], "passed")  # the retried cell counts its last run only
    code, out = gate(db_url, job, "--min-pass", "0.7", "--min-category", "0.6", "--max-error-rate", "0")
    assert code == 0, out
    assert "gate: PASS" in out
    code, out = gate(db_url, job[:8], "--min-pass", "0.8")
    assert code == 1 and "FAIL min-pass 0.8: pass rate 0.750 (3/4)" in out


def test_every_category_must_clear_its_floor(db_url: str) -> None:
    db = open_database(db_url)
    job, _ = make_job(db, [("web", "passed"), ("web", "passed"), ("dns", "failed"), ("dns", "passed")])
    code, out = gate(db_url, job, "--min-pass", "0.7", "--min-category", "0.6", "--json")
    assert code == 1
    verdict = json.loads(out)
    assert verdict["verdict"] == "fail"
    failing = [r["rule"] for r in verdict["rules"] if not r["holds"]]
    assert failing == ["min-category 0.6: dns"]
    assert verdict["categories"]["dns"]["pass_rate"] == 0.5


def test_errors_count_against_the_error_rate_and_a_category_of_errors_fails(db_url: str) -> None:
    db = open_database(db_url)
    job, _ = make_job(db, [("web", "passed"), ("web", "passed"), ("dns", "error")])
    assert gate(db_url, job, "--max-error-rate", "0.4")[0] == 0
    code, out = gate(db_url, job, "--max-error-rate", "0.2")
    assert code == 1 and "error rate 0.333 (1/3)" in out
    code, out = gate(db_url, job, "--min-category", "0.5")
    assert code == 1 and "dns: pass rate none" in out  # no decided run: no rate, fails closed


def test_an_unfinished_job_fails_closed(db_url: str) -> None:
    db = open_database(db_url)
    job, _ = make_job(db, [("web", "passed"), ("web", None)])
    code, out = gate(db_url, job, "--min-pass", "0.5")
    assert code == 1 and "1 final run(s) unfinished or cancelled" in out


def test_no_data_and_bad_input(db_url: str) -> None:
    db = open_database(db_url)
    job, _ = make_job(db, [("web", None), ("web", "cancelled")])
    code, out = gate(db_url, job, "--min-pass", "0.5")
    assert code == 3 and "NO DATA" in out
    assert runner.invoke(app, ["gate", job, "--db", db_url]).exit_code != 0
    with pytest.raises(Exception, match="give at least one"):
        GateRules()
    with pytest.raises(Exception, match="not a rate between 0 and 1"):
        GateRules(min_pass=80)


def test_exit_statuses_through_main(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input through the real entry point is exit 2, as for every command."""
    from testbed.cli import main

    db = open_database(db_url)
    job, _ = make_job(db, [("web", "passed")])

    def status(*args: str) -> int:
        monkeypatch.setattr("sys.argv", ["testbed", "gate", *args])
        with pytest.raises(SystemExit) as info:
            main()
        return int(info.value.code or 0)

    assert status(job, "--db", db_url, "--min-pass", "1") == 0
    assert status(job, "--db", db_url) == 2
    assert status(job, "--db", db_url, "--min-pass", "1.5") == 2
    assert status("zzzzzz", "--db", db_url, "--min-pass", "1") == 2
    assert status(job, "--db", f"sqlite:///{tmp_path / 'missing.db'}", "--min-pass", "1") == 2


def test_evaluate_without_runs_is_no_data() -> None:
    assert evaluate({}, GateRules(min_pass=0.5)).status == 3
