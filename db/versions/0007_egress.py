"""Guest egress: one row per request a guest made through the lab host's proxy.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
DECISIONS = ("allowed", "denied", "dns_failure")


def upgrade() -> None:
    listed = ", ".join(f"'{d}'" for d in DECISIONS)
    op.create_table(
        "egress",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("node", sa.String(length=100), nullable=True),
        sa.Column("at", TS, nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("decision", sa.String(length=20), nullable=False),
        sa.CheckConstraint(f"decision IN ({listed})", name=op.f("ck_egress_decision")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_egress_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_egress")),
    )
    op.create_index(op.f("ix_egress_run_id"), "egress", ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_egress_run_id"), table_name="egress")
    op.drop_table("egress")
