"""JSON-ready copies of read-model results.

Contract: `to_jsonable(value)` turns dataclasses (field by field, or through their own
`to_dict()` when they define one), dicts (keys as strings), lists, tuples, datetimes and
dates (ISO 8601; the database's datetimes are aware UTC, so they carry `+00:00`) into plain
JSON data; anything else is returned as it is. `JsonRecord.to_dict()` is `to_jsonable` of a record.
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime
from typing import Any


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy of `value` (see the module contract)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        custom = getattr(type(value), "to_dict", None)
        if callable(custom) and custom is not JsonRecord.to_dict:
            return custom(value)
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


class JsonRecord:
    """Mixin of the read model's dataclasses: `to_dict()` gives JSON-ready data."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of this record (datetimes as ISO 8601 strings)."""
        assert dataclasses.is_dataclass(self)
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """`end - start` in seconds (3 decimals), None when either is missing."""
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)
