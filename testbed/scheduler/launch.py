"""Glue between a job definition, the run database and a coordinator (used by the CLI).

- `prepare(spec, root)` expands the matrix, loads each cell's task as `run` does
  (`testbed.runner.request.admit_task`), builds every agent of the job once per (task,
  image) (so a bad agent, an unknown plug-in or a task without an oracle fails as
  `InputError` naming the job's `agent`/`agents[i]` before anything is written), checks
  that its images are in the cache and that every run fits at least one host's budget.
- `create(db, prepared)` writes the job row and one pending run per cell x attempt in ONE
  transaction; the job's config records the spec, the project root and the task
  directories, so `--resume` needs nothing but the job id.
- `job_line(job_id)` is the line `testbed launch` prints on stdout once the job exists,
  and `job_id_in(text)` reads the id back from it (scripts and tests that drive the command).
- `run_job(...)` reaps orphans of dead owners on the local hosts, then runs a coordinator
  with the real executor until the job is complete or it is stopped (SIGINT/SIGTERM:
  first graceful, second at once).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.scripted import make_agent
from testbed.config import Settings
from testbed.db.models import Job
from testbed.db.read import ids as read_ids
from testbed.errors import InputError
from testbed.hypervisor.labhost import LabFiles, files_of_lab
from testbed.hypervisor.labstate import LabState
from testbed.hypervisor.reaper import FilesFor, reap
from testbed.images.store import ImageStore
from testbed.model.images import ImageDef
from testbed.model.job import Cell, HostSpec, JobSpec
from testbed.model.loading import validate
from testbed.model.task import Task
from testbed.runtime import Runtime
from testbed.scheduler.coordinator import Coordinator, CoordinatorConfig, JobSummary, ProgressSink
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.leaseowner import coordinator_identity
from testbed.scheduler.real import RunnerExecutor, TaskCatalog
from testbed.scheduler.resources import Demand, HostSlot
from testbed.scheduler.store import PendingRun, SqlRunStore

JOB_LINE = re.compile(r"^job ([0-9a-f]{32})\b", re.MULTILINE)
"""`job_line`'s pattern (a job id is a uuid4 hex of 32 characters, testbed.db.models)."""


def job_line(job_id: str) -> str:
    """The line `testbed launch` prints on stdout once the job and its runs exist."""
    return f"job {job_id}"


def job_id_in(text: str) -> str | None:
    """The job id of the first `job_line` in `text` (output of `testbed launch`), or None."""
    found = JOB_LINE.search(text)
    return None if found is None else found.group(1)


@dataclass
class PreparedJob:
    spec: JobSpec
    root: Path
    cells: list[Cell]
    task_dirs: dict[str, Path]
    file: Path | None = None


def default_hosts(settings: Settings) -> list[HostSpec]:
    """The host list of a job that names none: the local libvirt, sized from this machine."""
    memory = settings.memory_budget_mb
    return [
        HostSpec(
            name="local",
            uri=settings.libvirt_uri,
            vm_slots=max(1, min(os.cpu_count() or 1, memory // 640)),
            memory_mb=memory,
            boot_concurrency=2,
        )
    ]


def host_slots(spec: JobSpec, settings: Settings) -> list[HostSlot]:
    specs = spec.hosts or default_hosts(settings)
    return [
        HostSlot.from_spec(h, settings.libvirt_uri, settings.memory_budget_mb if h.uri is None else None) for h in specs
    ]


def prepare(
    spec: JobSpec, root: Path, images: dict[str, ImageDef], settings: Settings, *, file: Path | None = None
) -> PreparedJob:
    from testbed.model.job import expand_matrix

    cells, tasks = expand_matrix(spec, root, images=set(images), file=file)
    task_dirs = {task_id: task.directory for task_id, task in tasks.items()}
    catalog = TaskCatalog(task_dirs, spec, images, root=root, memory_budget_mb=settings.memory_budget_mb)
    hosts = host_slots(spec, settings)
    store = ImageStore(settings.images_dir)
    for cell in sorted({(c.task_id, c.image) for c in cells}):
        task = catalog.task(*cell)
        _check_agents(spec, task, file)
        demand = Demand.of_topology(task.topology, images)
        if not any(h.budget.admits(demand) for h in hosts):
            raise InputError(
                file,
                "hosts",
                f"task {cell[0]} on {cell[1]} needs {demand.nodes} VMs, {demand.vcpus} vCPUs and "
                f"{demand.memory_mb} MiB: no host's budget admits it",
            )
        store.require_nodes(task.topology, images, task.directory / "task.toml")
    return PreparedJob(spec, root, cells, task_dirs, file)


def _check_agents(spec: JobSpec, task: Task, file: Path | None) -> None:
    """Build every agent of the job for `task` (`InputError` naming the job field if one fails)."""
    for i, agent in enumerate(spec.agent_list):
        try:
            make_agent(agent, task)
        except InputError as exc:
            field = f"agents[{i}]" if spec.agents else "agent"
            raise InputError(file, field, f"{agent!r}: {exc.problem}") from exc


def create(db: sessionmaker[Session], prepared: PreparedJob) -> str:
    """Write the job and its pending runs (one transaction); return the job id."""
    config = {
        "spec": prepared.spec.model_dump(mode="json"),
        "root": str(prepared.root),
        "file": str(prepared.file) if prepared.file else None,
        "task_dirs": {k: str(v) for k, v in prepared.task_dirs.items()},
    }
    runs = [NewRun(c.task_id, c.image, c.attempt, c.category, c.agent, c.seed) for c in prepared.cells]
    job_id, _ = create_job_with_runs(db, prepared.spec.name, config, prepared.spec.agent_list[0], runs)
    return job_id


def resolve_job_id(db: sessionmaker[Session], ref: str) -> str:
    """A job id from a full id or a unique literal prefix (`testbed.db.read.ids`; `InputError` otherwise)."""
    with db() as session:
        return read_ids.resolve_job_id(session, ref, field="JOB_ID")


def load_prepared(db: sessionmaker[Session], job_id: str) -> tuple[PreparedJob, bool]:
    """The job as `create` stored it, and whether it was cancelled."""
    with db() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise InputError(None, "JOB_ID", f"no job '{job_id}'")
        config: dict[str, Any] = job.config or {}
        cancelled = job.cancelled_at is not None
    if "spec" not in config:
        raise InputError(None, "JOB_ID", f"job {job_id[:8]} was not created by `testbed launch`")
    spec = validate(JobSpec, config["spec"], f"job {job_id[:8]}", prefix="config.spec")
    dirs = {k: Path(v) for k, v in config.get("task_dirs", {}).items()}
    return PreparedJob(spec, Path(config["root"]), [], dirs, Path(config["file"]) if config.get("file") else None), (
        cancelled
    )


async def run_job(
    db: sessionmaker[Session],
    job_id: str,
    prepared: PreparedJob,
    settings: Settings,
    images: dict[str, ImageDef],
    *,
    view: ProgressSink | None = None,
    on_event: Callable[[str, Any], None] | None = None,
    config: CoordinatorConfig | None = None,
    install_signals: bool = True,
) -> JobSummary:
    """Run (or resume) job `job_id` to completion with a coordinator on this process."""
    spec = prepared.spec
    hosts = host_slots(spec, settings)
    catalog = TaskCatalog(
        prepared.task_dirs, spec, images, root=prepared.root, memory_budget_mb=settings.memory_budget_mb
    )
    store = SqlRunStore(db, spec.retry)
    async with RunnerExecutor(catalog, db, settings, hosts) as executor:
        for host in hosts:  # only objects of this machine's dead processes (see reaper)
            rt = executor.runtimes[host.name]
            await reap(rt.hypervisor, settings, files_for=_files_for(rt))
        coordinator = Coordinator(
            job_id,
            store,
            executor,
            hosts,
            catalog,
            owner=coordinator_identity(),
            config=config,
            view=view,
            on_event=on_event,
        )
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        if install_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, coordinator.stop)
                installed.append(sig)
        try:
            return await coordinator.run()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)


__all__ = ["PendingRun", "PreparedJob", "create", "load_prepared", "prepare", "resolve_job_id", "run_job"]


def _files_for(rt: Runtime) -> FilesFor:
    """Where the reaper finds a dead lab's files on `rt`'s host."""

    def files(state: LabState | None) -> LabFiles:
        return files_of_lab(rt.hypervisor, rt.lab_host, state.host_cache if state else None)

    return files
