"""`testbed run TASK_DIR`: one run of a task, with live phases and its outcome.

Exit statuses: 0 passed, 1 failed, 2 bad input (nothing created),
3 error (harness failure), 130 cancelled (Ctrl-C: the lab is torn down first).

Bad input is refused before anything exists: `run` checks the settings (`TESTBED_*`), the
database URL, the task (`testbed.runner.request.admit_task`), the agent and that every
image is in the cache, and only then opens (creates, migrates) the database (`testbed task
validate`, in `testbed.cli.tasks`, checks a task the same way).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session, sessionmaker

from testbed.cli.options import DbOption
from testbed.config import Settings
from testbed.db.engine import database_url, open_database
from testbed.errors import InputError
from testbed.images.store import ImageStore
from testbed.render.terminal import cell, error_line
from testbed.runner.events import PhaseEvent, ProvisionProgress, RunEvent, RunFinished, RunStarted
from testbed.runner.request import RunRequest, RunResult, admit_task
from testbed.runner.warm import WarmStarts
from testbed.runtime import image_catalog, runtime

EXIT_BY_OUTCOME = {"passed": 0, "failed": 1, "error": 3, "cancelled": 130}


def run_command(
    task_dir: Annotated[Path, typer.Argument(help="task directory (tasks/ID)")],
    image: Annotated[str | None, typer.Option(help="image variant (default: the task's first)")] = None,
    agent: Annotated[str, typer.Option(help="oracle | noop | replay:FILE")] = "oracle",
    db: DbOption = None,
    redact: Annotated[bool, typer.Option("--redact/--no-redact", help="redact secrets in stored output")] = True,
    cold: Annotated[
        bool, typer.Option("--cold", help="boot fresh guests even when the task's saved post-setup state exists")
    ] = False,
    seed: Annotated[
        int | None, typer.Option(help="scenario seed: the task's \\[parameters] drawn from it (default 0)")
    ] = None,
) -> None:
    """Run TASK_DIR once with AGENT; prints the run id, live phases and the outcome. The
    first run of a task saves its post-setup state and later runs start from it (a fresh
    overlay each time); --cold boots fresh guests."""
    settings = Settings.from_env()
    url = database_url(db)
    catalog = image_catalog()
    task = admit_task(task_dir, images=set(catalog), image=image, memory_budget_mb=settings.memory_budget_mb)
    variant = image or task.definition.images[0]
    if seed is not None and seed < 0:
        raise InputError(None, "--seed", f"{seed} is negative")
    request = RunRequest(task, variant, agent, redact=redact, seed=seed).validated()
    ImageStore(settings.images_dir).require_nodes(task.topology, catalog, task.directory / "task.toml")
    sessions = open_database(url)
    result = asyncio.run(_run(request, sessions, settings, warm=not cold))
    raise typer.Exit(EXIT_BY_OUTCOME.get(result.outcome, 3))


async def _run(request: RunRequest, sessions: sessionmaker[Session], settings: Settings, *, warm: bool) -> RunResult:
    out = Console(soft_wrap=True)
    t0 = time.monotonic()
    async with runtime(settings) as rt:
        with out.status("starting") as status:

            def progress(event: RunEvent) -> None:
                stamp = f"{time.monotonic() - t0:6.1f}s"
                if isinstance(event, RunStarted):
                    what = f"task {request.task.id}  image {request.image}  agent {request.agent}  seed {request.seed}"
                    out.print(cell(f"run {event.run_id}  {what}"))
                    status.update("provisioning")
                elif isinstance(event, PhaseEvent):
                    if not event.started:
                        out.print(cell(f"{stamp}  {event.phase:<22} {event.status}"))
                    status.update(cell(f"{event.phase}: {event.status}"))
                elif isinstance(event, ProvisionProgress):
                    status.update(cell(f"{event.who}: {event.what}"))
                elif isinstance(event, RunFinished):
                    out.print(cell(f"{stamp}  {'finished':<22} {event.outcome}"))

            result = await WarmStarts(rt, enabled=warm).execute(request, sessions, [progress])
    _print_result(out, result)
    return result


def _print_result(out: Console, result: RunResult) -> None:
    table = Table(title=f"run {result.run_id[:8]}: {result.outcome}")
    for col in ("requirement", "point", "status", "reason"):
        table.add_column(col)
    for check in result.checks:
        style = {"passed": "green", "failed": "red"}.get(check.status, "yellow")
        reason = cell(str(check.detail.get("reason")))
        table.add_row(cell(check.check.id), check.point, cell(check.status, style=style), reason)
    out.print(table)
    if result.error:
        out.print(error_line("error", result.error))
    out.print(f"outcome: {result.outcome}   (details: testbed runs show {result.run_id[:8]})")
