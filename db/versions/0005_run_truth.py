"""Run truth: background processes a command left running, and artifacts kept with a run
(each node's serial console log).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("commands") as batch:
        batch.add_column(sa.Column("background", JSON, nullable=True))
    op.create_table(
        "artifacts",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("node", sa.String(length=100), nullable=True),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_artifacts_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artifacts")),
        sa.UniqueConstraint("run_id", "name", name=op.f("uq_artifacts_run_id_name")),
    )


def downgrade() -> None:
    op.drop_table("artifacts")
    with op.batch_alter_table("commands") as batch:
        batch.drop_column("background")
