"""Export of the run database to Parquet: one file per table plus a dataset card.

Layout written to `out_dir` (the directory is created; files of a previous export are
replaced, other files are left alone):

    runs.parquet  tasks.parquet  nodes.parquet  commands.parquet
    snapshots.parquet  checks.parquet  findings.parquet  model_turns.parquet  README.md

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
- `tasks` aggregates the exported runs per task_id; when `tasks_dir/<task_id>/task.toml`
  exists and parses, its category, difficulty, tags, description, image variants and
  requirement ids fill the definition columns (`source` = "task.toml"); otherwise they
  come from the runs or stay null (`source` = "runs"). A broken task.toml never fails the
  export.
- `progress` (optional) is told each table's row count before it is written and every
  batch written.
"""

from __future__ import annotations

import functools
import json
import os
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlalchemy import Connection, Engine, Integer, String, Text, case, cast, func, select, type_coerce
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql import Executable
from sqlalchemy.sql.elements import ColumnElement

from testbed.db.models import Check, Command, Finding, Job, ModelTurn, Node, Run, Snapshot
from testbed.db.recorder import engine_of
from testbed.db.types import utcnow
from testbed.export.redaction import Redactor
from testbed.export.schema import SCHEMAS, TABLE_NAMES, TIMESTAMP
from testbed.export.selection import RunFilter

BATCH_ROWS = 20_000
"""Most rows per written batch (one Parquet row group)."""
BATCH_BYTES = 32 * 1024 * 1024
"""About this many bytes of text per written batch at most."""
FETCH_ROWS = 2_000
"""Rows fetched from the database at a time."""
SNAPSHOT_BATCH_ROWS = 500
"""Snapshots carry large JSON documents: smaller batches."""
MODEL_TURN_BATCH_ROWS = 1_000
"""Model turns carry whole chat messages (tool output included): smaller batches."""

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

    @property
    def seconds(self) -> float:
        """Wall time of the export."""
        return (self.finished_at - self.started_at).total_seconds()


# --- value conversion ----------------------------------------------------------------------


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_text_not_null(value: Any) -> str:
    """`_json_text` for a NOT NULL JSON column: a stored JSON null is the text `null`."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=4096)
def _string_list(raw: str | None) -> list[str]:
    """A JSON list of strings (NULL / JSON null → []). Memoised: these lists repeat a lot;
    callers must not mutate the result."""
    if raw is None or raw == "[]":
        return []
    value = json.loads(raw)
    return [str(v) for v in value] if isinstance(value, list) else []


@functools.lru_cache(maxsize=1024)
def _sorted_string_list(raw: str | None) -> list[str]:
    """`_string_list`, sorted."""
    return sorted(_string_list(raw))


def _parse_json(raw: str | None) -> Any:
    if raw is None:
        return None
    return json.loads(raw)


class _Columns:
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


def _record_batch(table: str, columns: dict[str, Any]) -> pa.RecordBatch:
    schema = SCHEMAS[table]
    arrays = []
    for f in schema:
        values = columns[f.name]
        arrays.append(values if isinstance(values, pa.Array) else pa.array(values, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass
class _Source:
    """How one table is read and converted."""

    table: str
    stmt: Executable
    count: Executable
    convert: Callable[[list[Any]], tuple[pa.RecordBatch, int]]
    text_columns: tuple[int, ...] = ()
    """Indexes of the large text columns, summed to bound a batch's size."""
    batch_rows: int = BATCH_ROWS


def _kinds_list(kinds: set[str]) -> list[str]:
    return sorted(kinds)


class _Exporter:
    def __init__(self, conn: Connection, selection: RunFilter, redactor: Redactor, tasks_dir: Path | None) -> None:
        self.conn = conn
        self.selection = selection
        self.redactor = redactor
        self.tasks_dir = tasks_dir
        self.cols = _Columns(conn.dialect.name)
        self.warnings: list[str] = []

    # --- selection helpers

    def _child_where(self, run_id_column: Any) -> list[ColumnElement[bool]]:
        if self.selection.selects_all:
            return []
        return [run_id_column.in_(self.selection.run_ids())]

    def _count(self, model: Any) -> Executable:
        return select(func.count()).select_from(model).where(*self._child_where(model.run_id))

    # --- runs

    def runs(self) -> _Source:
        c = self.cols
        stmt = (
            select(
                Run.id,
                Run.job_id,
                Job.name.label("job_name"),
                Run.task_id,
                Run.task_category,
                Run.variant,
                Run.image,
                Run.agent,
                Run.attempt,
                Run.retry,
                Run.retry_of,
                Run.state,
                Run.outcome,
                Run.reward,
                Run.residue,
                Run.host,
                c.ts(Run.created_at),
                c.ts(Run.not_before),
                c.ts(Run.started_at),
                c.ts(Run.finished_at),
                Run.error,
                c.json(Run.config),
            )
            .outerjoin(Job, Job.id == Run.job_id)
            .where(*self.selection.runs_where())
            .order_by(Run.created_at, Run.id)
        )
        names = [
            "id", "job_id", "job_name", "task_id", "task_category", "variant", "image", "agent", "attempt",
            "retry", "retry_of", "state", "outcome", "reward", "residue", "host", "created_at", "not_before",
            "started_at", "finished_at", "error", "config",
        ]  # fmt: skip

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols: dict[str, Any] = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
            for key in ("created_at", "not_before", "started_at", "finished_at"):
                cols[key] = c.ts_array(cols[key])
            cols["duration_s"] = pc.divide(
                pc.cast(pc.subtract(cols["finished_at"], cols["started_at"]), pa.int64()), 1e6
            )
            redacted: list[list[str]] = []
            hits = 0
            for i in range(len(rows)):
                kinds: set[str] = set()
                cols["error"][i] = self.redactor.text(cols["error"][i], kinds)
                cols["config"][i] = _json_text(self.redactor.json(_parse_json(cols["config"][i]), kinds))
                redacted.append(_kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return _record_batch("runs", cols), hits

        count = select(func.count()).select_from(Run).where(*self.selection.runs_where())
        return _Source("runs", stmt, count, convert)

    # --- nodes

    def nodes(self) -> _Source:
        stmt = (
            select(Node.id, Node.run_id, Node.name, Node.image, Node.os_release, Node.domain_name, Node.mgmt_ip)
            .where(*self._child_where(Node.run_id))
            .order_by(Node.id)
        )
        names = ["id", "run_id", "name", "image", "os_release", "domain_name", "mgmt_ip"]

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols = dict(zip(names, zip(*rows, strict=True), strict=True))
            return _record_batch("nodes", cols), 0

        return _Source("nodes", stmt, self._count(Node), convert)

    # --- commands

    def commands(self) -> _Source:
        c = self.cols
        stmt = (
            select(
                Command.id,
                Command.run_id,
                Command.seq,
                Command.node,
                Command.phase,
                Command.source,
                Command.command,
                Command.exit_code,
                Command.stdout,
                Command.stderr,
                c.flag(Command.stdout_truncated),
                c.flag(Command.stderr_truncated),
                c.flag(Command.timed_out),
                c.ts(Command.started_at),
                Command.duration_ms,
                c.json(Command.impact),
                Command.error,
                c.json(Command.redacted),
            )
            .where(*self._child_where(Command.run_id))
            .order_by(Command.id)
        )
        names = [
            "id", "run_id", "seq", "node", "phase", "source", "command", "exit_code", "stdout", "stderr",
            "stdout_truncated", "stderr_truncated", "timed_out", "started_at", "duration_ms", "impact",
            "error", "stored_redacted",
        ]  # fmt: skip
        redactor = self.redactor

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols: dict[str, Any] = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
            cols["started_at"] = c.ts_array(cols["started_at"])
            for key in ("stdout_truncated", "stderr_truncated", "timed_out"):
                cols[key] = c.flag_array(cols[key])
            cols["impact"] = list(map(_string_list, cols["impact"]))
            stored_kinds = list(map(_sorted_string_list, cols.pop("stored_redacted")))
            if not redactor.enabled:
                cols["redacted"] = stored_kinds
                return _record_batch("commands", cols), 0
            commands, stdouts, stderrs, errors = cols["command"], cols["stdout"], cols["stderr"], cols["error"]
            redacted: list[list[str]] = []
            hits = 0
            for i, stored in enumerate(stored_kinds):
                found: set[str] = set()
                commands[i] = redactor.text(commands[i], found)
                stdouts[i] = redactor.text(stdouts[i], found)
                stderrs[i] = redactor.text(stderrs[i], found)
                errors[i] = redactor.text(errors[i], found)
                if found:
                    hits += 1
                    redacted.append(sorted(found.union(stored)))
                else:
                    redacted.append(stored)
            cols["redacted"] = redacted
            return _record_batch("commands", cols), hits

        return _Source("commands", stmt, self._count(Command), convert, (6, 8, 9))

    # --- snapshots

    def snapshots(self) -> _Source:
        c = self.cols
        stmt = (
            select(Snapshot.id, Snapshot.run_id, Snapshot.node, Snapshot.point, c.ts(Snapshot.taken_at),
                   c.json(Snapshot.data))
            .where(*self._child_where(Snapshot.run_id))
            .order_by(Snapshot.id)
        )  # fmt: skip
        names = ["id", "run_id", "node", "point", "taken_at", "data"]

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols: dict[str, Any] = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
            cols["taken_at"] = c.ts_array(cols["taken_at"])
            redacted: list[list[str]] = []
            hits = 0
            for i, raw in enumerate(cols["data"]):
                kinds: set[str] = set()
                if self.redactor.enabled:
                    cols["data"][i] = _json_text(self.redactor.json(_parse_json(raw), kinds))
                else:
                    cols["data"][i] = _json_text(_parse_json(raw))
                redacted.append(_kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return _record_batch("snapshots", cols), hits

        return _Source("snapshots", stmt, self._count(Snapshot), convert, (5,), SNAPSHOT_BATCH_ROWS)

    # --- checks

    def checks(self) -> _Source:
        stmt = (
            select(Check.id, Check.run_id, Check.requirement, Check.description, Check.point, Check.node,
                   Check.status, self.cols.json(Check.detail))
            .where(*self._child_where(Check.run_id))
            .order_by(Check.id)
        )  # fmt: skip
        names = ["id", "run_id", "requirement", "description", "point", "node", "status", "detail"]

        return _Source(
            "checks", stmt, self._count(Check),
            self._text_and_json_converter("checks", names, "description", "detail"),
        )  # fmt: skip

    # --- findings

    def findings(self) -> _Source:
        stmt = (
            select(Finding.id, Finding.run_id, Finding.node, Finding.kind, Finding.category, Finding.summary,
                   self.cols.json(Finding.evidence), Finding.command_id, Command.seq.label("command_seq"))
            .outerjoin(Command, Command.id == Finding.command_id)
            .where(*self._child_where(Finding.run_id))
            .order_by(Finding.id)
        )  # fmt: skip
        names = ["id", "run_id", "node", "kind", "category", "summary", "evidence", "command_id", "command_seq"]

        return _Source(
            "findings", stmt, self._count(Finding),
            self._text_and_json_converter("findings", names, "summary", "evidence"),
        )  # fmt: skip

    # --- model turns

    def model_turns(self) -> _Source:
        c = self.cols
        stmt = (
            select(ModelTurn.id, ModelTurn.run_id, ModelTurn.seq, ModelTurn.model, c.ts(ModelTurn.started_at),
                   ModelTurn.latency_ms, c.json(ModelTurn.messages), c.json(ModelTurn.response),
                   c.json(ModelTurn.tool_calls), ModelTurn.finish_reason, ModelTurn.prompt_tokens,
                   ModelTurn.completion_tokens, ModelTurn.total_tokens, ModelTurn.error)
            .where(*self._child_where(ModelTurn.run_id))
            .order_by(ModelTurn.id)
        )  # fmt: skip
        names = [
            "id", "run_id", "seq", "model", "started_at", "latency_ms", "messages", "response", "tool_calls",
            "finish_reason", "prompt_tokens", "completion_tokens", "total_tokens", "error",
        ]  # fmt: skip
        redactor = self.redactor

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols: dict[str, Any] = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
            cols["started_at"] = c.ts_array(cols["started_at"])
            messages, responses, calls, errors = (cols[k] for k in ("messages", "response", "tool_calls", "error"))
            redacted: list[list[str]] = []
            hits = 0
            for i in range(len(rows)):
                kinds: set[str] = set()
                messages[i] = _json_text_not_null(redactor.json(_parse_json(messages[i]), kinds))
                responses[i] = _json_text(redactor.json(_parse_json(responses[i]), kinds))
                calls[i] = _json_text_not_null(redactor.json(_parse_json(calls[i]), kinds))
                errors[i] = redactor.text(errors[i], kinds)
                redacted.append(_kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return _record_batch("model_turns", cols), hits

        return _Source("model_turns", stmt, self._count(ModelTurn), convert, (6, 7, 8), MODEL_TURN_BATCH_ROWS)

    def _text_and_json_converter(
        self, table: str, names: list[str], text_col: str, json_col: str
    ) -> Callable[[list[Any]], tuple[pa.RecordBatch, int]]:
        """Rows -> a record batch of `table`, redacting one text and one JSON column and
        listing the kinds found per row (the shared shape of checks and findings)."""

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols: dict[str, Any] = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
            redacted: list[list[str]] = []
            hits = 0
            for i in range(len(rows)):
                kinds: set[str] = set()
                cols[text_col][i] = self.redactor.text(cols[text_col][i], kinds)
                cols[json_col][i] = _json_text(self.redactor.json(_parse_json(cols[json_col][i]), kinds))
                redacted.append(_kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return _record_batch(table, cols), hits

        return convert

    # --- tasks

    def task_rows(self) -> list[dict[str, Any]]:
        """One dict per task of the selected runs (see the module contract)."""
        where = self.selection.runs_where()
        outcome_counts = {
            name: func.sum(case((Run.outcome == name, 1), else_=0)).label(name)
            for name in ("passed", "failed", "error", "cancelled")
        }
        agg = self.conn.execute(
            select(
                Run.task_id,
                func.count().label("runs"),
                *outcome_counts.values(),
                func.sum(case((Run.outcome.is_(None), 1), else_=0)).label("unfinished"),
                func.min(Run.created_at).label("first"),
                func.max(Run.created_at).label("last"),
            )
            .where(*where)
            .group_by(Run.task_id)
            .order_by(Run.task_id)
        ).all()
        variants: dict[str, set[str]] = {}
        for task_id, variant in self.conn.execute(
            select(Run.task_id, Run.variant).where(*where, Run.variant.is_not(None)).distinct()
        ):
            if variant is not None:
                variants.setdefault(task_id, set()).add(variant)
        categories: dict[str, Counter[str]] = {}
        for task_id, category, n in self.conn.execute(
            select(Run.task_id, Run.task_category, func.count())
            .where(*where, Run.task_category.is_not(None))
            .group_by(Run.task_id, Run.task_category)
        ):
            if category is not None:
                categories.setdefault(task_id, Counter())[category] = n
        out = []
        for row in agg:
            seen = categories.get(row.task_id)
            record: dict[str, Any] = {
                "task_id": row.task_id,
                "category": min(seen.items(), key=lambda kv: (-kv[1], kv[0]))[0] if seen else None,
                "difficulty": None,
                "tags": None,
                "description": None,
                "declared_variants": None,
                "variants_seen": sorted(variants.get(row.task_id, ())),
                "requirements": None,
                "persistence_required": None,
                "runs": row.runs,
                "passed": row.passed or 0,
                "failed": row.failed or 0,
                "error": row.error or 0,
                "cancelled": row.cancelled or 0,
                "unfinished": row.unfinished or 0,
                "first_run_at": row.first,
                "last_run_at": row.last,
                "source": "runs",
            }
            record.update(self._task_definition(row.task_id))
            out.append(record)
        return out

    def _task_definition(self, task_id: str) -> dict[str, Any]:
        if self.tasks_dir is None or "/" in task_id or task_id.startswith("."):
            return {}
        path = self.tasks_dir / task_id / "task.toml"
        if not path.is_file():
            return {}
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            self.warnings.append(f"{path}: ignored ({exc})")
            return {}

        def strings(value: Any) -> list[str] | None:
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return list(value)
            return None

        def text(value: Any) -> str | None:
            return value if isinstance(value, str) and value else None

        checks = [c for c in data.get("checks", []) if isinstance(c, dict)]
        result: dict[str, Any] = {
            "difficulty": text(data.get("difficulty")),
            "tags": strings(data.get("tags")),
            "description": text(data.get("description")),
            "declared_variants": strings(data.get("images")),
            "requirements": [str(c["id"]) for c in checks if "id" in c] or None,
            "persistence_required": any(bool(c.get("persist", False)) for c in checks) if checks else None,
            "source": "task.toml",
        }
        if text(data.get("category")):
            result["category"] = data["category"]
        return result


def _batches(conn: Connection, source: _Source, fetch_rows: int, batch_bytes: int) -> Iterator[list[Any]]:
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


def export_dataset(
    db: Database,
    out_dir: Path,
    *,
    selection: RunFilter | None = None,
    redact: bool = True,
    tasks_dir: Path | None = None,
    progress: ExportProgress | None = None,
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
    redactor = Redactor(enabled=redact)
    tables: dict[str, TableExport] = {}
    conn_opts: dict[str, Any] = {}
    if engine.dialect.name == "postgresql":
        conn_opts["isolation_level"] = "REPEATABLE READ"
    with engine.connect().execution_options(**conn_opts) as conn, conn.begin():
        exporter = _Exporter(conn, selection, redactor, tasks_dir)
        for table in TABLE_NAMES:
            path = out_dir / f"{table}.parquet"
            if table == "tasks":
                rows = exporter.task_rows()
                if progress is not None:
                    progress.start(table, len(rows))
                cols = {f.name: [r[f.name] for r in rows] for f in SCHEMAS["tasks"]}
                _write(path, SCHEMAS["tasks"], iter([_record_batch("tasks", cols)]))
                if progress is not None:
                    progress.advance(table, len(rows))
                tables[table] = TableExport(table, path, len(rows), path.stat().st_size, 0)
                continue
            source: _Source = getattr(exporter, table)()
            source.batch_rows = min(source.batch_rows, batch_rows)
            total = int(conn.execute(source.count).scalar_one())
            if progress is not None:
                progress.start(table, total)
            written = 0
            redacted_rows = 0

            def converted(source: _Source = source) -> Iterator[pa.RecordBatch]:
                nonlocal written, redacted_rows
                for chunk in _batches(conn, source, fetch_rows, batch_bytes):
                    batch, hits = source.convert(chunk)
                    written += len(chunk)
                    redacted_rows += hits
                    yield batch
                    if progress is not None:
                        progress.advance(source.table, len(chunk))

            _write(path, SCHEMAS[table], converted())
            tables[table] = TableExport(table, path, written, path.stat().st_size, redacted_rows)
        warnings = exporter.warnings
    finished = utcnow()
    database = engine.url.render_as_string(hide_password=True)
    result = ExportResult(
        out_dir=out_dir,
        tables=tables,
        selection=selection,
        redact=redact,
        database=database,
        started_at=started,
        finished_at=finished,
        card=out_dir / "README.md",
        warnings=warnings,
    )
    write_card(result)
    return result
