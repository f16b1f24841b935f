"""Reading a run's egress rows back from the database."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.models import Egress


def egress_rows(session: Session, run_id: str) -> list[Egress]:
    """The run's egress rows in the order they were made (time, then id)."""
    stmt = select(Egress).where(Egress.run_id == run_id).order_by(Egress.at, Egress.id)
    return list(session.scalars(stmt))
