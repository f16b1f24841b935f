"""Bounded actions and reward shaping of the environment API (pure: no I/O).

A task may declare named actions (`[actions.NAME]`) and tune the reward (`[reward]`) in
task.toml; their format and validation are `testbed.model.actions` (so `task validate`
refuses what an episode would). With actions, the environment accepts only
`{"action": NAME, "parameters": {...}}` steps: `ActionSpace.resolve` checks the parameters
against the action's schema (`validate_value`) and fills the command template with
shell-quoted values.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.analysis.command import effects_of
from testbed.errors import InputError
from testbed.model.actions import DEFAULT_DIAGNOSTIC_PATTERNS, ActionDef, RewardConfig, check_actions, check_reward
from testbed.model.actions import SCHEMA_TYPES as _TYPES

__all__ = ["DEFAULT_DIAGNOSTIC_PATTERNS", "ActionDef", "ActionSpace", "RewardConfig", "is_diagnostic", "reward_config",
           "validate_value"]  # fmt: skip


def validate_value(value: Any, schema: dict[str, Any], where: str = "parameters") -> list[str]:
    """Problems of `value` against `schema` (empty when valid)."""
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return [f"{where}: expected {kind}, got {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: must be one of {schema['enum']!r}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(f"{where}: does not match /{schema['pattern']}/")
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{where}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where}: longer than {schema['maxLength']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where}: less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where}: greater than {schema['maximum']}")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                problems.append(f"{where}: missing required '{name}'")
        for name, item in value.items():
            if name in props:
                problems += validate_value(item, props[name], f"{where}.{name}")
            elif not schema.get("additionalProperties", False):
                problems.append(f"{where}: unexpected '{name}'")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += validate_value(item, schema["items"], f"{where}[{i}]")
    return problems


@dataclass
class ActionSpace:
    """A task's bounded actions (empty: free-form commands)."""

    actions: dict[str, ActionDef] = field(default_factory=dict)

    @classmethod
    def from_task(cls, raw: dict[str, dict[str, Any]], nodes: list[str], toml_path: Path | None) -> ActionSpace:
        """Validate `[actions.*]` tables (`testbed.model.actions`); every problem is an `InputError`."""
        out = check_actions(raw, toml_path)
        for name, action in out.items():
            if action.node is not None and action.node not in nodes:
                raise InputError(toml_path, f"actions.{name}.node", f"undefined node '{action.node}'")
        return cls(out)

    @property
    def bounded(self) -> bool:
        return bool(self.actions)

    def resolve(self, name: Any, parameters: Any, nodes: list[str]) -> tuple[str, str]:
        """(node, command) for a bounded action; `ValueError` saying what is wrong otherwise."""
        if not isinstance(name, str) or name not in self.actions:
            raise ValueError(f"unknown action {name!r} (actions: {', '.join(sorted(self.actions))})")
        action = self.actions[name]
        params = {} if parameters is None else parameters
        problems = validate_value(params, {"type": "object", **action.parameters})
        if problems:
            raise ValueError("; ".join(problems))
        node = action.node or params.get("node") or nodes[0]
        if node not in nodes:
            raise ValueError(f"unknown node {node!r} (nodes: {', '.join(nodes)})")
        quoted = {
            k: shlex.quote(v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in params.items()
        }
        return node, action.command.format(**quoted)

    def schema(self) -> dict[str, Any]:
        """JSON schema of one bounded step (`oneOf` the actions)."""
        return {
            "oneOf": [
                {
                    "type": "object",
                    "description": a.description,
                    "properties": {"action": {"const": n}, "parameters": a.parameters},
                    "required": ["action"],
                }
                for n, a in sorted(self.actions.items())
            ]
        }


def reward_config(raw: dict[str, Any], toml_path: Path | None) -> RewardConfig:
    """Validate a task's `[reward]` table (`testbed.model.actions`; `InputError` on a problem)."""
    return check_reward(raw, toml_path)


def is_diagnostic(command: str, patterns: list[re.Pattern[str]]) -> bool:
    """True when any simple command `command` runs starts with a diagnostic command.

    The command is split by the one shell parser (`testbed.analysis.command`): wrappers
    (`sudo -u x`, `timeout 5`, `bash -c '…'`, `$(…)`) are looked through and quoted text is
    data; each simple command is matched as its argv re-joined with shell quoting."""
    for cmd in effects_of(command).parsed.commands:
        if cmd.argv and any(p.match(shlex.join(cmd.argv)) for p in patterns):
            return True
    return False
