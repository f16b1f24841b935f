"""Two runs of the same task side by side (two models, or two attempts of one).

Contracts:

- `compare_runs(session, a, b, limit=None)` resolves both references (fields `a` and `b`)
  and returns their trajectories (`testbed.db.read.trajectory`, at most `limit` agent
  commands each) with the checks paired by
  (requirement, point, node): each `CheckPair` holds both statuses (None where a run has no
  such check), in the order the first run recorded them, then the second's extra ones.
- Runs of different tasks are bad input (`InputError`, field `b`); the same run twice too.
- `same_version` is True when both runs recorded the same task hash, False when the hashes
  differ (the task changed between them), None when either run has no task record.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from testbed.db.read.ids import resolve_run_id
from testbed.db.read.jsonable import JsonRecord
from testbed.db.read.tasks import recorded_hash
from testbed.db.read.trajectory import Trajectory, trajectory
from testbed.errors import InputError


@dataclass(frozen=True)
class CheckPair(JsonRecord):
    """One requirement checked at one point (on one node) in either run."""

    requirement: str
    point: str | None
    node: str | None
    description: str | None
    a: str | None
    b: str | None


@dataclass(frozen=True)
class Comparison(JsonRecord):
    """Two trajectories of one task and their checks side by side."""

    task_id: str
    same_version: bool | None
    a: Trajectory
    b: Trajectory
    checks: list[CheckPair]


def _pair_checks(a: Trajectory, b: Trajectory) -> list[CheckPair]:
    keys: dict[tuple[str, str | None, str | None], dict[str, str | None]] = {}
    for side, t in (("a", a), ("b", b)):
        for c in t.checks:
            entry = keys.setdefault((c.requirement, c.point, c.node), {"description": c.description})
            entry[side] = c.status
    return [
        CheckPair(req, point, node, v.get("description"), v.get("a"), v.get("b"))
        for (req, point, node), v in keys.items()
    ]


def compare_runs(session: Session, a: str, b: str, *, limit: int | None = None) -> Comparison:
    """Runs `a` and `b` side by side (see the module contract)."""
    id_a, id_b = resolve_run_id(session, a, field="a"), resolve_run_id(session, b, field="b")
    if id_a == id_b:
        raise InputError(None, "b", "compare two different runs (both name run " + id_a + ")")
    ta, tb = trajectory(session, id_a, limit=limit), trajectory(session, id_b, limit=limit)
    if ta.run.task_id != tb.run.task_id:
        raise InputError(
            None, "b", f"run {id_b} is of task {tb.run.task_id!r}, run {id_a} of {ta.run.task_id!r}: "
            "compare two runs of the same task"
        )  # fmt: skip
    ha, hb = recorded_hash(session, id_a), recorded_hash(session, id_b)
    same = None if ha is None or hb is None else ha == hb
    return Comparison(ta.run.task_id, same, ta, tb, _pair_checks(ta, tb))
