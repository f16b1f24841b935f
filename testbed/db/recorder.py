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
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.cleaning import clean_json, clean_text
from testbed.db.connect import writer_engine
from testbed.db.evidencewrites import EvidenceWrites
from testbed.db.models import (
    OUTCOMES,
    PHASE_STATUSES,
    RESIDUE_VALUES,
    RUN_STATES,
    Command,
    Job,
    ModelTurn,
    Node,
    Phase,
    Run,
    new_id,
    short_id,
)
from testbed.db.rowwriter import Database, TextRedactor, aware, engine_of, one_of
from testbed.db.types import utcnow

__all__ = [
    "Database",
    "RunRecorder",
    "TextRedactor",
    "clean_json",
    "clean_text",
    "create_job",
    "create_run",
    "engine_of",
]

NODE_FIELDS: frozenset[str] = frozenset({"image", "os_release", "domain_name", "mgmt_ip"})
"""Fields `update_node` may change."""

RUN_FIELDS: frozenset[str] = frozenset(
    {"host", "image", "variant", "task_category", "config", "error", "reward", "residue"}
)
"""Fields `update_run` may change."""


def create_job(db: Database, name: str, config: Any = None, *, job_id: str | None = None) -> str:
    """Insert a `jobs` row, commit, and return its id (a new uuid4 hex unless given)."""
    new = job_id or new_id()
    job = Job(id=new, name=name, created_at=utcnow(), config=clean_json(config))
    with Session(writer_engine(engine_of(db))) as session, session.begin():
        session.add(job)
    return new


class RunRecorder(EvidenceWrites):
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

    # --- run ---------------------------------------------------------------------------

    def set_state(self, state: str) -> None:
        """Move the run to `state` (any of `RUN_STATES` but `finished`: use `finish`).
        The first state after `pending` stamps `started_at`."""
        one_of("state", state, RUN_STATES)
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
            one_of("residue", fields["residue"], RESIDUE_VALUES)
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
        one_of("outcome", outcome, OUTCOMES)
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
        started = aware("at", at) if at is not None else utcnow()

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
        one_of("phase status", status, PHASE_STATUSES)
        finished = aware("at", at) if at is not None else utcnow()
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


def create_run(db: Database, **fields: Any) -> str:
    """Insert a new run (see `RunRecorder.create` for the fields) and return its id."""
    return RunRecorder.create(db, **fields).run_id
