"""testbed.model.task: limits are finite and capped, the oracle has one form, a task's
files and topology stay inside it, and every declared variant is checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.model.taskload import load_task, load_task_variants
from testbed.runtime import image_catalog

REPO = Path(__file__).resolve().parents[3]
IMAGES = set(image_catalog())


def task_dir(tmp_path: Path, old: str = "", new: str = "") -> Path:
    directory = tmp_path / "web-port-conflict"
    shutil.copytree(REPO / "tasks" / "web-port-conflict", directory)
    toml = directory / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    return directory


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        ("agent_time_s = 1200", "agent_time_s = inf", "limits.agent_time_s", "finite number (got inf)"),
        ("agent_time_s = 1200", "agent_time_s = nan", "limits.agent_time_s", "finite number"),
        ("agent_time_s = 1200", "agent_time_s = 86401", "limits.agent_time_s", "less than or equal to 86400"),
        ("agent_time_s = 1200", "agent_time_s = 0", "limits.agent_time_s", "greater than 0"),
        ("agent_time_s = 1200", 'agent_time_s = "1200"', "limits.agent_time_s", "valid number (got '1200')"),
        ("command_time_s = 120", "command_time_s = 120\ncommand_idle_s = inf", "limits.command_idle_s", "finite"),
        ("command_time_s = 120", "command_time_s = 120\nmax_commands = 1.5", "limits.max_commands", "integer"),
        ("command_time_s = 120", "command_time_s = 120\nmax_commands = 100001", "limits.max_commands", "100000"),
        ("stage = 1", "stage = 5000", "setup[0].stage", "1000"),
        ("timeout_s = 120", "timeout_s = 1e400", "checks[R1].timeout_s", "finite"),
        ("ports = [80]", "ports = [80, 0]", "expected.ports[1]", "outside 1..65535"),
        ('[oracle]\nnode = "node"\n', "[oracle]\n", "oracle", "needs 'node'"),
        ('script = "solution/solve.sh"', 'script = "solution/solve.sh"\ncommand = "true"', "oracle", "exactly one"),
        ('topology = "single"', 'topology = "nowhere"', "topology", "no topology named 'nowhere'"),
        ('topology = "single"', 'topology = "/etc/topo.yaml"', "topology", "absolute path"),
        ('images = ["debian-12",', 'images = ["debian-12", "solaris",', "images", "unknown image variant 'solaris'"),
    ],
)
def test_bad_tasks_name_the_field(tmp_path: Path, old: str, new: str, field: str, needle: str) -> None:
    directory = task_dir(tmp_path, old, new)
    with pytest.raises(InputError) as info:
        load_task(directory, images=IMAGES, root=REPO)
    assert info.value.file == str(directory / "task.toml")
    assert info.value.field == field
    assert needle in info.value.problem


def test_a_topology_path_inside_the_task_is_loaded(tmp_path: Path) -> None:
    directory = task_dir(tmp_path, 'topology = "single"', 'topology = "lab/topo.yaml"')
    (directory / "lab").mkdir()
    shutil.copy(REPO / "topologies" / "single.yaml", directory / "lab" / "topo.yaml")
    task = load_task(directory, images=IMAGES, root=tmp_path / "no-root-needed")
    assert [n.name for n in task.topology.nodes] == ["node"]


def test_scripts_are_read_at_load_time(tmp_path: Path) -> None:
    directory = task_dir(tmp_path)
    task = load_task(directory, images=IMAGES, root=REPO)
    original = (directory / "setup" / "break.sh").read_text()
    (directory / "setup" / "break.sh").write_text("rm -rf /\n")
    assert task.step_command(task.definition.setup[0]) == original


def test_every_variant_is_checked(tmp_path: Path) -> None:
    directory = task_dir(
        tmp_path, 'images = ["debian-12", "debian-11", "debian-13"]', 'images = ["debian-12", "debian-12-cloud"]'
    )
    tasks = load_task_variants(directory, images=IMAGES, root=REPO)
    assert [t.topology.nodes[0].image for t in tasks] == ["debian-12", "debian-12-cloud"]
    with pytest.raises(InputError, match="beyond the host budget"):
        load_task_variants(directory, images=IMAGES, root=REPO, memory_budget_mb=128)
