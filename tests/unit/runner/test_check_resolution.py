"""How the runner resolves checks: a primitive becomes the script for its node's image
(systemd or OpenRC), exit statuses map to passed/failed/indeterminate, unreachable nodes
stay indeterminate, `unchanged` is judged from the run's snapshots; a run's scenario (seed,
parameters) reaches setup, the agent and the checks and is recorded; the warm-start key
names the scenario. Runs go through the real Runner on a fake lab whose nodes execute
commands on this machine."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select

from testbed.db.engine import open_database
from testbed.db.models import Check as CheckRow
from testbed.db.models import Run
from testbed.db.recorder import RunRecorder
from testbed.guest.result import ExecResult
from testbed.model.task import Check, Expected
from testbed.model.taskload import load_task
from testbed.model.vocab import SnapshotPoint
from testbed.probes.script import PROBES
from testbed.runner import warm
from testbed.runner.context import RunContext
from testbed.runner.journal import RunJournal
from testbed.runner.recording import CommandRecorder
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runner.unchanged import unchanged_judge
from testbed.runner.verify import judge, run_check
from testbed.runtime import image_catalog
from testbed.testing.demo_snapshots import base_snapshot
from testbed.testing.nodes import FakeSession, OneLogin
from tests.unit.runner.test_lifecycle import fake_snapshot_all, runtime

ROOT = Path(__file__).resolve().parents[3]
CATALOG = image_catalog()


class LocalNode(OneLogin):
    """A lab node whose commands run on this machine (bash -c), with the image it claims."""

    hypervisor = None

    def __init__(self, name: str, image: str, env: dict[str, str] | None = None) -> None:
        self.name, self.image, self.access = name, CATALOG[image], "ssh"
        self.domain, self.mgmt_ip, self.console_log = f"fake-{name}", "10.9.0.2", Path("/nonexistent")
        self.env = env or {}
        self.executed: list[str] = []
        self.session = FakeSession()

    async def exec(self, command: str, *, timeout: float | None = 120.0, **_kw: Any) -> ExecResult:
        self.executed.append(command)
        env = {**self.env, "PATH": "/usr/bin:/bin"}
        proc = await asyncio.to_thread(
            subprocess.run, ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=timeout
        )
        return ExecResult(command, proc.returncode, proc.stdout, proc.stderr, datetime.now(UTC), 1)


def recorder(tmp_path: Path) -> CommandRecorder:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    return CommandRecorder(RunRecorder.create(db, task_id="t", agent="harness"))


def service_check() -> Check:
    return Check(id="R1", description="nginx", node="node", service={"name": "nginx", "wait_s": 0})  # type: ignore[arg-type]


@pytest.mark.parametrize(("image", "tool"), [("debian-12", "systemctl"), ("debian-12-openrc", "rc-service")])
async def test_a_primitive_runs_the_script_of_its_nodes_image(tmp_path: Path, image: str, tool: str) -> None:
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for name in ("systemctl", "rc-service", "rc-update"):
        (fakes / name).write_text("#!/bin/sh\necho active\nexit 0\n")
        (fakes / name).chmod(0o755)
    for name in ("tail", "date", "tr", "awk", "sleep"):
        (fakes / name).symlink_to(shutil.which(name) or name)
    (tmp_path / "root/run/systemd/system").mkdir(parents=True)
    node = LocalNode("node", image, {"TESTBED_CHECK_PATH": str(fakes), "TESTBED_CHECK_ROOT": str(tmp_path / "root")})
    result = await run_check(service_check(), node, recorder(tmp_path), "after_agent")  # type: ignore[arg-type]
    assert result.status == "passed", result.detail
    assert f"{tool} " in node.executed[0] and ("rc-service" in node.executed[0]) == (tool == "rc-service")
    assert result.detail["primitive"] == {"kind": "service", "name": "nginx", "active": True, "wait_s": 0.0}
    assert result.detail["command"] == node.executed[0]


async def test_a_primitive_that_cannot_decide_is_indeterminate(tmp_path: Path) -> None:
    node = LocalNode("node", "debian-12", {"TESTBED_CHECK_PATH": str(tmp_path)})  # no systemctl at all
    result = await run_check(service_check(), node, recorder(tmp_path), "after_agent")  # type: ignore[arg-type]
    assert result.status == "indeterminate" and "systemctl not found" in result.detail["reason"]


async def test_an_unreachable_node_is_indeterminate_for_primitives_too(tmp_path: Path) -> None:
    node = LocalNode("node", "debian-12")
    node.access = "none"
    result = await run_check(service_check(), node, recorder(tmp_path), "after_agent")  # type: ignore[arg-type]
    assert result.status == "indeterminate" and "unreachable" in result.detail["reason"]
    assert node.executed == []


def test_indeterminate_exit_of_command_checks() -> None:
    check = Check(id="R1", description="d", node="n", command="x", expect_output="^blocked$", indeterminate_exit=3)
    assert judge(check, 3, "web unreachable on 80: cannot judge\n", False) == (
        "indeterminate",
        "the check exited 3 (cannot decide): web unreachable on 80: cannot judge",
    )
    assert judge(check, 1, "open\n", False)[0] == "failed"
    assert judge(check, 0, "blocked\n", False)[0] == "passed"


def full_snapshot(**changes: Any) -> dict[str, Any]:
    snap: dict[str, Any] = {p: {} for p in PROBES}
    snap.update(base_snapshot("debian-12", "node"))
    snap.update(changes)
    return snap


async def test_unchanged_from_the_runs_snapshots() -> None:
    node = LocalNode("node", "debian-12")
    journal = RunJournal()
    journal.add_snapshot("node", SnapshotPoint.AFTER_SETUP, full_snapshot())
    judge_unchanged = unchanged_judge(journal, Expected(paths=["/root/report.txt"]))
    assert (await judge_unchanged(node))[0] == "indeterminate"  # no after_agent snapshot yet
    journal.add_snapshot("node", SnapshotPoint.AFTER_AGENT, full_snapshot())
    status, detail = await judge_unchanged(node)
    assert status == "passed", detail
    tmp = {
        "entries": {
            "/tmp": {"type": "dir", "mode": "1777", "owner": "root", "group": "root", "size": 4096},
            "/tmp/fix.sh": {"type": "file", "mode": "0644", "owner": "root", "group": "root", "size": 9},
        }
    }
    journal.add_snapshot("node", SnapshotPoint.AFTER_AGENT, full_snapshot(tmp_files=tmp))  # fmt: skip
    status, detail = await judge_unchanged(node)
    assert status == "failed" and "/tmp/fix.sh" in detail["reason"], detail


TASK = """
id = "seeded-task"
category = "services"
topology = "single"
images = ["debian-12", "debian-13"]

[parameters]
port = {{ type = "port", min = 41000, max = 41999 }}
name = {{ type = "name", pattern = "svc[a-z]{{3}}" }}

[[setup]]
node = "node"
command = "mkdir -p {work} && echo 'listen {{{{ port }}}}' > {work}/{{{{ name }}}}.conf"

[[checks]]
id = "R1"
description = "the config names the drawn port and the fix marker"
node = "node"
file = {{ path = "{work}/{{{{ name }}}}.conf", contains = "^listen {{{{ port }}}}$" }}

[[checks]]
id = "R2"
description = "fixed"
node = "node"
file = {{ path = "{work}/{{{{ name }}}}.fixed", contains = "^{{{{ port }}}}$" }}

[oracle]
node = "node"
command = "echo {{{{ port }}}} > {work}/{{{{ name }}}}.fixed"
"""


@pytest.fixture
def seeded_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("testbed.runner.steps.snapshot_all", fake_snapshot_all)
    root = tmp_path / "root"
    (root / "topologies").mkdir(parents=True)
    shutil.copy(ROOT / "topologies" / "single.yaml", root / "topologies")
    directory = root / "tasks" / "seeded-task"
    directory.mkdir(parents=True)
    (directory / "task.toml").write_text(TASK.format(work=tmp_path / "work"))
    (directory / "instruction.md").write_text("Service {{ name }} must listen on {{ port }}.\n")
    return directory


class LocalLab:
    def __init__(self) -> None:
        self.nodes: dict[str, LocalNode] = {}

    async def up(self) -> None:
        self.nodes = {"node": LocalNode("node", "debian-12")}

    async def down(self) -> None:
        pass


async def _run(task_dir: Path, tmp_path: Path, agent: str, seed: int | None) -> tuple[Any, Run, list[CheckRow]]:
    task = load_task(task_dir, images=set(CATALOG), root=task_dir.parents[1])
    request = RunRequest(task, "debian-12", agent, seed=seed)
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")

    def make_lab(ctx: RunContext) -> LocalLab:
        return LocalLab()

    result = await Runner(request, runtime(tmp_path), db, make_lab=make_lab).execute()  # type: ignore[arg-type]
    with db() as session:
        run = session.get(Run, result.run_id)
        checks = list(session.scalars(select(CheckRow).where(CheckRow.run_id == result.run_id)))
    assert run is not None
    return request, run, checks


async def test_a_seeded_run_uses_and_records_its_scenario(seeded_task: Path, tmp_path: Path) -> None:
    request, run, checks = await _run(seeded_task, tmp_path, "oracle", 7)
    values = request.task.values
    assert values is not None and run.outcome == "passed", (run.error, [c.detail for c in checks])
    assert run.config["seed"] == 7 and run.config["parameters"] == values
    port, name = values["port"], values["name"]
    assert (tmp_path / "work" / f"{name}.conf").read_text() == f"listen {port}\n"
    assert (tmp_path / "work" / f"{name}.fixed").read_text() == f"{port}\n"
    assert request.task.instruction == f"Service {name} must listen on {port}."
    assert {c.detail["primitive"]["kind"] for c in checks} == {"file"}

    other, run2, _ = await _run(seeded_task, tmp_path, "noop", None)
    assert run2.outcome == "failed" and run2.config["seed"] == 0
    assert other.task.values != values or other.seed != 7


def test_the_saved_state_key_names_the_scenario(seeded_task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "state_key", lambda *a, **kw: "0123456789abcdef0123")
    monkeypatch.setattr(warm.ImageStore, "get", lambda self, name: object())
    rt = SimpleNamespace(settings=SimpleNamespace(images_dir=Path("/x")), catalog=CATALOG,
                         accel=SimpleNamespace(accel="tcg"))  # fmt: skip
    task = load_task(seeded_task, images=set(CATALOG), root=seeded_task.parents[1])
    keys = {s: warm.cell_key(rt, RunRequest(task, "debian-12", "noop", seed=s).task, "debian-12") for s in (1, 2)}  # type: ignore[arg-type]
    assert keys[1] != keys[2] and all(k and k.startswith("0123456789ab-") for k in keys.values())
    assert keys[1] == warm.cell_key(rt, RunRequest(task, "debian-12", "noop", seed=1).task, "debian-12")  # type: ignore[arg-type]
    plain = load_task(ROOT / "tasks" / "disk-full", images=set(CATALOG), root=ROOT)
    assert warm.cell_key(rt, RunRequest(plain, "debian-12", "noop", seed=5).task, "debian-12") == "0123456789abcdef0123"  # type: ignore[arg-type]
