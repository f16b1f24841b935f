"""Finish run rows whose owner is gone, so nothing shows them as running forever.

A run row is unfinished while its process works on it. When that process dies (SIGKILL, a
host crash) the row stays unfinished; `testbed reap` calls `finish_orphaned_runs`:

- a run of a scheduled job (`lease_owner` set) whose lease is dead and which had started is
  finished as `error` with "coordinator lost: …" — exactly what `testbed launch --resume`
  would write, so resuming the job still schedules its follow-up (retries are decided from
  finished rows); pending rows are left to the job's next coordinator;
- any other run (`testbed run`, the environment API) whose `config.owner` names a dead
  process is finished as `error` with "owner lost: …".
Runs whose owner is alive, cannot be checked (another host) or is unknown are left alone.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.models import Run
from testbed.hypervisor.owner import Owner
from testbed.model.vocab import Outcome, RunState
from testbed.scheduler.leaseowner import lease_dead
from testbed.scheduler.store import LOST, finish_row

OWNER_LOST = "owner lost"


def orphan_reason(run: Run, now: datetime) -> str | None:
    """Why `run` (unfinished) is an orphan, or None when it is not one."""
    if run.lease_owner is not None:
        if run.state == RunState.PENDING or not lease_dead(run.lease_owner, run.lease_expires_at, now):
            return None
        return f"{LOST}: {run.lease_owner} stopped renewing its lease while the run was in state '{run.state}'"
    data = (run.config or {}).get("owner") if isinstance(run.config, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        owner = Owner.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None
    if owner.is_alive():
        return None
    return f"{OWNER_LOST}: process {owner.pid} on {owner.host} died while the run was in state '{run.state}'"


def finish_orphaned_runs(db: sessionmaker[Session], *, dry_run: bool = False) -> list[tuple[str, str]]:
    """(run id, reason) of every orphaned run, finished as `error` unless `dry_run`."""
    now = datetime.now(UTC)
    found: list[tuple[str, str]] = []
    with db() as session, session.begin():
        for run in session.scalars(select(Run).where(Run.state != RunState.FINISHED)):
            reason = orphan_reason(run, now)
            if reason is None:
                continue
            found.append((run.id, reason))
            if not dry_run:
                finish_row(session, run, Outcome.ERROR, reason, now)
    return found
