"""Run truth on real guests: every way an agent can cut the harness off ends `failed` with
the right reason (decided over the out-of-band channel), a guest destroyed from outside
ends `error`, background commands return at once with their children alive, a command
cancelled in flight keeps its row, and the console log outlives the lab.

One saved post-setup state of `web-port-conflict` serves every case: the first run builds
it (a cold boot), each later case restores it (seconds), so eight runs cost one boot.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import libvirt
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.analysis import SafetyPolicy
from testbed.config import Settings
from testbed.db.engine import open_database
from testbed.db.models import Artifact, Check, Command, Run
from testbed.hypervisor.slots import SlotStore
from testbed.model.task import Task
from testbed.model.taskload import load_task
from testbed.runner.fastreset import SavedStateUse
from testbed.runner.recording import CANCELLED
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runtime import Runtime, image_catalog, runtime
from testbed.server.envapi.backend import RunnerBackend

from .conftest import ROOT, assert_clean, in_home

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3000)]

TASK = "web-port-conflict"


class Script(Agent):
    """Runs fixed commands; remembers every observation."""

    def __init__(self, name: str, commands: list[str]) -> None:
        self.name = name
        self.commands = list(commands)
        self.seen: list[Observation] = []

    async def next_action(self, last: Observation | None) -> Action | None:
        if last is not None:
            self.seen.append(last)
        return Action("node", self.commands.pop(0)) if self.commands else None


class DestroyFromOutside(Agent):
    """Destroys its own guest with libvirt (a fault outside the guest), then runs a command."""

    name = "destroyer"

    def __init__(self) -> None:
        self.done = False

    async def start(self, context: AgentContext) -> None:
        self.context = context

    async def next_action(self, last: Observation | None) -> Action | None:
        if self.done:
            return None
        self.done = True
        # only this test's guest: other workers' guests share the libvirtd (destroying every
        # `*-node` domain once killed two runs of the scheduler test beside it)
        home = Settings.from_env().home
        conn = libvirt.open("qemu:///system")
        try:
            for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                if dom.name().endswith("-node") and in_home(dom, home):
                    dom.destroy()
        finally:
            conn.close()
        return Action("node", "true")


@dataclass
class Case:
    name: str
    agent: Agent
    outcome: str
    reason: str  # a substring of runs.error


NFT_DROP = "{ type filter hook input priority 0; policy drop; }"
LOCKOUTS = [
    Case("link down", Script("link-down", ["ip link set eth0 down", "true"]), "failed", "management interface is down"),
    Case(
        "nft drops ssh",
        Script("nft-drop", [f"nft add table inet lock && nft add chain inet lock input '{NFT_DROP}'", "true"]),
        "failed",
        "filtered",
    ),
    Case("sshd killed", Script("kill-sshd", ["pkill -x sshd", "true"]), "failed", "sshd is not running"),
    Case("poweroff", Script("poweroff", ["systemctl poweroff", "sleep 60"]), "failed", "powered itself off"),
    Case("panic", Script("panic", ["echo c > /proc/sysrq-trigger", "true"]), "failed", "kernel panicked"),
    Case("rescue", Script("rescue", ["systemctl isolate rescue.target", "true"]), "failed", "rescue"),
    Case("destroyed", DestroyFromOutside(), "error", ""),
]


def _task() -> Task:
    return load_task(ROOT / "tasks" / TASK, images=set(image_catalog()))


def _request(task: Task, agent: Agent) -> RunRequest:
    """Power and sysrq commands are blocked by the default safety policy: allow them here,
    so the agent really can power off, panic or isolate its guest."""
    return RunRequest(
        task, task.definition.images[0], agent.name, agent_instance=agent, policy=SafetyPolicy(allow_power=True)
    )


async def _run(rt: Runtime, db: sessionmaker[Session], task: Task, agent: Agent, store: SlotStore, key: str) -> str:
    request = _request(task, agent)
    with store.lock(task.id, wait=True):
        use = SavedStateUse(store, key, await asyncio.to_thread(store.load, task.id, key))
        return (await Runner(request, rt, db, saved=use).execute()).run_id


def _row(db: sessionmaker[Session], run_id: str) -> Run:
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None
        s.expunge(run)
        return run


def test_lockouts_background_cancel_and_console(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    task = _task()
    results: dict[str, str] = {}
    background = Script(
        "background",
        [
            "nohup python3 -m http.server 8081 & echo started",
            "nohup sleep 600 &",
            "pgrep -f '[h]ttp.server 8081' && pgrep -f '[s]leep 600'",  # [x]: not the pgrep's own shell
            "sleep 1",
        ],
    )

    async def scenario() -> None:
        async with runtime() as rt:
            store = SlotStore(rt.settings)
            key = RunnerBackend(rt, db, ROOT, fast_reset=True).state_key(task, task.definition.images[0])
            assert key is not None
            # 1. background children: built cold (this run makes the saved state)
            results["background"] = await _run(rt, db, task, background, store, key)
            # 2. each lockout, restored from the saved state
            for case in LOCKOUTS:
                t0 = time.monotonic()
                results[case.name] = await _run(rt, db, task, case.agent, store, key)
                print(f"{case.name}: {time.monotonic() - t0:.0f} s")
            # 3. a command cancelled in flight
            sleeper = Script("cancelled", ["sleep 600"])
            request = _request(task, sleeper)
            with store.lock(task.id, wait=True):
                use = SavedStateUse(store, key, await asyncio.to_thread(store.load, task.id, key))
                runner = asyncio.create_task(Runner(request, rt, db, saved=use).execute())
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline and not _started(db, "sleep 600"):
                    await asyncio.sleep(0.5)
                runner.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await runner
            store.remove()

    asyncio.run(scenario())
    failures = []
    for case in LOCKOUTS:
        run = _row(db, results[case.name])
        if run.outcome != case.outcome or case.reason not in (run.error or ""):
            failures.append(f"{case.name}: {run.outcome} {run.error!r}")
        elif case.outcome == "failed":
            assert (run.error or "").startswith("agent cut management access"), run.error
            assert run.config and "lockout" in run.config, run.config
        else:
            assert "lockout" not in (run.config or {}), run.config
    assert not failures, "\n".join(failures)

    # the background commands returned at once, with status 0, their children alive
    seen = background.seen
    assert [o.exit_code for o in seen[:3]] == [0, 0, 0], seen
    # they returned when their shell exited, not at the 120 s command limit (nor when the
    # children end); the time itself is printed, not asserted (speed lives in benchmarks/)
    print("background command durations (ms):", [o.duration_ms for o in seen[:2]])
    assert all(o.duration_ms < 15_000 for o in seen[:2]), [o.duration_ms for o in seen[:2]]
    assert len(seen[2].stdout.split()) == 2  # both still running afterwards
    with db() as s:
        rows = s.scalars(select(Command).where(Command.run_id == results["background"], Command.phase == "agent"))
        first = next(r for r in rows if r.command.startswith("nohup python3"))
        assert first.background and any("http.server" in p["args"] for p in first.background)
        # a lockout with no channel left: checks are indeterminate, never failed
        checks = s.scalars(select(Check).where(Check.run_id == results["poweroff"])).all()
        assert checks and {c.status for c in checks} == {"indeterminate"}
        # the cancelled run kept its in-flight command row
        cancelled = s.scalars(select(Run).where(Run.agent == "cancelled")).one()
        assert cancelled.outcome == "cancelled"
        row = s.scalars(
            select(Command).where(Command.run_id == cancelled.id, Command.command == "sleep 600")
        ).one()
        assert row.exit_code is None and row.error == CANCELLED
        # the console log of the cold run outlived its lab
        console = s.scalars(select(Artifact).where(Artifact.run_id == results["background"])).one()
        assert console.name == "console-node.log" and "login:" in console.content
    assert_clean(vm_home)


def _started(db: sessionmaker[Session], command: str) -> bool:
    with db() as s:
        return s.scalar(select(Command.id).where(Command.command == command)) is not None
