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

from testbed.db.recorder import RunRecorder
from testbed.db.records import TurnRecord

__all__ = ["ModelTurnWriter", "TurnRecord", "turn_cost"]


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
    """Stores one run's model turns through the run's recorder (which numbers them, redacts
    them like every stored text and commits before returning)."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    def write(self, turn: TurnRecord) -> int:
        """Insert `turn` with the next `seq`; return its id."""
        return self.recorder.record_model_turn(turn)
