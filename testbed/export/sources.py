"""How each exported table (all but `tasks`) is read and converted to Arrow.

Contracts:

- `TableSources(conn, selection, redactor)` has one method per table returning a `Source`:
  the SELECT of exactly the selected runs' rows ordered by id (`runs` by created_at then
  id), its row count, and `convert(rows) -> (record batch, rows redacted)`.
- Redaction (when the redactor is enabled) covers the free text of every row, as the
  contract of `testbed.export.dataset` lists; `redacted` lists the kinds found per row,
  plus (commands) the kinds the recorder had already redacted at capture time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Connection, func, select
from sqlalchemy.sql import Executable

from testbed.db.models import Check, Command, Egress, Finding, Job, ModelTurn, Node, Run, Snapshot
from testbed.db.read.filters import RunFilter
from testbed.export.convert import (
    Columns,
    json_text,
    json_text_not_null,
    kinds_list,
    parse_json,
    record_batch,
    sorted_string_list,
    string_list,
)
from testbed.export.egress import egress_batch, egress_statement
from testbed.export.redaction import Redactor
from testbed.export.schema import SCHEMAS

BATCH_ROWS = 20_000
"""Most rows per written batch (one Parquet row group)."""
SNAPSHOT_BATCH_ROWS = 500
"""Snapshots carry large JSON documents: smaller batches."""
MODEL_TURN_BATCH_ROWS = 1_000
"""Model turns carry whole chat messages (tool output included): smaller batches."""


@dataclass
class Source:
    """How one table is read and converted."""

    table: str
    stmt: Executable
    count: Executable
    convert: Callable[[list[Any]], tuple[pa.RecordBatch, int]]
    text_columns: tuple[int, ...] = ()
    """Indexes of the large text columns, summed to bound a batch's size."""
    batch_rows: int = BATCH_ROWS


class TableSources:
    """The `Source` of every streamed table for one selection (see the module contract)."""

    def __init__(self, conn: Connection, selection: RunFilter, redactor: Redactor) -> None:
        self.selection = selection
        self.redactor = redactor
        self.cols = Columns(conn.dialect.name)

    def _child_where(self, run_id_column: Any) -> list[Any]:
        return self.selection.in_selection(run_id_column)

    def _count(self, model: Any) -> Executable:
        return select(func.count()).select_from(model).where(*self._child_where(model.run_id))

    # --- runs

    def runs(self) -> Source:
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
            .where(*self.selection.where())
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
                cols["config"][i] = json_text(self.redactor.json(parse_json(cols["config"][i]), kinds))
                redacted.append(kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return record_batch("runs", cols), hits

        count = select(func.count()).select_from(Run).where(*self.selection.where())
        return Source("runs", stmt, count, convert)

    # --- nodes

    def nodes(self) -> Source:
        stmt = (
            select(Node.id, Node.run_id, Node.name, Node.image, Node.os_release, Node.domain_name, Node.mgmt_ip)
            .where(*self._child_where(Node.run_id))
            .order_by(Node.id)
        )
        names = ["id", "run_id", "name", "image", "os_release", "domain_name", "mgmt_ip"]

        def convert(rows: list[Any]) -> tuple[pa.RecordBatch, int]:
            cols = dict(zip(names, zip(*rows, strict=True), strict=True))
            return record_batch("nodes", cols), 0

        return Source("nodes", stmt, self._count(Node), convert)

    # --- commands

    def commands(self) -> Source:
        c = self.cols
        stmt = (
            select(Command.id, Command.run_id, Command.seq, Command.node, Command.phase, Command.source,
                   Command.command, Command.exit_code, Command.stdout, Command.stderr,
                   c.flag(Command.stdout_truncated), c.flag(Command.stderr_truncated), c.flag(Command.timed_out),
                   c.ts(Command.started_at), Command.duration_ms, c.json(Command.impact), Command.error,
                   c.json(Command.redacted))
            .where(*self._child_where(Command.run_id))
            .order_by(Command.id)
        )  # fmt: skip
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
            cols["impact"] = list(map(string_list, cols["impact"]))
            stored_kinds = list(map(sorted_string_list, cols.pop("stored_redacted")))
            if not redactor.enabled:
                cols["redacted"] = stored_kinds
                return record_batch("commands", cols), 0
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
            return record_batch("commands", cols), hits

        return Source("commands", stmt, self._count(Command), convert, (6, 8, 9))

    # --- snapshots

    def snapshots(self) -> Source:
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
                    cols["data"][i] = json_text(self.redactor.json(parse_json(raw), kinds))
                else:
                    cols["data"][i] = json_text(parse_json(raw))
                redacted.append(kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return record_batch("snapshots", cols), hits

        return Source("snapshots", stmt, self._count(Snapshot), convert, (5,), SNAPSHOT_BATCH_ROWS)

    # --- checks

    def checks(self) -> Source:
        stmt = (
            select(Check.id, Check.run_id, Check.requirement, Check.description, Check.point, Check.node,
                   Check.status, self.cols.json(Check.detail))
            .where(*self._child_where(Check.run_id))
            .order_by(Check.id)
        )  # fmt: skip
        names = ["id", "run_id", "requirement", "description", "point", "node", "status", "detail"]

        return Source(
            "checks", stmt, self._count(Check),
            self._text_and_json_converter("checks", names, "description", "detail"),
        )  # fmt: skip

    # --- findings

    def findings(self) -> Source:
        stmt = (
            select(Finding.id, Finding.run_id, Finding.node, Finding.kind, Finding.category, Finding.summary,
                   self.cols.json(Finding.evidence), Finding.command_id, Command.seq.label("command_seq"))
            .outerjoin(Command, Command.id == Finding.command_id)
            .where(*self._child_where(Finding.run_id))
            .order_by(Finding.id)
        )  # fmt: skip
        names = ["id", "run_id", "node", "kind", "category", "summary", "evidence", "command_id", "command_seq"]

        return Source(
            "findings", stmt, self._count(Finding),
            self._text_and_json_converter("findings", names, "summary", "evidence"),
        )  # fmt: skip

    # --- egress

    def egress(self) -> Source:
        schema = SCHEMAS["egress"]
        return Source(
            "egress",
            egress_statement(self._child_where(Egress.run_id)),
            self._count(Egress),
            lambda rows: egress_batch(rows, schema, self.redactor),
        )

    # --- model turns

    def model_turns(self) -> Source:
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
                messages[i] = json_text_not_null(redactor.json(parse_json(messages[i]), kinds))
                responses[i] = json_text(redactor.json(parse_json(responses[i]), kinds))
                calls[i] = json_text_not_null(redactor.json(parse_json(calls[i]), kinds))
                errors[i] = redactor.text(errors[i], kinds)
                redacted.append(kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return record_batch("model_turns", cols), hits

        return Source("model_turns", stmt, self._count(ModelTurn), convert, (6, 7, 8), MODEL_TURN_BATCH_ROWS)

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
                cols[json_col][i] = json_text(self.redactor.json(parse_json(cols[json_col][i]), kinds))
                redacted.append(kinds_list(kinds))
                hits += bool(kinds)
            cols["redacted"] = redacted
            return record_batch(table, cols), hits

        return convert
