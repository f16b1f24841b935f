"""From a model's reply to actions: the `run` tool, its calls, and `<bash>` blocks in text.

Contracts:
- A `run` tool call's arguments must be a JSON object with a non-empty string `command`
  and optionally a string `node` (missing or empty: the first node). Any other tool name,
  unparsable JSON or a wrong shape is malformed: `parse_tool_call` returns the problem
  instead of an action, and the agent answers that call with `error: <problem>`.
- A call without an id gets one (`call_<step>_<n>`), written into the call itself, so the
  tool message that answers it always refers to an id the assistant message holds.
- `<bash>…</bash>` / `<bash node="web">…</bash>` blocks are read, in order, only from a
  reply without tool calls; empty blocks are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from testbed.agents.base import Action

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


@dataclass(frozen=True)
class ParsedCall:
    """One tool call of a reply: its action, or the problem that made it malformed."""

    call_id: str
    action: Action | None
    problem: str | None
    stored: dict[str, Any]  # as kept in the turn's `tool_calls`


def parse_tool_call(call: dict[str, Any], default_node: str, fallback_id: str) -> ParsedCall:
    """Read one tool call (a chat-completions `tool_calls` item); sets its id if missing."""
    if not call.get("id"):
        call["id"] = fallback_id
    call_id = str(call["id"])
    function = call.get("function") or {}
    name, raw = function.get("name"), function.get("arguments")
    action, problem = _run_action(name, raw, default_node)
    return ParsedCall(call_id, action, problem, {"id": call_id, "name": name, "arguments": raw, "error": problem})


def _run_action(name: Any, raw: Any, default_node: str) -> tuple[Action | None, str | None]:
    if name != "run":
        return None, f"unknown tool '{name}' (the only tool is 'run')"
    try:
        args = json.loads(raw or "{}") if isinstance(raw, str) else raw
    except ValueError as exc:
        return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(args, dict) or not isinstance(args.get("command"), str) or not args["command"].strip():
        return None, 'arguments must be an object with a non-empty string "command"'
    node = args.get("node")
    return Action(node if isinstance(node, str) and node else default_node, args["command"]), None


def parse_bash_blocks(text: str, default_node: str) -> list[Action]:
    """Actions from `<bash>…</bash>` / `<bash node="N">…</bash>` blocks, in order."""
    out: list[Action] = []
    for match in BASH_BLOCK.finditer(text):
        command = match.group("cmd").strip()
        if command:
            out.append(Action(match.group("node") or default_node, command))
    return out
