"""The `egress` table of the Parquet export, self-contained (schema, query, conversion).

Contracts (those of `testbed.export.schema` and `testbed.export.dataset`):
- `egress_schema(version)` is the exact schema of `OUT/egress.parquet`: field-level
  `description` metadata, schema-level `testbed.table`, `testbed.schema_version` and
  `description`. Timestamps are `timestamp[us, tz=UTC]`; `redacted` is never null.
- `egress_statement(run_ids)` selects the rows of those runs (None: every run) in id order,
  in the column order of the schema (without `redacted`).
- `egress_batch(rows, schema, redactor)` converts selected rows into a record batch,
  redacting the URL (query strings may carry tokens) through anything with the
  `Redactor.text(value, kinds)` method; returns the batch and how many rows had something
  redacted.
- `write_egress(conn, path, ...)` writes the whole file in one go (zstd) and returns the
  row count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Connection, Select, select

from testbed.db.models import Egress

TABLE = "egress"
DESCRIPTION = "One row per request a guest made through the lab host's egress proxy (allowed, denied or DNS failure)."
TIMESTAMP = pa.timestamp("us", tz="UTC")
STRINGS = pa.list_(pa.field("element", pa.string(), nullable=False))

_FIELDS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("id", pa.int64(), False, "Egress row id (increases in recording order)."),
    ("run_id", pa.string(), False, "Run the request belongs to."),
    ("node", pa.string(), True, "Node whose management address made the request (null: none of the run's)."),
    ("at", TIMESTAMP, False, "When the proxy logged the request (UTC)."),
    ("method", pa.string(), False, "HTTP method (CONNECT for HTTPS tunnels)."),
    ("host", pa.string(), True, "Requested host name or address."),
    ("url", pa.string(), False, "Requested URL; host:port for CONNECT."),
    ("status", pa.int32(), False, "HTTP status the proxy answered (0: none)."),
    ("bytes", pa.int64(), False, "Bytes the proxy sent back."),
    ("decision", pa.string(), False, "allowed | denied | dns_failure."),
)
COLUMNS: tuple[str, ...] = tuple(name for name, *_ in _FIELDS)


class TextRedactor(Protocol):
    def text(self, value: str | None, kinds: set[str]) -> str | None: ...


def egress_schema(version: str) -> pa.Schema:
    """See the module contract."""
    fields = [pa.field(n, t, nullable=null, metadata={"description": d}) for n, t, null, d in _FIELDS]
    fields.append(
        pa.field(
            "redacted",
            STRINGS,
            nullable=False,
            metadata={"description": "Kinds of secrets redacted from this row's text (see the card); empty if none."},
        )
    )
    return pa.schema(
        fields, metadata={"testbed.table": TABLE, "testbed.schema_version": version, "description": DESCRIPTION}
    )


def egress_statement(run_ids: Sequence[str] | None = None) -> Select[Any]:
    """See the module contract."""
    stmt = select(*(getattr(Egress, name) for name in COLUMNS)).order_by(Egress.id)
    if run_ids is not None:
        stmt = stmt.where(Egress.run_id.in_(list(run_ids)))
    return stmt


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


def write_egress(
    conn: Connection,
    path: Path,
    *,
    version: str,
    run_ids: Sequence[str] | None = None,
    redactor: TextRedactor | None = None,
) -> int:
    """Write `path` with the selected runs' egress rows; return how many."""
    schema = egress_schema(version)
    rows = conn.execute(egress_statement(run_ids)).all()
    batch, _hits = egress_batch(rows, schema, redactor)
    pq.write_table(pa.Table.from_batches([batch], schema=schema), path, compression="zstd")
    return len(rows)
