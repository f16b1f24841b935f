"""`testbed launch` and `testbed jobs list|show|cancel`.

`testbed launch JOB.yaml` (or flags: `--task`, `--category`, `--image`, `--agent`, ...)
creates the job and one pending run per matrix cell x attempt, prints `job <id>`, then runs
it with a live view. `testbed launch --resume JOB_ID` continues an interrupted job (runs
left pending or held by a dead coordinator run; finished runs are not re-run); any number
of coordinators (hosts or processes) may `--resume` the same job on one PostgreSQL database
to share it.

Exit statuses: 0 the job is complete and no run ended in a harness error after its retries;
1 complete, with runs that ended as `error`; 2 bad input (nothing created); 130 stopped by
Ctrl-C/SIGTERM (`--resume` continues it).

Bad input is refused before anything exists: the settings, the database URL, the job file
and flags and every cell's task, agent and images (`testbed.scheduler.launch.prepare`) are
checked before the database is opened (created, migrated) and the job written. `--resume`
and `jobs cancel` change a job that exists, so they open an existing database only
(`testbed.db.read.open_existing`: a missing one is bad input and is not created).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session, sessionmaker

from testbed.cli.options import DbOption
from testbed.config import Settings, project_root
from testbed.db.engine import database_url, open_database
from testbed.db.read import open_existing, open_read_only, to_jsonable
from testbed.db.read.jobs import JobProgress, final_errors, job_detail, recent_jobs
from testbed.errors import InputError
from testbed.model.fields import positive_seconds
from testbed.model.images import ImageDef
from testbed.model.job import JobSpec, job_from_options, load_job
from testbed.render.format import timestamp
from testbed.render.terminal import cell, json_text, shown_id
from testbed.runtime import image_catalog
from testbed.scheduler.coordinator import CoordinatorConfig, JobSummary
from testbed.scheduler.launch import PreparedJob, create, job_line, load_prepared, prepare, resolve_job_id, run_job
from testbed.scheduler.progress import LineView, LiveView
from testbed.scheduler.store import cancel_job

jobs_app = typer.Typer(help="List, inspect and cancel jobs (batches of runs).", no_args_is_help=True)


def launch_command(
    job: Annotated[Path | None, typer.Argument(help="job file (jobs/NAME.yaml); or give the settings as flags")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="continue the job with this id (or prefix)")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", help="task id, path or glob (repeatable)")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="keep tasks of this category")] = None,
    image: Annotated[list[str] | None, typer.Option("--image", help="image variant (repeatable; 'all')")] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(help="oracle | noop | replay:FILE | openai:MODEL | a plug-in (repeatable: compare agents)"),
    ] = None,
    attempts: Annotated[int | None, typer.Option(help="runs per matrix cell")] = None,
    seed: Annotated[
        list[int] | None, typer.Option("--seed", help="scenario seed (repeatable: a matrix over seeds)")
    ] = None,
    split: Annotated[str | None, typer.Option(help="train | heldout | all (default: the job's, else train)")] = None,
    include_heldout: Annotated[
        bool, typer.Option("--include-heldout", help="allow held-out tasks (refused otherwise)")
    ] = False,
    retries: Annotated[int | None, typer.Option(help="harness-error retries per cell")] = None,
    vm_slots: Annotated[int | None, typer.Option(help="VMs at once on the local host")] = None,
    name: Annotated[str | None, typer.Option(help="job name")] = None,
    db: DbOption = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="live view (else one line per event)")
    ] = True,
    lease_ttl: Annotated[float, typer.Option(help="seconds a run lease lasts without heartbeat")] = 120.0,
) -> None:
    """Create a job (or resume one) and run it to completion on the job's lab hosts."""
    settings = Settings.from_env()
    url = database_url(db)
    positive_seconds(lease_ttl, "--lease-ttl")
    images = image_catalog()
    if resume is not None:
        if job is not None:
            raise InputError(None, "--resume", "give either a job file or --resume JOB_ID, not both")
        sessions, job_id, prepared = _resumed(db, resume)
    else:
        spec = _spec(
            job,
            task,
            category,
            image,
            agent,
            attempts,
            retries,
            vm_slots,
            name,
            seeds=seed,
            split=split,
            include_heldout=include_heldout,
        )
        prepared = prepare(spec, project_root(), images, settings, file=job)
        sessions, job_id = _created(url, prepared)
    out = Console(highlight=False)
    out.print(job_line(job_id))
    config = CoordinatorConfig(lease_ttl_s=lease_ttl, heartbeat_s=max(1.0, lease_ttl / 6))
    summary = _run_with_view(out, progress, sessions, job_id, prepared, settings, images, config)
    raise typer.Exit(_exit_status(out, summary, sessions, job_id))


def _exit_status(out: Console, summary: JobSummary, sessions: sessionmaker[Session], job_id: str) -> int:
    """Print the job's summary; its exit status: 130 when stopped (with how to resume), 1
    when a cell's last run ended as `error` after every retry, else 0."""
    _print_summary(out, summary)
    if summary.interrupted:
        out.print(f"stopped; continue with: testbed launch --resume {job_id[:12]}")
        return 130
    return 0 if not _final_errors(sessions, job_id) else 1


def _created(url: str, prepared: PreparedJob) -> tuple[sessionmaker[Session], str]:
    """The database (created and migrated when new) and the id of the job written to it."""
    sessions = open_database(url)
    return sessions, create(sessions, prepared)


def _resumed(db: str | None, resume: str) -> tuple[sessionmaker[Session], str, PreparedJob]:
    """The existing database, the job's id and its prepared cells (`--resume`)."""
    sessions = open_existing(db)
    job_id = resolve_job_id(sessions, resume)
    prepared, cancelled = load_prepared(sessions, job_id)
    if cancelled:
        raise InputError(None, "--resume", f"job {job_id[:8]} was cancelled")
    return sessions, job_id, prepared


def _run_with_view(
    out: Console,
    progress: bool,
    sessions: sessionmaker[Session],
    job_id: str,
    prepared: PreparedJob,
    settings: Settings,
    images: dict[str, ImageDef],
    config: CoordinatorConfig,
) -> JobSummary:
    """Run the job with a live view on a terminal (when `progress`), else one line per event."""
    if progress and out.is_terminal:
        with LiveView(out) as view:
            return asyncio.run(
                run_job(sessions, job_id, prepared, settings, images, view=view, on_event=view.event, config=config)
            )
    lines = LineView(out)
    return asyncio.run(run_job(sessions, job_id, prepared, settings, images, on_event=lines.event, config=config))


def _spec(
    job: Path | None,
    task: list[str] | None,
    category: list[str] | None,
    image: list[str] | None,
    agent: list[str] | None,
    attempts: int | None,
    retries: int | None,
    vm_slots: int | None,
    name: str | None,
    *,
    seeds: list[int] | None = None,
    split: str | None = None,
    include_heldout: bool = False,
) -> JobSpec:
    base: dict[str, Any] = load_job(job).model_dump(exclude_unset=True) if job is not None else {}
    overrides: dict[str, Any] = {
        "tasks": task or None,
        "categories": category or None,
        "attempts": attempts,
        "name": name,
        "seeds": seeds or None,
        "split": split,
        "include_heldout": True if include_heldout else None,
    }
    if image:
        overrides["images"] = image[0] if image in (["all"], ["default"]) else image
    if retries is not None:
        overrides["retry"] = {**base.get("retry", {}), "limit": retries}
    if vm_slots is not None:
        hosts = base.get("hosts") or [{"name": "local"}]
        overrides["hosts"] = [{**hosts[0], "vm_slots": vm_slots}, *hosts[1:]]
    if agent:  # flags replace the file's agent(s)
        base = {k: v for k, v in base.items() if k not in ("agent", "agents")}
        overrides.update({"agent": agent[0]} if len(agent) == 1 else {"agents": agent})
    data = {**base, **{k: v for k, v in overrides.items() if v is not None}}
    data.setdefault("name", job.stem if job is not None else "adhoc")
    if job is None and "tasks" not in data:
        raise InputError(None, "JOB", "give a job file, or --task (repeatable)")
    return job_from_options(data, job)


def _final_errors(sessions: Any, job_id: str) -> int:
    """Cells whose last run ended as `error` (after every retry)."""
    with sessions() as session:
        return final_errors(session, job_id)


def _print_summary(out: Console, s: JobSummary) -> None:
    o = s.outcomes
    out.print(
        f"job {s.job_id[:8]}: {'complete' if s.complete else 'not complete'}; this coordinator ran {s.started} "
        f"run(s): passed {o.get('passed', 0)}, failed {o.get('failed', 0)} (agent), error {o.get('error', 0)} "
        f"(harness; {s.retries} retried), cancelled {o.get('cancelled', 0)}; lost runs recovered {s.lost}; "
        f"peak VMs {s.peak_slots}; {s.elapsed_s:.0f} s"
    )


# --- jobs ------------------------------------------------------------------------------

JOB_COUNT_COLUMNS = ("pending", "running", "passed", "failed", "error", "cancelled")


def _job_counts(job: JobProgress) -> dict[str, int]:
    """The job's runs as `jobs list` counts them: pending, running, then by outcome."""
    c = job.counts
    counts = {"pending": job.pending, "running": job.running, "passed": c.passed, "failed": c.failed,
              "error": c.error, "cancelled": c.cancelled}  # fmt: skip
    return {k: v for k, v in counts.items() if v}


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _job_json(job: JobProgress) -> dict[str, Any]:
    return {"id": job.id, "name": job.name, "created_at": job.created_at.isoformat(),
            "cancelled_at": job.cancelled_at.isoformat() if job.cancelled_at else None, "runs": job.counts.total,
            "pending": job.pending, "running": job.running, "counts": to_jsonable(job.counts)}  # fmt: skip


@jobs_app.command("list")
def jobs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(min=1, help="most recent N jobs")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Jobs, newest first, with their runs by state and outcome."""
    sessions = open_read_only(db)
    with sessions() as session:
        jobs = recent_jobs(session, limit)
    if as_json:
        typer.echo(json_text([_job_json(j) for j in jobs]))
        return
    table = Table()
    for col in ("job", "name", "created", "runs", *JOB_COUNT_COLUMNS):
        table.add_column(col)
    for job in jobs:
        counts = _job_counts(job)
        name = job.name + (" [cancelled]" if job.cancelled_at else "")
        table.add_row(
            shown_id(job.id, 12), cell(name), timestamp(job.created_at, seconds=False), str(job.counts.total),
            *(str(counts.get(k, 0)) for k in JOB_COUNT_COLUMNS),
        )  # fmt: skip
    Console().print(table)


@jobs_app.command("show")
def jobs_show(
    job: Annotated[str, typer.Argument(help="job id or prefix")], db: DbOption = None, as_json: JsonOption = False
) -> None:
    """A job's settings, its runs by state and outcome, and every run (retries included)."""
    sessions = open_read_only(db)
    with sessions() as session:
        detail = job_detail(session, job)
    if as_json:
        typer.echo(json_text({"job": _job_json(detail.job), "config": detail.config, "runs": to_jsonable(detail.runs)}))
        return
    out = Console(highlight=False)
    j = detail.job
    cancelled = f"  cancelled {timestamp(j.cancelled_at)}" if j.cancelled_at else ""
    out.print(cell(f"job {j.id}  name {j.name}  created {timestamp(j.created_at)}{cancelled}"))
    spec = detail.config.get("spec", {})
    agents = ", ".join(spec.get("agents") or [str(spec.get("agent"))])
    out.print(cell(f"agents {agents}  attempts {spec.get('attempts')}  retry {spec.get('retry')}  "
                   f"seeds {spec.get('seeds', [0])}  split {spec.get('split', 'train')}"))  # fmt: skip
    out.print("runs: " + ", ".join(f"{k} {v}" for k, v in sorted(_job_counts(j).items())))
    table = Table()
    for col in ("run", "task", "image", "agent", "attempt", "retry", "state", "outcome", "host", "lease", "error"):
        table.add_column(col, overflow="fold")
    for r in detail.runs:
        table.add_row(
            shown_id(r.id), cell(r.task_id), cell(r.variant or ""), cell(r.agent), str(r.attempt), str(r.retry),
            r.state, r.outcome or "",
            cell((r.host or "")[:40]), cell((r.lease_owner or "")[:30]), cell((r.error or "")[:60]),
        )  # fmt: skip
    out.print(table)


@jobs_app.command("cancel")
def jobs_cancel(job: Annotated[str, typer.Argument(help="job id or prefix")], db: DbOption = None) -> None:
    """Cancel a job: its pending runs end as `cancelled` now, its running runs at their
    coordinator's next heartbeat (labs torn down); nothing is retried or replaced."""
    sessions = open_existing(db)
    job_id = resolve_job_id(sessions, job)
    count = cancel_job(sessions, job_id)
    Console().print(
        f"job {job_id[:8]} cancelled: {count} pending run(s) cancelled; running runs stop at their "
        "coordinator's next heartbeat"
    )
