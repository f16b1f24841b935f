"""The scheduler on real guests (8 guest boots in all): a three-run job with at most two VMs
at once; a coordinator killed with SIGKILL mid-job and resumed; two coordinators sharing a
job on PostgreSQL. Every test checks that no run row executed twice and nothing leaked."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Phase, Run
from testbed.testing.cli import read_job_id

from .conftest import ROOT, assert_clean, run_cli

# Each run boots a guest (~60 s under TCG, far more on a busy host): allow for slow hosts.
pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]


def _cli_module() -> str:
    """`testbed.cli` once `launch` is registered there, else the scheduler's own entry point."""
    from testbed.cli import app

    names = {c.name for c in app.registered_commands}
    return "testbed.cli" if "launch" in names else "testbed.cli.jobs"


def launch(*args: str, timeout: float = 2400) -> subprocess.CompletedProcess[str]:
    """`testbed launch ARGS` in a subprocess; its output also goes to a log in $TESTBED_HOME
    (`launch-*.log`, line by line, so a slow job can be watched and a timed-out one diagnosed)."""
    if _cli_module() == "testbed.cli" and "TESTBED_SCHED_LOG" not in os.environ:
        return run_cli("launch", *args, timeout=timeout)
    log = Path(os.environ["TESTBED_HOME"]) / f"launch-{time.time_ns()}.log"
    with log.open("w") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", _cli_module(), "launch", *args],
            stdout=fh,
            stderr=fh,
            timeout=timeout,
            check=False,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    output = log.read_text()
    if proc.returncode != 0:
        raise AssertionError(f"launch {' '.join(args)} exited {proc.returncode}:\n{output}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, output, "")


TASK = "config-permissions"  # single node, no reboot: the fastest starter task with noop


def _job_file(tmp_path: Path, name: str, attempts: int, vm_slots: int, retries: int = 1) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "tasks": [TASK],
                "images": ["debian-12"],
                "agent": "noop",
                "attempts": attempts,
                "retry": {"limit": retries, "backoff_s": 1},
                "hosts": [{"name": "local", "vm_slots": vm_slots, "boot_concurrency": 2}],
            }
        )
    )
    return path


def _runs(db: sessionmaker[Session], job_id: str) -> list[Run]:
    with db() as s:
        return list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.created_at)))


def _assert_each_row_ran_at_most_once(db: sessionmaker[Session], job_id: str) -> None:
    with db() as s:
        for run in s.scalars(select(Run).where(Run.job_id == job_id)):
            provisioning = s.scalars(select(Phase).where(Phase.run_id == run.id, Phase.name == "provisioning")).all()
            assert len(provisioning) <= 1, f"run {run.id[:8]} was provisioned {len(provisioning)} times"


def _assert_cells_final(runs: list[Run], attempts: int) -> None:
    """Every cell ends with exactly one final run, an agent outcome (noop fails)."""
    assert all(r.state == "finished" for r in runs), [(r.id[:8], r.state) for r in runs]
    replaced = {r.retry_of for r in runs if r.retry_of}
    finals = [r for r in runs if r.id not in replaced]
    assert sorted(r.attempt for r in finals) == list(range(1, attempts + 1))
    assert all(r.outcome == "failed" for r in finals), [(r.id[:8], r.outcome, r.error) for r in finals]


def _max_overlap(db: sessionmaker[Session], job_id: str) -> int:
    spans: list[tuple[datetime, int]] = []
    with db() as s:
        for run in s.scalars(select(Run).where(Run.job_id == job_id)):
            phases = s.scalars(select(Phase).where(Phase.run_id == run.id).order_by(Phase.id)).all()
            if phases:
                spans += [(phases[0].started_at, 1), (max(p.finished_at or p.started_at for p in phases), -1)]
    level = peak = 0
    for _, delta in sorted(spans, key=lambda x: (x[0], x[1])):
        level += delta
        peak = max(peak, level)
    return peak


def test_three_runs_with_at_most_two_vms_at_once(vm_home: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = launch(str(ROOT / "jobs" / "smoke.yaml"), "--db", url, "--no-progress")
    job_id = read_job_id(io.StringIO(proc.stdout))
    db = open_database(url)
    runs = _runs(db, job_id)
    assert len(runs) == 3, proc.stdout
    _assert_cells_final(runs, 3)
    assert _max_overlap(db, job_id) <= 2
    _assert_each_row_ran_at_most_once(db, job_id)
    assert "complete" in proc.stdout
    assert_clean(vm_home)


def test_killed_coordinator_is_resumed_without_running_anything_twice(vm_home: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    job = _job_file(tmp_path, "killed", attempts=2, vm_slots=1)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", _cli_module(), "launch", str(job), "--db", url, "--no-progress"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        job_id = read_job_id(proc.stdout)
        db = open_database(url)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # wait until a guest is booting
            started = [r for r in _runs(db, job_id) if r.state not in ("pending", "finished")]
            if started:
                break
            time.sleep(1)
        else:
            raise AssertionError("no run started")
        time.sleep(15)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    killed = [r.id for r in _runs(db, job_id) if r.state not in ("pending", "finished")]
    assert killed, "the kill came too late: nothing was in flight"
    resumed = launch("--resume", job_id[:10], "--db", url, "--no-progress")
    assert "lost run(s)" in resumed.stdout and "complete" in resumed.stdout, resumed.stdout
    runs = _runs(db, job_id)
    by_id = {r.id: r for r in runs}
    for run_id in killed:  # the in-flight run was finished as lost, and replaced, never re-run
        assert by_id[run_id].outcome == "error" and "coordinator lost" in (by_id[run_id].error or "")
        assert any(r.retry_of == run_id for r in runs)
    _assert_cells_final(runs, 2)
    _assert_each_row_ran_at_most_once(db, job_id)
    assert_clean(vm_home)


@pytest.mark.skipif(
    not os.environ.get("TESTBED_TEST_PG_SOCKET_URL"),
    reason="needs PostgreSQL reachable in the namespace: set TESTBED_TEST_PG_SOCKET_URL "
    "(scripts/start-postgres.sh; scripts/test.sh sets it)",
)
def test_two_coordinators_share_a_job_on_postgres(vm_home: Path, tmp_path: Path) -> None:
    url = os.environ["TESTBED_TEST_PG_SOCKET_URL"]
    job = _job_file(tmp_path, "shared", attempts=2, vm_slots=1)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        [sys.executable, "-m", _cli_module(), "launch", str(job), "--db", url, "--no-progress"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert first.stdout is not None
    job_id = read_job_id(first.stdout)
    second = launch("--resume", job_id, "--db", url, "--no-progress")
    out, _ = first.communicate(timeout=1500)
    assert first.returncode == 0, out
    db = open_database(url)
    runs = _runs(db, job_id)
    _assert_cells_final(runs, 2)
    _assert_each_row_ran_at_most_once(db, job_id)
    owners = {r.lease_owner for r in runs}
    assert len(owners) == 2, (owners, out, second.stdout)  # each coordinator ran one run
    assert_clean(vm_home)
