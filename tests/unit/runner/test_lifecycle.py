"""The run lifecycle on a fake lab: outcomes, and teardown + finish on every path (a harness
fault, the harness's own bug, a database error, cancellation, a second cancellation during
teardown); residue and the verdict read the run's journal."""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from testbed.agents.base import Action
from testbed.agents.scripted import SequenceAgent
from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.db.models import Phase, Run
from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.model.taskload import load_task
from testbed.model.vocab import SnapshotPoint
from testbed.runner.context import RunContext
from testbed.runner.events import PhaseEvent, RunEvent, RunFinished, RunStarted
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runtime import image_catalog
from testbed.testing.nodes import FakeSession, ScriptedNode

ROOT = Path(__file__).resolve().parents[3]

TASK_TOML = """
id = "fake-task"
category = "services"
topology = "single"
images = ["debian-12"]
description = "fake"

[limits]
agent_time_s = 60
command_time_s = 10

[[setup]]
node = "node"
stage = 1
command = "break-service"

[[checks]]
id = "R1"
description = "service repaired"
node = "node"
command = "check-service"
expect_output = "^active$"
"""


class FakeNode(ScriptedNode):
    def __init__(self, name: str, lab: FakeLab) -> None:
        super().__init__(name)
        self.lab = lab

    async def answer(self, command: str) -> tuple[str, int]:
        self.lab.log.append(command)
        if command == "hang":
            await asyncio.sleep(3600)
        if command == "bug":
            raise RuntimeError("a bug in the harness")
        if command == "check-service":
            return ("active\n" if "fix-service" in self.lab.log else "failed\n"), 0
        return f"ran: {command}\n", 0


class FakeLab:
    def __init__(self, fail_up: bool = False, slow_down: float = 0.0) -> None:
        self.fail_up = fail_up
        self.slow_down = slow_down
        self.nodes: dict[str, FakeNode] = {}
        self.log: list[str] = []
        self.up_called = self.down_done = False

    async def up(self) -> None:
        self.up_called = True
        self.nodes = {"node": FakeNode("node", self)}
        if self.fail_up:
            raise HarnessError("libvirt said no")

    async def down(self) -> None:
        await asyncio.sleep(self.slow_down)
        self.down_done = True


async def fake_snapshot_all(nodes: list[Any], commands: Any, point: SnapshotPoint) -> dict[str, dict[str, Any]]:
    data = {n.name: {"os": {"pretty_name": "Fake OS"}, "point": str(point)} for n in nodes}
    for node, snap in data.items():
        commands.journal.add_snapshot(node, point, snap)
    return data


@pytest.fixture
def task_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("testbed.runner.steps.snapshot_all", fake_snapshot_all)
    root = tmp_path / "root"
    (root / "topologies").mkdir(parents=True)
    shutil.copy(ROOT / "topologies" / "single.yaml", root / "topologies")
    directory = root / "tasks" / "fake-task"
    directory.mkdir(parents=True)
    (directory / "task.toml").write_text(TASK_TOML)
    (directory / "instruction.md").write_text("Repair the service.\n")
    return directory


def runtime(tmp_path: Path) -> Any:
    settings = Settings(tmp_path / "home", "test:///default", 4096, "10.213.0.0/16", "tcg")
    return SimpleNamespace(
        settings=settings, catalog=image_catalog(), accel=SimpleNamespace(label="tcg", accel="tcg"), lab_host=None
    )


def make_runner(task_dir: Path, tmp_path: Path, commands: list[str], lab: FakeLab, events: list[RunEvent]) -> Runner:
    task = load_task(task_dir, images=set(image_catalog()), root=task_dir.parents[1])
    agent = SequenceAgent([Action("node", c) for c in commands], "scripted")
    request = RunRequest(task, "debian-12", "scripted", agent_instance=agent)
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")

    def make_lab(ctx: RunContext) -> FakeLab:
        return lab

    return Runner(request, runtime(tmp_path), db, [events.append], make_lab=make_lab)  # type: ignore[arg-type]


def run_row(runner: Runner, run_id: str) -> tuple[Run, list[tuple[str, str]]]:
    with runner.db() as session:
        run = session.get(Run, run_id)
        assert run is not None
        phases = [(p.name, p.status) for p in session.scalars(select(Phase).where(Phase.run_id == run_id))]
        return run, phases


def test_passed_run_records_every_phase_and_events(task_dir: Path, tmp_path: Path) -> None:
    lab, events = FakeLab(), []
    runner = make_runner(task_dir, tmp_path, ["fix-service"], lab, events)
    result = asyncio.run(runner.execute())
    assert result.outcome == "passed", result.error
    run, phases = run_row(runner, result.run_id)
    assert run.outcome == "passed" and run.state == "finished" and run.reward == 1.0
    assert [name for name, _ in phases] == [
        "provisioning",
        "snapshot_before_setup",
        "setup",
        "snapshot_after_setup",
        "agent",
        "snapshot_after_agent",
        "verify",
        "residue",
        "teardown",
    ]
    assert all(status == "ok" for _, status in phases)
    assert lab.down_done
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    phase_events = [e for e in events if isinstance(e, PhaseEvent)]
    assert len(phase_events) == 2 * len(phases)  # one start and one end each
    assert lab.log == ["break-service", "fix-service", "check-service"]


def test_failed_checks_are_failed_not_error(task_dir: Path, tmp_path: Path) -> None:
    lab = FakeLab()
    runner = make_runner(task_dir, tmp_path, [], lab, [])
    result = asyncio.run(runner.execute())
    assert result.outcome == "failed" and result.error is None
    assert lab.down_done


def test_provisioning_fault_is_error_and_tears_down(task_dir: Path, tmp_path: Path) -> None:
    lab = FakeLab(fail_up=True)
    runner = make_runner(task_dir, tmp_path, [], lab, [])
    result = asyncio.run(runner.execute())
    assert result.outcome == "error"
    assert result.error == "provisioning: libvirt said no"
    run, phases = run_row(runner, result.run_id)
    assert run.state == "finished" and run.outcome == "error"
    assert ("provisioning", "error") in phases and ("teardown", "ok") in phases
    assert lab.down_done


def test_harness_bug_is_error_with_phase_and_tears_down(task_dir: Path, tmp_path: Path) -> None:
    lab = FakeLab()
    runner = make_runner(task_dir, tmp_path, ["bug"], lab, [])
    result = asyncio.run(runner.execute())
    assert result.outcome == "error"
    assert result.error is not None and result.error.startswith("agent: internal error: RuntimeError")
    run, phases = run_row(runner, result.run_id)
    assert ("agent", "error") in phases and run.state == "finished"
    assert lab.down_done


def test_database_error_mid_run_still_tears_down(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = FakeLab()
    runner = make_runner(task_dir, tmp_path, ["fix-service"], lab, [])
    from testbed.db.recorder import RunRecorder

    real = RunRecorder.phase_started

    def flaky(self: RunRecorder, name: str, at: datetime | None = None) -> int:
        if name == "verify":
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        return real(self, name, at)

    monkeypatch.setattr(RunRecorder, "phase_started", flaky)
    result = asyncio.run(runner.execute())
    assert result.outcome == "error" and "OperationalError" in (result.error or "")
    assert lab.down_done
    run, _ = run_row(runner, result.run_id)
    assert run.state == "finished" and run.outcome == "error"


def test_cancel_during_agent_tears_down_and_records_cancelled(task_dir: Path, tmp_path: Path) -> None:
    lab = FakeLab(slow_down=0.3)
    runner = make_runner(task_dir, tmp_path, ["hang"], lab, [])
    run_ids: list[str] = []

    async def go() -> None:
        task = asyncio.create_task(runner.execute())
        while "hang" not in lab.log:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()  # a second Ctrl-C while tearing down: teardown still completes
        with pytest.raises(asyncio.CancelledError):
            await task

    runner.listeners.append(lambda e: run_ids.append(e.run_id) if isinstance(e, RunStarted) else None)
    asyncio.run(go())
    assert lab.down_done
    run, phases = run_row(runner, run_ids[0])
    assert run.outcome == "cancelled" and run.state == "finished"
    assert ("agent", "cancelled") in phases and ("teardown", "ok") in phases


def test_residue_reads_the_journal_not_the_database(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_find(snapshots: Any, commands: Any, expected: Any) -> Any:
        seen["snapshots"], seen["commands"] = snapshots, commands
        return SimpleNamespace(verdict="no", findings=[], unavailable=[], excluded=[], notes=[])

    monkeypatch.setattr("testbed.runner.steps.find_residue", fake_find)
    monkeypatch.setattr("testbed.runner.steps.record_residue", lambda recorder, found: None)
    runner = make_runner(task_dir, tmp_path, ["fix-service"], FakeLab(), [])
    result = asyncio.run(runner.execute())
    assert result.outcome == "passed"
    assert set(seen["snapshots"]["node"]) == {"before_setup", "after_setup", "after_agent"}
    assert [(c.seq, c.phase, c.command) for c in seen["commands"]] == [
        (1, "setup", "break-service"),
        (2, "agent", "fix-service"),
        (3, "verify", "check-service"),
    ]


def test_agent_that_breaks_new_logins_is_a_lockout(task_dir: Path, tmp_path: Path) -> None:
    """The agent's own session survives `systemctl stop ssh`, new logins do not: the
    post-agent access check reconnects, and the diagnosis names the lockout."""
    from testbed.hypervisor.connection import DomainStatus

    class Hv:
        async def domain_status(self, name: str) -> DomainStatus:
            return DomainStatus("running", None, None)

    class Oob:
        async def ping(self) -> bool:
            return True

        async def exec(self, command: str, **_: object) -> ExecResult:
            out = "sshd: stopped\nlisten22: 0\ntargets: multi-user.target\n" if command.startswith("\necho") else ""
            return ExecResult(command, 0, out or "active\n", "", datetime.now(UTC), 1)

    lab = FakeLab()

    async def up() -> None:
        lab.nodes = {"node": FakeNode("node", lab)}
        node = lab.nodes["node"]
        node.hypervisor, node.oob = Hv(), Oob()  # type: ignore[attr-defined]
        node.session = FakeSession(reachable=False)

    lab.up = up  # type: ignore[method-assign]
    runner = make_runner(task_dir, tmp_path, ["fix-service"], lab, [])
    result = asyncio.run(runner.execute())
    assert result.outcome == "failed"
    assert (result.error or "").startswith("agent cut management access: node: sshd is not running"), result.error
    run, _ = run_row(runner, result.run_id)
    assert run.config and run.config["lockout"]["node"]["oob_usable"] is True
