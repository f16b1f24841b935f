"""testbed.runner.request.admit_task: the one check `task validate`, `run` and `launch`
share — what the model refuses and the task's safety policy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.runner.request import RunRequest, admit_task
from testbed.runtime import image_catalog

REPO = Path(__file__).resolve().parents[3]


def copy_task(tmp_path: Path, extra: str) -> Path:
    directory = tmp_path / "web-port-conflict"
    shutil.copytree(REPO / "tasks" / "web-port-conflict", directory)
    with (directory / "task.toml").open("a") as fh:
        fh.write("\n" + extra + "\n")
    return directory


def test_a_good_task_is_admitted_and_runs_with_its_policy(tmp_path: Path) -> None:
    task = admit_task(copy_task(tmp_path, "[safety]\nallow_power = true"), images=set(image_catalog()), root=REPO)
    request = RunRequest(task, "debian-12", "noop").validated()
    assert request.policy is not None and request.policy.allow_power


@pytest.mark.parametrize(
    ("extra", "field", "needle"),
    [
        ('[safety]\nblock = ["no_such_rule"]', "safety", "unknown rule 'no_such_rule'"),
        ('[safety]\nflag = ["fork_bomb"]\nallow = ["fork_bomb"]', "safety", "in both flag and allow"),
        ('[safety]\nallow_power = "sometimes"', "safety.allow_power", "valid boolean"),
        ('[actions.x]\ncommand = "echo {y}"', "actions.x.command", "not declared"),
        ("[reward]\nsuccess = nan", "reward.success", "finite"),
    ],
)
def test_what_a_run_or_an_episode_refuses_is_refused_here(tmp_path: Path, extra: str, field: str, needle: str) -> None:
    directory = copy_task(tmp_path, extra)
    with pytest.raises(InputError) as info:
        admit_task(directory, images=set(image_catalog()), root=REPO)
    assert info.value.file == str(directory / "task.toml")
    assert info.value.field == field and needle in info.value.problem
