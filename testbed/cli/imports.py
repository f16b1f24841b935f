"""`testbed import infraset PATH`: the InfraSet study's runs into testbed's run database.

Bad input (a path that is not a checkout, a file that does not parse) is exit status 2
naming the file; every trial is read and checked before anything is written, so bad input
creates nothing. A re-import adds nothing (`testbed.importers.store`). The database
(`--db`, else `TESTBED_DB`, else the SQLite file under `TESTBED_HOME`) is migrated to head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from testbed.errors import InputError

import_app = typer.Typer(help="Import other harnesses' published runs.", no_args_is_help=True)


@import_app.command("infraset")
def infraset_command(
    path: Annotated[Path, typer.Argument(help="A checkout of the InfraSet dataset (holding jobs/).")],
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME).")
    ] = None,
) -> None:
    """Import the study's trials (commands, snapshots, outcomes) as runs; residue is decided by testbed."""
    from testbed.db.engine import open_database
    from testbed.importers.infraset import find_trials
    from testbed.importers.store import import_trials

    if not path.is_dir():
        raise InputError(path, None, "not a directory")
    trials = find_trials(path)
    if not trials:
        raise InputError(path / "jobs", None, "no trial found (no result.json of a trial)")
    summary = import_trials(open_database(db), trials)
    residue = ", ".join(f"{k} {v}" for k, v in sorted(summary.residue.items())) or "-"
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items())) or "-"
    print(f"imported {len(summary.imported)} run(s), {len(summary.skipped)} already there")
    print(f"outcomes: {outcomes}; residue: {residue}")
