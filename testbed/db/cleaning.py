"""Text and JSON made storable: what PostgreSQL text/JSONB and SQLite accept.

Contract: `clean_text` replaces NUL characters and unencodable lone surrogates by U+FFFD
(bytes smuggled in by the `surrogateescape` error handler become one U+FFFD each);
`clean_json` returns a JSON-safe deep copy (datetimes to ISO 8601 strings, paths to strings,
enums to their values, tuples and sets to lists, non-finite floats to null, strings and
keys cleaned) and raises `TypeError` for values with no JSON form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime
from enum import Enum
from pathlib import PurePath
from typing import Any


def clean_text(value: str) -> str:
    """`value` with NUL characters and unencodable lone surrogates replaced by U+FFFD."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes smuggled in by the `surrogateescape` error handler: one U+FFFD each
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = value.encode("utf-8", "surrogatepass")
        value = raw.decode("utf-8", "replace")
    return value


def clean_json(value: Any) -> Any:
    """A JSON-safe deep copy of `value` (see the module contract). Raises `TypeError` for
    values with no JSON form."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return clean_json(value.value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, PurePath):
        return clean_text(str(value))
    if isinstance(value, Mapping):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [clean_json(v) for v in value]
    raise TypeError(f"value of type {type(value).__name__} cannot be stored as JSON")
