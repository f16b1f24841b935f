"""`testbed runs findings RUN_ID [--db URL] [--kind K] [--json]`: list a run's findings.

Register with ``runs_app.command("findings")(findings_command)``.

Contract: the run is named by its full id or a unique prefix (`resolve_run_id`; unknown or
ambiguous → `InputError`, exit status 2 in the main CLI). Findings are listed in id order
(the order they were recorded), optionally only those of one ``--kind`` (residue, impact,
safety; anything else is an `InputError`). Each shows kind, category, node, summary and the
attributed command (seq and first line of its text, or ``-``). ``--json`` prints one object
``{"run_id", "residue", "findings": [{id, kind, category, node, summary, evidence,
command_id, command_seq, command}]}`` where ``residue`` is the run's verdict (yes, no,
undetermined or null).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue import commands_from_rows
from testbed.db.engine import open_database
from testbed.db.models import FINDING_KINDS, Command, Finding, Run, Snapshot
from testbed.db.queries import resolve_run_id
from testbed.errors import InputError


@dataclass(frozen=True)
class FindingRow:
    """One finding with its attributed command (when any)."""

    id: int
    kind: str
    category: str
    node: str | None
    summary: str
    evidence: Any
    command_id: int | None
    command_seq: int | None
    command: str | None


def load_findings(session: Session, run_ref: str, kind: str | None = None) -> tuple[str, str | None, list[FindingRow]]:
    """(run id, residue verdict, findings) of the run named by `run_ref`."""
    if kind is not None and kind not in FINDING_KINDS:
        raise InputError(None, "kind", f"must be one of {', '.join(FINDING_KINDS)}; got {kind!r}")
    run_id = resolve_run_id(session, run_ref)
    run = session.get(Run, run_id)
    residue = run.residue if run is not None else None
    stmt = (
        select(Finding, Command.seq, Command.command)
        .outerjoin(Command, Command.id == Finding.command_id)
        .where(Finding.run_id == run_id)
        .order_by(Finding.id)
    )
    if kind is not None:
        stmt = stmt.where(Finding.kind == kind)
    rows = [
        FindingRow(
            id=f.id,
            kind=f.kind,
            category=f.category,
            node=f.node,
            summary=f.summary,
            evidence=f.evidence,
            command_id=f.command_id,
            command_seq=seq,
            command=text,
        )
        for f, seq, text in session.execute(stmt)
    ]
    return run_id, residue, rows


def load_residue_inputs(
    session: Session, run_id: str
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[CommandView]]:
    """(snapshots as node → point → data, every command of the run as `CommandView`), the
    inputs of `testbed.analysis.residue.find_residue`, read back from the database."""
    snapshots: dict[str, dict[str, dict[str, Any]]] = {}
    for node, point, data in session.execute(
        select(Snapshot.node, Snapshot.point, Snapshot.data).where(Snapshot.run_id == run_id)
    ):
        snapshots.setdefault(node, {})[point] = data if isinstance(data, dict) else {}
    rows = session.scalars(select(Command).where(Command.run_id == run_id).order_by(Command.seq))
    return snapshots, commands_from_rows(rows)


def _first_line(text: str | None, limit: int = 80) -> str:
    if not text:
        return "-"
    line = text.strip().splitlines()[0] if text.strip() else ""
    more = len(text.strip().splitlines()) > 1 or len(line) > limit
    return (line[:limit] + " …") if more else line


def findings_command(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix (at least 6 characters).")],
    db: Annotated[
        str | None,
        typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME)."),
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only findings of this kind.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List a run's findings (residue, impact, safety) with the command each is attributed to."""
    sessions = open_database(db)
    with sessions() as session:
        full_id, residue, rows = load_findings(session, run_id, kind)
    if as_json:
        payload = {"run_id": full_id, "residue": residue, "findings": [asdict(r) for r in rows]}
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    console = Console(highlight=False, width=200 if wide else None)
    title = f"run {full_id[:8]}: {len(rows)} finding(s); residue: {residue or '-'}"
    table = Table(title=title, title_justify="left")
    for column in ("kind", "category", "node", "summary", "seq", "command"):
        table.add_column(column, no_wrap=column in ("kind", "seq"))
    for r in rows:
        table.add_row(
            r.kind,
            r.category,
            r.node or "-",
            r.summary,
            str(r.command_seq) if r.command_seq is not None else "-",
            _first_line(r.command),
        )
    console.print(table)
