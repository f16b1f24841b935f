"""`scripts/validate-tasks [TASK...]`: validate tasks on real guests through the scheduler
and write tasks/VALIDATION.md (`testbed.scheduler.validation` for what a row says).

For each of the agents `oracle` and `noop` it writes a job file (every release each task
declares) and runs `testbed launch JOB --no-progress --db URL` — inside
`scripts/netns-run` unless `--no-netns` (a lab host whose own libvirtd should be used) —
then reads both jobs' final runs from the database and merges their rows into the report.
`--from-jobs ORACLE_JOB NOOP_JOB [TASK...]` only writes the report from two finished jobs
(the named tasks' rows only, when tasks are named).

`--audit` runs nothing: it lists the cells the report does not hold as current and ok
(`testbed.scheduler.validation_audit`: missing, problem, stale since the task changed,
undeclared) and exits 0 only when there are none. `--pending` validates the tasks that
have such a cell (every release of each), so repeated partial runs converge on a report
that covers the whole library at its present files.

`--ci` is CI's selection (scripts/test.sh): the smoke set (`CI_SMOKE`) plus the tasks whose
files changed since the newest commit the report names (the last validation run), at most
`CI_MAX_TOUCHED` of them (the most recently changed) and none whose last validation took
over `CI_SLOW_S` (the rest are named and left to a full run), each on its first release
only, so that `.ci/run` stays inside its hour.

Exit statuses: 0 every validated cell is ok; 1 some cell is not; 2 bad input (a task that
does not load, an unknown job); 3 a launch failed (no job id, or launch exited 2/3/130).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console

from testbed.config import project_root
from testbed.db.engine import database_url
from testbed.db.read import open_read_only, resolve_job_id
from testbed.errors import HarnessError, InputError
from testbed.model.taskload import discover_tasks, load_task
from testbed.runtime import image_catalog
from testbed.scheduler.launch import job_id_in
from testbed.scheduler.validation import Row, collect, job_spec, merge_rows, parse_rows, render_report, seconds
from testbed.scheduler.validation_audit import Gap, GapKind, audit, summary

AGENTS = ("oracle", "noop")
UNRUN = frozenset({"unfinished", "missing"})
"""Outcomes of a cell whose run did not finish (or never existed) in the jobs read."""
CI_SMOKE = ("config-permissions",)
"""Validated in every CI run: one node, a fast setup, a persistence check."""
CI_MAX_TOUCHED = 2
CI_SLOW_S = 15 * 60
"""A touched task whose last validation took longer than this (oracle + noop, any release)
is left to a full run: CI has one hour in all."""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def report_rows(report: Path) -> list[Row]:
    """The rows of a validation report (none when it does not exist)."""
    return parse_rows(report.read_text("utf-8")) if report.exists() else []


def touched_tasks(root: Path, rows: list[Row]) -> list[str]:
    """Task ids whose files changed since the newest commit the report's `rows` name
    (newest change first); every task when they name no commit of this history."""
    named = {row.commit.removesuffix("+dirty") for row in rows}
    try:
        history = _git(root, "rev-list", "--abbrev-commit", "--abbrev=7", "HEAD").split()
        base = next((c for c in history if any(c.startswith(n) or n.startswith(c) for n in named if n)), None)
        span = [f"{base}..HEAD"] if base else ["HEAD"]
        names = _git(root, "log", "--name-only", "--format=", *span, "--", "tasks").split()
    except (OSError, subprocess.CalledProcessError):
        return []
    seen: list[str] = []
    for name in names:
        parts = Path(name).parts
        is_task = len(parts) >= 3 and parts[0] == "tasks" and (root / "tasks" / parts[1] / "task.toml").is_file()
        if is_task and parts[1] not in seen:
            seen.append(parts[1])
    return seen


def changed_since(root: Path, task: str, commit: str) -> bool | None:
    """True when tasks/TASK changed in a commit after `commit`, None when `commit` is not
    in this history (`validation_audit.ChangedSince`)."""
    try:
        found = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if found.returncode != 0:
            return None
        return bool(_git(root, "log", "--format=%h", f"{commit}..HEAD", "--", f"tasks/{task}").strip())
    except (OSError, subprocess.CalledProcessError):
        return None


def declared_cells(root: Path) -> dict[str, list[str]]:
    """Every task of the library and the releases it declares (`InputError` for a task that
    does not load)."""
    catalog = set(image_catalog())
    tasks = (load_task(d, images=catalog, root=root) for d in discover_tasks(root))
    return {t.id: list(t.definition.images) for t in sorted(tasks, key=lambda t: t.id)}


def report_gaps(root: Path, report: Path) -> tuple[list[Gap], int]:
    """The audit of `report` against the library under `root`, and how many cells it declares."""
    return rows_gaps(root, report_rows(report))


def rows_gaps(root: Path, rows: list[Row]) -> tuple[list[Gap], int]:
    """The audit of report `rows` against the library under `root`, and how many cells it
    declares."""
    declared = declared_cells(root)
    gaps = audit(rows, declared, lambda task, commit: changed_since(root, task, commit))
    return gaps, sum(len(r) for r in declared.values())


def build_first_images(ids: list[str], root: Path, out: Console) -> None:
    """Build (or find cached) the first release of each task: launch uses cached images only."""
    catalog = set(image_catalog())
    names = sorted({load_task(root / "tasks" / i, images=catalog, root=root).definition.images[0] for i in ids})
    for name in names:
        out.print(f"$ testbed image build {name}")
        status = subprocess.run([sys.executable, "-m", "testbed.cli", "image", "build", name], check=False).returncode
        if status != 0:
            raise HarnessError(f"testbed image build {name} exited {status}")


def ci_selection(root: Path, report: Path, out: Console) -> list[str]:
    """CI's tasks: the smoke set and at most `CI_MAX_TOUCHED` touched tasks, none of them
    known to be slow (`CI_SLOW_S`)."""
    rows = report_rows(report)
    took: dict[str, float] = {}
    for row in rows:
        total = sum(s for s in (seconds(row.oracle_time), seconds(row.noop_time)) if s is not None)
        took[row.task] = max(took.get(row.task, 0.0), total)
    touched = [t for t in touched_tasks(root, rows) if t not in CI_SMOKE]
    chosen = [t for t in touched if took.get(t, 0.0) <= CI_SLOW_S][:CI_MAX_TOUCHED]
    left = [t for t in touched if t not in chosen]
    if left:
        out.print(f"left to a full validation run: {', '.join(left)}")
    return [*CI_SMOKE, *chosen]


def task_ids(names: list[str], root: Path) -> list[str]:
    """The ids of the named tasks (ids or directories; all of tasks/ when none), each loaded
    against the image catalog so a broken task fails here (`InputError`)."""
    catalog = set(image_catalog())
    dirs = [_task_dir(n, root) for n in names] if names else discover_tasks(root)
    return sorted({load_task(d, images=catalog, root=root).id for d in dirs})


def _task_dir(name: str, root: Path) -> Path:
    for candidate in (Path(name), root / "tasks" / name):
        if (candidate / "task.toml").is_file():
            return candidate.resolve()
    raise InputError(None, "TASK", f"'{name}' is neither a task directory nor a task id under {root / 'tasks'}")


def commit_of(root: Path) -> str:
    """The checkout's short commit, `+dirty` when tasks/ or testbed/ has changes."""
    try:
        head = _git(root, "rev-parse", "--short", "HEAD").strip()
        dirty = _git(root, "status", "--porcelain", "--", "tasks", "testbed")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    changed = [line for line in dirty.splitlines() if not line.endswith("VALIDATION.md")]
    return head + ("+dirty" if changed else "")


def launch(job_file: Path, db: str, root: Path, *, netns: bool, out: Console) -> str:
    """Run `testbed launch` on `job_file`; return the job id (`HarnessError` when it fails)."""
    command = [sys.executable, "-m", "testbed.cli", "launch", str(job_file), "--no-progress", "--db", db]
    if netns:
        command = [str(root / "scripts" / "netns-run"), *command]
    out.print(f"$ {' '.join(command)}")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    text = []
    for line in proc.stdout:
        sys.stdout.write(line)
        text.append(line)
    status = proc.wait()
    job_id = job_id_in("".join(text))
    if status not in (0, 1) or job_id is None:
        raise HarnessError(f"testbed launch {job_file.name} exited {status}" + ("" if job_id else " without a job id"))
    return job_id


def write_report(
    db: str, jobs: tuple[str, str], report: Path, commit: str, root: Path, only: set[str] | None = None
) -> bool:
    """Merge the rows of the two jobs (of the tasks in `only`, when given) into `report`,
    with the audit of the merged rows against the library under `root` (at `commit`) under
    the count; True when every one of the jobs' rows is ok. A cell that neither job
    finished (a cancelled job) writes no row: what the report held for it stays."""
    sessions = open_read_only(db)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    with sessions() as session:
        oracle, noop = (resolve_job_id(session, j, field="JOB") for j in jobs)
        rows = [r for r in collect(session, oracle, noop, commit, day) if only is None or r.task in only]
    out = Console(highlight=False)
    unrun = [r for r in rows if {r.oracle, r.noop} <= UNRUN]
    for row in unrun:  # a cancelled job says nothing about the cell: its earlier row stays
        out.print(f"skipped  {row.task} on {row.release}: no run of either agent finished")
    rows = [r for r in rows if r not in unrun]
    existing = report.read_text(encoding="utf-8") if report.exists() else ""
    merged = merge_rows(existing, rows)
    gaps, cells = rows_gaps(root, merged)
    audit_line = f"Audit at {commit} (`scripts/validate-tasks --audit`): {summary(gaps, cells)}."
    report.write_text(render_report(merged, audit_line), encoding="utf-8")
    for row in rows:
        out.print(f"{row.verdict:<8} {row.task} on {row.release}: oracle {row.oracle} (residue {row.residue}), "
                  f"noop {row.noop}" + (f"  [{row.notes}]" if row.notes else ""))  # fmt: skip
    out.print(f"wrote {report}")
    return bool(rows) and not unrun and all(r.verdict == "ok" for r in rows)


def validate(
    tasks: Annotated[list[str] | None, typer.Argument(help="task ids or directories (default: all of tasks/)")] = None,
    db: Annotated[str | None, typer.Option(help="database URL (default: TESTBED_DB or SQLite in TESTBED_HOME)")] = None,
    report: Annotated[Path | None, typer.Option(help="the report (default: tasks/VALIDATION.md)")] = None,
    netns: Annotated[bool, typer.Option("--netns/--no-netns", help="run launch inside scripts/netns-run")] = True,
    vm_slots: Annotated[int | None, typer.Option(help="VMs at once")] = None,
    cold: Annotated[bool, typer.Option("--cold", help="no warm starts: every run boots")] = False,
    from_jobs: Annotated[
        tuple[str, str] | None, typer.Option("--from-jobs", help="only write the report: ORACLE_JOB NOOP_JOB")
    ] = None,
    ci: Annotated[
        bool, typer.Option("--ci", help="the smoke set and the tasks changed since the report's last run")
    ] = False,
    audit_only: Annotated[
        bool, typer.Option("--audit", help="run nothing: list the cells that are not current and ok")
    ] = False,
    pending: Annotated[
        bool, typer.Option("--pending", help="validate the tasks that have a cell --audit lists")
    ] = False,
    base_report: Annotated[
        Path | None,
        typer.Option(help="with --ci: the report whose commits say what changed (default: tasks/VALIDATION.md)"),
    ] = None,
) -> None:
    """Validate tasks: oracle passes without residue and noop fails, on every declared release."""
    root = project_root()
    url = database_url(db)
    target = report or root / "tasks" / "VALIDATION.md"
    if from_jobs is not None:
        only = set(task_ids(list(tasks), root)) if tasks else None
        raise typer.Exit(0 if write_report(url, from_jobs, target, commit_of(root), root, only) else 1)
    out = Console(highlight=False)
    if sum((ci, audit_only, pending)) > 1:
        raise InputError(None, "--ci/--audit/--pending", "give at most one of them")
    if (ci or audit_only or pending) and tasks:
        raise InputError(None, "TASK", "--ci, --audit and --pending choose the tasks themselves: name none")
    if audit_only or pending:
        gaps, cells = report_gaps(root, target)
        for gap in gaps:
            out.print(gap.line(), soft_wrap=True)
        out.print(summary(gaps, cells), soft_wrap=True)
        if audit_only:
            raise typer.Exit(0 if not gaps else 1)
        tasks = sorted({g.task for g in gaps if g.kind != GapKind.UNDECLARED})
        if not tasks:
            raise typer.Exit(0)
    selected = ci_selection(root, base_report or root / "tasks" / "VALIDATION.md", out) if ci else list(tasks or [])
    ids = task_ids(selected, root)
    if ci:
        build_first_images(ids, root, out)
    out.print(f"validating {len(ids)} task(s): {', '.join(ids)}")
    jobs = []
    with tempfile.TemporaryDirectory(prefix="testbed-validate-") as scratch:
        for agent in AGENTS:
            job_file = Path(scratch) / f"validate-{agent}.yaml"
            spec = job_spec(ids, agent, vm_slots=vm_slots, warm=not cold, images="default" if ci else "all")
            job_file.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
            jobs.append(launch(job_file, url, root, netns=netns, out=out))
    raise typer.Exit(0 if write_report(url, (jobs[0], jobs[1]), target, commit_of(root), root) else 1)


def main() -> None:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(validate)
    err = Console(stderr=True, soft_wrap=True)
    try:
        app()
    except InputError as exc:
        err.print(f"error: {exc}", highlight=False)
        sys.exit(2)
    except HarnessError as exc:
        err.print(f"harness error: {exc}", highlight=False)
        sys.exit(3)


if __name__ == "__main__":
    main()
