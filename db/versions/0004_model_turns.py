"""LLM agents' model turns: one row per model call (messages, tool calls, tokens, latency).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "model_turns",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("messages", JSON, nullable=False),
        sa.Column("response", JSON, nullable=True),
        sa.Column("tool_calls", JSON, nullable=False),
        sa.Column("finish_reason", sa.String(length=50), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("total_tokens", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_model_turns_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_turns")),
        sa.UniqueConstraint("run_id", "seq", name=op.f("uq_model_turns_run_id_seq")),
    )


def downgrade() -> None:
    op.drop_table("model_turns")
