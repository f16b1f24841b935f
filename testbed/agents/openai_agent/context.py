"""The context window policy: what of the conversation is sent, so it fits the model.

The agent keeps the whole conversation; each call sends `ContextWindow.fit(messages)`, a
view that fits `budget` tokens:

1. The system prompt and the instruction (the first two messages) are always sent whole.
2. The rest is cut into turns: an assistant message with the results that answer it (its
   `tool` messages, or the `user` message with the results of its `<bash>` blocks). A turn
   is kept or removed whole, so a tool call is never sent without its result nor a result
   without its call (the API rejects orphan tool messages). The most recent turn is always
   sent whole.
3. While the view is over budget, the outputs of the oldest turns are replaced, oldest
   first, by `ELIDED_OUTPUT` (the assistant's command stays, so the model still sees what
   it ran); if that is not enough, the oldest turns are dropped whole and one `user`
   message saying how many (`DROPPED_TURNS`) stands in their place after the instruction.
4. Elision is sticky: once an output or a turn is elided it stays so in every later view,
   so the sent prefix only changes when it must (prompt caches keep working).
5. If even the kept part exceeds the budget the view is sent anyway; the endpoint's own
   context-length error then ends the run as the agent's failure.

Token estimate: characters / 4 (`CHARS_PER_TOKEN`) plus 4 per message for its framing,
multiplied by a calibration factor learnt from the endpoint's reported `prompt_tokens`
for the last view sent (clamped to 0.5-4; 1 until the endpoint reports usage).
`budget` is the context window minus the completion reserve (the `max_tokens` /
`max_completion_tokens` given, else a quarter of the window up to 4096) minus the tool
schema.
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
DEFAULT_RESERVE = 4096
ELIDED_OUTPUT = "[… output of an earlier command elided to fit the context window …]"
DROPPED_TURNS = "[… {n} earlier turns (commands and their output) elided to fit the context window …]"
SCALE_BOUNDS = (0.5, 4.0)
HEAD = 2  # system prompt, instruction

Message = dict[str, Any]


def raw_tokens(message: Message) -> int:
    """The uncalibrated estimate for one message: its text and tool calls / 4, plus framing."""
    chars = len(message.get("content") or "")
    if message.get("tool_calls"):
        chars += len(json.dumps(message["tool_calls"]))
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def completion_reserve(context_tokens: int, cap: int | None) -> int:
    """Tokens kept free for the reply: the cap given, else a quarter of the window up to 4096."""
    return cap if cap is not None else min(DEFAULT_RESERVE, context_tokens // 4)


class ContextWindow:
    """Fits a growing conversation into `budget` tokens (see the module docstring)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.scale = 1.0
        self._elided: set[int] = set()  # indexes of outputs replaced by ELIDED_OUTPUT
        self._dropped = 0  # turns dropped whole, oldest first

    def estimate(self, messages: list[Message]) -> int:
        """The calibrated estimate of `messages`, in tokens."""
        return math.ceil(sum(raw_tokens(m) for m in messages) * self.scale)

    def calibrate(self, sent: list[Message], prompt_tokens: int | None) -> None:
        """Learn tokens per estimated token from the endpoint's count for the view `sent`."""
        raw = sum(raw_tokens(m) for m in sent)
        if prompt_tokens and raw:
            low, high = SCALE_BOUNDS
            self.scale = min(high, max(low, prompt_tokens / raw))

    def fit(self, messages: list[Message]) -> list[Message]:
        """The view of `messages` to send."""
        turns = _turns(messages)
        older = turns[:-1]  # the most recent turn is never elided
        view = self._view(messages, turns)
        for turn in older[self._dropped :]:
            if self.estimate(view) <= self.budget:
                return view
            outputs = [i for i in turn if i not in self._elided and _is_output(messages[i])]
            if outputs:
                self._elided.update(outputs)
                view = self._view(messages, turns)
        while self._dropped < len(older) and self.estimate(view) > self.budget:
            self._dropped += 1
            view = self._view(messages, turns)
        return view

    def _view(self, messages: list[Message], turns: list[list[int]]) -> list[Message]:
        view = list(messages[:HEAD])
        if self._dropped:
            view.append({"role": "user", "content": DROPPED_TURNS.format(n=self._dropped)})
        for turn in turns[self._dropped :]:
            for i in turn:
                view.append({**messages[i], "content": ELIDED_OUTPUT} if i in self._elided else messages[i])
        return view


def _is_output(message: Message) -> bool:
    return message.get("role") in ("tool", "user")


def _turns(messages: list[Message]) -> list[list[int]]:
    """Indexes of the messages after the head, grouped into turns (each from an assistant
    message up to the next one)."""
    turns: list[list[int]] = []
    for i in range(HEAD, len(messages)):
        if messages[i].get("role") == "assistant" or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns
