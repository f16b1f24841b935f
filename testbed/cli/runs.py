"""`testbed runs ...`: recorded runs from the run database (`testbed db` is
`testbed.cli.db`).

Every command takes `--db URL` (else env `TESTBED_DB`, else the SQLite file under
`TESTBED_HOME`) and only reads the database (`testbed.db.read.open_read_only`: a missing
file or an old schema is bad input, exit status 2, and nothing is created). An unknown, too
short or ambiguous run id raises `InputError` (exit status 2 in the main CLI). Stored text
reaches the terminal only through `testbed.render.terminal` (never Rich markup, control
sequences neutralised).

`runs list [--job J] [--task T] [--agent A] [--outcome O] [--json]` lists the newest runs
matching every filter given (ids whole when stdout is not a terminal, and in JSON).
`runs show RUN_ID [--json]` prints everything about a run and its trajectory
(`testbed.db.read.trajectory`; `--json` adds it under `trajectory`). `runs compare A B
[--json]` puts two runs of one task side by side (`testbed.cli.trajectory`).

`runs findings RUN_ID [--kind K] [--json]` lists a run's findings in id order, each with
kind, category, node, summary and the attributed command (seq and first line, or `-`);
`--json` prints `{"run_id", "residue", "findings": [{id, kind, category, node, summary,
evidence, command_id, command_seq, command}]}` where `residue` is the run's verdict.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from testbed.cli.options import DbOption
from testbed.cli.trajectory import comparison_table, print_trajectory
from testbed.db.read import RunDetail, RunFilter, RunSummary, list_runs, open_read_only, resolve_job_id, run_detail
from testbed.db.read.artifacts import artifact_infos, artifact_text
from testbed.db.read.compare import compare_runs
from testbed.db.read.filters import OUTCOME_FILTERS, check_outcome
from testbed.db.read.findings import FindingInfo, load_findings
from testbed.db.read.trajectory import trajectory
from testbed.egress.query import egress_rows
from testbed.egress.render import egress_json, egress_table
from testbed.errors import InputError
from testbed.render.format import duration, first_line, timestamp
from testbed.render.terminal import cell, console, json_text, neutralise, shown_id

runs_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)

RunIdArgument = Annotated[str, typer.Argument(help="Run id or a unique prefix (at least 4 characters).")]

OUTCOME_STYLE = {"passed": "green", "failed": "red", "error": "yellow", "cancelled": "dim"}
CHECK_STYLE = {"passed": "green", "failed": "red", "indeterminate": "yellow"}


def _table(title: str, columns: tuple[str, ...], **column_options: dict[str, Any]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, **column_options.get(column, {}))
    return table


@runs_app.command("list")
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs.")] = 20,
    job: Annotated[str | None, typer.Option("--job", help="Only runs of this job (id or prefix).")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only runs of this task id.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only runs of this agent (as listed).")] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help=f"Only runs with this outcome ({', '.join(OUTCOME_FILTERS)}).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the newest runs, newest first (every filter given must match)."""
    check_outcome("--outcome", outcome or "")  # refused before the database is opened
    sessions = open_read_only(db)
    with sessions() as session:
        job_id = resolve_job_id(session, job, field="--job") if job else ""
        selection = RunFilter(job_id=job_id, task=task or "", agent=agent or "", outcome=outcome or "")
        runs = list_runs(session, selection, limit=limit)
    if as_json:
        typer.echo(json_text([r.to_dict() for r in runs]))
        return
    console().print(_runs_table(runs))


def _outcome(value: str | None) -> Text:
    return cell(value, style=OUTCOME_STYLE.get(value or "", ""))


def _runs_table(runs: list[RunSummary]) -> Table:
    columns = ("id", "created", "task", "variant", "agent", "try", "state", "outcome", "reward", "duration", "host")
    fixed = {"no_wrap": True}
    table = _table(f"{len(runs)} run(s)", columns, id=fixed, created=fixed, state=fixed, outcome=fixed)
    for r in runs:
        table.add_row(
            shown_id(r.id), timestamp(r.created_at), cell(r.task_id), cell(r.variant), cell(r.agent), str(r.attempt),
            r.state, _outcome(r.outcome), "-" if r.reward is None else f"{r.reward:g}", duration(r.duration_s),
            cell(r.host),
        )  # fmt: skip
    return table


@runs_app.command("show")
def runs_show(
    run_id: RunIdArgument,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON.")] = False,
    console_of: Annotated[
        str | None, typer.Option("--console", help="Print the serial console log kept for this node, and nothing else.")
    ] = None,
) -> None:
    """Show one run: phases, nodes, commands, snapshot points, checks, findings, its
    trajectory (the model's turns with the commands they ran and what those changed) and the
    artifacts kept with it (`--console NODE` prints a node's console log)."""
    sessions = open_read_only(db)
    with sessions() as session:
        detail = run_detail(session, run_id)
        stream = trajectory(session, detail.run.id)
        artifacts = artifact_infos(session, detail.run.id)
        requests = egress_rows(session, detail.run.id)
        text = artifact_text(session, detail.run.id, f"console-{console_of}.log") if console_of else None
    if console_of is not None:
        if text is None:
            kept = ", ".join(a.node or a.name for a in artifacts if a.kind == "console") or "none"
            raise InputError(None, "--console", f"no console log kept for node {console_of!r} (kept: {kept})")
        typer.echo(neutralise(text))
        return
    if as_json:
        payload = {
            **detail.to_dict(),
            "trajectory": stream.to_dict(),
            "artifacts": [a.to_dict() for a in artifacts],
            "egress": egress_json(requests),
        }
        typer.echo(json_text(payload))
        return
    out = console()
    out.print(_head(detail))
    for section in (_phases, _nodes, _commands, _snapshots, _checks, _findings):
        table = section(detail)
        if table is not None:
            out.print(table)
    print_trajectory(stream)
    requests_table = egress_table(requests)
    if requests_table is not None:
        out.print(requests_table)
    for a in artifacts:
        cut = ", tail kept" if a.truncated else ""
        how = f"testbed runs show {detail.run.id[:8]} --console {a.node}"
        out.print(cell(f"artifact {a.name} ({a.size} characters{cut}): {how}"))


def _head(d: RunDetail) -> Table:
    r = d.run
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    task = f"{r.task_id} ({r.task_category})" if r.task_category else r.task_id
    for label, value in (
        ("run", cell(r.id)),
        ("job", cell(r.job_id)),
        ("task", cell(task)),
        ("variant / image", cell(f"{r.variant or '-'} / {r.image or '-'}")),
        ("agent / attempt", cell(f"{r.agent} / {r.attempt}")),
        ("host", cell(r.host)),
        ("state", cell(r.state)),
        ("outcome", _outcome(r.outcome)),
        ("reward", cell(r.reward)),
        ("residue", cell(r.residue)),
        ("created", timestamp(r.created_at)),
        ("started / finished", f"{timestamp(r.started_at)} / {timestamp(r.finished_at)}"),
        ("duration", duration(r.duration_s)),
    ):
        head.add_row(label, value)
    if r.error:
        head.add_row("error", cell(r.error, style="red"))
    return head


def _phases(d: RunDetail) -> Table | None:
    if not d.phases:
        return None
    table = _table("phases", ("phase", "status", "started", "duration", "detail"))
    for p in d.phases:
        table.add_row(cell(p.name), cell(p.status), timestamp(p.started_at), duration(p.duration_s), cell(p.detail))
    return table


def _nodes(d: RunDetail) -> Table | None:
    if not d.nodes:
        return None
    table = _table("nodes", ("node", "image", "os release", "domain", "mgmt ip"))
    for n in d.nodes:
        table.add_row(cell(n.name), cell(n.image), cell(n.os_release), cell(n.domain_name), cell(n.mgmt_ip))
    return table


def _commands(d: RunDetail) -> Table:
    right = {"justify": "right"}
    table = _table(
        f"commands ({len(d.commands)})", ("seq", "node", "phase", "source", "exit", "duration", "command"),
        seq=right, exit=right,
    )  # fmt: skip
    for c in d.commands:
        if c.timed_out:
            exit_text = Text("timeout", style="yellow")
        elif c.error:
            exit_text = Text("error", style="red")
        else:
            exit_text = cell(c.exit_code, style="" if c.exit_code == 0 else "red")
        table.add_row(
            str(c.seq), cell(c.node), c.phase, c.source, exit_text, duration(c.duration_ms / 1000),
            cell(first_line(c.command, 70, missing="")),
        )  # fmt: skip
    return table


def _snapshots(d: RunDetail) -> Table | None:
    if not d.snapshots:
        return None
    table = _table("snapshots", ("node", "point", "taken"))
    for s in d.snapshots:
        table.add_row(cell(s.node), s.point, timestamp(s.taken_at))
    return table


def _checks(d: RunDetail) -> Table | None:
    if not d.checks:
        return None
    table = _table("checks", ("requirement", "point", "node", "status", "description"))
    for k in d.checks:
        status = cell(k.status, style=CHECK_STYLE.get(k.status, ""))
        table.add_row(cell(k.requirement), cell(k.point), cell(k.node), status, cell(k.description))
    return table


def _findings(d: RunDetail) -> Table | None:
    if not d.findings:
        return None
    table = _table("findings", ("kind", "category", "node", "command", "summary"))
    for f in d.findings:
        seq = "-" if f.command_seq is None else f"#{f.command_seq}"
        table.add_row(f.kind, cell(f.category), cell(f.node), seq, cell(f.summary))
    return table


def _finding_json(f: FindingInfo) -> dict[str, Any]:
    return {
        "id": f.id, "kind": f.kind, "category": f.category, "node": f.node, "summary": f.summary,
        "evidence": f.evidence, "command_id": f.command_id, "command_seq": f.command_seq, "command": f.command_text,
    }  # fmt: skip


def findings_command(
    run_id: RunIdArgument,
    db: DbOption = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only findings of this kind.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List a run's findings (residue, impact, safety) with the command each is attributed to."""
    sessions = open_read_only(db)
    with sessions() as session:
        found = load_findings(session, run_id, kind)
    if as_json:
        findings = [_finding_json(f) for f in found.findings]
        payload = {"run_id": found.run_id, "residue": found.residue, "findings": findings}
        typer.echo(json_text(payload, ensure_ascii=False))
        return
    title = f"run {shown_id(found.run_id)}: {len(found.findings)} finding(s); residue: {found.residue or '-'}"
    wide_console: Console = console(wide=200)
    table = _table(title, ("kind", "category", "node", "summary", "seq", "command"), kind={"no_wrap": True},
                   seq={"no_wrap": True})  # fmt: skip
    for f in found.findings:
        seq = str(f.command_seq) if f.command_seq is not None else "-"
        table.add_row(f.kind, cell(f.category), cell(f.node), cell(f.summary), seq, cell(first_line(f.command_text)))
    wide_console.print(table)


runs_app.command("findings")(findings_command)


@runs_app.command("compare")
def compare_command(
    a: RunIdArgument,
    b: Annotated[str, typer.Argument(help="A second run of the same task: id or a unique prefix.")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Two runs of the same task side by side: outcome, checks, time, tokens, cost, streams."""
    sessions = open_read_only(db)
    with sessions() as session:
        comparison = compare_runs(session, a, b)
    if as_json:
        typer.echo(json_text(comparison.to_dict()))
        return
    console(wide=220).print(comparison_table(comparison))
