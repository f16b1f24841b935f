"""A run's conversation in chat format, the same shape whatever the agent was.

Contracts:

- A message is `{role, content, reasoning, tool_calls, tool_call_id, name}` (absent parts
  None): `tool_calls` is a list of `{id, type: "function", function: {name, arguments}}`
  with `arguments` JSON text, as the chat-completions API and TRL's chat templates take it.
- LLM runs (`from_turns`): the messages the agent stored with its model turns, in `seq`
  order (each turn stores what was added since the previous call, the previous reply
  included), then the last turn's reply. So the conversation is exactly what the model
  was sent and answered, tool results included; the reasoning an endpoint returned stays
  on its assistant message (`reasoning`).
- Runs without model turns — oracle, replay, scripted agents, environment API episodes —
  (`from_commands`): the system prompt testbed's LLM agent would have had (nodes, limits),
  the task's instruction, then per agent command an assistant message calling the `run`
  tool (`{"node", "command"}`, id `call_<seq>`) and the `tool` message answering it with
  the result as the LLM agent shows it (`format_observation`).
- `split_prompt(messages)`: (prompt, completion), the prompt being the leading system and
  user messages (what a GRPO trainer samples from), the completion the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from testbed.agents.base import AgentContext, Observation
from testbed.agents.openai_agent.prompt import format_observation, system_prompt
from testbed.model.task import Limits

Message = dict[str, Any]
REASONING_KEYS = ("reasoning_content", "reasoning")


def _tool_call(call: Any) -> dict[str, Any]:
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": str(call.get("id")) if call.get("id") is not None else None,
        "type": str(call.get("type") or "function"),
        "function": {"name": function.get("name"), "arguments": arguments},
    }


def message(raw: Any) -> Message:
    """One message in the export's shape (see the module contract)."""
    raw = raw if isinstance(raw, dict) else {"role": "user", "content": str(raw)}
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    reasoning = next((raw[k] for k in REASONING_KEYS if isinstance(raw.get(k), str) and raw[k]), None)
    calls = raw.get("tool_calls")
    return {
        "role": str(raw.get("role") or "assistant"),
        "content": content,
        "reasoning": reasoning,
        "tool_calls": [_tool_call(c) for c in calls] if isinstance(calls, list) and calls else None,
        "tool_call_id": str(raw["tool_call_id"]) if raw.get("tool_call_id") is not None else None,
        "name": str(raw["name"]) if raw.get("name") is not None else None,
    }


def from_turns(turns: Sequence[tuple[Any, Any]]) -> list[Message]:
    """The conversation of an LLM run from its turns' `(messages, response)`, in seq order.
    A reply is stored twice: as its turn's response (with the reasoning) and, as the agent
    kept it, at the head of the next turn's messages; the latter is used, the reasoning
    carried over."""
    out: list[Message] = []
    previous: Any = None
    for added, response in turns:
        converted = [message(m) for m in added or []]
        if converted and converted[0]["role"] == "assistant" and isinstance(previous, dict):
            converted[0]["reasoning"] = converted[0]["reasoning"] or message(previous)["reasoning"]
        out += converted
        previous = response
    last = turns[-1][1] if turns else None
    if isinstance(last, dict):
        out.append(message({**last, "role": "assistant"}))
    return out


def from_commands(
    task_id: str, instruction: str, nodes: list[str], limits: Limits | None, commands: Iterable[Any]
) -> list[Message]:
    """The conversation of a run without model turns from its agent commands (rows with
    seq, node, command, stdout, stderr, exit_code, timed_out, error)."""
    limits = limits or Limits()
    context = AgentContext(
        task_id, instruction, nodes or ["node"], limits.max_commands, limits.agent_time_s, limits.command_time_s
    )
    out: list[Message] = [message({"role": "system", "content": system_prompt(context, True)})]
    out.append(message({"role": "user", "content": instruction}))
    for c in commands:
        call_id = f"call_{c.seq}"
        arguments = json.dumps({"node": c.node, "command": c.command}, ensure_ascii=False)
        call = {"id": call_id, "type": "function", "function": {"name": "run", "arguments": arguments}}
        out.append(message({"role": "assistant", "content": None, "tool_calls": [call]}))
        observed = Observation(
            node=str(c.node or ""),
            command=str(c.command),
            stdout=c.stdout or "",
            stderr=c.stderr or "",
            exit_code=c.exit_code,
            timed_out=bool(c.timed_out),
            message=c.error,
        )
        out.append(message({"role": "tool", "tool_call_id": call_id, "content": format_observation(observed)}))
    return out


def split_prompt(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """(leading system/user messages, the rest)."""
    n = 0
    while n < len(messages) and messages[n]["role"] in ("system", "user"):
        n += 1
    return messages[:n], messages[n:]
