"""Indexes for the dashboard: a partial index of the commands with a non-empty `impact`.

The dashboard's high-impact share counts the runs with at least one high-impact command;
with this index that costs O(high-impact commands) instead of a scan of every command.
Queries must use the same predicate text to match it (see
`testbed.db.read.commands._IMPACTFUL_SQL`).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_commands_impactful",
        "commands",
        ["run_id"],
        sqlite_where=sa.text("impact != '[]'"),
        postgresql_where=sa.text("impact <> '[]'::jsonb"),
    )


def downgrade() -> None:
    op.drop_index("ix_commands_impactful", table_name="commands")
