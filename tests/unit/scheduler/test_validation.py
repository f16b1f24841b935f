"""Task validation's report: rows from two jobs' final runs in a real SQLite database
(retries resolved, residue findings named), the merge that keeps rows of tasks not
validated this time, and the job files it launches."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.cli.validate_tasks import task_ids, write_report
from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.db.recorder import RunRecorder
from testbed.model.job import JobSpec, expand_matrix
from testbed.runtime import image_catalog
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.validation import Row, job_spec, merge_report, parse_rows, render_report

ROOT = Path(__file__).resolve().parents[3]


def finish(
    db: sessionmaker[Session],
    run_id: str,
    outcome: str,
    *,
    residue: str | None = None,
    findings: list[str] = (),
    error: str | None = None,
    seconds: int = 75,
) -> None:  # type: ignore[assignment]
    rec = RunRecorder(db, run_id)
    rec.set_state("provisioning")
    for summary in findings:
        rec.record_finding("residue", "temp_files", summary, node="node")
    if residue is not None:
        rec.set_residue(residue)
    rec.finish(outcome, error)
    with db() as session, session.begin():
        run = session.get(Run, run_id)
        assert run is not None and run.finished_at is not None
        run.started_at = run.finished_at - timedelta(seconds=seconds)


def jobs(db: sessionmaker[Session]) -> tuple[str, str]:
    cells = [NewRun(t, image, 1, "svc") for t, image in
             (("alpha", "debian-12"), ("alpha", "debian-13"), ("beta", "debian-12"))]  # fmt: skip
    oracle, o_ids = create_job_with_runs(db, "validate-oracle", {}, "oracle", cells)
    noop, n_ids = create_job_with_runs(db, "validate-noop", {}, "noop", cells)
    finish(db, o_ids[0], "passed", residue="no", seconds=95)
    finish(db, o_ids[1], "passed", residue="yes", findings=["/tmp/solve.log left | behind", "/root/x.bak"])
    finish(db, o_ids[2], "error", error="setup: step 'setup/break.sh' on node exited 1: apt failed")
    finish(db, n_ids[0], "failed", residue="no", seconds=40)
    finish(db, n_ids[1], "failed", residue="no")
    finish(db, n_ids[2], "passed", residue="no")
    return oracle, noop


def test_report_rows_from_a_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    db = open_database(url)
    oracle, noop = jobs(db)
    report = tmp_path / "VALIDATION.md"
    (tmp_path / "tasks").mkdir()  # a library without tasks: every row is one it does not declare
    assert write_report(url, (oracle[:8], noop), report, "abc1234", tmp_path) is False
    rows = {r.key: r for r in parse_rows(report.read_text())}
    assert set(rows) == {("alpha", "debian-12"), ("alpha", "debian-13"), ("beta", "debian-12")}
    good = rows[("alpha", "debian-12")]
    assert (good.oracle, good.oracle_time, good.residue, good.noop, good.noop_time, good.verdict, good.commit) == (
        "passed", "1m 35s", "no", "failed", "40s", "ok", "abc1234",
    )  # fmt: skip
    dirty = rows[("alpha", "debian-13")]
    assert dirty.verdict == "PROBLEM" and dirty.residue == "yes (2)"
    assert "residue: 2 finding(s): node: temp_files: /tmp/solve.log left | behind" in dirty.notes
    broken = rows[("beta", "debian-12")]
    assert broken.verdict == "PROBLEM" and broken.oracle == "error" and "apt failed" in broken.notes
    assert "noop passed" in broken.notes
    assert "1 of 3 cells ok (2 tasks)." in report.read_text()
    assert (
        "Audit at abc1234 (`scripts/validate-tasks --audit`): 0 of 0 declared cells current and ok (3 undeclared)."
        in (report.read_text())
    )
    # naming tasks writes only their rows (the others keep what they had)
    only = tmp_path / "ONLY.md"
    assert write_report(url, (oracle, noop), only, "abc1234", tmp_path, only={"alpha"}) is False
    assert {r.task for r in parse_rows(only.read_text())} == {"alpha"}


def test_a_retried_cell_reports_its_last_run(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    oracle, o_ids = create_job_with_runs(db, "o", {}, "oracle", [NewRun("alpha", "debian-12", 1)])
    noop, n_ids = create_job_with_runs(db, "n", {}, "noop", [NewRun("alpha", "debian-12", 1)])
    finish(db, o_ids[0], "error", error="libvirt fell over")
    with db() as session, session.begin():
        session.add(Run(id="r" * 32, job_id=oracle, task_id="alpha", variant="debian-12", image="debian-12",
                        agent="oracle", attempt=1, state="pending", retry=1, retry_of=o_ids[0]))  # fmt: skip
    finish(db, "r" * 32, "passed", residue="no")
    finish(db, n_ids[0], "failed")
    from testbed.scheduler.validation import collect

    with db() as session:
        [row] = collect(session, oracle, noop, "c", "2025-01-01")
    assert row.oracle == "passed" and row.verdict == "ok"


def test_one_job_running_both_agents_gives_both_columns(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    job, ids = create_job_with_runs(db, "both", {}, "oracle", [NewRun("alpha", "debian-12", 1)])
    with db() as session, session.begin():
        session.add(Run(id="n" * 32, job_id=job, task_id="alpha", variant="debian-12", image="debian-12",
                        agent="noop", attempt=1, state="pending"))  # fmt: skip
    finish(db, ids[0], "passed", residue="no")
    finish(db, "n" * 32, "failed", residue="no")
    from testbed.scheduler.validation import collect

    with db() as session:
        [row] = collect(session, job, job, "c", "2025-01-01")
    assert (row.oracle, row.noop, row.verdict) == ("passed", "failed", "ok")


def test_merge_keeps_other_rows_and_replaces_revalidated_ones() -> None:
    def row(task: str, release: str, verdict: str, notes: str = "") -> Row:
        return Row(task, release, "passed", "1m 00s", "no", "failed", "30s", verdict, "old", "2025-01-01", notes)

    first = render_report([row("alpha", "debian-12", "PROBLEM", "a | b"), row("beta", "debian-11", "ok")])
    assert parse_rows(first)[0].notes == "a | b", "pipes survive the table"
    merged = merge_report(first, [row("alpha", "debian-12", "ok"), row("gamma", "debian-13", "ok")])
    rows = {r.key: r for r in parse_rows(merged)}
    assert [k for k in rows] == [("alpha", "debian-12"), ("beta", "debian-11"), ("gamma", "debian-13")]
    assert rows[("alpha", "debian-12")].verdict == "ok" and rows[("beta", "debian-11")].commit == "old"
    assert merge_report(merged, []) == merged
    assert "3 of 3 cells ok (3 tasks)." in merged


def test_job_files_cover_every_declared_release_and_held_out_tasks() -> None:
    ids = task_ids([], ROOT)
    spec = JobSpec.model_validate(job_spec(ids, "noop", vm_slots=2))
    assert spec.images == "all" and spec.include_heldout and spec.split == "all" and spec.seeds == [0]
    cells, tasks = expand_matrix(spec, ROOT, images=set(image_catalog()))
    assert set(tasks) == set(ids)
    assert {(c.task_id, c.image) for c in cells} == {(t.id, i) for t in tasks.values() for i in t.definition.images}
    assert task_ids(["disk-full", str(ROOT / "tasks" / "reverse-proxy")], ROOT) == ["disk-full", "reverse-proxy"]
    with pytest.raises(Exception, match="neither a task directory"):
        task_ids(["no-such-task"], ROOT)


def test_a_cell_no_run_finished_keeps_its_earlier_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    db = open_database(url)
    cells = [NewRun("alpha", "debian-12", 1), NewRun("alpha", "debian-13", 1)]
    job, ids = create_job_with_runs(db, "validate", {}, "oracle", cells)
    finish(db, ids[0], "passed", residue="no")  # debian-13 never finished (the job was cancelled)
    report = tmp_path / "VALIDATION.md"
    earlier = Row("alpha", "debian-13", "passed", "1m", "no", "failed", "1m", "ok", "0123456", "2026-12-01", "")
    report.write_text(render_report([earlier]))
    (tmp_path / "tasks").mkdir()
    assert write_report(url, (job, job), report, "abc1234", tmp_path) is False
    rows = {r.key: r for r in parse_rows(report.read_text())}
    assert rows[("alpha", "debian-13")] == earlier
    assert rows[("alpha", "debian-12")].oracle == "passed" and rows[("alpha", "debian-12")].noop == "missing"
