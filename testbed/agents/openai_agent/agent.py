"""`OpenAIAgent`: the conversation, one model call per step, actions out, results back in.

Contracts (the outcome rules are in the package docstring):
- The conversation starts with the system prompt and the task's instruction; each reply is
  appended as an assistant message holding its text and tool calls (never its reasoning,
  which endpoints refuse as input), each command's result as the `tool` message answering
  its call (text mode: one `user` message with the results of all of a reply's blocks).
  Each call sends the view `ContextWindow.fit` makes of it.
- Several actions of one reply run in order; the next call is made when all have results.
- The agent is done (returns None) when a reply asks for nothing, or after `max_steps` calls.
- A malformed reply (a tool call that does not parse, or a reply cut off at the completion
  cap before it asked for anything) is answered with what was wrong and the model is asked
  again; `max_malformed` malformed replies in a row end the run (`AgentFailure`).
- Every call is stored as a model turn when the agent is bound to a run, before a failure
  it caused is raised; a call cut short by the end of the agent phase is stored with the
  error `CANCELLED`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from testbed.agents.base import Action, Agent, AgentBinding, AgentContext, Observation
from testbed.agents.openai_agent.actions import RUN_TOOL, parse_bash_blocks, parse_tool_call
from testbed.agents.openai_agent.client import ChatClient, ModelReply
from testbed.agents.openai_agent.context import ContextWindow, completion_reserve, raw_tokens
from testbed.agents.openai_agent.prompt import TRUNCATED_REPLY, format_observation, system_prompt
from testbed.agents.openai_agent.settings import OpenAISettings
from testbed.agents.turns import ModelTurnWriter, TurnRecord, turn_cost
from testbed.db.types import utcnow
from testbed.errors import AgentFailure, HarnessError

MIN_BUDGET = 64
CANCELLED = "cancelled: the agent phase ended (time limit or cancellation) during the call"
REASON_CHARS = 500


@dataclass
class _Pending:
    action: Action
    tool_call_id: str | None  # None: a <bash> block (text mode)


def refusal_of(reply: ModelReply) -> str | None:
    """Why the reply is a refusal (the `refusal` field, or the content filter), or None."""
    refusal = reply.message.get("refusal")
    if refusal:
        return f"model refused: {str(refusal)[:REASON_CHARS]}"
    if reply.finish_reason == "content_filter":
        return "model reply stopped by the endpoint's content filter (finish_reason content_filter)"
    return None


class OpenAIAgent(Agent):
    """An LLM agent over an OpenAI-compatible endpoint (see the package docstring)."""

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self.name = f"openai:{settings.model}"
        self.messages: list[dict[str, Any]] = []
        self.turns: list[TurnRecord] = []
        self.steps = 0
        self.malformed = 0  # malformed replies in a row
        self._stored = 0  # messages already attributed to a stored turn
        self._pending: deque[_Pending] = deque()
        self._in_flight: _Pending | None = None
        self._text_results: list[str] = []
        self._client: ChatClient | None = None
        self._writer: ModelTurnWriter | None = None
        self._context: AgentContext | None = None
        self._window: ContextWindow | None = None

    @classmethod
    def from_spec(cls, spec: str) -> OpenAIAgent:
        return cls(OpenAISettings.from_spec(spec))

    def bind(self, binding: AgentBinding) -> None:
        """Store model turns with the run's recorder (called by the runner)."""
        self._writer = ModelTurnWriter(binding.recorder)

    async def start(self, context: AgentContext) -> None:
        s = self.settings
        self._context = context
        self._client = ChatClient(s.base_url, s.api_key_env, s.timeout, s.max_retries)
        self.messages = [
            {"role": "system", "content": system_prompt(context, s.tools)},
            {"role": "user", "content": context.instruction},
        ]
        schema = raw_tokens({"content": json.dumps(RUN_TOOL)}) if s.tools else 0
        budget = s.context_tokens - completion_reserve(s.context_tokens, s.completion_cap) - schema
        self._window = ContextWindow(max(MIN_BUDGET, budget))

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def next_action(self, last: Observation | None) -> Action | None:
        if last is not None and self._in_flight is not None:
            self._deliver(self._in_flight, last)
            self._in_flight = None
        while True:
            if self._pending:
                self._in_flight = self._pending.popleft()
                return self._in_flight.action
            if self._text_results:
                self.messages.append({"role": "user", "content": "\n\n".join(self._text_results)})
                self._text_results = []
            if self.steps >= self.settings.max_steps:
                return None
            if not await self._ask():
                return None

    def _deliver(self, pending: _Pending, obs: Observation) -> None:
        text = format_observation(obs)
        if pending.tool_call_id is not None:
            self.messages.append({"role": "tool", "tool_call_id": pending.tool_call_id, "content": text})
        else:
            self._text_results.append(f"$ {pending.action.command}\n{text}")

    async def _ask(self) -> bool:
        """One model call; queue its actions. False when the model asked for nothing (done)."""
        assert self._client is not None and self._window is not None
        self.steps += 1
        view = self._window.fit(self.messages)
        new_messages = [dict(m) for m in self.messages[self._stored :]]
        self._stored = len(self.messages)
        started, t0 = utcnow(), time.monotonic()
        try:
            reply = await self._client.complete(self.settings.model, view, self._params())
        except (AgentFailure, HarnessError) as exc:
            await self._store(self._failed_turn(started, t0, new_messages, str(exc)))
            raise
        except asyncio.CancelledError:  # the agent time limit, or the run cancelled, during the call
            await self._store(self._failed_turn(started, t0, new_messages, CANCELLED))
            raise
        self._window.calibrate(view, reply.usage.get("prompt_tokens"))
        record = TurnRecord(
            model=reply.model,
            started_at=started,
            latency_ms=int((time.monotonic() - t0) * 1000),
            messages=new_messages,
            response=reply.message,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            cost_usd=turn_cost(reply.usage, self.settings.price_in, self.settings.price_out),
        )
        self.turns.append(record)
        try:
            return self._take(reply, record)
        finally:
            await self._store(record)

    def _params(self) -> dict[str, Any]:
        params = self.settings.sampling()
        if self.settings.tools:
            params["tools"] = [RUN_TOOL]
        return params

    def _failed_turn(self, started: datetime, t0: float, messages: list[dict[str, Any]], error: str) -> TurnRecord:
        latency = int((time.monotonic() - t0) * 1000)
        record = TurnRecord(self.settings.model, started, latency, messages, None, error=error)
        self.turns.append(record)
        return record

    def _take(self, reply: ModelReply, record: TurnRecord) -> bool:
        """Append the reply, queue its actions, answer its malformed calls; True when the
        model is to be asked again or actions are queued."""
        assert self._context is not None
        refusal = refusal_of(reply)
        if refusal is not None:
            raise AgentFailure(refusal)
        calls = [dict(call) for call in reply.message.get("tool_calls") or []]
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.message.get("content")}
        if calls:
            assistant["tool_calls"] = calls
        self.messages.append(assistant)
        default_node = self._context.nodes[0]
        problems: list[str] = []
        for n, call in enumerate(calls):
            parsed = parse_tool_call(call, default_node, f"call_{self.steps}_{n}")
            record.tool_calls.append(parsed.stored)
            if parsed.action is not None:
                self._pending.append(_Pending(parsed.action, parsed.call_id))
            else:
                problems.append(str(parsed.problem))
                answer = f"error: {parsed.problem}"
                self.messages.append({"role": "tool", "tool_call_id": parsed.call_id, "content": answer})
        if not calls:
            for action in parse_bash_blocks(reply.message.get("content") or "", default_node):
                self._pending.append(_Pending(action, None))
                record.tool_calls.append({"id": None, "name": "bash", "node": action.node, "command": action.command})
        if not self._pending and not problems and reply.finish_reason == "length":
            problems.append("the reply was cut off at the completion token limit")
            self.messages.append({"role": "user", "content": TRUNCATED_REPLY})
        self._count_malformed(problems)
        return bool(self._pending) or bool(problems)

    def _count_malformed(self, problems: list[str]) -> None:
        self.malformed = self.malformed + 1 if problems else 0
        if self.malformed >= self.settings.max_malformed:
            raise AgentFailure(
                f"{self.malformed} malformed replies in a row (max_malformed {self.settings.max_malformed}); "
                f"last: {problems[0][:REASON_CHARS]}"
            )

    async def _store(self, record: TurnRecord) -> None:
        if self._writer is not None:
            await asyncio.to_thread(self._writer.write, record)
