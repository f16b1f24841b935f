"""What a run records as it goes: commands (numbered per run, in commit order), artifacts,
snapshots, checks, findings, model turns and egress rows. A mixin of `RunRecorder`
(`testbed.db.recorder`, whose module docstring states the contract), written through
`RowWriter`'s locked transactions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.cleaning import clean_json, clean_text
from testbed.db.models import (
    CHECK_STATUSES,
    COMMAND_PHASES,
    COMMAND_SOURCES,
    EGRESS_DECISIONS,
    FINDING_KINDS,
    SNAPSHOT_POINTS,
    Artifact,
    Check,
    Command,
    Egress,
    Finding,
    ModelTurn,
    Snapshot,
)
from testbed.db.records import CommandRecord, EgressRecord, StoredCommand, TurnRecord
from testbed.db.rowwriter import RowWriter, aware, one_of
from testbed.db.types import utcnow

_RECORD_FIELDS = tuple(f.name for f in fields(CommandRecord))


def stored_record(values: Mapping[str, Any]) -> CommandRecord:
    """The `CommandRecord` of a row's column values (as `store_command` writes them)."""
    return CommandRecord(**{k: values[k] for k in _RECORD_FIELDS if k in values})


class EvidenceWrites(RowWriter):
    """The per-command and per-observation writes of a run's recorder."""

    _seq: int
    _turn_seq: int

    # --- commands ----------------------------------------------------------------------

    def record_command(self, record: CommandRecord) -> int:
        """Insert `record` with the next `seq`, commit, and return the command's id."""
        return self.store_command(record).id

    def store_command(self, record: CommandRecord) -> StoredCommand:
        """Insert `record` with the next `seq`, commit, and return the row as stored."""
        values = self._command_values(record)
        with self._lock, Session(self._engine, expire_on_commit=False) as session:
            seq = self._seq + 1
            with session.begin():
                command = Command(run_id=self.run_id, seq=seq, **values)
                session.add(command)
                session.flush()
                command_id = command.id
            # Committed: only now is the number used up (a failed write reuses it).
            self._seq = seq
            return StoredCommand(command_id, seq, stored_record(values))

    def complete_command(self, requested: StoredCommand, record: CommandRecord) -> StoredCommand:
        """Replace the row of `requested` (written before the command was sent, see
        `testbed.runner.recording`) with the completed `record`; commit; the row as stored."""
        values = self._command_values(record)

        def work(session: Session) -> None:
            row = session.get(Command, requested.id)
            if row is None or row.run_id != self.run_id:
                raise LookupError(f"no command {requested.id} in run {self.run_id}")
            for key, value in values.items():
                setattr(row, key, value)

        self._write(work)
        return StoredCommand(requested.id, requested.seq, stored_record(values))

    def _command_values(self, record: CommandRecord) -> dict[str, Any]:
        """The column values of `record`: checked (`ValueError`), cleaned and redacted."""
        one_of("command phase", record.phase, COMMAND_PHASES)
        one_of("command source", record.source, COMMAND_SOURCES)
        aware("started_at", record.started_at)
        if record.duration_ms < 0:
            raise ValueError(f"duration_ms must be >= 0; got {record.duration_ms}")
        values = asdict(record)
        kinds = set(record.redacted or ())
        for key in ("command", "stdout", "stderr", "error"):
            values[key] = self._text(values[key], kinds)
        values["impact"] = clean_json(list(record.impact))
        values["redacted"] = sorted(kinds) or None
        values["background"] = self._json(record.background) if record.background else None
        return values

    def record_artifact(self, name: str, kind: str, content: str, *, node: str | None = None, limit: int) -> int:
        """Store a text artifact of the run (a console log), redacted like every stored text;
        over `limit` characters the tail is kept and `truncated` set. A second call with the
        same name replaces it."""
        text = self._text(content) or ""
        truncated = len(text) > limit
        kept = text[-limit:] if truncated else text

        def work(session: Session) -> int:
            row = session.scalars(select(Artifact).where(Artifact.run_id == self.run_id, Artifact.name == name)).first()
            if row is None:
                row = Artifact(run_id=self.run_id, name=name)
                session.add(row)
            row.kind, row.node, row.content, row.size, row.truncated = kind, node, kept, len(text), truncated
            row.created_at = utcnow()
            session.flush()
            return row.id

        return self._write(work)

    # --- snapshots, checks, findings ---------------------------------------------------

    def record_snapshot(self, node: str, point: str, data: Mapping[str, Any], taken_at: datetime | None = None) -> int:
        """Store `data` (JSON keyed by probe name) for (`node`, `point`); a second call for
        the same pair replaces the first. Return the snapshot id."""
        one_of("snapshot point", point, SNAPSHOT_POINTS)
        taken = aware("taken_at", taken_at) if taken_at is not None else utcnow()
        payload = clean_json(dict(data))

        def work(session: Session) -> int:
            snap = session.scalars(
                select(Snapshot).where(Snapshot.run_id == self.run_id, Snapshot.node == node, Snapshot.point == point)
            ).first()
            if snap is None:
                snap = Snapshot(run_id=self.run_id, node=node, point=point)
                session.add(snap)
            snap.taken_at = taken
            snap.data = payload
            session.flush()
            return snap.id

        return self._write(work)

    def record_check(
        self,
        requirement: str,
        status: str,
        *,
        description: str | None = None,
        point: str | None = None,
        node: str | None = None,
        detail: Any = None,
    ) -> int:
        """Insert a check result (`status` ∈ passed, failed, indeterminate; `point` ∈
        `SNAPSHOT_POINTS` or None; `detail` any JSON value). Return its id."""
        one_of("check status", status, CHECK_STATUSES)
        if point is not None:
            one_of("check point", point, SNAPSHOT_POINTS)
        payload = self._json(detail)
        description = self._text(description)

        def work(session: Session) -> int:
            check = Check(
                run_id=self.run_id,
                requirement=requirement,
                description=description,
                point=point,
                node=node,
                status=status,
                detail=payload,
            )
            session.add(check)
            session.flush()
            return check.id

        return self._write(work)

    def record_finding(
        self,
        kind: str,
        category: str,
        summary: str,
        *,
        node: str | None = None,
        evidence: Any = None,
        command_id: int | None = None,
    ) -> int:
        """Insert a finding (`kind` ∈ residue, impact, safety); `command_id` must be a
        command of this run when given (`ValueError` otherwise). Return its id."""
        one_of("finding kind", kind, FINDING_KINDS)
        payload = self._json(evidence)
        summary_text = self._text(summary)

        def work(session: Session) -> int:
            if command_id is not None:
                owner = session.scalar(select(Command.run_id).where(Command.id == command_id))
                if owner != self.run_id:
                    raise ValueError(f"command {command_id} is not a command of this run")
            finding = Finding(
                run_id=self.run_id,
                node=node,
                kind=kind,
                category=category,
                summary=summary_text,
                evidence=payload,
                command_id=command_id,
            )
            session.add(finding)
            session.flush()
            return finding.id

        return self._write(work)

    # --- model turns -------------------------------------------------------------------

    def record_model_turn(self, turn: TurnRecord) -> int:
        """Insert `turn` (an LLM agent's model call) with the next turn `seq`; return its id."""
        aware("started_at", turn.started_at)
        messages, response = self._json(turn.messages), self._json(turn.response)
        tool_calls, error = self._json(turn.tool_calls), self._text(turn.error)

        with self._lock, Session(self._engine, expire_on_commit=False) as session:
            seq = self._turn_seq + 1
            with session.begin():
                row = ModelTurn(
                    run_id=self.run_id,
                    seq=seq,
                    model=clean_text(turn.model),
                    started_at=turn.started_at,
                    latency_ms=turn.latency_ms,
                    messages=messages,
                    response=response,
                    tool_calls=tool_calls,
                    finish_reason=turn.finish_reason,
                    prompt_tokens=turn.usage.get("prompt_tokens"),
                    completion_tokens=turn.usage.get("completion_tokens"),
                    total_tokens=turn.usage.get("total_tokens"),
                    error=error,
                    cost_usd=turn.cost_usd,
                )
                session.add(row)
                session.flush()
                row_id = row.id
            self._turn_seq = seq  # committed: only now is the number used up
            return row_id

    # --- egress ------------------------------------------------------------------------

    def record_egress(self, records: Sequence[EgressRecord]) -> int:
        """Insert the proxy's log rows of this run (see `EgressRecord` for what is checked;
        nothing is written when one is invalid) in one transaction; return how many."""
        for record in records:
            one_of("egress decision", record.decision, EGRESS_DECISIONS)
            aware("at", record.at)
            if record.status < 0 or record.bytes < 0:
                raise ValueError(f"egress status and bytes must be >= 0; got {record.status}, {record.bytes}")
        rows = [
            Egress(
                run_id=self.run_id,
                **{k: self._text(v) if isinstance(v, str) else v for k, v in asdict(record).items()},
            )
            for record in records
        ]

        def work(session: Session) -> int:
            session.add_all(rows)
            return len(rows)

        return self._write(work)
