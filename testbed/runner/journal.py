"""A run's own record, held in memory while it runs.

Contract: every command row, snapshot and check the run writes to the database is also
appended here, in the form it was stored (text cleaned and redacted exactly as in the
row). Whatever the run needs later — residue analysis, a saved post-setup state, the
verdict — reads this journal; the database is written during a run, never read back.
The journal is filled only on the event loop (by `CommandRecorder`, the snapshot and
verify steps), so it needs no lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from testbed.analysis.attribution import CommandView
from testbed.db.records import StoredCommand
from testbed.model.vocab import SnapshotPoint


@dataclass
class RunJournal:
    """See module docstring."""

    commands: list[StoredCommand] = field(default_factory=list)
    snapshots: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """node → point → parsed snapshot."""
    os_release: dict[str, str] = field(default_factory=dict)
    """node → the OS's pretty name (from the first snapshot)."""

    def add_command(self, stored: StoredCommand) -> None:
        self.commands.append(stored)

    def add_snapshot(self, node: str, point: SnapshotPoint, data: dict[str, Any]) -> None:
        self.snapshots.setdefault(node, {})[point.value] = data

    def command_views(self) -> list[CommandView]:
        """Every command so far, as residue attribution sees them, in `seq` order."""
        return [
            CommandView(
                id=c.id,
                seq=c.seq,
                node=c.record.node,
                phase=str(c.record.phase),
                source=str(c.record.source),
                command=c.record.command or "",
                exit_code=c.record.exit_code,
            )
            for c in sorted(self.commands, key=lambda c: c.seq)
        ]

    def snapshots_at(self, *points: SnapshotPoint) -> dict[str, dict[str, dict[str, Any]]]:
        """point → node → data for `points` (the layout saved states keep)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for node, by_point in self.snapshots.items():
            for point in points:
                if point.value in by_point:
                    out.setdefault(point.value, {})[node] = by_point[point.value]
        return out
