"""Residue inputs of a run already in the database (re-analysis of stored runs:
`testbed analyze`, imported runs). A run being executed never reads these back: it analyses
its in-memory journal (`testbed.runner.journal`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue.engine import commands_from_rows
from testbed.db.read.snapshots import residue_inputs


def load_residue_inputs(
    session: Session, run_id: str
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[CommandView]]:
    """(snapshots as node → point → data, every command of the run as `CommandView`)."""
    snapshots, commands = residue_inputs(session, run_id)
    return snapshots, commands_from_rows(commands)
