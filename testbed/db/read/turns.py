"""Model turns of LLM agents as the read side sees them: one run's turns, and token and cost
totals per run.

Contracts:

- `turn_infos(session, run_id)` lists the run's model turns by seq. `text` is the reply's
  content, `reasoning` its reasoning text (`reasoning_content`, else `reasoning`, as the
  endpoint returned it; None when it returned none), `refusal` its refusal; `tool_calls`
  are the calls as the agent parsed and stored them (`{"id", "name", "arguments",
  "error"}`, or `{"id": None, "name": "bash", "node", "command"}` for a `<bash>` block).
  `instruction` is the first `user` message the first turn sent (the task's instruction as
  the model saw it), None without turns.
- `turn_totals(session, selection)` maps each selected run that has turns to its `TurnTotals`
  (turns, token sums over the turns that report them, cost summed over priced turns: None
  when no turn of the run has a cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import ModelTurn
from testbed.db.read.filters import RunFilter
from testbed.db.read.jsonable import JsonRecord

REASONING_KEYS = ("reasoning_content", "reasoning")
"""Where OpenAI-compatible endpoints put a reply's reasoning text."""


@dataclass(frozen=True)
class TurnInfo(JsonRecord):
    """One model call of a run (see the module contract)."""

    seq: int
    model: str
    started_at: datetime
    latency_ms: int
    text: str | None
    reasoning: str | None
    refusal: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    cost_usd: float | None
    error: str | None

    @property
    def actions(self) -> list[dict[str, Any]]:
        """The tool calls that became commands (those without an `error`), in order."""
        return [call for call in self.tool_calls if not call.get("error")]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in value)
    return str(value)


def _reasoning(response: dict[str, Any]) -> str | None:
    for key in REASONING_KEYS:
        if response.get(key):
            return _text(response[key])
    return None


def turn_of(row: ModelTurn) -> TurnInfo:
    """The `TurnInfo` of ORM row `row`."""
    response = row.response if isinstance(row.response, dict) else {}
    calls = row.tool_calls if isinstance(row.tool_calls, list) else []
    return TurnInfo(
        seq=row.seq, model=row.model, started_at=row.started_at, latency_ms=row.latency_ms,
        text=_text(response.get("content")), reasoning=_reasoning(response), refusal=_text(response.get("refusal")),
        tool_calls=[dict(c) for c in calls if isinstance(c, dict)], finish_reason=row.finish_reason,
        prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens, total_tokens=row.total_tokens,
        cost_usd=row.cost_usd, error=row.error,
    )  # fmt: skip


def turn_infos(session: Session, run_id: str) -> list[TurnInfo]:
    """The run's model turns by seq."""
    rows = session.scalars(select(ModelTurn).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq))
    return [turn_of(r) for r in rows]


def first_instruction(session: Session, run_id: str) -> str | None:
    """The first `user` message of the run's first turn, None when there is none."""
    messages = session.scalar(
        select(ModelTurn.messages).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq).limit(1)
    )
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content"))
    return None


@dataclass(frozen=True)
class TurnTotals(JsonRecord):
    """Model turns of one run, summed."""

    turns: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float | None


def turn_totals(session: Session, selection: RunFilter) -> dict[str, TurnTotals]:
    """Per selected run with turns, its `TurnTotals` (see the module contract)."""
    t = ModelTurn
    total = func.coalesce(t.total_tokens, func.coalesce(t.prompt_tokens, 0) + func.coalesce(t.completion_tokens, 0))
    stmt = (
        select(t.run_id, func.count(), func.sum(t.prompt_tokens), func.sum(t.completion_tokens), func.sum(total),
               func.sum(t.cost_usd))
        .where(*selection.in_selection(t.run_id))
        .group_by(t.run_id)
    )  # fmt: skip
    return {
        run_id: TurnTotals(int(n), int(p or 0), int(c or 0), int(tot or 0), None if cost is None else float(cost))
        for run_id, n, p, c, tot, cost in session.execute(stmt)
    }
