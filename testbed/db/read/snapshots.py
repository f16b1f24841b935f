"""Snapshots of a run as the read side sees them: which exist, their data, and the inputs
of a residue re-analysis.

Contracts:

- `snapshot_infos` never loads snapshot data, only which (node, point) snapshots exist, in
  the order they were taken.
- `snapshot_stamps` is (id, taken_at) of every snapshot of the run, by id: a key that
  changes whenever a snapshot is added or replaced (for caches of derived data).
- `snapshot_data` maps (node, point) to the stored data (a non-dict is read as `{}`).
- `residue_inputs(session, run_id)` is (snapshots as node → point → data, every command of
  the run as a `CommandBrief`, by seq): what `testbed.analysis.residue.find_residue`
  needs, without any command output.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.models import Command, Snapshot
from testbed.db.read.commands import CommandBrief
from testbed.db.read.jsonable import JsonRecord


@dataclass(frozen=True)
class SnapshotInfo(JsonRecord):
    """That a snapshot of `node` at `point` exists (its data is not loaded)."""

    id: int
    node: str
    point: str
    taken_at: datetime


def snapshot_infos(session: Session, run_id: str) -> list[SnapshotInfo]:
    """The snapshots of the run, without their data, in the order they were taken."""
    stmt = (
        select(Snapshot.id, Snapshot.node, Snapshot.point, Snapshot.taken_at)
        .where(Snapshot.run_id == run_id)
        .order_by(Snapshot.taken_at, Snapshot.id)
    )
    return [SnapshotInfo(id=r.id, node=r.node, point=r.point, taken_at=r.taken_at) for r in session.execute(stmt)]


def snapshot_stamps(session: Session, run_id: str) -> tuple[tuple[int, datetime], ...]:
    """(id, taken_at) of every snapshot of the run, by id (see the module contract)."""
    stmt = select(Snapshot.id, Snapshot.taken_at).where(Snapshot.run_id == run_id).order_by(Snapshot.id)
    return tuple((sid, taken) for sid, taken in session.execute(stmt))


def snapshot_data(session: Session, run_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(node, point) → the stored snapshot data of the run."""
    stmt = select(Snapshot.node, Snapshot.point, Snapshot.data).where(Snapshot.run_id == run_id)
    return {(node, point): data if isinstance(data, dict) else {} for node, point, data in session.execute(stmt)}


def command_briefs(session: Session, run_id: str) -> list[CommandBrief]:
    """Every command of the run without its output, by seq."""
    c = Command
    stmt = (
        select(c.id, c.seq, c.node, c.phase, c.source, c.command, c.exit_code).where(c.run_id == run_id).order_by(c.seq)
    )
    return [
        CommandBrief(id=r.id, seq=r.seq, node=r.node, phase=r.phase, source=r.source, command=r.command or "",
                     exit_code=r.exit_code)
        for r in session.execute(stmt)
    ]  # fmt: skip


def residue_inputs(session: Session, run_id: str) -> tuple[dict[str, dict[str, dict[str, Any]]], list[CommandBrief]]:
    """(node → point → snapshot data, the run's commands): see the module contract."""
    snapshots: dict[str, dict[str, dict[str, Any]]] = {}
    for (node, point), data in snapshot_data(session, run_id).items():
        snapshots.setdefault(node, {})[point] = data
    return snapshots, command_briefs(session, run_id)
