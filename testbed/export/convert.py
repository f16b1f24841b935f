"""Value conversion of the export: database values into Arrow arrays of `SCHEMAS`.

Contracts:

- JSON columns are read as text (`Columns.json`) and written compact (`json_text`,
  `ensure_ascii=False`); a NOT NULL JSON column keeps a stored JSON null as `null`.
- `string_list` / `sorted_string_list` parse a JSON list of strings (NULL or JSON null →
  `[]`); they are memoised, so callers must not mutate the result.
- `Columns(dialect)` reads timestamps and booleans the fastest way the backend allows (see
  its docstring); `record_batch(table, columns)` builds a batch with exactly the schema
  `SCHEMAS[table]`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from sqlalchemy import Integer, String, Text, cast, type_coerce
from sqlalchemy.sql.elements import ColumnElement

from testbed.export.schema import SCHEMAS, TIMESTAMP


def json_text(value: Any) -> str | None:
    """Compact JSON text of `value`; None stays None (SQL NULL)."""
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_text_not_null(value: Any) -> str:
    """`json_text` for a NOT NULL JSON column: a stored JSON null is the text `null`."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=4096)
def string_list(raw: str | None) -> list[str]:
    """A JSON list of strings (NULL / JSON null → []). Memoised: these lists repeat a lot;
    callers must not mutate the result."""
    if raw is None or raw == "[]":
        return []
    value = json.loads(raw)
    return [str(v) for v in value] if isinstance(value, list) else []


@functools.lru_cache(maxsize=1024)
def sorted_string_list(raw: str | None) -> list[str]:
    """`string_list`, sorted."""
    return sorted(string_list(raw))


def parse_json(raw: str | None) -> Any:
    """The value of JSON text `raw` (None stays None)."""
    if raw is None:
        return None
    return json.loads(raw)


class Columns:
    """Per-dialect column expressions and array builders.

    On SQLite, timestamps are read as their stored text (naive UTC) and parsed by Arrow in
    bulk, which is several times faster than per-value Python parsing; elsewhere the driver
    returns aware datetimes. JSON columns are read as text on every backend.
    """

    def __init__(self, dialect: str) -> None:
        self.raw_timestamps = dialect == "sqlite"

    def ts(self, column: Any) -> ColumnElement[Any]:
        if self.raw_timestamps:
            return type_coerce(column, String()).label(column.key)
        return column

    def ts_array(self, values: Sequence[Any]) -> pa.Array:
        if self.raw_timestamps:
            return pa.array(values, pa.string()).cast(pa.timestamp("us")).cast(TIMESTAMP)
        return pa.array(values, TIMESTAMP)

    def flag(self, column: Any) -> ColumnElement[Any]:
        if self.raw_timestamps:  # SQLite stores booleans as 0/1: skip the per-value processor
            return type_coerce(column, Integer()).label(column.key)
        return column

    def flag_array(self, values: Sequence[Any]) -> pa.Array:
        if self.raw_timestamps:
            return pa.array(values, pa.int8()).cast(pa.bool_())
        return pa.array(values, pa.bool_())

    @staticmethod
    def json(column: Any) -> ColumnElement[Any]:
        return cast(column, Text()).label(column.key)


def record_batch(table: str, columns: dict[str, Any]) -> pa.RecordBatch:
    """A batch of `table` from its columns (lists or Arrow arrays), schema `SCHEMAS[table]`."""
    schema = SCHEMAS[table]
    arrays = []
    for f in schema:
        values = columns[f.name]
        arrays.append(values if isinstance(values, pa.Array) else pa.array(values, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def kinds_list(kinds: set[str]) -> list[str]:
    """The redaction kinds found, sorted."""
    return sorted(kinds)
