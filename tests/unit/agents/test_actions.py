"""Tool calls and `<bash>` blocks to actions; malformed calls say what is wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testbed.agents.base import Action
from testbed.agents.openai_agent.actions import parse_bash_blocks, parse_tool_call


def call(arguments: Any, name: str = "run", call_id: str | None = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_run_call_is_an_action_on_its_node_or_the_first() -> None:
    parsed = parse_tool_call(call(json.dumps({"node": "web", "command": "uptime"})), "n0", "fallback")
    assert (parsed.call_id, parsed.action, parsed.problem) == ("c1", Action("web", "uptime"), None)
    assert parsed.stored == {"id": "c1", "name": "run", "arguments": '{"node": "web", "command": "uptime"}',
                             "error": None}  # fmt: skip
    assert parse_tool_call(call('{"command": "id"}'), "n0", "f").action == Action("n0", "id")
    assert parse_tool_call(call({"command": "id", "node": ""}), "n0", "f").action == Action("n0", "id")


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        (call('{"command": "ls"}', name="shell"), "unknown tool 'shell'"),
        (call("{not json"), "not valid JSON"),
        (call('{"cmd": "ls"}'), 'non-empty string "command"'),
        (call('{"command": "  "}'), 'non-empty string "command"'),
        (call('["ls"]'), 'non-empty string "command"'),
        ({"id": "c9", "type": "function"}, "unknown tool 'None'"),
    ],
)
def test_malformed_calls_name_the_problem(item: dict[str, Any], problem: str) -> None:
    parsed = parse_tool_call(item, "n0", "f")
    assert parsed.action is None and parsed.problem is not None and problem in parsed.problem
    assert parsed.stored["error"] == parsed.problem


def test_a_call_without_id_gets_one_written_into_it() -> None:
    item = call('{"command": "ls"}', call_id=None)
    parsed = parse_tool_call(item, "n0", "call_3_0")
    assert parsed.call_id == "call_3_0" and item["id"] == "call_3_0"


def test_parse_bash_blocks() -> None:
    text = '<bash>ls\n</bash> x <bash node="db-1">a && b</bash><bash node=web >\n</bash>'
    assert parse_bash_blocks(text, "n0") == [Action("n0", "ls"), Action("db-1", "a && b")]
    assert parse_bash_blocks("no blocks here", "n0") == []
