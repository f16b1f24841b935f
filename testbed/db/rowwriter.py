"""The plumbing every writer of a run's rows shares: one short transaction per call under
a lock, committed before returning; text cleaned (and redacted, given a redactor) before it
is written; enumerated values and datetimes checked before anything is written.

`testbed.db.recorder.RunRecorder` is the one writer built on it (its module docstring states
the recording contract); this module holds only the mechanics.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.cleaning import clean_json, clean_text
from testbed.db.models import Run

T = TypeVar("T")

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


def one_of(what: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


def aware(what: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(f"{what} must be timezone-aware; got naive {value.isoformat()}")
    return value


class RowWriter:
    """Writes rows of the run `run_id` through `_engine`, one locked transaction per call."""

    _engine: Engine
    _lock: threading.Lock
    run_id: str
    redactor: TextRedactor | None

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
