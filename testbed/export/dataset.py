"""Export of the run database to Parquet: one file per table plus a dataset card.

Layout written to `out_dir` (the directory is created; files of a previous export are
replaced, other files are left alone):

    runs.parquet  tasks.parquet  nodes.parquet  commands.parquet  snapshots.parquet
    checks.parquet  findings.parquet  model_turns.parquet  trajectories.parquet  README.md

Contracts:

- Every file has exactly the schema `testbed.export.schema.SCHEMAS[table]`, zstd
  compression, and rows ordered by id (`runs` by created_at then id, `tasks` by task_id).
  A file is written under a temporary name and renamed into place when complete.
- The selection (`RunFilter`) picks runs; child tables hold the rows of exactly those runs.
  All tables are read in ONE read transaction (REPEATABLE READ on PostgreSQL), so the files
  are a consistent snapshot even while runs are being recorded.
- Rows are streamed: read in partitions of `fetch_rows`, written as one row group per
  batch of at most `batch_rows` rows or about `batch_bytes` of text, whichever comes
  first. Memory stays bounded by the batch size, not by the table size.
- `redact=True` passes the free text of every row through `testbed.analysis.redact.redact`
  — commands: command, stdout, stderr, error; runs: error; checks: description and every
  string in detail; findings: summary and every string in evidence; snapshots: every
  string in data; model_turns: every string (keys too) in messages, response and
  tool_calls, and error — and `redacted` lists the kinds found, plus (commands) the kinds the
  recorder had already redacted at capture time (`commands.redacted` in the database).
  `redact=False` exports the text as stored; `redacted` then only carries the database's
  capture-time kinds (commands) or is empty.
- `trajectories` holds one chat-format conversation per run (`testbed.export.trajectories`);
  `passed_only` keeps only the passed runs in it (the other tables are unchanged).
- `tasks` aggregates the exported runs per task_id (`testbed.export.tasks`); a task's
  definition columns come from its task.toml through the task model's loader, and a
  task.toml that does not load never fails the export (it is named in `warnings`).
- The runs are named by `testbed.db.read.filters.RunFilter`; tables are read by
  `testbed.export.sources` and converted by `testbed.export.convert`.
- `progress` (optional) is told each table's row count before it is written and every
  batch written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.read.filters import RunFilter
from testbed.db.recorder import engine_of
from testbed.db.types import utcnow
from testbed.export.convert import record_batch
from testbed.export.redaction import Redactor
from testbed.export.schema import SCHEMAS, TABLE_NAMES
from testbed.export.sources import BATCH_ROWS, Source, TableSources
from testbed.export.tasks import task_rows
from testbed.export.trajectories import TaskFactsCache, TrajectorySource

BATCH_BYTES = 32 * 1024 * 1024
"""About this many bytes of text per written batch at most."""
FETCH_ROWS = 2_000
"""Rows fetched from the database at a time."""

Database = Engine | sessionmaker[Session]


class ExportProgress(Protocol):
    """Receives progress of an export (e.g. a Rich progress bar)."""

    def start(self, table: str, total: int) -> None:
        """`table` is about to be written; it will have `total` rows."""

    def advance(self, table: str, rows: int) -> None:
        """`rows` more rows of `table` were written."""


@dataclass(frozen=True)
class TableExport:
    """One written file."""

    table: str
    path: Path
    rows: int
    bytes: int
    rows_redacted: int


@dataclass(frozen=True)
class ExportResult:
    """What `export_dataset` wrote."""

    out_dir: Path
    tables: dict[str, TableExport]
    selection: RunFilter
    redact: bool
    database: str
    started_at: datetime
    finished_at: datetime
    card: Path
    warnings: list[str] = field(default_factory=list)
    passed_only: bool = False
    license: str = "unknown"

    @property
    def seconds(self) -> float:
        """Wall time of the export."""
        return (self.finished_at - self.started_at).total_seconds()


def _batches(conn: Connection, source: Source, fetch_rows: int, batch_bytes: int) -> Iterator[list[Any]]:
    """Rows of `source.stmt` in lists of at most `source.batch_rows` rows / ~`batch_bytes`."""
    result = conn.execution_options(yield_per=fetch_rows).execute(source.stmt)
    pending: list[Any] = []
    size = 0
    for part in result.partitions(fetch_rows):
        room = source.batch_rows - len(pending)
        if len(part) > room:  # never exceed batch_rows: split the partition
            pending.extend(part[:room])
            yield pending
            pending, size = [], 0
            part = part[room:]
        pending.extend(part)
        for index in source.text_columns:
            size += sum(map(len, filter(None, map(itemgetter(index), part))))
        if len(pending) >= source.batch_rows or size >= batch_bytes:
            yield pending
            pending, size = [], 0
    if pending:
        yield pending


def _write(path: Path, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=True) as writer:
            for batch in batches:
                writer.write_batch(batch)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Batching:
    """How rows are fetched and grouped into written batches."""

    batch_rows: int
    batch_bytes: int
    fetch_rows: int


def _write_tasks(
    conn: Connection, out_dir: Path, selection: RunFilter, tasks_dir: Path | None, progress: ExportProgress | None,
    warnings: list[str],
) -> TableExport:  # fmt: skip
    path = out_dir / "tasks.parquet"
    rows = task_rows(conn, selection, tasks_dir, warnings)
    if progress is not None:
        progress.start("tasks", len(rows))
    cols = {f.name: [r[f.name] for r in rows] for f in SCHEMAS["tasks"]}
    _write(path, SCHEMAS["tasks"], iter([record_batch("tasks", cols)]))
    if progress is not None:
        progress.advance("tasks", len(rows))
    return TableExport("tasks", path, len(rows), path.stat().st_size, 0)


def _write_table(
    conn: Connection, out_dir: Path, source: Source, batching: _Batching, progress: ExportProgress | None
) -> TableExport:
    source.batch_rows = min(source.batch_rows, batching.batch_rows)
    total = int(conn.execute(source.count).scalar_one())
    if progress is not None:
        progress.start(source.table, total)
    written = 0
    redacted_rows = 0

    def converted() -> Iterator[pa.RecordBatch]:
        nonlocal written, redacted_rows
        for chunk in _batches(conn, source, batching.fetch_rows, batching.batch_bytes):
            batch, hits = source.convert(chunk)
            written += len(chunk)
            redacted_rows += hits
            yield batch
            if progress is not None:
                progress.advance(source.table, len(chunk))

    path = out_dir / f"{source.table}.parquet"
    _write(path, SCHEMAS[source.table], converted())
    return TableExport(source.table, path, written, path.stat().st_size, redacted_rows)


def _write_trajectories(conn: Connection, out_dir: Path, source: TrajectorySource, progress: ExportProgress | None,
) -> TableExport:  # fmt: skip
    if progress is not None:
        progress.start("trajectories", source.count())
    counts = {"rows": 0, "redacted": 0}

    def converted() -> Iterator[pa.RecordBatch]:
        for batch, rows, hits in source.batches():
            counts["rows"] += rows
            counts["redacted"] += hits
            yield batch
            if progress is not None:
                progress.advance("trajectories", rows)

    path = out_dir / "trajectories.parquet"
    _write(path, SCHEMAS["trajectories"], converted())
    return TableExport("trajectories", path, counts["rows"], path.stat().st_size, counts["redacted"])


def export_dataset(
    db: Database,
    out_dir: Path,
    *,
    selection: RunFilter | None = None,
    redact: bool = True,
    tasks_dir: Path | None = None,
    progress: ExportProgress | None = None,
    passed_only: bool = False,
    license: str = "unknown",
    batch_rows: int = BATCH_ROWS,
    batch_bytes: int = BATCH_BYTES,
    fetch_rows: int = FETCH_ROWS,
) -> ExportResult:
    """Export the selected runs to `out_dir` (see the module contract) and write the card."""
    from testbed.export.card import write_card

    selection = selection or RunFilter()
    engine = engine_of(db)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = utcnow()
    batching = _Batching(batch_rows, batch_bytes, fetch_rows)
    tables: dict[str, TableExport] = {}
    warnings: list[str] = []
    conn_opts: dict[str, Any] = {}
    if engine.dialect.name == "postgresql":
        conn_opts["isolation_level"] = "REPEATABLE READ"
    with engine.connect().execution_options(**conn_opts) as conn, conn.begin():
        redactor = Redactor(enabled=redact)
        sources = TableSources(conn, selection, redactor)
        for table in TABLE_NAMES:
            if table == "tasks":
                tables[table] = _write_tasks(conn, out_dir, selection, tasks_dir, progress, warnings)
            elif table == "trajectories":
                facts = TaskFactsCache(tasks_dir, warnings)
                trajectories = TrajectorySource(conn, selection, redactor, facts, passed_only)
                tables[table] = _write_trajectories(conn, out_dir, trajectories, progress)
            else:
                tables[table] = _write_table(conn, out_dir, getattr(sources, table)(), batching, progress)
    result = ExportResult(
        out_dir=out_dir,
        tables=tables,
        selection=selection,
        redact=redact,
        database=engine.url.render_as_string(hide_password=True),
        started_at=started,
        finished_at=utcnow(),
        card=out_dir / "README.md",
        warnings=warnings,
        passed_only=passed_only,
        license=license,
    )
    write_card(result)
    return result
