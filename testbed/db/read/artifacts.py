"""Artifacts kept with a run (each node's serial console log).

Contracts: `artifact_infos` lists a run's artifacts without their content, by name;
`artifact_text(session, run_id, name)` returns one artifact's content, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.models import Artifact
from testbed.db.read.jsonable import JsonRecord


@dataclass(frozen=True)
class ArtifactInfo(JsonRecord):
    name: str
    kind: str
    node: str | None
    size: int
    truncated: bool
    created_at: datetime


def artifact_infos(session: Session, run_id: str) -> list[ArtifactInfo]:
    rows = session.execute(
        select(Artifact.name, Artifact.kind, Artifact.node, Artifact.size, Artifact.truncated, Artifact.created_at)
        .where(Artifact.run_id == run_id)
        .order_by(Artifact.name)
    )
    return [ArtifactInfo(*row) for row in rows]


def artifact_text(session: Session, run_id: str, name: str) -> str | None:
    return session.scalar(select(Artifact.content).where(Artifact.run_id == run_id, Artifact.name == name))
