"""The held-out split: which tasks a batch may run.

Every task is in split `train` (the default) or `heldout` (task.toml `split = "heldout"`):
held-out tasks measure what an agent was not tuned on, so nothing runs them by accident.

Rules (one home, used by `testbed launch` through `testbed.model.job` and meant for the
environment API):
- `select_split(tasks, split)` keeps the tasks of `split` (`train`, `heldout`, or `all`).
- `refuse_heldout(tasks, include_heldout, file, field)` raises `InputError` naming the
  held-out tasks unless `include_heldout` is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from testbed.errors import InputError
from testbed.model.task import Task

SplitSelection = Literal["train", "heldout", "all"]
HELDOUT = "heldout"


def in_split(task: Task, split: SplitSelection) -> bool:
    """Whether `task` belongs to the selection `split`."""
    return split == "all" or task.definition.split == split


def select_split(tasks: Iterable[Task], split: SplitSelection) -> list[Task]:
    """The tasks of `split`, in the given order."""
    return [t for t in tasks if in_split(t, split)]


def refuse_heldout(tasks: Iterable[Task], include_heldout: bool, file: Path | None, field: str) -> None:
    """`InputError` (naming `file` and `field`) when a task is held out and
    `include_heldout` is not given."""
    if include_heldout:
        return
    held = sorted(t.id for t in tasks if t.definition.split == HELDOUT)
    if held:
        raise InputError(
            file,
            field,
            f"held-out task(s) {', '.join(held)}: run them only on purpose "
            "(--include-heldout, or include_heldout: true in the job file)",
        )
