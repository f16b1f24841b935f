"""`testbed gate JOB --min-pass R --min-category R --max-error-rate R [--json]`: a
fail-closed exit status for promotion gates (see `testbed.scheduler.gate` for the rules).

Exit statuses: 0 every rule holds; 1 a rule does not hold (or the job is incomplete);
2 bad input (no rule, a rate outside 0..1, an unknown job or database); 3 no data (no
final run passed, failed or ended in error). Read-only: never creates or migrates a
database.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from testbed.db.read import open_read_only
from testbed.db.read.ids import resolve_job_id
from testbed.db.read.jobs import final_counts_by_category
from testbed.render.terminal import cell
from testbed.scheduler.gate import NO_DATA, GateResult, GateRules, evaluate


def gate_command(
    job: Annotated[str, typer.Argument(help="job id or prefix")],
    min_pass: Annotated[float | None, typer.Option("--min-pass", help="least pass rate of the job (0..1)")] = None,
    min_category: Annotated[
        float | None, typer.Option("--min-category", help="least pass rate of every task category (0..1)")
    ] = None,
    max_error_rate: Annotated[
        float | None, typer.Option("--max-error-rate", help="most harness-error share of final runs (0..1)")
    ] = None,
    db: Annotated[str | None, typer.Option(help="database URL (default: TESTBED_DB or SQLite in TESTBED_HOME)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the verdict as JSON")] = False,
) -> None:
    """Judge a job's final runs against promotion thresholds; the exit status is the verdict."""
    rules = GateRules(min_pass, min_category, max_error_rate)
    sessions = open_read_only(db)
    with sessions() as session:
        job_id = resolve_job_id(session, job, field="JOB")
        counts = final_counts_by_category(session, job_id)
    result = evaluate(counts, rules)
    if as_json:
        typer.echo(json.dumps(_as_json(job_id, result), indent=2))
    else:
        _print(Console(highlight=False), job_id, result)
    raise typer.Exit(result.status)


def _as_json(job_id: str, result: GateResult) -> dict[str, object]:
    return {
        "job": job_id,
        "status": result.status,
        "verdict": {0: "pass", 1: "fail", NO_DATA: "no data"}[result.status],
        "rules": [{"rule": v.rule, "holds": v.holds, "detail": v.detail} for v in result.verdicts],
        "categories": {
            k: {"passed": c.passed, "failed": c.failed, "error": c.error, "cancelled": c.cancelled,
                "unfinished": c.unfinished, "pass_rate": c.pass_rate}
            for k, c in result.categories.items()
        },
    }  # fmt: skip


def _print(out: Console, job_id: str, result: GateResult) -> None:
    table = Table(title=f"job {job_id[:12]}: final runs by category")
    for col in ("category", "passed", "failed", "error", "cancelled", "unfinished", "pass rate"):
        table.add_column(col)
    for name, c in result.categories.items():
        rate = "" if c.pass_rate is None else f"{c.pass_rate:.3f}"
        table.add_row(cell(name), *(str(n) for n in (c.passed, c.failed, c.error, c.cancelled, c.unfinished)), rate)
    out.print(table)
    if result.status == NO_DATA:
        out.print("gate: NO DATA (no final run passed, failed or ended in error)")
        return
    for v in result.verdicts:
        out.print(cell(f"{'ok  ' if v.holds else 'FAIL'} {v.rule}: {v.detail}"))
    out.print("gate: PASS" if result.passed else "gate: FAIL")
