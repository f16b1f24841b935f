"""What a run keeps of its task: the definition as it was, so a task page can show it and a
changed task can be told apart (and diffed) long after the directory moved on.

Contract: `task_record(task)` is a JSON-able dict, stored by the runner under the run row's
`config["task"]`:

    {"hash": "sha256 hex of the task directory", "toml": "task.toml text",
     "instruction": "instruction.md text (stripped)", "description": "...",
     "difficulty": "...", "checks": [{"id", "description", "node", "persist"}],
     "topology": {"name", "nodes": [{"name", "image", "vcpus", "memory", "forward"}],
                  "networks": [{"name", "members", "subnet"}]}}

`hash` covers every regular file under the directory (relative path and content, sorted by
path; `__pycache__` and dot-files left out), so a changed script changes it as a changed
task.toml does. `TASK_KEY` is the config key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from testbed.model.task import Task

TASK_KEY = "task"
"""Key of the task record in a run row's `config`."""


def _files(directory: Path) -> list[Path]:
    found = []
    for path in directory.rglob("*"):
        parts = path.relative_to(directory).parts
        if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts):
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(directory).as_posix())


def task_hash(directory: Path) -> str:
    """sha256 over the task directory's files (see the module contract)."""
    digest = hashlib.sha256(b"testbed-task v1\0")
    for path in _files(directory):
        rel = path.relative_to(directory).as_posix()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def task_record(task: Task) -> dict[str, Any]:
    """The run's record of `task` (see the module contract)."""
    d = task.definition
    toml_path = task.directory / "task.toml"
    topology = task.topology
    return {
        "hash": task_hash(task.directory),
        "toml": toml_path.read_text(encoding="utf-8", errors="replace"),
        "instruction": task.instruction,
        "description": d.description,
        "difficulty": d.difficulty,
        "checks": [{"id": c.id, "description": c.description, "node": c.node, "persist": c.persist} for c in d.checks],
        "topology": {
            "name": topology.name,
            "nodes": [
                {"name": n.name, "image": n.image, "vcpus": n.vcpus, "memory": n.memory, "forward": n.forward}
                for n in topology.nodes
            ],
            "networks": [{"name": n.name, "members": list(n.members), "subnet": n.subnet} for n in topology.networks],
        },
    }
