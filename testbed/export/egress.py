"""The `egress` table of the Parquet export: which rows, and their conversion (the schema
is `testbed.export.schema.SCHEMAS["egress"]`).

Contracts: `egress_statement(where)` selects the selected runs' rows in id order, in the
schema's column order (without `redacted`); `egress_batch(rows, schema, redactor)` converts
them into a record batch, redacting the URL (query strings may carry tokens), and returns
the batch and how many rows had something redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
from sqlalchemy import Select, select

from testbed.db.models import Egress

COLUMNS: tuple[str, ...] = ("id", "run_id", "node", "at", "method", "host", "url", "status", "bytes", "decision")


class TextRedactor(Protocol):
    def text(self, value: str | None, kinds: set[str]) -> str | None: ...


def egress_statement(where: Sequence[Any] = ()) -> Select[Any]:
    """See the module contract."""
    return select(*(getattr(Egress, name) for name in COLUMNS)).where(*where).order_by(Egress.id)


def egress_batch(rows: Sequence[Any], schema: pa.Schema, redactor: TextRedactor | None) -> tuple[pa.RecordBatch, int]:
    """See the module contract."""
    cols: dict[str, list[Any]] = {name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)}
    redacted: list[list[str]] = []
    hits = 0
    for i, url in enumerate(cols["url"]):
        kinds: set[str] = set()
        if redactor is not None:
            cols["url"][i] = redactor.text(url, kinds)
        redacted.append(sorted(kinds))
        hits += bool(kinds)
    cols["redacted"] = redacted
    arrays = [pa.array(cols[f.name], f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema), hits
