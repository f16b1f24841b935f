"""`testbed.model.task_record`: what a run keeps of its task, and the task's hash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testbed.model.task_record import task_hash, task_record
from testbed.model.taskload import load_task
from tests.conftest import ROOT


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "web-port-conflict"
    shutil.copytree(ROOT / "tasks" / "web-port-conflict", directory)
    return directory


def test_record_holds_the_definition_as_it_is(task_dir: Path) -> None:
    task = load_task(task_dir, root=ROOT)
    record = task_record(task)
    assert json.loads(json.dumps(record)) == record  # JSON-able as stored
    assert record["toml"] == (task_dir / "task.toml").read_text()
    assert record["instruction"] == task.instruction and record["difficulty"] == "easy"
    assert [c["id"] for c in record["checks"]] == ["R1", "R2"] and record["checks"][0]["persist"] is True
    assert [n["name"] for n in record["topology"]["nodes"]] == ["node"]
    assert record["topology"]["nodes"][0]["image"] == "debian-12"
    assert record["hash"] == task_hash(task_dir) and len(record["hash"]) == 64


def test_hash_follows_every_file_of_the_directory(task_dir: Path) -> None:
    first = task_hash(task_dir)
    (task_dir / "__pycache__").mkdir()
    (task_dir / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (task_dir / ".notes").write_text("editor state")
    assert task_hash(task_dir) == first  # caches and dot-files are not the task
    script = task_dir / "setup" / "break.sh"
    script.write_text(script.read_text() + "\n# changed\n")
    second = task_hash(task_dir)
    assert second != first
    (task_dir / "setup" / "break.sh").rename(task_dir / "setup" / "moved.sh")
    assert task_hash(task_dir) not in (first, second)  # a rename changes it too
