"""Fixtures of the read-model tests: a migrated SQLite database and a small seeder that
writes runs through the real `RunRecorder` (no sample-data module)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import open_database
from testbed.db.models import Run
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@dataclass
class Seeder:
    """Writes runs into `sessions` the way the runner does."""

    sessions: sessionmaker[Session]

    def run(
        self,
        *,
        task: str = "web-fix",
        outcome: str | None = "passed",
        category: str | None = "web",
        job_id: str | None = None,
        run_id: str | None = None,
        commands: Sequence[str] = ("systemctl restart nginx",),
        start: datetime = T0,
        duration_s: float = 90.0,
        image: str = "debian-12",
        agent: str = "oracle",
    ) -> RunRecorder:
        """A run with one node `web`, its commands (agent, exit 0, 1 s apart) and `outcome`."""
        rec = RunRecorder.create(
            self.sessions, task_id=task, agent=agent, image=image, variant="debian12", task_category=category,
            job_id=job_id, run_id=run_id,
        )  # fmt: skip
        rec.add_node("web", image, f"tb-{rec.short_id}-web", "10.213.0.10")
        rec.phase_started("agent", at=start)
        for i, text in enumerate(commands):
            self.command(rec, text, at=start + timedelta(seconds=i))
        rec.phase_finished("agent", at=start + timedelta(seconds=duration_s))
        if outcome is not None:
            rec.finish(outcome)
        with self.sessions() as session, session.begin():
            finished = start + timedelta(seconds=duration_s) if outcome else None
            session.execute(
                update(Run).where(Run.id == rec.run_id).values(created_at=start, started_at=start, finished_at=finished)
            )
        return rec

    @staticmethod
    def command(rec: RunRecorder, text: str, *, at: datetime = T0, stdout: str = "", **fields: object) -> int:
        """Record one agent command on `web`."""
        return rec.record_command(
            CommandRecord(node="web", phase="agent", source="agent", command=text, started_at=at, duration_ms=20,
                          exit_code=0, stdout=stdout, **fields)  # type: ignore[arg-type]
        )  # fmt: skip


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A migrated, empty SQLite database."""
    url = f"sqlite:///{tmp_path / 'testbed.db'}"
    open_database(url)
    return url


@pytest.fixture
def sessions(db_url: str) -> sessionmaker[Session]:
    return open_database(db_url, upgrade=False)


@pytest.fixture
def seed(sessions: sessionmaker[Session]) -> Seeder:
    return Seeder(sessions)
