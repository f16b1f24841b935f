"""The starter tasks under tasks/ load, are complete and their shell text is syntactically valid.

This is the static half of task validation (the dynamic half — oracle passes, do-nothing
fails — needs VMs). Every task directory must load with the real image catalog names, have
an oracle, reference only non-empty scripts that exist, use regexes that compile, and all
its shell (scripts, inline setup/oracle commands and check commands) must pass `bash -n`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.model.task import Task
from testbed.model.taskload import discover_tasks, instantiate, load_task
from testbed.runtime import image_catalog

ROOT = Path(__file__).resolve().parents[3]
IMAGES = set(image_catalog())
STARTER = {"web-port-conflict", "disk-full", "config-permissions", "firewall-persist", "reverse-proxy"}
TASK_DIRS = discover_tasks(ROOT)

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _load(directory: Path) -> Task:
    """The task's canonical scenario (seed 0: templates rendered)."""
    return instantiate(load_task(directory, images=IMAGES, root=ROOT), 0)


def _bash_n(text: str, what: str) -> None:
    proc = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, f"{what}: bash -n failed: {proc.stderr.strip()}"


def test_at_least_five_tasks_including_the_starters() -> None:
    names = {d.name for d in TASK_DIRS}
    assert len(names) >= 5
    assert names >= STARTER, f"missing starter tasks: {sorted(STARTER - names)}"


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_task_loads_with_oracle(directory: Path) -> None:
    task = _load(directory)
    assert task.id == directory.name
    assert task.definition.oracle is not None, "every task needs an oracle solution"
    assert task.definition.oracle.resolved_steps(), "the oracle has no steps"
    assert task.instruction.strip()
    assert task.definition.checks
    assert 0 < task.definition.limits.command_time_s <= task.definition.limits.agent_time_s


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_check_regexes_compile(directory: Path) -> None:
    task = _load(directory)
    for check in task.definition.checks:
        if check.expect_output is not None:
            re.compile(check.expect_output, re.MULTILINE)
        assert check.primitive is not None or check.effective_exit is not None or check.expect_output is not None


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_referenced_scripts_exist_and_are_not_empty(directory: Path) -> None:
    task = _load(directory)
    d = task.definition
    steps = list(d.setup)
    assert d.oracle is not None
    steps += d.oracle.resolved_steps()
    for step in steps:
        if step.script is not None:
            path = directory / step.script
            assert path.is_file(), f"{path} is missing"
            assert path.read_text(encoding="utf-8").strip(), f"{path} is empty"


@needs_bash
@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_shell_syntax(directory: Path) -> None:
    task = _load(directory)
    for script in sorted(directory.rglob("*.sh")):
        _bash_n(task.read_script(str(script.relative_to(directory))), str(script.relative_to(ROOT)))
    d = task.definition
    assert d.oracle is not None
    for step in [*d.setup, *d.oracle.resolved_steps()]:
        _bash_n(task.step_command(step), f"{task.id}: step on {step.node}")
    for check in d.checks:
        if check.command is not None:  # primitives: tests/unit/model/test_task_library.py
            _bash_n(check.command, f"{task.id}: check {check.id}")


@pytest.mark.parametrize("directory", TASK_DIRS, ids=lambda d: d.name)
def test_scripts_are_strict(directory: Path) -> None:
    """Setup and solution scripts stop at the first real failure (`set -eu` or stricter)."""
    for script in sorted(directory.rglob("*.sh")):
        text = script.read_text(encoding="utf-8")
        assert re.search(r"^set -[a-z]*e[a-z]*u|^set -[a-z]*u[a-z]*e", text, re.MULTILINE), (
            f"{script.relative_to(ROOT)} lacks 'set -eu'"
        )
