"""Runs on real guests: every starter task passes with its oracle and fails with noop (the
noop run restored from the saved state the oracle's run built); each run is recorded in
full; PostgreSQL works. (A guest destroyed from outside: tests/vm/test_run_truth.py.)"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Agent
from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.db.models import Check, Command, Finding, Node, Phase, Run, Snapshot
from testbed.db.read.trajectory import CommandStep, trajectory
from testbed.hypervisor.slots import SlotStore
from testbed.model.task_record import task_hash
from testbed.model.taskload import discover_tasks, load_task
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runner.warm import WarmStarts
from testbed.runtime import image_catalog, runtime

from .conftest import ROOT, assert_clean, run_cli

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]

STARTERS = ("config-permissions", "disk-full", "firewall-persist", "reverse-proxy", "web-port-conflict")
TASKS = [p.name for p in discover_tasks(ROOT) if p.name in STARTERS]
"""The starter tasks on their default image: the whole library on every release is
`scripts/validate-tasks` (tasks/VALIDATION.md), which would not fit in CI's hour."""


def run_task(task_id: str, agent: str | Agent, db: sessionmaker[Session], *, warm: bool = False) -> str:
    task = load_task(ROOT / "tasks" / task_id, images=set(image_catalog()))
    request = RunRequest(
        task,
        task.definition.images[0],
        agent if isinstance(agent, str) else agent.name,
        agent_instance=agent if isinstance(agent, Agent) else None,
    )

    async def go() -> str:
        async with runtime() as rt:
            if warm:
                return (await WarmStarts(rt).execute(request, db)).run_id
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
        # The run keeps its task as it was, and its trajectory holds every agent-phase command.
        record = (run.config or {}).get("task") or {}
        assert record.get("hash") == task_hash(ROOT / "tasks" / run.task_id) and "[[checks]]" in record["toml"]
        stream = trajectory(s, run_id)
        assert [x.command.seq for x in stream.steps if isinstance(x, CommandStep)] == [
            c.seq for c in commands if c.phase == "agent"
        ]
        s.expunge(run)
        return run


@pytest.mark.parametrize("task_id", TASKS)
def test_oracle_passes_and_noop_fails(task_id: str, vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    # the oracle's run builds the task's saved post-setup state, the noop run restores it
    oracle = run_task(task_id, "oracle", db, warm=True)
    noop = run_task(task_id, "noop", db, warm=True)
    with db() as s:
        modes = [s.get(Run, r).config["fast_reset"]["mode"] for r in (oracle, noop)]  # type: ignore[union-attr]
    assert modes == ["build", "restore"], modes
    SlotStore(Settings.from_env()).remove()
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
            # the harness waited for each rebooted node's boot to settle, and it did settle
            settled = s.scalars(
                select(Command).where(Command.run_id == oracle, Command.command.contains("is-system-running --wait"))
            ).all()
            assert settled and all(c.exit_code in (0, 1) for c in settled), [(c.node, c.exit_code) for c in settled]
    assert_clean(vm_home)


@pytest.mark.skipif(
    not os.environ.get("TESTBED_TEST_PG_SOCKET_URL"),
    reason="needs PostgreSQL: scripts/test.sh starts one and sets TESTBED_TEST_PG_SOCKET_URL",
)
def test_run_recorded_in_postgresql(vm_home: Path) -> None:
    url = os.environ["TESTBED_TEST_PG_SOCKET_URL"]
    proc = run_cli(
        "run", str(ROOT / "tasks" / "web-port-conflict"), "--agent", "noop", "--db", url, "--cold", check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # noop fails the task
    run_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("run "))
    db = open_database(url)
    run = assert_recorded_in_full(db, run_id)
    assert run.outcome == "failed"
    shown = run_cli("runs", "show", run_id[:8], "--db", url, "--json")
    assert run_id in shown.stdout
    assert_clean(vm_home)
