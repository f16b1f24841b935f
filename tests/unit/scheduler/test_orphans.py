"""`testbed reap` finishes run rows whose owner died; live owners' rows are left alone."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from testbed.db.engine import open_database
from testbed.db.models import Phase, Run
from testbed.db.recorder import RunRecorder
from testbed.hypervisor.owner import Owner
from testbed.scheduler.leaseowner import coordinator_identity
from testbed.scheduler.orphans import finish_orphaned_runs

CHILD = "from testbed.hypervisor.owner import Owner; import json; print(json.dumps(Owner.current().to_dict()))"


def _dead_owner(home: Path) -> dict[str, object]:
    import json
    import os

    env = {**os.environ, "TESTBED_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_dead_owners_runs_are_finished_as_error(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    dead = RunRecorder.create(db, task_id="t", agent="a", config={"owner": _dead_owner(tmp_path)})
    dead.set_state("agent")
    dead.phase_started("agent")
    alive = RunRecorder.create(db, task_id="t", agent="a", config={"owner": Owner.current().to_dict()})
    alive.set_state("agent")
    unknown = RunRecorder.create(db, task_id="t", agent="a")
    unknown.set_state("setup")
    done = RunRecorder.create(db, task_id="t", agent="a", config={"owner": _dead_owner(tmp_path)})
    done.finish("passed", None, 1.0)
    # a scheduled run that started under a coordinator that is gone, and one still pending
    lost, pending = (RunRecorder.create(db, task_id="t", agent="a") for _ in range(2))
    dead_coordinator = "somehost-gone:1:2:abcd|" + str(tmp_path / "owners" / "gone.lock")
    with db() as session, session.begin():
        for rec, state in ((lost, "agent"), (pending, "pending")):
            row = session.get(Run, rec.run_id)
            assert row is not None
            row.state = state
            row.lease_owner = dead_coordinator.replace("somehost-gone", Owner.current().host)
            row.lease_expires_at = datetime.now(UTC) + timedelta(hours=1)

    assert {r for r, _ in finish_orphaned_runs(db, dry_run=True)} == {dead.run_id, lost.run_id}
    found = dict(finish_orphaned_runs(db))
    assert set(found) == {dead.run_id, lost.run_id}
    assert found[dead.run_id].startswith("owner lost: process")
    assert found[lost.run_id].startswith("coordinator lost:")
    with db() as session:
        row = session.get(Run, dead.run_id)
        assert row is not None and row.state == "finished" and row.outcome == "error"
        assert row.error == found[dead.run_id]
        phase = session.query(Phase).filter_by(run_id=dead.run_id).one()
        assert phase.status == "error" and phase.finished_at is not None
        for rec in (alive, unknown, pending):
            other = session.get(Run, rec.run_id)
            assert other is not None and other.state != "finished"
    assert finish_orphaned_runs(db) == []
    assert coordinator_identity().count("|") == 1
