"""Task validation: every problem names the file, the field and the reason (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.model.taskload import load_task

IMAGES = {"debian-12"}

GOOD = """
id = "demo-task"
category = "services"
topology = "single"
images = ["debian-12"]
[[setup]]
node = "node"
script = "setup/break.sh"
[[checks]]
id = "R1"
description = "works"
node = "node"
command = "true"
[oracle]
node = "node"
command = "true"
"""


def make_task(tmp_path: Path, toml: str = GOOD, name: str = "demo-task", instruction: str = "Fix it.") -> Path:
    directory = tmp_path / name
    (directory / "setup").mkdir(parents=True)
    (directory / "setup" / "break.sh").write_text("#!/bin/sh\ntrue\n")
    (directory / "task.toml").write_text(toml)
    if instruction is not None:
        (directory / "instruction.md").write_text(instruction)
    return directory


def test_good_task_loads(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path), images=IMAGES)
    assert task.id == "demo-task" and task.topology.nodes[0].image == "debian-12"
    assert task.definition.limits.agent_time_s == 35 * 60
    assert task.definition.limits.command_time_s == 120
    assert task.step_command(task.definition.setup[0]).startswith("#!/bin/sh")


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        ('id = "demo-task"', 'id = "other"', "id", "does not match the directory name"),
        ('images = ["debian-12"]', 'images = ["solaris"]', None, "unknown image variant 'solaris'"),
        ('node = "node"\nscript', 'node = "ghost"\nscript', "setup[0].node", "undefined node 'ghost'"),
        ('script = "setup/break.sh"', 'script = "setup/missing.sh"', "setup[0].script", "no such file"),
        ('script = "setup/break.sh"', 'script = "setup/break.sh"\ncommand = "x"', "setup[0]", "exactly one"),
        (
            'command = "true"\n[oracle]',
            'command = "true"\nexpect_output = "("\n[oracle]',
            "checks[R1].expect_output",
            "not a valid regular expression",
        ),
        ('topology = "single"', 'topology = "nowhere"', "topology", "no topology named"),
        ('category = "services"', 'category = "services"\nbogus = 1', "bogus", "unknown field"),
        ("[[checks]]", "[limits]\nagent_time_s = -1\n[[checks]]", "limits.agent_time_s", "greater than 0"),
    ],
)
def test_bad_task_names_file_and_field(tmp_path: Path, old: str, new: str, field: str | None, needle: str) -> None:
    assert old in GOOD
    directory = make_task(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InputError) as info:
        load_task(directory, images=IMAGES)
    assert needle in info.value.problem
    assert info.value.file and info.value.file.endswith("task.toml")
    if field:
        assert info.value.field == field


def test_missing_instruction_and_bad_toml(tmp_path: Path) -> None:
    directory = make_task(tmp_path, instruction=None)
    with pytest.raises(InputError, match="instruction"):
        load_task(directory, images=IMAGES)
    broken = make_task(tmp_path, "id = [", name="broken")
    with pytest.raises(InputError, match="invalid TOML"):
        load_task(broken, images=IMAGES)


def test_cli_validate_and_run_exit_2_before_creating_anything(tmp_path: Path, testbed_home: Path) -> None:
    directory = make_task(tmp_path, GOOD.replace('node = "node"\nscript', 'node = "ghost"\nscript', 1))
    for argv in (["task", "validate", str(directory)], ["run", str(directory), "--agent", "noop"]):
        proc = subprocess.run([sys.executable, "-m", "testbed.cli", *argv], capture_output=True, text=True, check=False)
        assert proc.returncode == 2, proc.stderr
        assert "task.toml" in proc.stderr and "ghost" in proc.stderr
    assert not (testbed_home / "labs").exists()
    assert not (testbed_home / "testbed.db").exists()
    good = make_task(tmp_path, name="demo-task2", toml=GOOD.replace("demo-task", "demo-task2"))
    proc = subprocess.run(
        [sys.executable, "-m", "testbed.cli", "run", str(good), "--agent", "wizard"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "unknown agent 'wizard'" in proc.stderr
