"""CLI of the run database: `testbed db ...` and `testbed runs ...` (Typer sub-apps that
the main CLI registers with `app.add_typer(db_app, name="db")` and
`app.add_typer(runs_app, name="runs")`).

Every command takes `--db URL` (else env `TESTBED_DB`, else the SQLite file under
`TESTBED_HOME`) and migrates the database to head before reading it. An unknown or
ambiguous run id raises `InputError` (exit status 2 in the main CLI).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import make_url

from testbed.db.engine import database_url, open_database
from testbed.db.migrate import current_revision, head_revision, upgrade
from testbed.db.queries import RunDetail, RunSummary, list_runs, run_detail

db_app = typer.Typer(help="Manage the run database.", no_args_is_help=True)
runs_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $TESTBED_DB, else SQLite in TESTBED_HOME)."),
]


def _console() -> Console:
    # A pipe or a file gets wide lines rather than tables squeezed into 80 columns.
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, width=160 if wide else None)


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _ts(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else "-"


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


_OUTCOME_STYLE = {"passed": "green", "failed": "red", "error": "yellow", "cancelled": "dim"}
_CHECK_STYLE = {"passed": "green", "failed": "red", "indeterminate": "yellow"}


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Migrate the run database to the newest schema and print its revision."""
    url = database_url(db)
    revision = upgrade(url)
    typer.echo(f"{_safe_url(url)}: at revision {revision}")


@db_app.command("current")
def db_current(db: DbOption = None) -> None:
    """Print the database's schema revision and the newest one available."""
    url = database_url(db)
    typer.echo(f"{_safe_url(url)}: at revision {current_revision(url) or '(none)'}; head is {head_revision()}")


@runs_app.command("list")
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs.")] = 20,
    job: Annotated[str | None, typer.Option("--job", help="Only runs of this job (id or prefix).")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only runs of this task id.")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help="Only runs with this outcome.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the newest runs, newest first."""
    sessions = open_database(db)
    with sessions() as session:
        runs = list_runs(session, limit=limit, job_id=job, task=task, outcome=outcome)
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in runs], indent=2))
        return
    _console().print(_runs_table(runs))


def _runs_table(runs: list[RunSummary]) -> Table:
    table = Table(title=f"{len(runs)} run(s)", title_justify="left")
    for column in (
        "id",
        "created",
        "task",
        "variant",
        "agent",
        "try",
        "state",
        "outcome",
        "reward",
        "duration",
        "host",
    ):
        table.add_column(column, no_wrap=column in ("id", "created", "state", "outcome"))
    for r in runs:
        table.add_row(
            r.short_id,
            _ts(r.created_at),
            r.task_id,
            _opt(r.variant),
            r.agent,
            str(r.attempt),
            r.state,
            Text(_opt(r.outcome), style=_OUTCOME_STYLE.get(r.outcome or "", "")),
            "-" if r.reward is None else f"{r.reward:g}",
            _dur(r.duration_s),
            _opt(r.host),
        )
    return table


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix (>= 6 chars).")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON.")] = False,
) -> None:
    """Show one run: phases, nodes, commands, snapshot points, checks and findings."""
    sessions = open_database(db)
    with sessions() as session:
        detail = run_detail(session, run_id)
    if as_json:
        typer.echo(json.dumps(detail.to_dict(), indent=2))
        return
    _print_detail(_console(), detail)


def _first_line(text: str, width: int = 70) -> str:
    lines = text.strip().splitlines() or [""]
    line = lines[0]
    more = len(lines) > 1
    if len(line) > width:
        line, more = line[: width - 1], True
    return line + (" …" if more else "")


def _print_detail(console: Console, d: RunDetail) -> None:
    r = d.run
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    outcome = Text(_opt(r.outcome), style=_OUTCOME_STYLE.get(r.outcome or "", ""))
    for label, value in (
        ("run", r.id),
        ("job", _opt(r.job_id)),
        ("task", f"{r.task_id} ({r.task_category})" if r.task_category else r.task_id),
        ("variant / image", f"{_opt(r.variant)} / {_opt(r.image)}"),
        ("agent / attempt", f"{r.agent} / {r.attempt}"),
        ("host", _opt(r.host)),
        ("state", r.state),
        ("outcome", outcome),
        ("reward", _opt(r.reward)),
        ("residue", _opt(r.residue)),
        ("created", _ts(r.created_at)),
        ("started / finished", f"{_ts(r.started_at)} / {_ts(r.finished_at)}"),
        ("duration", _dur(r.duration_s)),
    ):
        head.add_row(label, value)
    if r.error:
        head.add_row("error", Text(r.error, style="red"))
    console.print(head)

    if d.phases:
        table = Table(title="phases", title_justify="left")
        for column in ("phase", "status", "started", "duration", "detail"):
            table.add_column(column)
        for p in d.phases:
            table.add_row(p.name, p.status, _ts(p.started_at), _dur(p.duration_s), _opt(p.detail))
        console.print(table)

    if d.nodes:
        table = Table(title="nodes", title_justify="left")
        for column in ("node", "image", "os release", "domain", "mgmt ip"):
            table.add_column(column)
        for n in d.nodes:
            table.add_row(n.name, _opt(n.image), _opt(n.os_release), _opt(n.domain_name), _opt(n.mgmt_ip))
        console.print(table)

    table = Table(title=f"commands ({len(d.commands)})", title_justify="left")
    for column in ("seq", "node", "phase", "source", "exit", "duration", "command"):
        table.add_column(column, justify="right" if column in ("seq", "exit") else "left")
    for c in d.commands:
        if c.timed_out:
            exit_text = Text("timeout", style="yellow")
        elif c.error:
            exit_text = Text("error", style="red")
        else:
            exit_text = Text(_opt(c.exit_code), style="" if c.exit_code == 0 else "red")
        table.add_row(
            str(c.seq), _opt(c.node), c.phase, c.source, exit_text, _dur(c.duration_ms / 1000), _first_line(c.command)
        )
    console.print(table)

    if d.snapshots:
        table = Table(title="snapshots", title_justify="left")
        for column in ("node", "point", "taken"):
            table.add_column(column)
        for s in d.snapshots:
            table.add_row(s.node, s.point, _ts(s.taken_at))
        console.print(table)

    if d.checks:
        table = Table(title="checks", title_justify="left")
        for column in ("requirement", "point", "node", "status", "description"):
            table.add_column(column)
        for k in d.checks:
            table.add_row(
                k.requirement,
                _opt(k.point),
                _opt(k.node),
                Text(k.status, style=_CHECK_STYLE.get(k.status, "")),
                _opt(k.description),
            )
        console.print(table)

    if d.findings:
        table = Table(title="findings", title_justify="left")
        for column in ("kind", "category", "node", "command", "summary"):
            table.add_column(column)
        for f in d.findings:
            table.add_row(
                f.kind, f.category, _opt(f.node), "-" if f.command_seq is None else f"#{f.command_seq}", f.summary
            )
        console.print(table)
