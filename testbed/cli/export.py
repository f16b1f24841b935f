"""`testbed export OUT_DIR`: the run database as a Parquet dataset (registered by the main
CLI as `app.command("export")(export_command)`).

Bad input (unknown job, unparseable date, a missing or outdated database) raises
`InputError` (exit status 2 in the main CLI) before anything is written; the database is
only read (`testbed.db.read.open_read_only`). A Rich progress bar per table is shown on a
terminal; warnings (stored text) are printed through `testbed.render.terminal`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from testbed.config import project_root
from testbed.db.read import make_filter, open_read_only
from testbed.errors import InputError
from testbed.export.dataset import ExportResult, export_dataset
from testbed.model.outputs import check_output, make_directory
from testbed.render.terminal import cell
from testbed.render.terminal import console as table_console

LICENSE_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")
"""The shape of a Hub license id (`cc-by-4.0`, `apache-2.0`, `other`, `unknown`)."""


class RichExportProgress:
    """`ExportProgress` drawing one Rich bar per table (total = the table's row count)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}

    def start(self, table: str, total: int) -> None:
        self._tasks[table] = self._progress.add_task(table, total=total)

    def advance(self, table: str, rows: int) -> None:
        self._progress.advance(self._tasks[table], rows)


def export_command(
    out_dir: Annotated[Path, typer.Argument(help="Directory to write the Parquet files and README.md to.")],
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME).")
    ] = None,
    job: Annotated[str | None, typer.Option("--job", help="Only runs of this job (id or unique prefix).")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only runs created at or after this date/time (ISO 8601, UTC).")
    ] = None,
    redact: Annotated[
        bool, typer.Option("--redact/--no-redact", help="Redact secrets from text (default) or export it raw.")
    ] = True,
    tasks_dir: Annotated[
        Path | None, typer.Option("--tasks-dir", help="Task directories to describe tasks from (default: ./tasks).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
    passed_only: Annotated[
        bool, typer.Option("--passed-only", help="Only passed runs in the trajectories table (an SFT set).")
    ] = False,
    license: Annotated[
        str, typer.Option("--license", help="The card's license: a Hugging Face Hub license id (default: unknown).")
    ] = "unknown",
) -> None:
    """Export runs, tasks, nodes, commands, snapshots, checks, findings, model turns, egress and
    trajectories as Parquet + a dataset card."""
    check_output(out_dir, "OUT_DIR", directory=True)
    if not LICENSE_RE.match(license):
        raise InputError(None, "--license", f"not a license id: {license!r} (e.g. cc-by-4.0, mit, other, unknown)")
    sessions = open_read_only(db)
    with sessions() as session:
        selection = make_filter(session, job, since)
    make_directory(out_dir, "OUT_DIR")
    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description:>10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=False,
    ) as bar:
        result = export_dataset(
            sessions,
            out_dir,
            selection=selection,
            redact=redact,
            tasks_dir=tasks_dir if tasks_dir is not None else project_root() / "tasks",
            progress=RichExportProgress(bar),
            passed_only=passed_only,
            license=license,
        )
    if not quiet:
        _print_summary(result, out_dir)


def _print_summary(result: ExportResult, out_dir: Path) -> None:
    """What was exported: rows, bytes and redacted rows per table, then any warnings."""
    table = Table()
    for column in ("table", "rows", "bytes", "rows redacted"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for t in result.tables.values():
        table.add_row(t.table, str(t.rows), str(t.bytes), str(t.rows_redacted))
    out = table_console()
    out.print(cell(f"exported {result.selection.describe()} to {out_dir} in {result.seconds:.1f} s"), soft_wrap=True)
    out.print(table)
    for warning in result.warnings:
        out.print(Text.assemble(("warning:", "yellow"), " ", cell(warning)))
