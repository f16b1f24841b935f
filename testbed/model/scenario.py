"""A task's scenario for a seed: its `[parameters]` drawn and put into its templates.

Contracts:
- `render_definition(definition, values, toml_path)` is the definition with every string
  rendered (`testbed.model.parameters.render_value`) except `parameters` and `topology`,
  validated again as the same model; a value a field cannot take is an `InputError` naming
  task.toml and the field (`checks[R1].port.port: ...`).
- `template_problem(data, texts, declared)` finds the first template that names no
  declared value, or a template inside `topology` (topologies are not templated): the
  (field, problem) to report, or None.
- `scenario_record(seed, values)` is what a run stores under `runs.config` (`seed`,
  `parameters`), and `scenario_tag` the part of a saved-state key that tells scenarios of
  one task apart ("" for a task without parameters, whose scenario never varies).
- Pure apart from reading nothing: scripts and instruction text are passed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from testbed.model.loading import validate
from testbed.model.parameters import Value, names_in, render_value, strings_in

M = TypeVar("M", bound=BaseModel)

DEFAULT_SEED = 0
"""The seed of a run that names none: the task's canonical scenario."""

UNRENDERED = ("parameters", "topology")


def render_definition(definition: M, values: Mapping[str, Value], toml_path: Path) -> M:
    """See the module contract."""
    data = definition.model_dump(mode="python")
    rendered = {k: (v if k in UNRENDERED else render_value(v, values)) for k, v in data.items()}
    return validate(type(definition), rendered, toml_path)


def template_problem(data: Mapping[str, Any], texts: Mapping[str, str], declared: set[str]) -> tuple[str, str] | None:
    """See the module contract. `data` is task.toml as parsed; `texts` maps a label
    (`instruction.md`, `setup/break.sh`) to its text."""
    known = ", ".join(sorted(declared)) or "none: the task has no [parameters]"
    for key, value in data.items():
        if key == "parameters":
            continue
        for field, text in strings_in(value, key):
            names = names_in(text)
            if names and key == "topology":
                return field, "templates are not allowed in the topology"
            unknown = sorted(names - declared)
            if unknown:
                return field, f"template {{{{ {unknown[0]} }}}} names no parameter (declared: {known})"
    for label, text in texts.items():
        unknown = sorted(names_in(text) - declared)
        if unknown:
            return label, f"template {{{{ {unknown[0]} }}}} names no parameter (declared: {known})"
    return None


def scenario_record(seed: int, values: Mapping[str, Value]) -> dict[str, Any]:
    """The `runs.config` entries of a scenario."""
    return {"seed": seed, "parameters": dict(values)}


def scenario_tag(seed: int | None, values: Mapping[str, Value] | None) -> str:
    """A short tag that differs between the scenarios of a parameterised task ("" when the
    task has no parameters)."""
    if not values:
        return ""
    text = json.dumps({"seed": seed, "values": dict(values)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
