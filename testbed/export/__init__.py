"""Export of the run database to a Parquet dataset with a dataset card.

Public API (see each module's contract):

- `dataset`: `export_dataset(db, out_dir, selection=..., redact=True, ...) -> ExportResult`
- `schema`: `SCHEMAS`, `TABLE_NAMES`, `SCHEMA_VERSION`
- which runs: `testbed.db.read.filters` (`RunFilter`, `make_filter`), shared with the report
- `cli`: `export_command` (registered as `testbed export`)
"""

from __future__ import annotations

from testbed.export.dataset import ExportProgress, ExportResult, TableExport, export_dataset
from testbed.export.schema import SCHEMA_VERSION, SCHEMAS, TABLE_NAMES

__all__ = [
    "SCHEMAS",
    "SCHEMA_VERSION",
    "TABLE_NAMES",
    "ExportProgress",
    "ExportResult",
    "TableExport",
    "export_dataset",
]
