"""The task list a trainer reads (`GET /tasks`): which tasks exist and in which split.

Contracts:

- One entry per `tasks/<id>/task.toml` that loads: id, split, category, difficulty, tags,
  description, images, nodes, the limits, whether the task takes named actions only, and
  its instruction (so a trainer can build prompts before any reset).
- `split` is the task's `split` field (`train` or `heldout`) when the task format has one,
  else `train`.
- A task.toml that does not load is left out of `tasks` and named, with its problem, in
  `problems` (never an error of the route).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.errors import InputError
from testbed.model.task import Task

DEFAULT_SPLIT = "train"
SPLITS = ("train", "heldout")


def split_of(task: Task) -> str:
    """The task's split (`train` unless the task says otherwise)."""
    split = getattr(task.definition, "split", None)
    return str(split) if split else DEFAULT_SPLIT


def task_entry(task: Task) -> dict[str, Any]:
    """What the task list says of one task."""
    d = task.definition
    return {
        "id": task.id,
        "split": split_of(task),
        "category": d.category,
        "difficulty": d.difficulty,
        "tags": list(d.tags),
        "description": d.description,
        "images": list(d.images),
        "nodes": [n.name for n in task.topology.nodes],
        "limits": {
            "max_commands": d.limits.max_commands,
            "agent_time_s": d.limits.agent_time_s,
            "command_time_s": d.limits.command_time_s,
        },
        "bounded_actions": bool(d.actions),
        "instruction": task.instruction,
    }


def task_catalog(root: Path, load: Callable[[str], Task], split: str | None = None) -> dict[str, Any]:
    """`{"tasks": [...], "splits": {split: count}, "problems": [...]}` for `root/tasks`,
    optionally only the tasks of `split`."""
    tasks: list[dict[str, Any]] = []
    problems: list[dict[str, str]] = []
    directory = root / "tasks"
    for toml in sorted(directory.glob("*/task.toml")) if directory.is_dir() else []:
        try:
            entry = task_entry(load(toml.parent.name))
        except (InputError, ValueError, OSError) as exc:
            problems.append({"task": toml.parent.name, "problem": str(exc)})
            continue
        if split is None or entry["split"] == split:
            tasks.append(entry)
    counts = {s: sum(1 for t in tasks if t["split"] == s) for s in SPLITS}
    return {"tasks": tasks, "splits": counts, "problems": problems}
