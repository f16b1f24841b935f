"""Bounded actions and reward shaping of the environment API (pure: no I/O).

A task may declare named actions in task.toml; the environment then accepts only
`{"action": NAME, "parameters": {...}}` steps for it:

    [actions.restart_unit]
    description = "restart a systemd unit"
    command = "systemctl restart {unit}"      # {name} placeholders; values are shell-quoted
    node = "node"                             # optional: else parameter `node`, else the first node
    parameters = { type = "object", properties = { unit = { type = "string", pattern = "^[a-z0-9@._-]+$" } },
                   required = ["unit"] }

and may tune the reward:

    [reward]
    success = 1.0              # added at the end when every check passed
    diagnostic_bonus = 0.1     # the first diagnostic command of an episode
    command_penalty = -0.01    # every command that reaches the safety policy
    blocked_penalty = -0.5     # a blocked command (instead of command_penalty) ...
    end_on_blocked = true      # ... which ends the episode
    diagnostic_patterns = []   # regexes (matched at the start of each simple command) replacing the defaults

Parameters are validated with a JSON-schema subset: type (object, string, integer, number,
boolean, array), properties, required, additionalProperties (default false), enum, const,
pattern, minLength, maxLength, minimum, maximum, items. Anything else in a schema is an
`InputError` when the task is loaded for an episode, so a schema never silently validates less
than it says.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from testbed.analysis.command import effects_of
from testbed.errors import InputError

DEFAULT_DIAGNOSTIC_PATTERNS: tuple[str, ...] = (
    r"systemctl\s+(status|is-active|is-enabled|is-failed|list-units|list-unit-files|show|cat)\b",
    r"journalctl\b",
    r"(ss|netstat|lsof|ps|pgrep|top|free|df|du|uptime|dmesg|lsblk|mount|findmnt|uname|id|who|w)\b",
    r"ip\s+(-\w+\s+)*(a|addr|address|r|route|l|link|neigh|rule)\b",
    r"(cat|less|tail|head|grep|ls|stat|find|file)\b",
    r"(curl|wget|ping|dig|nslookup|host|getent|resolvectl|traceroute|tracepath|nc)\b",
    r"(nginx\s+-t|apachectl\s+(-t|configtest)|sshd\s+-t|named-checkconf|visudo\s+-c)\b",
    r"(dpkg\s+(-l|-s|--audit)|apt\s+list|apt-cache|rpm\s+-q|systemd-analyze)\b",
)

_SCHEMA_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "items",
        "description",
        "title",
        "default",
    }
)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionDef(_Strict):
    """One named action: a command template and the JSON schema of its parameters."""

    description: str = ""
    command: str
    node: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class RewardConfig(_Strict):
    """Per-task reward shaping (defaults: sysadmin-game's)."""

    success: float = 1.0
    diagnostic_bonus: float = 0.1
    command_penalty: float = -0.01
    blocked_penalty: float = -0.5
    end_on_blocked: bool = True
    diagnostic_patterns: list[str] = []

    def diagnostic_res(self) -> list[re.Pattern[str]]:
        return [re.compile(p) for p in (self.diagnostic_patterns or DEFAULT_DIAGNOSTIC_PATTERNS)]


def check_schema(schema: Any, where: str) -> None:
    """Raise `ValueError` naming `where` when `schema` uses what the validator does not know."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be a table/object")
    unknown = set(schema) - _SCHEMA_KEYS
    if unknown:
        raise ValueError(f"{where}: unsupported JSON-schema keyword(s) {', '.join(sorted(unknown))}")
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        raise ValueError(f"{where}: unknown type {kind!r}")
    if "pattern" in schema:
        re.compile(schema["pattern"])
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


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
        """Validate `[actions.*]` tables; every problem is an `InputError`."""
        out: dict[str, ActionDef] = {}
        for name, table in raw.items():
            try:
                action = ActionDef.model_validate(table)
                check_schema(action.parameters, f"actions.{name}.parameters")
            except (ValidationError, ValueError, re.error) as exc:
                raise InputError(toml_path, f"actions.{name}", str(exc)) from exc
            if action.node is not None and action.node not in nodes:
                raise InputError(toml_path, f"actions.{name}.node", f"undefined node '{action.node}'")
            fields = {f for _, f, _, _ in string.Formatter().parse(action.command) if f}
            declared = set((action.parameters.get("properties") or {}).keys())
            if fields - declared:
                raise InputError(
                    toml_path,
                    f"actions.{name}.command",
                    f"placeholder(s) {', '.join(sorted(fields - declared))} not declared in parameters",
                )
            out[name] = action
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
    """Validate a task's `[reward]` table (`InputError` on a problem)."""
    try:
        config = RewardConfig.model_validate(raw)
        config.diagnostic_res()
    except (ValidationError, re.error) as exc:
        raise InputError(toml_path, "reward", str(exc)) from exc
    return config


def is_diagnostic(command: str, patterns: list[re.Pattern[str]]) -> bool:
    """True when any simple command `command` runs starts with a diagnostic command.

    The command is split by the one shell parser (`testbed.analysis.command`): wrappers
    (`sudo -u x`, `timeout 5`, `bash -c '…'`, `$(…)`) are looked through and quoted text is
    data; each simple command is matched as its argv re-joined with shell quoting."""
    for cmd in effects_of(command).parsed.commands:
        if cmd.argv and any(p.match(shlex.join(cmd.argv)) for p in patterns):
            return True
    return False
