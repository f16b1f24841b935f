"""Agent plug-ins: agents of other distributions, found through the `testbed.agents` entry points.

A distribution makes its agent available as `--agent NAME[:ARGS]` by declaring, e.g. in its
pyproject.toml:

    [project.entry-points."testbed.agents"]
    myagent = "mypackage.agent:MyAgent"

Contracts:
- `NAME` is the part of the spec before the first `:` (or `?`); the whole spec is passed on.
- The entry point names either an `Agent` subclass or a factory; either is called as
  `target(spec, task)` (`spec` the whole `--agent` text, `task` the loaded `Task`) and must
  return an `Agent`.
- An agent whose `name` is still the base class's default is named after the spec.
- Every failure is an `InputError` on `--agent` naming the plug-in: no installed entry
  point has that name, two distributions declare it, importing it fails, it is neither an
  `Agent` subclass nor callable, calling it fails, or it returns something else. An
  `InputError` the plug-in raises itself passes through unchanged.
"""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint, entry_points

from testbed.agents.base import Agent
from testbed.errors import InputError
from testbed.model.task import Task

ENTRY_POINT_GROUP = "testbed.agents"
SPEC_FIELD = "--agent"


def plugin_name(spec: str) -> str:
    """The plug-in name a spec asks for: the text before the first `:` or `?`."""
    return re.split(r"[:?]", spec, maxsplit=1)[0]


def installed_plugins() -> dict[str, list[EntryPoint]]:
    """Entry points of the `testbed.agents` group, by name."""
    found: dict[str, list[EntryPoint]] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, []).append(point)
    return found


def _entry_point(name: str, builtins: str) -> EntryPoint:
    plugins = installed_plugins()
    points = plugins.get(name, [])
    if not points:
        installed = ", ".join(sorted(plugins)) or "none"
        raise InputError(
            None, SPEC_FIELD, f"unknown agent '{name}' (use {builtins}, or an installed plug-in: {installed})"
        )
    if len({p.value for p in points}) > 1:
        targets = ", ".join(sorted(p.value for p in points))
        raise InputError(None, SPEC_FIELD, f"agent plug-in '{name}' is declared more than once: {targets}")
    return points[0]


def plugin_agent(spec: str, task: Task, builtins: str) -> Agent:
    """The agent of the installed plug-in `spec` names (see the module docstring);
    `builtins` lists the built-in specs for the message of an unknown name."""
    name = plugin_name(spec)
    point = _entry_point(name, builtins)
    try:
        target = point.load()
    except Exception as exc:  # broad on purpose: a plug-in's import may fail in any way; it is the user's input
        raise InputError(
            None, SPEC_FIELD, f"agent plug-in '{name}' ({point.value}) failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if isinstance(target, type) and not issubclass(target, Agent):
        raise InputError(
            None, SPEC_FIELD, f"agent plug-in '{name}' ({point.value}) is a class but not a testbed Agent subclass"
        )
    if not callable(target):
        raise InputError(
            None, SPEC_FIELD, f"agent plug-in '{name}' ({point.value}) is neither an Agent subclass nor a factory"
        )
    try:
        agent = target(spec, task)
    except InputError:
        raise
    except Exception as exc:  # broad on purpose: the plug-in's own constructor; its failure is about the user's input
        raise InputError(
            None, SPEC_FIELD, f"agent plug-in '{name}' ({point.value}) failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(agent, Agent):
        raise InputError(
            None,
            SPEC_FIELD,
            f"agent plug-in '{name}' ({point.value}) returned {type(agent).__name__}, not a testbed Agent",
        )
    if agent.name == Agent.name:
        agent.name = spec
    return agent
