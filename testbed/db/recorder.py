"""The single writer of one run's rows.

Contracts:

- One `RunRecorder` per run; the runner calls it through `asyncio.to_thread`. Every public
  method takes the recorder's lock, opens a short session, and COMMITS before returning, so
  a row is visible to every other connection once the call returns (docs/design.md: "A
  row is committed before the next command of that run starts" — the runner awaits
  `record_command` before starting the next command).
- `record_command` assigns `seq` 1, 2, 3, ... per run, in the order the calls take the
  lock, which is also commit order; concurrent calls from several asyncio tasks of the same
  run therefore get distinct, gap-free, monotonically increasing numbers. A recorder
  attached to an existing run continues after the highest stored `seq`.
- Enumerated values are validated against the tuples in `testbed.db.models` and rejected
  with `ValueError` before anything is written; naive datetimes are rejected too.
- Text is stored with NUL characters and unencodable lone surrogates replaced by U+FFFD
  (PostgreSQL text/JSONB cannot hold NUL); JSON values are made JSON-safe the same way
  (datetimes → ISO 8601 strings, paths → strings, tuples/sets → lists, non-finite floats
  → null).
- On SQLite the recorder writes through `writer_engine` (`BEGIN IMMEDIATE`), so several
  recorders (one per concurrent run) wait for each other instead of failing.
- Database failures propagate as SQLAlchemy exceptions; the runner treats them as harness
  errors.
- Redaction: a recorder given a `redactor` (`testbed.analysis.redact.Redactor`, handed in
  by the layer above, which owns redaction) passes every text it writes through it: the
  run's `error` and `config`, phase details, commands (command, stdout, stderr, error; the
  kinds found join `commands.redacted`), checks (description, detail), findings (summary,
  evidence) and model turns (messages, response, tool calls, error). It is the one place
  where stored text is redacted, and it runs in the caller's thread (the runner calls the
  recorder through `asyncio.to_thread`, so redaction never runs on the event loop).
  Snapshots are not redacted: they hold machine state that residue compares, and probes
  record no secret content (`testbed.probes.parsers`). Without a redactor, text is stored
  as given (`--no-redact`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.cleaning import clean_json, clean_text

__all__ = ["RunRecorder", "TextRedactor", "clean_json", "clean_text", "create_job", "create_run", "engine_of"]
from testbed.db.connect import writer_engine
from testbed.db.models import (
    CHECK_STATUSES,
    COMMAND_PHASES,
    COMMAND_SOURCES,
    EGRESS_DECISIONS,
    FINDING_KINDS,
    OUTCOMES,
    PHASE_STATUSES,
    RESIDUE_VALUES,
    RUN_STATES,
    SNAPSHOT_POINTS,
    Artifact,
    Check,
    Command,
    Egress,
    Finding,
    Job,
    ModelTurn,
    Node,
    Phase,
    Run,
    Snapshot,
    new_id,
    short_id,
)
from testbed.db.records import CommandRecord, EgressRecord, StoredCommand, TurnRecord
from testbed.db.types import utcnow

T = TypeVar("T")

NODE_FIELDS: frozenset[str] = frozenset({"image", "os_release", "domain_name", "mgmt_ip"})
"""Fields `update_node` may change."""

RUN_FIELDS: frozenset[str] = frozenset(
    {"host", "image", "variant", "task_category", "config", "error", "reward", "residue"}
)
"""Fields `update_run` may change."""

Database = Engine | sessionmaker[Session]


class TextRedactor(Protocol):
    """What the recorder needs of a redactor (`testbed.analysis.redact.Redactor`)."""

    def text(self, value: str, kinds: set[str]) -> str: ...

    def json(self, value: Any, kinds: set[str]) -> Any: ...


def engine_of(db: Database) -> Engine:
    """The engine of `db` (an Engine, or a sessionmaker bound to one)."""
    if isinstance(db, Engine):
        return db
    bind = db.kw.get("bind")
    if not isinstance(bind, Engine):
        raise TypeError("the sessionmaker passed to RunRecorder must be bound to an Engine")
    return bind


def _one_of(what: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


def _aware(what: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(f"{what} must be timezone-aware; got naive {value.isoformat()}")
    return value


_RECORD_FIELDS = tuple(f.name for f in fields(CommandRecord))


def stored_record(values: Mapping[str, Any]) -> CommandRecord:
    """The `CommandRecord` of a row's column values (as `store_command` writes them)."""
    return CommandRecord(**{k: values[k] for k in _RECORD_FIELDS if k in values})


def create_job(db: Database, name: str, config: Any = None, *, job_id: str | None = None) -> str:
    """Insert a `jobs` row, commit, and return its id (a new uuid4 hex unless given)."""
    new = job_id or new_id()
    job = Job(id=new, name=name, created_at=utcnow(), config=clean_json(config))
    with Session(writer_engine(engine_of(db))) as session, session.begin():
        session.add(job)
    return new


class RunRecorder:
    """Writes one run's rows; see the module docstring for the contract."""

    def __init__(self, db: Database, run_id: str, *, redactor: TextRedactor | None = None) -> None:
        """Attach to the existing run `run_id` (`LookupError` if it does not exist)."""
        self._engine = writer_engine(engine_of(db))
        self._lock = threading.Lock()
        self.run_id = run_id
        self.redactor = redactor
        """Redacts every text written (see the module contract); None stores text as given."""
        with Session(self._engine) as session:
            if session.get(Run, run_id) is None:
                raise LookupError(f"no run {run_id!r} in the database")
            top = session.scalar(select(func.max(Command.seq)).where(Command.run_id == run_id))
            turns = session.scalar(select(func.max(ModelTurn.seq)).where(ModelTurn.run_id == run_id))
        self._seq = top or 0
        self._turn_seq = turns or 0

    @classmethod
    def create(
        cls,
        db: Database,
        *,
        task_id: str,
        agent: str,
        variant: str | None = None,
        image: str | None = None,
        attempt: int = 1,
        job_id: str | None = None,
        host: str | None = None,
        task_category: str | None = None,
        config: Any = None,
        run_id: str | None = None,
        redactor: TextRedactor | None = None,
    ) -> RunRecorder:
        """Insert a new run (state `pending`), commit, and return its recorder."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1; got {attempt}")
        new = run_id or new_id()
        run = Run(
            id=new,
            job_id=job_id,
            task_id=task_id,
            task_category=task_category,
            variant=variant,
            image=image,
            agent=agent,
            attempt=attempt,
            state="pending",
            host=host,
            created_at=utcnow(),
            config=clean_json(redactor.json(config, set()) if redactor is not None else config),
        )
        with Session(writer_engine(engine_of(db))) as session, session.begin():
            session.add(run)
        return cls(db, new, redactor=redactor)

    @property
    def short_id(self) -> str:
        """The run's 8-character short id."""
        return short_id(self.run_id)

    # --- plumbing ----------------------------------------------------------------------

    def _text(self, value: str | None, kinds: set[str] | None = None) -> str | None:
        """`value` cleaned and, with a redactor, redacted (kinds found added to `kinds`)."""
        if value is None:
            return None
        if self.redactor is not None:
            value = self.redactor.text(value, set() if kinds is None else kinds)
        return clean_text(value)

    def _json(self, value: Any, kinds: set[str] | None = None) -> Any:
        """`value` made JSON-safe and, with a redactor, redacted."""
        value = clean_json(value)
        if self.redactor is not None:
            value = self.redactor.json(value, set() if kinds is None else kinds)
        return value

    def _write(self, work: Callable[[Session], T]) -> T:
        """Run `work` in one transaction under the lock; commit before returning."""
        with self._lock, Session(self._engine, expire_on_commit=False) as session:
            with session.begin():
                result = work(session)
            return result

    def _run(self, session: Session) -> Run:
        run = session.get(Run, self.run_id)
        if run is None:
            raise LookupError(f"run {self.run_id!r} vanished from the database")
        return run

    # --- run ---------------------------------------------------------------------------

    def set_state(self, state: str) -> None:
        """Move the run to `state` (any of `RUN_STATES` but `finished`: use `finish`).
        The first state after `pending` stamps `started_at`."""
        _one_of("state", state, RUN_STATES)
        if state == "finished":
            raise ValueError("use finish(outcome) to finish a run")

        def work(session: Session) -> None:
            run = self._run(session)
            run.state = state
            if state != "pending" and run.started_at is None:
                run.started_at = utcnow()

        self._write(work)

    def update_run(self, **fields: Any) -> None:
        """Change run columns among `RUN_FIELDS` (e.g. `host` once the scheduler placed it)."""
        unknown = set(fields) - RUN_FIELDS
        if unknown:
            raise ValueError(f"update_run cannot change {', '.join(sorted(unknown))}")
        if "residue" in fields and fields["residue"] is not None:
            _one_of("residue", fields["residue"], RESIDUE_VALUES)
        if "config" in fields:
            fields["config"] = self._json(fields["config"])
        if fields.get("error") is not None:
            fields["error"] = self._text(fields["error"])

        def work(session: Session) -> None:
            run = self._run(session)
            for key, value in fields.items():
                setattr(run, key, value)

        self._write(work)

    def merge_config(self, section: str, values: Mapping[str, Any]) -> None:
        """Merge `values` (redacted like all stored text) into `config[section]` of the run
        row, in one transaction."""
        cleaned = self._json(dict(values))

        def work(session: Session) -> None:
            run = self._run(session)
            config = dict(run.config or {})
            merged = dict(config.get(section) or {})
            merged.update(cleaned)
            config[section] = merged
            run.config = config

        self._write(work)

    def set_residue(self, residue: str) -> None:
        """Record whether the agent left residue: `yes`, `no` or `undetermined`."""
        self.update_run(residue=residue)

    def finish(self, outcome: str, error: str | None = None, reward: float | None = None) -> None:
        """Set `outcome` (∈ `OUTCOMES`), `error`, `reward`, `finished_at` and state
        `finished`. Phases still open are closed with status `cancelled` when the outcome
        is `cancelled`, else `error`."""
        _one_of("outcome", outcome, OUTCOMES)
        if reward is not None and not math.isfinite(reward):
            raise ValueError(f"reward must be finite; got {reward}")
        now = utcnow()
        error = self._text(error)

        def work(session: Session) -> None:
            run = self._run(session)
            run.state = "finished"
            run.outcome = outcome
            run.error = error
            run.reward = reward
            run.finished_at = now
            if run.started_at is None:
                run.started_at = now
            open_phases = session.scalars(select(Phase).where(Phase.run_id == self.run_id, Phase.finished_at.is_(None)))
            for phase in open_phases:
                phase.finished_at = now
                phase.status = "cancelled" if outcome == "cancelled" else "error"

        self._write(work)

    # --- phases ------------------------------------------------------------------------

    def phase_started(self, name: str, at: datetime | None = None) -> int:
        """Open a phase named `name` (status `running`); return its id."""
        started = _aware("at", at) if at is not None else utcnow()

        def work(session: Session) -> int:
            phase = Phase(run_id=self.run_id, name=name, started_at=started, status="running")
            session.add(phase)
            session.flush()
            return phase.id

        return self._write(work)

    def phase_finished(
        self,
        name: str,
        status: str = "ok",
        detail: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Close the most recently opened, still open phase named `name` with `status`
        (∈ `PHASE_STATUSES` but `running`). `ValueError` if no such phase is open."""
        if status == "running":
            raise ValueError("a finished phase cannot have status 'running'")
        _one_of("phase status", status, PHASE_STATUSES)
        finished = _aware("at", at) if at is not None else utcnow()
        detail = self._text(detail)

        def work(session: Session) -> None:
            phase = session.scalars(
                select(Phase)
                .where(
                    Phase.run_id == self.run_id,
                    Phase.name == name,
                    Phase.finished_at.is_(None),
                )
                .order_by(Phase.id.desc())
                .limit(1)
            ).first()
            if phase is None:
                raise ValueError(f"no open phase {name!r} in run {self.short_id}")
            phase.finished_at = finished
            phase.status = status
            phase.detail = detail

        self._write(work)

    # --- nodes -------------------------------------------------------------------------

    def add_node(
        self,
        name: str,
        image: str | None = None,
        domain_name: str | None = None,
        mgmt_ip: str | None = None,
        os_release: str | None = None,
    ) -> int:
        """Insert a node of this run (names are unique per run); return its id."""

        def work(session: Session) -> int:
            node = Node(
                run_id=self.run_id,
                name=name,
                image=image,
                domain_name=domain_name,
                mgmt_ip=mgmt_ip,
                os_release=os_release,
            )
            session.add(node)
            session.flush()
            return node.id

        return self._write(work)

    def update_node(self, name: str, /, **fields: str | None) -> None:
        """Change fields among `NODE_FIELDS` of node `name` (`ValueError` if unknown)."""
        unknown = set(fields) - NODE_FIELDS
        if unknown:
            raise ValueError(f"update_node cannot change {', '.join(sorted(unknown))}")

        def work(session: Session) -> None:
            node = session.scalars(select(Node).where(Node.run_id == self.run_id, Node.name == name)).first()
            if node is None:
                raise ValueError(f"no node {name!r} in run {self.short_id}")
            for key, value in fields.items():
                setattr(node, key, value)

        self._write(work)

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
        _one_of("command phase", record.phase, COMMAND_PHASES)
        _one_of("command source", record.source, COMMAND_SOURCES)
        _aware("started_at", record.started_at)
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
        _one_of("snapshot point", point, SNAPSHOT_POINTS)
        taken = _aware("taken_at", taken_at) if taken_at is not None else utcnow()
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
        _one_of("check status", status, CHECK_STATUSES)
        if point is not None:
            _one_of("check point", point, SNAPSHOT_POINTS)
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
        _one_of("finding kind", kind, FINDING_KINDS)
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
        _aware("started_at", turn.started_at)
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
            _one_of("egress decision", record.decision, EGRESS_DECISIONS)
            _aware("at", record.at)
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


def create_run(db: Database, **fields: Any) -> str:
    """Insert a new run (see `RunRecorder.create` for the fields) and return its id."""
    return RunRecorder.create(db, **fields).run_id
