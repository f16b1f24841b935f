"""Export of the run database to a Parquet dataset with a dataset card.

Public API (see each module's contract):

- `dataset`: `export_dataset(db, out_dir, selection=..., redact=True, ...) -> ExportResult`
- `schema`: `SCHEMAS`, `TABLE_NAMES`, `SCHEMA_VERSION`
- `selection`: `RunFilter`, `parse_since`, `resolve_job`, `make_filter` (shared with reports)
- `cli`: `export_command` (registered as `testbed export`)
"""

from __future__ import annotations

from testbed.export.dataset import ExportProgress, ExportResult, TableExport, export_dataset
from testbed.export.schema import SCHEMA_VERSION, SCHEMAS, TABLE_NAMES
from testbed.export.selection import RunFilter, make_filter, parse_since, resolve_job

__all__ = [
    "SCHEMAS",
    "SCHEMA_VERSION",
    "TABLE_NAMES",
    "ExportProgress",
    "ExportResult",
    "RunFilter",
    "TableExport",
    "export_dataset",
    "make_filter",
    "parse_since",
    "resolve_job",
]
