"""A task as its runs recorded it: the definition each run saw, how it changed, its results.

Contracts:

- Runs store their task's record under `config["task"]` (`testbed.model.task_record`:
  hash, task.toml text, instruction, checks, topology). `task_page(session, task_id)`
  groups the task's runs by recorded hash into `versions`, oldest first (by their first
  run), each with its runs count, first/last run time and the record of its first run;
  runs without a record are counted in `unrecorded`. `changes` holds, for every pair of
  consecutive versions, the unified diff of their task.toml and of their instruction
  (`DiffLine`s: `kind` is `add`, `del`, `hunk` or `same`). An unknown task (no run) is an
  `IdNotFound` (field `task`).
- `checks` are the newest version's checks; without any record, the distinct
  (requirement, description) pairs of the task's check rows.
- `recorded_hash(session, run_id)` is the run's recorded task hash, None without one.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import Check, Run
from testbed.db.read.ids import IdNotFound
from testbed.db.read.jsonable import JsonRecord
from testbed.db.read.rates import OutcomeCounts, count_outcomes
from testbed.model.task_record import TASK_KEY

DIFF_CONTEXT = 3
"""Lines of context around each change of a task diff."""


def _hash_expr() -> Any:
    return Run.config[(TASK_KEY, "hash")].as_string()


@dataclass(frozen=True)
class DiffLine(JsonRecord):
    """One line of a unified diff."""

    kind: str
    text: str


@dataclass(frozen=True)
class TaskVersion(JsonRecord):
    """One recorded definition of the task (one hash) and the runs that used it."""

    hash: str
    runs: int
    first_run: str
    first_at: datetime
    last_at: datetime
    record: dict[str, Any]


@dataclass(frozen=True)
class TaskChange(JsonRecord):
    """What changed from version `before` to version `after` (hashes)."""

    before: str
    after: str
    toml: list[DiffLine]
    instruction: list[DiffLine]


@dataclass(frozen=True)
class TaskPage(JsonRecord):
    """Everything the task page shows (see the module contract)."""

    task_id: str
    category: str | None
    counts: OutcomeCounts
    agents: list[str]
    versions: list[TaskVersion]
    unrecorded: int
    changes: list[TaskChange]
    checks: list[dict[str, Any]]

    @property
    def current(self) -> TaskVersion | None:
        """The newest version, None when no run recorded one."""
        return max(self.versions, key=lambda v: v.last_at) if self.versions else None


def unified_diff(before: str, after: str, *, names: tuple[str, str] = ("before", "after")) -> list[DiffLine]:
    """The unified diff of two texts as `DiffLine`s (empty when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), fromfile=names[0], tofile=names[1], lineterm="", n=DIFF_CONTEXT
    )
    out: list[DiffLine] = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "same")
        out.append(DiffLine(kind, line))
    return out


def recorded_hash(session: Session, run_id: str) -> str | None:
    """The task hash run `run_id` recorded, None without one."""
    value = session.scalar(select(_hash_expr()).where(Run.id == run_id))
    return str(value) if value else None


def _versions(session: Session, task_id: str) -> tuple[list[TaskVersion], int]:
    h = _hash_expr()
    rows = session.execute(
        select(h, func.count(), func.min(Run.created_at), func.max(Run.created_at))
        .where(Run.task_id == task_id)
        .group_by(h)
    ).all()
    versions: list[TaskVersion] = []
    unrecorded = 0
    for digest, n, first_at, last_at in rows:
        if not digest:
            unrecorded += int(n)
            continue
        first = session.execute(
            select(Run.id, Run.config).where(Run.task_id == task_id, h == digest).order_by(Run.created_at).limit(1)
        ).one()
        record = first.config.get(TASK_KEY) if isinstance(first.config, dict) else {}
        versions.append(TaskVersion(str(digest), int(n), first.id, first_at, last_at, dict(record or {})))
    return sorted(versions, key=lambda v: (v.first_at, v.hash)), unrecorded


def _changes(versions: list[TaskVersion]) -> list[TaskChange]:
    out = []
    for old, new in itertools.pairwise(versions):
        names = (f"task.toml @ {old.hash[:12]}", f"task.toml @ {new.hash[:12]}")
        toml = unified_diff(str(old.record.get("toml", "")), str(new.record.get("toml", "")), names=names)
        instruction = unified_diff(str(old.record.get("instruction", "")), str(new.record.get("instruction", "")))
        out.append(TaskChange(old.hash, new.hash, toml, instruction))
    return out


def _check_rows(session: Session, task_id: str) -> list[dict[str, Any]]:
    stmt = (
        select(Check.requirement, func.max(Check.description))
        .join(Run, Run.id == Check.run_id)
        .where(Run.task_id == task_id)
        .group_by(Check.requirement)
        .order_by(Check.requirement)
    )
    return [{"id": req, "description": desc, "node": None, "persist": None} for req, desc in session.execute(stmt)]


def task_page(session: Session, task_id: str) -> TaskPage:
    """The task `task_id` as its runs recorded it (see the module contract)."""
    counts = OutcomeCounts(task_id)
    for _, outcome, n in count_outcomes(session, Run.task_id, where=[Run.task_id == task_id]):
        counts.add(outcome, n)
    if not counts.total:
        raise IdNotFound("task", "task", task_id)
    category = session.scalar(select(func.max(Run.task_category)).where(Run.task_id == task_id))
    agents = list(session.scalars(select(Run.agent).where(Run.task_id == task_id).distinct().order_by(Run.agent)))
    versions, unrecorded = _versions(session, task_id)
    newest = max(versions, key=lambda v: v.last_at) if versions else None
    checks = newest.record.get("checks") if newest is not None else None
    return TaskPage(
        task_id, category, counts, agents, versions, unrecorded, _changes(versions),
        checks if isinstance(checks, list) else _check_rows(session, task_id),
    )  # fmt: skip
