"""Scheduler columns: run leases, retries and backoff; job cancellation.

`runs.lease_owner` / `runs.lease_expires_at`: the coordinator that claimed a pending run and
until when its claim holds (renewed by heartbeat; an expired lease means the coordinator is
gone). `runs.not_before`: a retry's backoff. `runs.retry` / `runs.retry_of`: which retry of
its matrix cell a run is, and the finished run it replaces. `jobs.cancelled_at`: set by
`testbed jobs cancel`. The index on (job_id, state) serves the claim query.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("jobs", sa.Column("cancelled_at", TS, nullable=True))
    op.add_column("runs", sa.Column("lease_owner", sa.String(length=200), nullable=True))
    op.add_column("runs", sa.Column("lease_expires_at", TS, nullable=True))
    op.add_column("runs", sa.Column("not_before", TS, nullable=True))
    op.add_column("runs", sa.Column("retry", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column("runs", sa.Column("retry_of", sa.String(length=32), nullable=True))
    op.create_index("ix_runs_job_id_state", "runs", ["job_id", "state"])


def downgrade() -> None:
    op.drop_index("ix_runs_job_id_state", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("retry_of")
        batch.drop_column("retry")
        batch.drop_column("not_before")
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("cancelled_at")
