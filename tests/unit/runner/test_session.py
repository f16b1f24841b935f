"""Runner logic around the guest, with fake nodes: verification, session limits, safety."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from testbed.agents.base import Action, AgentContext
from testbed.agents.scripted import SequenceAgent, replay_agent
from testbed.analysis import SafetyPolicy
from testbed.db.engine import open_database
from testbed.db.models import Command, Finding
from testbed.db.recorder import RunRecorder
from testbed.errors import InputError
from testbed.guest.result import ExecResult
from testbed.guest.ssh import SessionNotReady
from testbed.model.task import Check
from testbed.runner.recording import CommandRecorder
from testbed.runner.session import AgentSession
from testbed.runner.verify import CheckResult, judge, outcome_of
from testbed.testing.nodes import OneLogin


class FakeNode(OneLogin):
    """Stands in for LabNode: runs nothing, answers from a script, records what it got."""

    access = "ssh"
    hypervisor = None

    def __init__(self, name: str, delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.executed: list[tuple[str, float | None]] = []

    async def exec(self, command: str, *, timeout: float | None = None, max_output: int = 0, stdin=None, **_kw):
        self.executed.append((command, timeout))
        await asyncio.sleep(self.delay)
        timed_out = timeout is not None and self.delay > timeout
        return ExecResult(
            command=command,
            exit_code=None if timed_out else 0,
            stdout=f"ran {command}\n",
            stderr="",
            started_at=datetime.now(UTC),
            duration_ms=int(self.delay * 1000),
            timed_out=timed_out,
        )


def check(**kw) -> Check:
    return Check(id="R1", description="d", node="n", command="true", **kw)


@pytest.mark.parametrize(
    ("kw", "exit_code", "stdout", "timed_out", "status"),
    [
        ({}, 0, "", False, "passed"),
        ({}, 1, "", False, "failed"),
        ({"expect_output": "^200$"}, 0, "200\n", False, "passed"),
        ({"expect_output": "^200$"}, 7, "200\n", False, "passed"),  # a pattern alone ignores the status
        ({"expect_output": "^200$", "expect_exit": 0}, 7, "200\n", False, "failed"),
        ({"expect_output": "^200$"}, 0, "500\n", False, "failed"),
        ({"expect_exit": 3}, 3, "", False, "passed"),
        ({}, None, "", True, "indeterminate"),
    ],
)
def test_judge(kw, exit_code, stdout, timed_out, status) -> None:
    assert judge(check(**kw), exit_code, stdout, timed_out)[0] == status


def test_outcome_never_mixes_indeterminate_with_failure() -> None:
    c = check()
    assert outcome_of([CheckResult(c, "after_agent", "passed", {})]) == ("passed", None)
    assert (
        outcome_of([CheckResult(c, "after_agent", "passed", {}), CheckResult(c, "after_reboot", "failed", {})])[0]
        == "failed"
    )
    outcome, error = outcome_of([CheckResult(c, "after_agent", "indeterminate", {})])
    assert outcome == "error" and "R1@after_agent" in (error or "")


@pytest.fixture
def db(tmp_path: Path):
    return open_database(f"sqlite:///{tmp_path / 'runs.db'}")


@pytest.fixture
def recorder(db) -> RunRecorder:
    recorder = RunRecorder.create(db, task_id="t", agent="test")
    recorder.test_db = db  # type: ignore[attr-defined]
    return recorder


def context(**kw) -> AgentContext:
    base = dict(task_id="t", instruction="do it", nodes=["n"], max_commands=10, agent_time_s=60, command_time_s=30)
    base.update(kw)
    return AgentContext(**base)


def rows(recorder: RunRecorder, model):
    with recorder.test_db() as s:
        return list(s.scalars(select(model).where(model.run_id == recorder.run_id).order_by(model.id)))


def test_blocked_command_never_reaches_the_node_and_is_recorded(recorder: RunRecorder) -> None:
    node = FakeNode("n")
    session = AgentSession({"n": node}, CommandRecorder(recorder), context(), SafetyPolicy())
    agent = SequenceAgent(
        [Action("n", "rm -rf --no-preserve-root /"), Action("n", "systemctl stop nginx"), Action("ghost", "true")], "t"
    )
    stats = asyncio.run(session.drive(agent))
    assert [c for c, _ in node.executed] == ["systemctl stop nginx"]
    assert stats.blocked == 1 and stats.commands == 3
    commands = rows(recorder, Command)
    assert [c.seq for c in commands] == [1, 2, 3]
    assert commands[0].exit_code is None and "blocked by safety policy" in commands[0].error
    assert commands[1].exit_code == 0 and commands[1].impact == ["service_stop"]
    assert "unknown node" in commands[2].error
    kinds = sorted((f.kind, f.category) for f in rows(recorder, Finding))
    assert ("impact", "service_stop") in kinds
    assert any(k == "safety" for k, _ in kinds)


def test_command_limit_and_time_limit(recorder: RunRecorder) -> None:
    node = FakeNode("n")
    session = AgentSession({"n": node}, CommandRecorder(recorder), context(max_commands=2), SafetyPolicy())
    stats = asyncio.run(session.drive(SequenceAgent([Action("n", f"echo {i}") for i in range(5)], "t")))
    assert stats.ended_by == "command_limit" and len(node.executed) == 2

    slow = FakeNode("n", delay=0.3)
    session = AgentSession({"n": slow}, CommandRecorder(recorder), context(agent_time_s=0.5), SafetyPolicy())
    stats = asyncio.run(session.drive(SequenceAgent([Action("n", "sleep") for _ in range(10)], "t")))
    assert stats.ended_by == "time_limit"
    assert len(slow.executed) <= 3
    # the per-command timeout never exceeds the time left
    assert all(t is not None and t <= 30 for _, t in slow.executed)


def test_secrets_are_redacted_in_stored_rows(recorder: RunRecorder) -> None:
    node = FakeNode("n")
    session = AgentSession({"n": node}, CommandRecorder(recorder), context(), SafetyPolicy())
    secret = "mysql -u root -pS3cretPassw0rd -e 'select 1'"
    asyncio.run(session.step(Action("n", secret)))
    (row,) = rows(recorder, Command)
    assert "S3cretPassw0rd" not in row.command and "S3cretPassw0rd" not in row.stdout
    assert row.redacted and "password" in row.redacted
    assert node.executed[0][0] == secret, "the guest gets the real command"


def test_replay_file_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"node": "n", "command": "ls"}) + "\n{not json\n")
    with pytest.raises(InputError) as info:
        replay_agent(path)
    assert info.value.field == "line 2"
    path.write_text(json.dumps({"node": "n", "command": "ls"}) + "\n" + json.dumps({"node": "n"}) + "\n")
    with pytest.raises(InputError, match="string"):
        replay_agent(path)
    path.write_text(json.dumps({"node": "n", "command": "ls"}) + "\n")
    assert replay_agent(path).actions == [Action("n", "ls")]


class NotReadyNode(FakeNode):
    """A restored node whose background reconnect failed; `hypervisor` is something the
    lockout diagnosis would have to ask (it must not: no agent command ran yet)."""

    hypervisor = object()  # type: ignore[assignment]

    async def exec(self, command: str, **_kw):
        raise SessionNotReady("ssh n: the session never became ready: SSH not ready after 120 s")


def test_a_restored_node_that_never_became_ready_is_the_harness_fault_not_a_lockout(recorder: RunRecorder) -> None:
    session = AgentSession({"n": NotReadyNode("n")}, CommandRecorder(recorder), context(), SafetyPolicy())
    with pytest.raises(SessionNotReady):
        asyncio.run(session.step(Action("n", "systemctl status nginx")))
    (row,) = rows(recorder, Command)
    assert row.exit_code is None and "never became ready" in (row.error or "")
