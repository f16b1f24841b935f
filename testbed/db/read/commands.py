"""Recorded commands: every column of a run's commands, a page of them cut for display, and
the study's command statistics.

Contracts:

- `command_infos` loads every column of every command of a run (the CLI's `runs show`);
  `full_command` one command by seq, as JSON-ready data with its `run_id`, or None.
- `previews(session, run_id, chars, *where)` loads the run's commands matching `where` with
  text and outputs cut to `chars` characters (the trajectory's agent commands).
- `command_page` loads one page of `page_size` commands (by seq) with their text and
  outputs cut to `chars` characters (full lengths reported), the run's command count per
  phase and its number of high-impact commands. `seq` is gap-free from 1 per run (recorder
  contract), so max(seq) is the count and the page of seq n is `command_page_of(n)`.
- The high-impact predicate `impactful_clause` must stay textually identical to the WHERE
  of the partial index `ix_commands_impactful` (migration 0002): counting impactful
  commands then costs O(impactful commands), not O(commands).
- `command_failures`: AGENT commands with an exit status (timeouts and transport failures
  have none) per OS release of their node (`commands.node` = `nodes.name` in the same run;
  no such node or no release → `UNKNOWN`); failed = non-zero exit. `impact_classes`: the
  classes in `commands.impact` of AGENT commands, per class the commands, the distinct runs
  and their share of `runs` selected runs; most runs first.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Text, and_, case, cast, func, select, text
from sqlalchemy.orm import Session

from testbed.db.models import Command, Node
from testbed.db.read.filters import RunFilter
from testbed.db.read.ids import resolve_run_id
from testbed.db.read.jsonable import JsonRecord
from testbed.db.read.rates import UNKNOWN, rate
from testbed.model.vocab import Source

PREVIEW_CHARS = 4000
"""Characters of stdout/stderr (and of the command text) shown inline on a run's page."""

COMMAND_PAGE_SIZE = 250
"""Commands per page of a run's command log."""

_IMPACTFUL_SQL = {
    "sqlite": "commands.impact != '[]'",
    "postgresql": "commands.impact <> '[]'::jsonb",
}
"""`commands.impact` is a non-empty list; identical to the WHERE of `ix_commands_impactful`."""


def impactful_clause(session: Session) -> ColumnElement[bool]:
    """SQL predicate: the command's `impact` list is non-empty (index-friendly literal)."""
    dialect = session.get_bind().dialect.name
    return text(_IMPACTFUL_SQL.get(dialect, _IMPACTFUL_SQL["sqlite"]))  # type: ignore[return-value]


@dataclass(frozen=True)
class CommandBrief(JsonRecord):
    """A recorded command without its output (the columns residue attribution reads)."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    exit_code: int | None


@dataclass(frozen=True)
class CommandInfo(CommandBrief):
    """A recorded command, every column."""

    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    started_at: datetime
    duration_ms: int
    impact: list[str]
    redacted: list[str] | None
    error: str | None

    @classmethod
    def of(cls, c: Command) -> CommandInfo:
        """The record of ORM row `c`."""
        return cls(
            id=c.id, seq=c.seq, node=c.node, phase=c.phase, source=c.source, command=c.command,
            exit_code=c.exit_code, stdout=c.stdout, stderr=c.stderr, stdout_truncated=c.stdout_truncated,
            stderr_truncated=c.stderr_truncated, timed_out=c.timed_out, started_at=c.started_at,
            duration_ms=c.duration_ms, impact=list(c.impact or []),
            redacted=list(c.redacted) if c.redacted is not None else None, error=c.error,
        )  # fmt: skip


def command_infos(session: Session, run_id: str) -> list[CommandInfo]:
    """Every command of the run, every column, by seq."""
    rows = session.scalars(select(Command).where(Command.run_id == run_id).order_by(Command.seq))
    return [CommandInfo.of(c) for c in rows]


def full_command(session: Session, ref: str, seq: int) -> dict[str, Any] | None:
    """Every column of command `seq` of run `ref` (JSON-ready, with `run_id`), or None."""
    run_id = resolve_run_id(session, ref)
    c = session.scalar(select(Command).where(Command.run_id == run_id, Command.seq == seq))
    return None if c is None else {"run_id": run_id, **CommandInfo.of(c).to_dict()}


@dataclass
class CommandPreview:
    """A command of the log; `stdout`/`stderr`/`command` cut (see `command_page`), with
    their full lengths in `*_length`."""

    id: int
    seq: int
    node: str | None
    phase: str
    source: str
    command: str
    command_length: int
    exit_code: int | None
    timed_out: bool
    error: str | None
    started_at: datetime
    duration_ms: int
    impact: list[str]
    redacted: list[str] | None
    stdout: str
    stdout_length: int
    stdout_truncated: bool
    stderr: str
    stderr_length: int
    stderr_truncated: bool
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Findings attributed to this command: `{"id", "kind", "category"}` each."""

    @property
    def status(self) -> str:
        """`ok`, `exit N`, `timeout`, `error` or `-`."""
        if self.timed_out:
            return "timeout"
        if self.error:
            return "error"
        if self.exit_code is None:
            return "-"
        return "ok" if self.exit_code == 0 else f"exit {self.exit_code}"


def previews(session: Session, run_id: str, chars: int, *where: ColumnElement[bool]) -> list[CommandPreview]:
    """The run's commands matching `where`, by seq, with text and outputs cut to `chars`."""
    c = Command
    stmt = (
        select(
            c.id, c.seq, c.node, c.phase, c.source, func.substr(c.command, 1, chars), func.length(c.command),
            c.exit_code, c.timed_out, c.error, c.started_at, c.duration_ms, c.impact, c.redacted,
            func.substr(c.stdout, 1, chars), func.length(c.stdout), c.stdout_truncated,
            func.substr(c.stderr, 1, chars), func.length(c.stderr), c.stderr_truncated,
        )
        .where(c.run_id == run_id, *where)
        .order_by(c.seq)
    )  # fmt: skip
    return [
        CommandPreview(
            id=row[0], seq=row[1], node=row[2], phase=row[3], source=row[4], command=row[5] or "",
            command_length=row[6] or 0, exit_code=row[7], timed_out=bool(row[8]), error=row[9],
            started_at=row[10], duration_ms=row[11], impact=list(row[12] or []),
            redacted=list(row[13]) if row[13] else None, stdout=row[14] or "", stdout_length=row[15] or 0,
            stdout_truncated=bool(row[16]), stderr=row[17] or "", stderr_length=row[18] or 0,
            stderr_truncated=bool(row[19]),
        )
        for row in session.execute(stmt)
    ]  # fmt: skip


def command_page_of(seq: int, page_size: int = COMMAND_PAGE_SIZE) -> int:
    """The command-log page (from 1) showing the command numbered `seq`."""
    return max(1, (seq - 1) // page_size + 1)


@dataclass
class CommandPage:
    """One page of a run's command log and the run's command counts."""

    commands: list[CommandPreview]
    total: int
    page: int
    pages: int
    page_size: int
    phase_counts: dict[str, int]
    impactful: int


def command_page(
    session: Session, run_id: str, page: int = 1, page_size: int = COMMAND_PAGE_SIZE, chars: int = PREVIEW_CHARS
) -> CommandPage:
    """Page `page` (clamped to the pages there are) of the run's commands (see the contract)."""
    phase_counts = {
        phase: n
        for phase, n in session.execute(
            select(Command.phase, func.count()).where(Command.run_id == run_id).group_by(Command.phase)
        )
    }
    impactful = session.scalar(
        select(func.count()).select_from(Command).where(Command.run_id == run_id, impactful_clause(session))
    )
    top_seq = session.scalar(select(func.max(Command.seq)).where(Command.run_id == run_id)) or 0
    pages = max(1, -(-top_seq // page_size))
    page = min(max(1, page), pages)
    first = (page - 1) * page_size + 1
    commands = previews(session, run_id, chars, Command.seq >= first, Command.seq <= first + page_size - 1)
    return CommandPage(commands, sum(phase_counts.values()), page, pages, page_size, phase_counts, impactful or 0)


# --- the study's command statistics ----------------------------------------------------------


@dataclass(frozen=True)
class OsCommandFailures:
    """Agent commands with an exit status on nodes of one OS release."""

    os_release: str
    commands: int
    failed: int
    failure_rate: float | None


@dataclass(frozen=True)
class ImpactClass:
    """One high-impact class of agent commands."""

    impact_class: str
    runs: int
    share_of_runs: float | None
    commands: int


def command_failures(session: Session, selection: RunFilter) -> list[OsCommandFailures]:
    """Agent-command failure rate per OS release, sorted by release (see the contract)."""
    failed = func.sum(case((Command.exit_code != 0, 1), else_=0))
    rows = session.execute(
        select(Node.os_release, func.count().label("commands"), failed.label("failed"))
        .select_from(Command)
        .outerjoin(Node, and_(Node.run_id == Command.run_id, Node.name == Command.node))
        .where(*selection.in_selection(Command.run_id), Command.source == Source.AGENT, Command.exit_code.is_not(None))
        .group_by(Node.os_release)
    ).all()
    merged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        key = r.os_release if r.os_release else UNKNOWN
        merged[key][0] += int(r.commands)
        merged[key][1] += int(r.failed or 0)
    return [
        OsCommandFailures(os_release=k, commands=n, failed=f, failure_rate=rate(f, n))
        for k, (n, f) in sorted(merged.items())
    ]


def impact_classes(session: Session, selection: RunFilter, runs: int) -> list[ImpactClass]:
    """High-impact classes of agent commands among `runs` selected runs, most runs first.

    Only commands whose impact list is not empty are read (streamed)."""
    impact_text = cast(Command.impact, Text)
    stmt = select(Command.run_id, impact_text).where(
        *selection.in_selection(Command.run_id),
        Command.source == Source.AGENT,
        impact_text.not_in(["[]", "null"]),
    )
    commands: Counter[str] = Counter()
    run_sets: dict[str, set[str]] = defaultdict(set)
    for run_id, raw in session.execute(stmt.execution_options(yield_per=5000)):
        for cls in set(json.loads(raw) or () if raw else ()):
            commands[cls] += 1
            run_sets[cls].add(run_id)
    result = [
        ImpactClass(impact_class=cls, runs=len(run_sets[cls]), share_of_runs=rate(len(run_sets[cls]), runs),
                    commands=commands[cls])
        for cls in commands
    ]  # fmt: skip
    return sorted(result, key=lambda x: (-x.runs, -x.commands, x.impact_class))


def attach_findings(commands: Sequence[CommandPreview], findings: Sequence[Any]) -> None:
    """Add each finding (`id`, `kind`, `category`, `command_id`) to the command it is
    attributed to, when that command is among `commands`."""
    by_id = {c.id: c for c in commands}
    for f in findings:
        if f.command_id in by_id:
            by_id[f.command_id].findings.append({"id": f.id, "kind": f.kind, "category": f.category})
