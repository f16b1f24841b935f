"""Storing the study's trials as testbed runs, then testbed's own analysis of them.

Contracts:

- One run per trial, its id derived from the trial id (uuid5), so a re-import finds it and
  adds nothing; a run left unfinished by an interrupted import is replaced. One job per
  study job directory (`jobs/<job>/`), its id derived the same way.
- `runs.config.source` keeps `dataset` ("infraset"), `trial_id`, `path` (relative to the
  checkout), `task_name` and where the snapshots came from; `created_at`, `started_at`
  and `finished_at` are the trial's own times.
- Commands are stored in order as agent commands of the agent phase, redacted like every
  stored text (`testbed.analysis.redact`), with testbed's impact classes; each high-impact
  command also gets its `impact` findings, as a run of testbed's own would.
- Snapshots are stored per node and point (`testbed.importers.observations`); nodes come
  from the snapshots (with their os-release name) and the commands.
- `runs.residue` is decided by testbed's residue engine from the stored snapshots and
  commands (`find_residue`): `undetermined` when the probes it needs are missing and it
  found nothing, which is what most of the study's snapshots allow, and when the trial
  published no snapshot at all.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from testbed.analysis import classify, redact
from testbed.analysis.residue import find_residue, record_residue
from testbed.analysis.residue.stored import load_residue_inputs
from testbed.db.models import Job, Run
from testbed.db.recorder import RunRecorder, create_job
from testbed.db.records import CommandRecord
from testbed.importers.infraset import StudyCommand, Trial
from testbed.importers.observations import snapshot_points
from testbed.model.vocab import CommandPhase, FindingKind, RunState, Source

NAMESPACE = uuid.UUID("6f1c2a9e-55d4-4b7e-9a51-8d7f0e3b2c10")
DATASET = "infraset"


def derived_id(kind: str, key: str) -> str:
    """A stable 32-character id for a study trial or job."""
    return uuid.uuid5(NAMESPACE, f"{DATASET}:{kind}:{key}").hex


@dataclass
class ImportSummary:
    imported: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    residue: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


def _job(db: sessionmaker[Session], trial: Trial) -> str:
    name = trial.relpath.split("/")[1] if trial.relpath.count("/") >= 1 else "infraset"
    job_id = derived_id("job", name)
    with db() as session:
        if session.get(Job, job_id) is not None:
            return job_id
    return create_job(db, f"infraset job {name}", {"source": {"dataset": DATASET, "job": name}}, job_id=job_id)


def _existing(db: sessionmaker[Session], run_id: str) -> bool:
    """True when the run is already imported; an unfinished one is removed (redone)."""
    with db() as session, session.begin():
        run = session.get(Run, run_id)
        if run is None:
            return False
        if run.state == RunState.FINISHED:
            return True
        session.execute(delete(Run).where(Run.id == run_id))
        return False


def _record_command(rec: RunRecorder, c: StudyCommand) -> None:
    command, out, err = redact(c.command), redact(c.stdout), redact(c.stderr)
    kinds = sorted(set(command.kinds) | set(out.kinds) | set(err.kinds))
    impact = classify(c.command)
    command_id = rec.record_command(
        CommandRecord(
            node=c.node, phase=CommandPhase.AGENT, source=Source.AGENT, command=command.text,
            started_at=c.requested_at, duration_ms=c.duration_ms, exit_code=c.return_code, stdout=out.text,
            stderr=err.text, impact=impact, error=c.error, redacted=kinds or None,
        )
    )  # fmt: skip
    for cls in sorted(set(impact)):
        rec.record_finding(
            FindingKind.IMPACT, cls, f"{cls}: {command.text[:200]}", node=c.node, command_id=command_id,
            evidence={"command": command.text[:2000]},
        )  # fmt: skip


def _nodes(trial: Trial, points: dict[str, dict[str, dict[str, Any]]]) -> dict[str, str | None]:
    nodes: dict[str, str | None] = {}
    for name, by_point in points.items():
        releases = [(d.get("os") or {}).get("pretty_name") for d in by_point.values() if isinstance(d, dict)]
        nodes[name] = next((r for r in releases if r), None)
    for c in trial.commands:
        if c.node and c.node not in nodes:
            nodes[c.node] = None
    return nodes


def _times(db: sessionmaker[Session], run_id: str, trial: Trial) -> None:
    values = {k: v for k, v in (("started_at", trial.started_at), ("finished_at", trial.finished_at)) if v}
    if trial.started_at:
        values["created_at"] = trial.started_at
    if values:
        with db() as session, session.begin():
            session.execute(update(Run).where(Run.id == run_id).values(**values))


def import_trial(db: sessionmaker[Session], trial: Trial) -> str | None:
    """Store one trial (see the module contract); its run id, or None if already there."""
    run_id = derived_id("trial", trial.trial_id)
    if _existing(db, run_id):
        return None
    source = {"dataset": DATASET, "trial_id": trial.trial_id, "path": trial.relpath, "task_name": trial.task_name,
              "snapshots": trial.snapshot_source}  # fmt: skip
    rec = RunRecorder.create(
        db, task_id=trial.task_id, agent=trial.agent, variant=trial.variant, image=trial.variant,
        job_id=_job(db, trial), config={"source": source}, run_id=run_id,
    )  # fmt: skip
    rec.set_state(RunState.AGENT)
    points = snapshot_points(trial.snapshots)
    for name, release in _nodes(trial, points).items():
        rec.add_node(name, trial.variant, os_release=release)
    for command in trial.commands:
        _record_command(rec, command)
    for node, by_point in points.items():
        for point, data in by_point.items():
            rec.record_snapshot(node, point, data)
    with db() as session:
        snapshots, commands = load_residue_inputs(session, run_id)
    residue = find_residue(snapshots, commands)
    if not snapshots:  # nothing published to compare: no evidence either way
        residue.verdict = "undetermined"
    record_residue(rec, residue)
    rec.finish(trial.outcome, trial.error, trial.reward)
    _times(db, run_id, trial)
    return run_id


def import_trials(db: sessionmaker[Session], trials: list[Trial]) -> ImportSummary:
    """Store every trial; what was imported and skipped, residue verdicts and outcomes."""
    summary = ImportSummary()
    for trial in trials:
        run_id = import_trial(db, trial)
        if run_id is None:
            summary.skipped.append(trial.trial_id)
            continue
        summary.imported.append(run_id)
        summary.outcomes[trial.outcome] += 1
        with db() as session:
            run = session.get(Run, run_id)
            summary.residue[str(run.residue if run else None)] += 1
    return summary
