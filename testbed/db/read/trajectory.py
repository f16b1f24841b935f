"""A run's trajectory: one time-ordered stream of what the model said and what its commands
did, built once here and rendered by `runs show`, the dashboard's run page and its JSON API.

Contracts:

- `trajectory(session, ref, chars=PREVIEW_CHARS, limit=None)` resolves the run
  (`testbed.db.read.ids`) and returns a `Trajectory`: the run, the task's `instruction` (the run's task record,
  `config["task"]["instruction"]`, else the first user message the model was sent, else
  None), `steps`, the run's checks, the findings not attributed to a command of the agent
  phase (`other_findings`) and `totals`.
- `steps` holds every model turn (`TurnStep`) and every command of the agent phase
  (`CommandStep`, either source), ordered by start time; a turn sorts before a command that
  starts at the same instant, commands by seq. Command text and outputs are cut to `chars`
  characters (`*_length` gives the full lengths; `/api/runs/{id}/commands/{seq}` the rest).
  With `limit`, only the first `limit` commands of the agent phase are in the stream, with
  the turns that started before the next one; `left_out` counts the commands left out
  (the totals still count every turn and command).
- A command of source `agent` is caused by the latest turn that started at or before it
  (`turn_seq`; None when the run has no turn before it, as with scripted agents). Within a
  turn, its i-th such command answers the turn's i-th tool call that parsed (`tool_call_id`).
- `findings` of a command: every finding attributed to it (`findings.command_id`).
  `changes` of a command: the snapshot differences it explains — each change listed in a
  residue finding's evidence (`evidence.changes[*]`, attributed by
  `changes[*].attribution.command_id`), or, for a finding whose evidence lists no changes,
  the finding's own probe/key/change when attributed to the command.
- `totals`: turns, commands, token sums, cost (None when no turn has one), model latency,
  and the agent phase's duration (the `agent` rows of `phases`; None when there is none).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import Command, Run
from testbed.db.read.checks import CheckInfo, check_infos
from testbed.db.read.commands import PREVIEW_CHARS, CommandPreview, previews
from testbed.db.read.findings import FindingInfo, run_findings
from testbed.db.read.ids import resolve_run_id
from testbed.db.read.jsonable import JsonRecord
from testbed.db.read.runs import RunSummary, phase_infos
from testbed.db.read.turns import TurnInfo, first_instruction, turn_infos
from testbed.model.task_record import TASK_KEY
from testbed.model.vocab import CommandPhase, FindingKind, Phase, Source


@dataclass(frozen=True)
class FindingRef(JsonRecord):
    """A finding as a step shows it."""

    id: int
    kind: str
    category: str
    summary: str


@dataclass(frozen=True)
class StateChange(JsonRecord):
    """One snapshot difference a command explains, from the residue finding that lists it."""

    finding_id: int
    node: str | None
    probe: str | None
    key: str | None
    change: str | None
    summary: str
    confidence: str | None
    before: Any
    after: Any


@dataclass(frozen=True)
class TurnStep(JsonRecord):
    """A model turn in the stream."""

    kind: str
    at: datetime
    turn: TurnInfo


@dataclass(frozen=True)
class CommandStep(JsonRecord):
    """A command of the agent phase in the stream, with what it caused."""

    kind: str
    at: datetime
    command: CommandPreview
    status: str
    turn_seq: int | None
    tool_call_id: str | None
    changes: list[StateChange]
    findings: list[FindingRef]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; the command's own `findings` list is left out (see `findings`)."""
        data = super().to_dict()
        data["command"].pop("findings", None)
        return data


@dataclass(frozen=True)
class TrajectoryTotals(JsonRecord):
    """Sums over a trajectory."""

    turns: int
    commands: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float | None
    model_latency_ms: int
    agent_s: float | None


@dataclass(frozen=True)
class Trajectory(JsonRecord):
    """Everything the stream of one run shows (see the module contract)."""

    run: RunSummary
    instruction: str | None
    steps: list[TurnStep | CommandStep]
    checks: list[CheckInfo]
    other_findings: list[FindingRef]
    totals: TrajectoryTotals
    left_out: int = 0


def _ref(f: FindingInfo) -> FindingRef:
    return FindingRef(f.id, f.kind, f.category, f.summary)


def _changes_by_command(findings: list[FindingInfo]) -> dict[int, list[StateChange]]:
    """Command id → the snapshot differences residue evidence attributes to it."""
    out: dict[int, list[StateChange]] = {}
    for f in findings:
        if f.kind != FindingKind.RESIDUE or not isinstance(f.evidence, dict):
            continue
        listed = f.evidence.get("changes")
        if isinstance(listed, list) and listed:
            for ch in listed:
                if not isinstance(ch, dict):
                    continue
                found = ch.get("attribution")
                attribution: dict[str, Any] = found if isinstance(found, dict) else {}
                command_id = attribution.get("command_id")
                if isinstance(command_id, int):
                    out.setdefault(command_id, []).append(_change(f, ch, attribution.get("confidence")))
        elif f.command_id is not None:
            best = f.evidence.get("attribution")
            confidence = best.get("confidence") if isinstance(best, dict) else None
            out.setdefault(f.command_id, []).append(_change(f, f.evidence, confidence))
    return out


def _change(f: FindingInfo, ch: dict[str, Any], confidence: Any) -> StateChange:
    def text(key: str) -> str | None:
        value = ch.get(key)
        return None if value is None else str(value)

    return StateChange(
        finding_id=f.id, node=f.node, probe=text("probe"), key=text("key") or text("path"), change=text("change"),
        summary=text("summary") or f.summary, confidence=None if confidence is None else str(confidence),
        before=ch.get("before"), after=ch.get("after"),
    )  # fmt: skip


def _command_steps(
    commands: list[CommandPreview], turns: list[TurnInfo], findings: list[FindingInfo]
) -> list[CommandStep]:
    """The agent phase's commands with their turn, tool call, changes and findings."""
    by_command: dict[int, list[FindingRef]] = {}
    for f in findings:
        if f.command_id is not None:
            by_command.setdefault(f.command_id, []).append(_ref(f))
    changes = _changes_by_command(findings)
    used: dict[int, int] = {}  # turn seq -> tool calls already answered
    steps = []
    for c in commands:
        turn = None
        if c.source == Source.AGENT:
            turn = next((t for t in reversed(turns) if t.started_at <= c.started_at), None)
        call_id = None
        if turn is not None:
            n = used.get(turn.seq, 0)
            actions = turn.actions
            call_id = str(actions[n].get("id")) if n < len(actions) and actions[n].get("id") else None
            used[turn.seq] = n + 1
        steps.append(
            CommandStep("command", c.started_at, c, c.status, turn.seq if turn else None, call_id,
                        changes.get(c.id, []), by_command.get(c.id, []))
        )  # fmt: skip
    return steps


def _instruction(session: Session, run: Run) -> str | None:
    record = (run.config or {}).get(TASK_KEY) if isinstance(run.config, dict) else None
    if isinstance(record, dict) and isinstance(record.get("instruction"), str):
        return str(record["instruction"])
    return first_instruction(session, run.id)


def _agent_seconds(session: Session, run: Run) -> float | None:
    spans = [p.duration_s for p in phase_infos(session, run.id) if p.name == Phase.AGENT]
    known = [s for s in spans if s is not None]
    return round(sum(known), 3) if known else None


def _totals(session: Session, run: Run, turns: list[TurnInfo], commands: int) -> TrajectoryTotals:
    costs = [t.cost_usd for t in turns if t.cost_usd is not None]
    return TrajectoryTotals(
        turns=len(turns),
        commands=commands,
        prompt_tokens=sum(t.prompt_tokens or 0 for t in turns),
        completion_tokens=sum(t.completion_tokens or 0 for t in turns),
        total_tokens=sum(t.total_tokens or (t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in turns),
        cost_usd=sum(costs) if costs else None,
        model_latency_ms=sum(t.latency_ms for t in turns),
        agent_s=_agent_seconds(session, run),
    )


def _other_findings(session: Session, findings: list[FindingInfo]) -> list[FindingRef]:
    """The findings not attributed to a command of the agent phase."""
    attributed = {f.command_id for f in findings if f.command_id is not None}
    in_stream = set(
        session.scalars(select(Command.id).where(Command.id.in_(attributed), Command.phase == CommandPhase.AGENT))
    ) if attributed else set()  # fmt: skip
    return [_ref(f) for f in findings if f.command_id not in in_stream]


def _agent_commands(session: Session, run_id: str) -> int:
    stmt = (
        select(func.count()).select_from(Command).where(Command.run_id == run_id, Command.phase == CommandPhase.AGENT)
    )
    return int(session.scalar(stmt) or 0)


def trajectory(session: Session, ref: str, *, chars: int = PREVIEW_CHARS, limit: int | None = None) -> Trajectory:
    """The stream of the run named by `ref` (see the module contract)."""
    run = session.get(Run, resolve_run_id(session, ref))
    assert run is not None
    turns = turn_infos(session, run.id)
    agent_phase = Command.phase == CommandPhase.AGENT
    if limit is None:
        commands = previews(session, run.id, chars, agent_phase)
        total = len(commands)
    else:
        first = select(Command.seq).where(Command.run_id == run.id, agent_phase).order_by(Command.seq)
        bound = session.scalar(first.offset(limit).limit(1))
        commands = previews(session, run.id, chars, agent_phase, *([Command.seq < bound] if bound else []))
        total = _agent_commands(session, run.id) if bound else len(commands)
    findings = run_findings(session, run.id)
    command_steps = _command_steps(commands, turns, findings)
    cut = command_steps[-1].at if total > len(commands) and command_steps else None
    turn_steps = [TurnStep("turn", t.started_at, t) for t in turns if cut is None or t.started_at <= cut]
    steps: list[TurnStep | CommandStep] = sorted(
        [*turn_steps, *command_steps],
        key=lambda s: (s.at, 1, s.command.seq) if isinstance(s, CommandStep) else (s.at, 0, s.turn.seq),
    )
    return Trajectory(
        run=RunSummary.of(run),
        instruction=_instruction(session, run),
        steps=steps,
        checks=check_infos(session, run.id),
        other_findings=_other_findings(session, findings),
        totals=_totals(session, run, turns, total),
        left_out=total - len(commands),
    )
