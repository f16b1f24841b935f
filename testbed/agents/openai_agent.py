"""`openai:MODEL`: an LLM agent for any OpenAI-compatible chat-completions endpoint.

Spec: `openai:MODEL[?option=value&...]`. Options (all optional):

    base_url      the API root, e.g. `http://127.0.0.1:8000/v1` (default: env
                  `TESTBED_OPENAI_BASE_URL`, else `https://api.openai.com/v1`)
    api_key_env   the environment variable holding the API key (default `OPENAI_API_KEY`;
                  when it is unset or empty no Authorization header is sent)
    temperature   sampling temperature (default 0)
    max_steps     the most model calls in one run (default 50)
    max_tokens    completion token cap per call (default: the endpoint's)
    tools         `1` (default): function calling with a `run` tool; `0`: text only
    timeout       seconds per HTTP request (default 120)

Contracts:

- The agent talks to `POST {base_url}/chat/completions` with httpx (no SDK). The system
  prompt carries the task's instruction, the node names and the limits.
- Actions come from `run` tool calls (`{"node": ..., "command": ...}`) or, when the reply
  has no tool calls, from `<bash>…</bash>` / `<bash node="web">…</bash>` blocks in its text
  (so models without function calling work too). A missing node means the first node.
  Several calls in one reply run in order; each result goes back as a `tool` message (text
  mode: one `user` message with every block's result).
- The agent is done (returns None) when a reply asks for no command, or after `max_steps`
  model calls. Tool calls with unparsable arguments are answered with an error message and
  the model is asked again (this counts as a step).
- Every model call is stored as a `model_turns` row when the agent is bound to a run
  (`bind_recorder`, called by the runner): messages added since the previous turn, the
  reply, parsed tool calls, token usage, latency; a failed call too (with `error`).
- An endpoint that cannot be reached or keeps failing (after retries on 429/5xx/transport
  errors) is a `HarnessError`: the run ends as `error`, never as an agent failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import httpx

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.db.recorder import RunRecorder
from testbed.db.records import TurnRecord
from testbed.db.types import utcnow
from testbed.errors import HarnessError, InputError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "TESTBED_OPENAI_BASE_URL"
OUTPUT_CHARS = 8000
RETRIES = 3

RUN_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run",
        "description": "Run one shell command (bash, as root) on a node of the lab and get its stdout, stderr "
        "and exit status.",
        "parameters": {
            "type": "object",
            "properties": {
                "node": {"type": "string", "description": "the node to run the command on"},
                "command": {"type": "string", "description": "the shell command"},
            },
            "required": ["node", "command"],
        },
    },
}

BASH_BLOCK = re.compile(r"<bash(?:\s+node\s*=\s*[\"']?(?P<node>[\w.-]+)[\"']?)?\s*>(?P<cmd>.*?)</bash>", re.DOTALL)


@dataclass
class OpenAISettings:
    """How to reach the endpoint and how to sample."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_steps: int = 50
    max_tokens: int | None = None
    tools: bool = True
    timeout_s: float = 120.0

    @classmethod
    def from_spec(cls, spec: str) -> OpenAISettings:
        """Parse `openai:MODEL[?k=v&...]` (see the module docstring); `InputError` on bad input."""
        body = spec.removeprefix("openai:")
        model, _, query = body.partition("?")
        if not model:
            raise InputError(None, "--agent", "openai agent needs a model: openai:MODEL")
        out = cls(model=model, base_url=os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
        try:
            for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
                if key == "base_url":
                    out.base_url = value
                elif key == "api_key_env":
                    out.api_key_env = value
                elif key == "temperature":
                    out.temperature = float(value)
                elif key == "max_steps":
                    out.max_steps = int(value)
                elif key == "max_tokens":
                    out.max_tokens = int(value)
                elif key == "tools":
                    out.tools = value.lower() not in ("0", "false", "no", "off")
                elif key == "timeout":
                    out.timeout_s = float(value)
                else:
                    raise InputError(None, "--agent", f"unknown openai agent option '{key}'")
        except ValueError as exc:
            raise InputError(None, "--agent", f"bad openai agent options '{query}': {exc}") from exc
        if out.max_steps < 1:
            raise InputError(None, "--agent", "max_steps must be at least 1")
        out.base_url = out.base_url.rstrip("/")
        return out


class ModelTurnWriter:
    """Stores one run's model turns through the run's `RunRecorder` (which numbers them,
    redacts them like every other text of the run, and commits before returning)."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    def write(self, turn: TurnRecord) -> int:
        """Insert `turn` with the next `seq`; return its id."""
        return self.recorder.record_model_turn(turn)


@dataclass
class _Pending:
    action: Action
    tool_call_id: str | None  # None: a <bash> block (text mode)


def system_prompt(context: AgentContext, tools: bool) -> str:
    """The system prompt: role, nodes, limits, how to act and how to finish."""
    nodes = ", ".join(context.nodes)
    how = (
        "Use the `run` tool to execute one shell command on a node; you may call it several times per reply."
        if tools
        else 'Put each shell command in a block <bash node="NODE">COMMAND</bash>; several blocks per reply are '
        "allowed and run in order."
    )
    return (
        "You are a Linux system administrator working on a lab of virtual machines over SSH, as root.\n"
        f"Nodes: {nodes}.\n"
        f"{how}\n"
        f"Limits: at most {context.max_commands} commands, {context.command_time_s:.0f} s per command, "
        f"{context.agent_time_s:.0f} s in total. Commands are non-interactive: never start editors or pagers.\n"
        "When the task is complete, reply with a short summary and run no further command."
    )


def format_observation(obs: Observation, limit: int = OUTPUT_CHARS) -> str:
    """An observation as text for the model, each stream cut in the middle beyond `limit`."""

    def cut(text: str) -> str:
        if len(text) <= limit:
            return text
        half = limit // 2
        return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"

    status = "timed out" if obs.timed_out else ("not run" if obs.exit_code is None else str(obs.exit_code))
    parts = [f"node: {obs.node}", f"exit status: {status}"]
    if obs.message:
        parts.append(f"note: {obs.message}")
    parts.append(f"stdout:\n{cut(obs.stdout)}")
    if obs.stderr:
        parts.append(f"stderr:\n{cut(obs.stderr)}")
    return "\n".join(parts)


def parse_bash_blocks(text: str, default_node: str) -> list[Action]:
    """Actions from `<bash>…</bash>` / `<bash node="N">…</bash>` blocks, in order."""
    out: list[Action] = []
    for match in BASH_BLOCK.finditer(text):
        command = match.group("cmd").strip()
        if command:
            out.append(Action(match.group("node") or default_node, command))
    return out


class OpenAIAgent(Agent):
    """An LLM agent over an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, settings: OpenAISettings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self.name = f"openai:{settings.model}"
        self.transport = transport
        self.messages: list[dict[str, Any]] = []
        self.steps = 0
        self.turns: list[TurnRecord] = []
        self._stored = 0  # messages already attributed to a stored turn
        self._pending: deque[_Pending] = deque()
        self._in_flight: _Pending | None = None
        self._text_results: list[str] = []
        self._client: httpx.AsyncClient | None = None
        self._writer: ModelTurnWriter | None = None
        self._context: AgentContext | None = None

    @classmethod
    def from_spec(cls, spec: str) -> OpenAIAgent:
        return cls(OpenAISettings.from_spec(spec))

    def bind_recorder(self, recorder: RunRecorder) -> None:
        """Store model turns with the run `recorder` writes (called by the runner)."""
        self._writer = ModelTurnWriter(recorder)

    async def start(self, context: AgentContext) -> None:
        self._context = context
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.AsyncClient(
            base_url=self.settings.base_url, headers=headers, timeout=self.settings.timeout_s, transport=self.transport
        )
        self.messages = [
            {"role": "system", "content": system_prompt(context, self.settings.tools)},
            {"role": "user", "content": context.instruction},
        ]

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
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
        """One model call; queue its actions. False when the model asked for none (done)."""
        assert self._context is not None
        self.steps += 1
        reply, record = await self._complete()
        message = reply.get("message") or {}
        assistant: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        calls = message.get("tool_calls") or []
        if calls:
            assistant["tool_calls"] = calls
        self.messages.append(assistant)
        default_node = self._context.nodes[0]
        errors: list[dict[str, Any]] = []
        for call in calls:
            call_id = str(call.get("id") or f"call_{self.steps}_{len(self._pending)}")
            function = call.get("function") or {}
            action, problem = self._tool_action(function, default_node)
            if action is None:
                errors.append({"role": "tool", "tool_call_id": call_id, "content": f"error: {problem}"})
            else:
                self._pending.append(_Pending(action, call_id))
            record.tool_calls.append(
                {"id": call_id, "name": function.get("name"), "arguments": function.get("arguments"), "error": problem}
            )
        if not calls:
            for action in parse_bash_blocks(message.get("content") or "", default_node):
                self._pending.append(_Pending(action, None))
                record.tool_calls.append({"id": None, "name": "bash", "node": action.node, "command": action.command})
        self.messages.extend(errors)
        await self._store(record)
        return bool(self._pending) or bool(errors)

    @staticmethod
    def _tool_action(function: dict[str, Any], default_node: str) -> tuple[Action | None, str | None]:
        if function.get("name") != "run":
            return None, f"unknown tool '{function.get('name')}' (the only tool is 'run')"
        raw = function.get("arguments") or "{}"
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError as exc:
            return None, f"arguments are not valid JSON: {exc}"
        if not isinstance(args, dict) or not isinstance(args.get("command"), str) or not args["command"].strip():
            return None, 'arguments must be an object with a non-empty string "command"'
        node = args.get("node")
        return Action(node if isinstance(node, str) and node else default_node, args["command"]), None

    async def _complete(self) -> tuple[dict[str, Any], TurnRecord]:
        """POST the conversation; retry 429/5xx/transport errors; return (choice, turn record)."""
        assert self._client is not None
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": self.messages,
            "temperature": self.settings.temperature,
        }
        if self.settings.tools:
            body["tools"] = [RUN_TOOL]
            body["tool_choice"] = "auto"
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        new_messages = [dict(m) for m in self.messages[self._stored :]]
        self._stored = len(self.messages)
        started = utcnow()
        t0 = time.monotonic()
        problem = "no attempt"
        for attempt in range(RETRIES + 1):
            if attempt:
                await asyncio.sleep(min(2.0**attempt, 20.0))
            try:
                response = await self._client.post("/chat/completions", json=body)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                problem = f"HTTP {response.status_code}: {response.text[:500]}"
                continue
            if response.status_code >= 400:
                problem = f"HTTP {response.status_code}: {response.text[:500]}"
                break
            try:
                data = response.json()
                choice = data["choices"][0]
                if not isinstance(choice, dict):
                    raise TypeError("choice is not an object")
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                problem = f"unexpected response ({type(exc).__name__}: {exc}): {response.text[:500]}"
                break
            usage = data.get("usage") or {}
            record = TurnRecord(
                model=str(data.get("model") or self.settings.model),
                started_at=started,
                latency_ms=int((time.monotonic() - t0) * 1000),
                messages=new_messages,
                response=choice.get("message"),
                finish_reason=choice.get("finish_reason"),
                usage={k: int(v) for k, v in usage.items() if k.endswith("_tokens") and isinstance(v, int)},
            )
            self.turns.append(record)
            return choice, record
        failed = TurnRecord(
            model=self.settings.model,
            started_at=started,
            latency_ms=int((time.monotonic() - t0) * 1000),
            messages=new_messages,
            response=None,
            error=problem,
        )
        self.turns.append(failed)
        await self._store(failed)
        raise HarnessError(f"model endpoint {self.settings.base_url} failed: {problem}")

    async def _store(self, record: TurnRecord) -> None:
        if self._writer is not None:
            await asyncio.to_thread(self._writer.write, record)
