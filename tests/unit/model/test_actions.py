"""testbed.model.actions: `[actions.*]` and `[reward]` are refused at load time, with the
field as written."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.errors import InputError
from testbed.model.actions import check_actions, check_reward

GOOD = {
    "restart": {
        "command": "systemctl restart {unit}",
        "parameters": {"type": "object", "properties": {"unit": {"type": "string", "pattern": "^[a-z.]+$"}}},
    }
}


def test_a_good_action_and_reward_load() -> None:
    actions = check_actions(GOOD, None)
    assert actions["restart"].command == "systemctl restart {unit}"
    assert check_reward({"success": 2, "diagnostic_patterns": ["^ls"]}, None).success == 2.0


@pytest.mark.parametrize(
    ("table", "field", "needle"),
    [
        ({"x": "not a table"}, "actions.x", "must be a table"),
        ({"x": {"description": "d"}}, "actions.x.command", "missing"),
        ({"x": {"command": "c", "colour": 1}}, "actions.x.colour", "unknown field"),
        ({"x": {"command": "echo {y}"}}, "actions.x.command", "placeholder(s) y not declared"),
        ({"x": {"command": "echo {}"}}, "actions.x.command", "must be named"),
        ({"x": {"command": "echo {0}"}}, "actions.x.command", "must be named"),
        ({"x": {"command": "echo {y"}}, "actions.x.command", "not a command template"),
        ({"x": {"command": "c", "parameters": {"oneOf": []}}}, "actions.x.parameters", "unsupported JSON-schema"),
        ({"x": {"command": "c", "parameters": {"type": "tuple"}}}, "actions.x.parameters", "unknown type"),
        ({"x": {"command": "c", "parameters": {"properties": {"a": {"pattern": "("}}}}},
         "actions.x.parameters.a.pattern", "not a valid regular expression"),
        ({"x": {"command": "c", "parameters": {"properties": []}}}, "actions.x.parameters.properties", "table"),
        ({"x": {"command": "c", "parameters": {"required": "a"}}}, "actions.x.parameters.required", "a list"),
    ],
)  # fmt: skip
def test_bad_actions_name_the_field(table: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        check_actions(table, "task.toml")  # type: ignore[arg-type]
    assert (info.value.file, info.value.field) == ("task.toml", field)
    assert needle in info.value.problem


@pytest.mark.parametrize(
    ("table", "field", "needle"),
    [
        ({"success": float("inf")}, "reward.success", "finite"),
        ({"command_penalty": float("nan")}, "reward.command_penalty", "finite"),
        ({"blocked_penalty": -1e9}, "reward.blocked_penalty", "greater than or equal"),
        ({"success": "1"}, "reward.success", "valid number"),
        ({"diagnostic_patterns": ["ok", "("]}, "reward.diagnostic_patterns[1]", "regular expression"),
    ],
)
def test_bad_rewards_name_the_field(table: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        check_reward(table, None)
    assert info.value.field == field and needle in info.value.problem
