"""Former home of `testbed runs findings` (now `testbed.db.cli.findings_command`, its query
`testbed.db.read.findings.load_findings`) and of the residue re-analysis inputs.

`load_residue_inputs` stays here for callers not yet moved: it reads
`testbed.db.read.snapshots.residue_inputs` and turns the commands into
`CommandView`s, the inputs of `testbed.analysis.residue.find_residue`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue import commands_from_rows
from testbed.db.read.snapshots import residue_inputs


def load_residue_inputs(
    session: Session, run_id: str
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[CommandView]]:
    """(snapshots as node → point → data, every command of the run as `CommandView`)."""
    snapshots, commands = residue_inputs(session, run_id)
    return snapshots, commands_from_rows(commands)


__all__ = ["load_residue_inputs"]
