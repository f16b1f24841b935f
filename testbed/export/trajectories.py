"""The `trajectories` table of the export: one row per run, its conversation in chat format.

Contracts:

- One row per selected run (ordered like `runs`), with `passed_only` only the runs that
  passed (an SFT set). Columns: run, job, task, split, agent, image, release (the nodes'
  os-release names), outcome, reward, passed, residue, `source` (`model_turns` or
  `commands`: how the conversation was rebuilt, `testbed.export.conversation`), the number
  of assistant turns, `messages` (the whole conversation), `prompt` and `completion` (the
  same split after the leading system and user messages), created_at, redacted.
- `split` is the task's split from its task.toml (`split` field, when the task format has
  one), else `train`; the instruction and limits of command-built conversations come from
  `tasks_dir/<task>/` when it loads (else the instruction is empty and the limits default).
- Redaction (when on) covers every string of the messages; `redacted` lists the kinds.
- Runs are read `RUNS_PER_BATCH` at a time with their turns and agent commands, so memory
  is bounded by a batch of runs, not by the table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlalchemy import Connection, func, select

from testbed.db.models import Command, ModelTurn, Node, Run
from testbed.db.read.filters import RunFilter
from testbed.errors import InputError
from testbed.export.conversation import from_commands, from_turns, split_prompt
from testbed.export.convert import Columns, kinds_list, parse_json, record_batch
from testbed.export.redaction import Redactor
from testbed.model.task import Limits
from testbed.model.taskload import load_definition
from testbed.model.vocab import CommandPhase, Outcome, Source

RUNS_PER_BATCH = 200
DEFAULT_SPLIT = "train"


@dataclass(frozen=True)
class TaskFacts:
    split: str = DEFAULT_SPLIT
    instruction: str = ""
    limits: Limits | None = None


@dataclass
class TaskFactsCache:
    """Split, instruction and limits per task id, read once from `tasks_dir`."""

    tasks_dir: Path | None
    warnings: list[str]
    _seen: dict[str, TaskFacts] = field(default_factory=dict)

    def get(self, task_id: str) -> TaskFacts:
        if task_id not in self._seen:
            self._seen[task_id] = self._load(task_id)
        return self._seen[task_id]

    def _load(self, task_id: str) -> TaskFacts:
        if self.tasks_dir is None or "/" in task_id or task_id.startswith("."):
            return TaskFacts()
        directory = self.tasks_dir / task_id
        if not (directory / "task.toml").is_file():
            return TaskFacts()
        try:
            definition = load_definition(directory)
            instruction = (directory / "instruction.md").read_text(encoding="utf-8", errors="replace")
        except (InputError, OSError):
            return TaskFacts()  # the tasks table already warns about a task.toml that does not load
        split = getattr(definition, "split", None) or DEFAULT_SPLIT
        return TaskFacts(str(split), instruction, definition.limits)


class TrajectorySource:
    """Reads and converts the trajectories of one selection (see the module contract)."""

    def __init__(
        self, conn: Connection, selection: RunFilter, redactor: Redactor, tasks: TaskFactsCache, passed_only: bool
    ) -> None:
        self.conn = conn
        self.redactor = redactor
        self.tasks = tasks
        self.cols = Columns(conn.dialect.name)
        self.where = selection.where()
        if passed_only:
            self.where.append(Run.outcome == Outcome.PASSED)

    def count(self) -> int:
        return int(self.conn.execute(select(func.count()).select_from(Run).where(*self.where)).scalar_one())

    def batches(self) -> Iterator[tuple[pa.RecordBatch, int, int]]:
        """(record batch, rows, rows redacted) per batch of runs."""
        stmt = (
            select(Run.id, Run.job_id, Run.task_id, Run.agent, Run.image, Run.outcome, Run.reward, Run.residue,
                   self.cols.ts(Run.created_at))
            .where(*self.where)
            .order_by(Run.created_at, Run.id)
        )  # fmt: skip
        result = self.conn.execution_options(yield_per=RUNS_PER_BATCH).execute(stmt)
        for part in result.partitions(RUNS_PER_BATCH):
            yield self._convert(list(part))

    def _children(self, ids: list[str]) -> tuple[dict[str, list[Any]], dict[str, list[Any]], dict[str, list[Any]]]:
        turns: dict[str, list[Any]] = defaultdict(list)
        stmt = (
            select(ModelTurn.run_id, self.cols.json(ModelTurn.messages), self.cols.json(ModelTurn.response))
            .where(ModelTurn.run_id.in_(ids))
            .order_by(ModelTurn.run_id, ModelTurn.seq)
        )
        for run_id, messages, response in self.conn.execute(stmt):
            turns[run_id].append((parse_json(messages), parse_json(response)))
        commands: dict[str, list[Any]] = defaultdict(list)
        stmt2 = (
            select(Command.run_id, Command.seq, Command.node, Command.command, Command.stdout, Command.stderr,
                   Command.exit_code, Command.timed_out, Command.error)
            .where(Command.run_id.in_(ids), Command.phase == CommandPhase.AGENT, Command.source == Source.AGENT)
            .order_by(Command.run_id, Command.seq)
        )  # fmt: skip
        for row in self.conn.execute(stmt2):
            commands[row.run_id].append(row)
        nodes: dict[str, list[Any]] = defaultdict(list)
        for run_id, name, release in self.conn.execute(
            select(Node.run_id, Node.name, Node.os_release).where(Node.run_id.in_(ids)).order_by(Node.id)
        ):
            nodes[run_id].append((name, release))
        return turns, commands, nodes

    def _convert(self, runs: list[Any]) -> tuple[pa.RecordBatch, int, int]:
        turns, commands, nodes = self._children([r.id for r in runs])
        cols: dict[str, list[Any]] = defaultdict(list)
        hits = 0
        for r in runs:
            facts = self.tasks.get(r.task_id)
            names = [n for n, _ in nodes[r.id]]
            if turns[r.id]:
                source, messages = "model_turns", from_turns(turns[r.id])
            else:
                source = "commands"
                messages = from_commands(r.task_id, facts.instruction, names, facts.limits, commands[r.id])
            kinds: set[str] = set()
            messages = self.redactor.json(messages, kinds)
            prompt, completion = split_prompt(messages)
            releases = sorted({str(rel) for _, rel in nodes[r.id] if rel})
            row = {
                "run_id": r.id, "job_id": r.job_id, "task_id": r.task_id, "split": facts.split, "agent": r.agent,
                "image": r.image, "release": "; ".join(releases) or None, "outcome": r.outcome, "reward": r.reward,
                "passed": r.outcome == Outcome.PASSED, "residue": r.residue, "source": source,
                "turns": sum(1 for m in messages if m["role"] == "assistant"), "messages": messages,
                "prompt": prompt, "completion": completion, "created_at": r.created_at, "redacted": kinds_list(kinds),
            }  # fmt: skip
            for key, value in row.items():
                cols[key].append(value)
            hits += bool(kinds)
        columns: dict[str, Any] = dict(cols)
        columns["created_at"] = self.cols.ts_array(columns["created_at"])
        return record_batch("trajectories", columns), len(runs), hits
