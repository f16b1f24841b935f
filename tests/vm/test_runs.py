"""Runs on real guests: every starter task passes with its oracle and fails with noop;
each run is recorded in full; a destroyed guest ends a run as `error`; PostgreSQL works."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import libvirt
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.db.models import Check, Command, Finding, Node, Phase, Run, Snapshot
from testbed.hypervisor.xml import LabMetadata
from testbed.model.task import discover_tasks, load_task
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runtime import image_catalog, runtime

from .conftest import ROOT, assert_clean, run_cli

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]

STARTERS = ("config-permissions", "disk-full", "firewall-persist", "reverse-proxy", "web-port-conflict")
TASKS = [p.name for p in discover_tasks(ROOT) if p.name in STARTERS]
"""The starter tasks on their default image: the whole library on every release is
`scripts/validate-tasks` (tasks/VALIDATION.md), which would not fit in CI's hour."""


def run_task(task_id: str, agent: str | Agent, db: sessionmaker[Session]) -> str:
    task = load_task(ROOT / "tasks" / task_id, images=set(image_catalog()))
    request = RunRequest(
        task,
        task.definition.images[0],
        agent if isinstance(agent, str) else agent.name,
        agent_instance=agent if isinstance(agent, Agent) else None,
    )

    async def go() -> str:
        async with runtime() as rt:
            return (await Runner(request, rt, db).execute()).run_id

    return asyncio.run(go())


def assert_recorded_in_full(db: sessionmaker[Session], run_id: str) -> Run:
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.state == "finished" and run.finished_at is not None
        nodes = s.scalars(select(Node).where(Node.run_id == run_id)).all()
        assert nodes and all(n.os_release and "Debian" in n.os_release for n in nodes)
        for node in nodes:
            points = {
                p
                for p in s.scalars(select(Snapshot.point).where(Snapshot.run_id == run_id, Snapshot.node == node.name))
            }
            assert {"before_setup", "after_setup", "after_agent"} <= points, (node.name, points)
        commands = s.scalars(select(Command).where(Command.run_id == run_id).order_by(Command.seq)).all()
        assert [c.seq for c in commands] == list(range(1, len(commands) + 1))
        for c in commands:
            assert c.duration_ms is not None and c.started_at is not None
            assert c.exit_code is not None or c.timed_out or c.error, c.command
        phases = [p.name for p in s.scalars(select(Phase).where(Phase.run_id == run_id).order_by(Phase.id))]
        assert [p for p in phases if p != "egress"][:3] == ["provisioning", "snapshot_before_setup", "setup"]
        assert phases[-1] == "teardown"
        s.expunge(run)
        return run


@pytest.mark.parametrize("task_id", TASKS)
def test_oracle_passes_and_noop_fails(task_id: str, vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    oracle = run_task(task_id, "oracle", db)
    noop = run_task(task_id, "noop", db)
    oracle_run = assert_recorded_in_full(db, oracle)
    assert oracle_run.outcome == "passed"
    with db() as s:
        left = s.scalars(select(Finding).where(Finding.run_id == oracle, Finding.kind == "residue")).all()
    assert oracle_run.residue == "no", [(f.category, f.summary) for f in left]
    assert assert_recorded_in_full(db, noop).outcome == "failed"
    task = load_task(ROOT / "tasks" / task_id, images=set(image_catalog()))
    if task.definition.persistence_required:
        with db() as s:
            rebooted = s.scalars(select(Check).where(Check.run_id == oracle, Check.point == "after_reboot")).all()
            assert rebooted and all(c.status == "passed" for c in rebooted)
            points = set(s.scalars(select(Snapshot.point).where(Snapshot.run_id == oracle)))
            assert "after_reboot" in points
    assert_clean(vm_home)


class DestroyGuestAgent(Agent):
    """Destroys its own guest with libvirt, then asks for a command on it."""

    name = "destroyer"

    def __init__(self, home: Path) -> None:
        self.home = home
        self.context: AgentContext | None = None

    async def start(self, context: AgentContext) -> None:
        self.context = context

    async def next_action(self, last: Observation | None) -> Action | None:
        if last is not None:
            return None
        conn = libvirt.open(Settings.from_env().libvirt_uri)
        try:
            for dom in conn.listAllDomains(0):
                try:
                    meta = LabMetadata.from_xml(dom.XMLDesc(0))
                except libvirt.libvirtError:
                    continue  # another worker's domain vanished meanwhile
                if meta and meta.lab_dir.startswith(str(self.home)):
                    dom.destroy()
        finally:
            conn.close()
        assert self.context is not None
        return Action(self.context.nodes[0], "hostname")


def test_destroyed_guest_ends_run_as_error(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = run_task("web-port-conflict", DestroyGuestAgent(vm_home), db)
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "error" and run.error
        agent_commands = s.scalars(select(Command).where(Command.run_id == run_id, Command.phase == "agent")).all()
        assert len(agent_commands) == 1 and agent_commands[0].error and agent_commands[0].exit_code is None
    assert_clean(vm_home)


@pytest.mark.skipif(
    not os.environ.get("TESTBED_TEST_PG_SOCKET_URL"),
    reason="needs PostgreSQL: scripts/test.sh starts one and sets TESTBED_TEST_PG_SOCKET_URL",
)
def test_run_recorded_in_postgresql(vm_home: Path) -> None:
    url = os.environ["TESTBED_TEST_PG_SOCKET_URL"]
    proc = run_cli("run", str(ROOT / "tasks" / "web-port-conflict"), "--agent", "noop", "--db", url, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # noop fails the task
    run_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("run "))
    db = open_database(url)
    run = assert_recorded_in_full(db, run_id)
    assert run.outcome == "failed"
    shown = run_cli("runs", "show", run_id[:8], "--db", url, "--json")
    assert run_id in shown.stdout
    assert_clean(vm_home)
