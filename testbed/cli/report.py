"""`testbed report --out FILE.md|FILE.html`: the study's tables for a selection of runs
(registered by the main CLI as `app.command("report")(report_command)`).

Bad input (unknown job, unparseable date, an --out that is not .md/.html, a missing or
outdated database) raises `InputError` (exit status 2 in the main CLI); nothing is written
then. The database is only read (`testbed.db.read.open_read_only`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from testbed.db.read import make_filter, open_read_only
from testbed.db.read.figures import compute_figures
from testbed.errors import InputError
from testbed.model.outputs import check_output, make_directory
from testbed.render.terminal import neutralise
from testbed.report.render import format_for, write_report


def report_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Report file: .md (Markdown) or .html (with charts).")],
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME).")
    ] = None,
    job: Annotated[str | None, typer.Option("--job", help="Only runs of this job (id or unique prefix).")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only runs created at or after this date/time (ISO 8601, UTC).")
    ] = None,
) -> None:
    """Write the leaderboard (agents compared), pass rates, command failure rates, residue,
    high-impact classes, completion times and reboot regressions of the selected runs to a
    Markdown or HTML report."""
    format_for(out)  # reject a bad extension or path before touching the database
    check_output(out, "--out")
    sessions = open_read_only(db)
    with sessions() as session:
        selection = make_filter(session, job, since)
        figures = compute_figures(session, selection)
    make_directory(out.parent, "--out")
    try:
        fmt = write_report(figures, out)
    except OSError as exc:
        raise InputError(out, "--out", f"cannot be written: {exc.strerror or exc}") from None
    typer.echo(neutralise(f"wrote {fmt} report of {figures.runs} run(s) ({figures.selection}) to {out}"))
