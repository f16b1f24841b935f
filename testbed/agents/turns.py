"""Model turns: one `model_turns` row per model call of an LLM agent, numbered 1, 2, 3, ...

Any agent that calls a model can store its calls here (the `openai:` agent does): build a
`TurnRecord` per call, failed calls included (`error` says why, `response` is None), and
hand it to a `ModelTurnWriter` made from the run's recorder (`AgentBinding.recorder`).

Contracts:
- `messages` holds the chat messages appended since the previous turn, as the agent keeps
  them (never the elided view an agent may send to fit a context window), so the whole
  conversation is the concatenation, in `seq` order, of `messages` and `response`.
- `response` is the assistant message as the endpoint returned it, reasoning text
  (`reasoning_content` / `reasoning`) and `refusal` included.
- `cost_usd` is computed from the endpoint's token counts and the agent's prices (USD per
  1M tokens, `turn_cost`); None when no price was given or no tokens were reported.
- A turn is committed, through the recorder's writer, before `write` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import ModelTurn
from testbed.db.recorder import RunRecorder, clean_json, clean_text


@dataclass
class TurnRecord:
    """One model call, as stored."""

    model: str
    started_at: datetime
    latency_ms: int
    messages: list[dict[str, Any]]
    response: dict[str, Any] | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    cost_usd: float | None = None


def turn_cost(usage: dict[str, int], price_in: float | None, price_out: float | None) -> float | None:
    """USD for one call: prompt tokens at `price_in` plus completion tokens at `price_out`
    (each USD per 1M tokens). None when no price is given or a priced count is missing."""
    if price_in is None and price_out is None:
        return None
    total = 0.0
    for key, price in (("prompt_tokens", price_in), ("completion_tokens", price_out)):
        if price is None:
            continue
        count = usage.get(key)
        if count is None:
            return None
        total += count * price / 1_000_000
    return total


class ModelTurnWriter:
    """Stores one run's model turns, continuing after the highest stored `seq`."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        with Session(recorder._engine) as session:  # the run writer's engine (BEGIN IMMEDIATE)
            top = session.scalar(select(func.max(ModelTurn.seq)).where(ModelTurn.run_id == recorder.run_id))
        self._seq = top or 0

    def write(self, turn: TurnRecord) -> int:
        """Insert `turn` with the next `seq`; return its id."""

        def work(session: Session) -> int:
            row = ModelTurn(
                run_id=self.recorder.run_id,
                seq=self._seq + 1,
                model=turn.model,
                started_at=turn.started_at,
                latency_ms=turn.latency_ms,
                messages=clean_json(turn.messages),
                response=clean_json(turn.response),
                tool_calls=clean_json(turn.tool_calls),
                finish_reason=turn.finish_reason,
                prompt_tokens=turn.usage.get("prompt_tokens"),
                completion_tokens=turn.usage.get("completion_tokens"),
                total_tokens=turn.usage.get("total_tokens"),
                error=clean_text(turn.error) if turn.error is not None else None,
                cost_usd=turn.cost_usd,
            )
            session.add(row)
            session.flush()
            return row.id

        row_id = self.recorder._write(work)  # the recorder's lock; commits before returning
        self._seq += 1
        return row_id
