"""Check results: a run's checks, and the study's reboot regressions.

Contracts:

- `check_infos` lists a run's checks in the order they were recorded.
- Reboot regressions: a (run, requirement, node) whose check passed at `after_agent` and
  failed at `after_reboot` (NULL nodes match each other), aggregated per (task,
  requirement), most runs first; `runs_rebooted` counts the selected runs with any check
  at `after_reboot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from testbed.db.models import Check, Run
from testbed.db.read.filters import RunFilter
from testbed.db.read.jsonable import JsonRecord
from testbed.model.vocab import CheckStatus, SnapshotPoint


@dataclass(frozen=True)
class CheckInfo(JsonRecord):
    """A check result with its evidence (`detail`)."""

    id: int
    requirement: str
    description: str | None
    point: str | None
    node: str | None
    status: str
    detail: Any


def check_infos(session: Session, run_id: str) -> list[CheckInfo]:
    """The run's checks, in the order they were recorded."""
    rows = session.scalars(select(Check).where(Check.run_id == run_id).order_by(Check.id))
    return [CheckInfo(c.id, c.requirement, c.description, c.point, c.node, c.status, c.detail) for c in rows]


@dataclass(frozen=True)
class RebootRegression:
    """A requirement that held before the reboot and failed after it, in `runs` runs."""

    task_id: str
    requirement: str
    description: str | None
    runs: int
    run_ids: list[str]


def runs_rebooted(session: Session, selection: RunFilter) -> int:
    """Selected runs with a check at `after_reboot`."""
    stmt = select(func.count(Check.run_id.distinct())).where(
        *selection.in_selection(Check.run_id), Check.point == SnapshotPoint.AFTER_REBOOT
    )
    return int(session.scalar(stmt) or 0)


def reboot_regressions(session: Session, selection: RunFilter) -> list[RebootRegression]:
    """Regressions per (task, requirement), most runs first (see the module contract)."""
    before = aliased(Check)
    after = aliased(Check)
    same_check = and_(
        after.run_id == before.run_id,
        after.requirement == before.requirement,
        after.node.is_not_distinct_from(before.node),
    )
    rows = session.execute(
        select(Run.task_id, before.requirement, before.description, before.run_id)
        .select_from(before)
        .join(after, same_check)
        .join(Run, Run.id == before.run_id)
        .where(
            *selection.where(),
            before.point == SnapshotPoint.AFTER_AGENT,
            before.status == CheckStatus.PASSED,
            after.point == SnapshotPoint.AFTER_REBOOT,
            after.status == CheckStatus.FAILED,
        )
        .distinct()
    ).all()
    grouped: dict[tuple[str, str], tuple[str | None, set[str]]] = {}
    for task_id, requirement, description, run_id in rows:
        desc, runs = grouped.setdefault((task_id, requirement), (description, set()))
        runs.add(run_id)
        if desc is None and description is not None:
            grouped[(task_id, requirement)] = (description, runs)
    result = [
        RebootRegression(task_id=t, requirement=r, description=d, runs=len(ids), run_ids=sorted(ids))
        for (t, r), (d, ids) in grouped.items()
    ]
    return sorted(result, key=lambda x: (-x.runs, x.task_id, x.requirement))
