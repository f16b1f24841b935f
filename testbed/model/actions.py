"""The `[actions.NAME]` and `[reward]` tables of a task (the environment API's bounded actions
and reward shaping; `testbed.server.envapi.actions` uses them). Pure: no I/O.

    [actions.restart_unit]
    description = "restart a systemd unit"
    command = "systemctl restart {unit}"      # {name} placeholders; values are shell-quoted
    node = "node"                             # optional: else parameter `node`, else the first node
    parameters = { type = "object", properties = { unit = { type = "string", pattern = "^[a-z0-9@._-]+$" } },
                   required = ["unit"] }

    [reward]
    success = 1.0              # added at the end when every check passed
    diagnostic_bonus = 0.1     # the first diagnostic command of an episode
    command_penalty = -0.01    # every command that reaches the safety policy
    blocked_penalty = -0.5     # a blocked command (instead of command_penalty) ...
    end_on_blocked = true      # ... which ends the episode
    diagnostic_patterns = []   # regexes (matched at the start of each simple command) replacing the defaults

Parameters use a JSON-schema subset: type (object, string, integer, number, boolean, array),
properties, required, additionalProperties (default false), enum, const, pattern,
minLength, maxLength, minimum, maximum, items (and description, title, default).

Contract: `check_actions` and `check_reward` raise `InputError(file, field, problem)` on
anything else — an unknown keyword or type, a bad regex, a placeholder not declared in
`parameters`, a reward that is not a finite number — so a task that loads is one every
consumer (`task validate`, `run`, `launch`, `serve`) accepts alike.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from testbed.errors import InputError
from testbed.model.fields import Number
from testbed.model.loading import validate

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

SCHEMA_KEYS = frozenset(
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
SCHEMA_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}
"""The JSON-schema types a parameter may have, and the Python types that satisfy each."""

REWARD_BOUND = 1_000_000.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionDef(_Strict):
    """One named action: a command template and the JSON schema of its parameters."""

    description: str = ""
    command: str
    node: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class RewardConfig(_Strict):
    """Per-task reward shaping (defaults: sysadmin-game's); every number finite and bounded."""

    success: Number = Field(default=1.0, ge=-REWARD_BOUND, le=REWARD_BOUND)
    diagnostic_bonus: Number = Field(default=0.1, ge=-REWARD_BOUND, le=REWARD_BOUND)
    command_penalty: Number = Field(default=-0.01, ge=-REWARD_BOUND, le=REWARD_BOUND)
    blocked_penalty: Number = Field(default=-0.5, ge=-REWARD_BOUND, le=REWARD_BOUND)
    end_on_blocked: bool = True
    diagnostic_patterns: list[str] = []

    def diagnostic_res(self) -> list[re.Pattern[str]]:
        return [re.compile(p) for p in (self.diagnostic_patterns or DEFAULT_DIAGNOSTIC_PATTERNS)]


def check_schema(schema: Any, where: str) -> None:
    """Raise `ValueError` naming `where` when `schema` uses what the validator does not know."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be a table/object")
    unknown = set(schema) - SCHEMA_KEYS
    if unknown:
        raise ValueError(f"{where}: unsupported JSON-schema keyword(s) {', '.join(sorted(unknown))}")
    kind = schema.get("type")
    if kind is not None and kind not in SCHEMA_TYPES:
        raise ValueError(f"{where}: unknown type {kind!r}")
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise ValueError(f"{where}.pattern: must be a string")
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            raise ValueError(f"{where}.pattern: not a valid regular expression: {exc}") from None
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{where}.properties: must be a table/object")
    for key in ("required", "enum"):
        if key in schema and not isinstance(schema[key], list):
            raise ValueError(f"{where}.{key}: must be a list")
    for name, sub in properties.items():
        check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


def check_action(name: str, table: Any, toml_path: Path | None) -> ActionDef:
    """One `[actions.NAME]` table, validated (see the module contract)."""
    where = f"actions.{name}"
    if not isinstance(table, dict):
        raise InputError(toml_path, where, "must be a table")
    action = validate(ActionDef, table, toml_path, prefix=where)
    try:
        check_schema(action.parameters, "parameters")
    except ValueError as exc:
        at, _, problem = str(exc).partition(": ")
        raise InputError(toml_path, f"{where}.{at}", problem) from None
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(action.command) if f is not None]
    except ValueError as exc:
        raise InputError(toml_path, f"{where}.command", f"not a command template: {exc}") from None
    if any(not n or n.isdecimal() for n in names):
        raise InputError(toml_path, f"{where}.command", "placeholders must be named ({unit}), not {} or {0}")
    fields = set(names)
    declared = set((action.parameters.get("properties") or {}).keys())
    if fields - declared:
        raise InputError(
            toml_path,
            f"{where}.command",
            f"placeholder(s) {', '.join(sorted(fields - declared))} not declared in parameters",
        )
    return action


def check_actions(raw: dict[str, Any], toml_path: Path | None) -> dict[str, ActionDef]:
    """Every `[actions.*]` table, validated; node names are checked against the topology by
    `testbed.model.taskload.load_task`."""
    return {name: check_action(name, table, toml_path) for name, table in raw.items()}


def check_reward(raw: dict[str, Any], toml_path: Path | None) -> RewardConfig:
    """A task's `[reward]` table, validated (see the module contract)."""
    config = validate(RewardConfig, raw, toml_path, prefix="reward")
    for index, pattern in enumerate(config.diagnostic_patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InputError(
                toml_path, f"reward.diagnostic_patterns[{index}]", f"not a valid regular expression: {exc}"
            ) from None
    return config
