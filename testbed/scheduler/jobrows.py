"""A job and its pending run rows, written in one transaction before any run starts.

Every matrix cell x attempt (x seed) gets one `pending` row; the seed travels on the row as
`config.seed` and the runner records it again with the values drawn from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import writer_engine
from testbed.db.models import Job, Run, new_id
from testbed.db.recorder import clean_json, engine_of
from testbed.db.types import utcnow


@dataclass(frozen=True)
class NewRun:
    """A pending run to create with its job."""

    task_id: str
    image: str
    attempt: int
    category: str | None = None
    agent: str | None = None  # None: the job's agent
    seed: int | None = None


def seed_of(config: Any) -> int | None:
    """The scenario seed a run row carries in `config.seed` (None: none recorded)."""
    seed = config.get("seed") if isinstance(config, dict) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def scenario_config(seed: int | None) -> dict[str, Any] | None:
    """A pending run's `config`: its seed, which the runner records again with the drawn values."""
    return {"seed": seed} if seed is not None else None


def create_job_with_runs(
    db: sessionmaker[Session], name: str, config: Any, agent: str, runs: Sequence[NewRun]
) -> tuple[str, list[str]]:
    """Insert the job and one pending run per entry (each run's own agent, else `agent`) in
    ONE transaction; return the ids."""
    now = utcnow()
    job = Job(id=new_id(), name=name, created_at=now, config=clean_json(config))
    rows = [
        Run(
            id=new_id(),
            job_id=job.id,
            task_id=r.task_id,
            task_category=r.category,
            variant=r.image,
            image=r.image,
            agent=r.agent or agent,
            attempt=r.attempt,
            state="pending",
            created_at=now + timedelta(microseconds=i),
            retry=0,
            config=scenario_config(r.seed),
        )
        for i, r in enumerate(runs)
    ]
    job_id, run_ids = job.id, [r.id for r in rows]
    with Session(writer_engine(engine_of(db))) as session, session.begin():
        session.add(job)
        session.flush()
        session.add_all(rows)
    return job_id, run_ids
