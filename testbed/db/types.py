"""Column types shared by the models and the migrations.

Contracts:

- `JSONType` is JSONB on PostgreSQL and JSON (text) on every other backend.
- `UTCDateTime` stores timezone-aware datetimes as UTC. Binding a naive datetime raises
  `ValueError` (the harness never produces naive timestamps; guessing a zone would silently
  corrupt data). Values read back are always aware and in UTC, on SQLite too (which stores
  them as naive UTC text).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

JSONType: TypeEngine[Any] = JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """`DateTime(timezone=True)` that only accepts aware datetimes and returns aware UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise ValueError(f"naive datetime {value.isoformat()} rejected: pass an aware one")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            # SQLite has no time zones: store naive UTC so text ordering is time ordering.
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
